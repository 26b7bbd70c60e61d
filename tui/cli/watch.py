"""`ocwatch watch`: one line per settled transition, until interrupted (like `kubectl get -w`).

First a line per existing session (`from` null) as soon as its state is settled, then one per
change of its settled (state, reason, stale), and a last line (`to` null) when it is deleted.
Reconnects and resyncs print nothing for sessions that did not change: the lines are the
transition contract (view.transitions), the same the dashboard's timeline and alerts read.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable, Collection, Iterable
from typing import Any, TextIO

from ..core import text, words
from ..core.exitcodes import ExitCode
from ..core.fleet import Fleet
from ..core.targets import Servers
from ..core.text import literal
from ..core.view import ServerInfo, SessionRow, Transition, iso
from .output import OUTPUT, pipe_safe, say, stop_on_signals
from .wait import NO_SERVER, first_looks

#: How often the View is derived again without news (grace periods end as time passes), as
#: the dashboard does.
TICK = 1.0


def _state(row: SessionRow | None) -> dict[str, Any] | None:
    if row is None:
        return None
    state, reason, stale = row.settled_as  # (what a transition compares)
    return {"state": state, "reason": reason, "stale": stale}


def transition_json(tr: Transition, left: bool = False) -> dict[str, Any]:
    """One NDJSON object of `watch --json` (the README documents the fields). `left`: the
    row is gone because its server left the fleet (`"server_left": true`), not deleted."""
    row = tr.after or tr.before
    assert row is not None
    now = tr.after
    out: dict[str, Any] = {
        "at": iso(tr.at),
        "server": row.server,
        "session_id": row.id,
        "parent_id": row.parent_id,
        "title": row.title,
        "from": _state(tr.before),
        "to": _state(now),
        "since": iso(now.since) if now is not None else None,
        "pending": [p.to_json() for p in now.pending] if now is not None else [],
        "evidence": list(now.evidence) if now is not None else [],
    }
    if left:
        out["server_left"] = True
    return out


def transition_text(tr: Transition, with_server: bool, left: bool = False) -> str:
    """One readable line: time, session, from -> to, title (shown literally). `left`: the row
    is gone because its server left the fleet, not deleted."""
    row = tr.after or tr.before
    assert row is not None
    before = words.line(tr.before) if tr.before is not None else "new"
    gone = "not watched (its server left)" if left else "deleted"
    after = words.line(tr.after) if tr.after is not None else gone
    line = (
        f"{iso(tr.at)}  {literal(row.id, escapes=True)}  {before} -> {after}  "
        f"{literal(row.title or '', escapes=True)}"
    )
    if tr.after is not None and tr.after.pending:
        line += f"  [{literal(tr.after.pending[0].summary, escapes=True)}]"
    if with_server:
        line += f"  @{literal(row.server, escapes=True)}"
    return line


async def watch(
    servers: Servers,
    *,
    sessions: Collection[str] = (),
    as_json: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stop: asyncio.Event | None = None,
    on_line: Callable[[str], None] | None = None,
) -> int:
    """Follow `servers` and write a line per transition until `stop` is set (or cancelled).

    Returns 0, or ExitCode.USAGE when no server could be read at start. A server that cannot be
    read at start or later is said on `err` (and again when it is back); its rows print
    nothing while it is away (they are not settled)."""
    out = out or sys.stdout
    err = err or sys.stderr
    stop = stop or asyncio.Event()
    wanted = set(sessions)
    settings = servers.settings
    fleet = Fleet.of_servers(
        servers, keeper=servers.keeper(lambda text: say("", text, err)), focus=wanted or None
    )
    if fleet.keeper is not None:  # the sources' first lists (discovery's) before the first look
        await fleet.keeper.step(fleet, fleet.clock)
    changed = asyncio.Event()
    task = asyncio.create_task(fleet.run(changed.set))
    try:
        await first_looks(fleet, task, settings.request_timeout * 2)
        read = fleet.servers()
        notes = LinkNotes(err)
        if not any(s.first_snapshot for s in read):
            for s in read:
                notes.line(s.why_unread())
            if not read:
                notes.line(NO_SERVER)
            return ExitCode.USAGE
        while not stop.is_set():
            changed.clear()
            view = fleet.current()
            notes.say(view.servers, view.generated_at)
            # servers may come and go (discovery, an inventory file): each line names its own
            with_server = len(fleet.monitors) > 1 or fleet.keeper is not None
            watched = {s.url for s in view.servers}
            changes = fleet.last_changes
            for tr in changes.transitions if changes is not None else ():
                if wanted and tr.key[1] not in wanted:
                    continue
                left = tr.after is None and tr.key[0] not in watched
                line = (
                    text.dumps(transition_json(tr, left))
                    if as_json
                    else transition_text(tr, with_server, left)
                )
                out.write(line + "\n")
                out.flush()
                if on_line is not None:
                    on_line(line)
            if task.done():
                say("watch", f"monitor stopped: {task.exception()}", err)
                return ExitCode.USAGE
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TICK):
                    await _first(changed.wait(), stop.wait())
        return ExitCode.OK
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task


#: How long a readable server's event stream may be down before `watch` says so (a reconnect
#: takes a moment; a server restarting, a few seconds)
STREAM_QUIET = 10.0


class LinkNotes:
    """What `watch` says on stderr of its servers' links (live and replayed alike): a server
    that became unreachable (why) or reachable again, a readable server whose event
    stream has been down for STREAM_QUIET s (why; changes then show at each resync) or is back,
    and one whose stream beats while its snapshots have failed for STREAM_QUIET s (why) or
    succeed again.
    """

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self.down: set[str] = set()  # said unreachable
        self.streamless: dict[str, float] = {}  # readable, no stream: since when (View time)
        self.said_streamless: set[str] = set()
        self.said_failing: set[str] = set()  # readable by its stream, its snapshots failing

    def say(self, servers: Iterable[ServerInfo], now: float) -> None:
        for info in servers:
            url = info.url
            if not info.reachable and url not in self.down:
                self.down.add(url)
                self.line(info.why_unread())
            elif info.reachable and url in self.down:
                self.down.discard(url)
                self.line(f"{url}: reachable again")
            if info.reachable and info.stream in ("none", "lost"):
                since = self.streamless.setdefault(url, now)
                if url not in self.said_streamless and now - since >= STREAM_QUIET:
                    self.said_streamless.add(url)
                    said = (info.stream_error or "").removeprefix(f"{url}: ")  # (named once)
                    why = f" ({said})" if said else ""
                    every = f" (every {info.resync_every:g}s)" if info.resync_every else ""
                    self.line(
                        f"{url}: no event stream for {now - since:.0f}s{why}; changes show at "
                        f"each resync{every} meanwhile"
                    )
            else:
                self.streamless.pop(url, None)
                if url in self.said_streamless and info.stream in ("connected", "stalled"):
                    self.said_streamless.discard(url)
                    self.line(f"{url}: event stream back")
            failing = info.reachable and info.error is not None
            if failing and url not in self.said_failing:
                since = info.error_since or now
                if now - since >= STREAM_QUIET:
                    self.said_failing.add(url)
                    why = (info.error or "").removeprefix(url).lstrip(": ").strip()
                    self.line(
                        f"{url}: snapshots failing for {now - since:.0f}s ({why}); the event "
                        "stream still carries changes, nothing checks them against the server"
                    )
            elif not failing and url in self.said_failing:
                self.said_failing.discard(url)
                if info.reachable:
                    self.line(f"{url}: snapshots succeed again")

    def line(self, what: str) -> None:
        """One line on stderr, as `watch` says things there."""
        say("watch", what, self.err)


async def _first(*aws: Any) -> None:
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()


def run_watch(
    servers: Servers,
    *,
    sessions: Collection[str],
    as_json: bool,
) -> int:
    """`ocwatch watch`: exit 0 on Ctrl-C or SIGTERM, 2 when no server could be read at start;
    a reader that closes the pipe ends it quietly."""

    async def main() -> int:
        stop = asyncio.Event()
        stop_on_signals(stop)
        return await watch(servers, sessions=sessions, as_json=as_json, stop=stop)

    if sys.stdout is None:  # (`>&-`: its lines are its answer, and they have nowhere to go)
        say("watch", "no standard output to write the transitions to")
        return ExitCode.USAGE
    code: int = ExitCode.OK
    try:
        with pipe_safe():  # (a closed pipe ends it quietly; a full disk is said, exit 2)
            code = asyncio.run(main())
    except KeyboardInterrupt:
        return 0
    return ExitCode.USAGE if OUTPUT.lost is not None else code
