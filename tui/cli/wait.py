"""`ocwatch wait`: follow the event stream until a session settles; exit with its outcome."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import text, words
from ..core.decide import UNREADABLE
from ..core.exitcodes import ExitCode, worst
from ..core.fleet import Fleet, live_rank
from ..core.outcome import Outcome, outcome
from ..core.settings import Auth, Settings
from ..core.targets import Servers
from ..core.text import literal
from ..core.view import ServerInfo, SessionRow, View
from .output import pipe_safe, say

#: How long the server may stay unreachable mid-wait (a restart) before `wait` gives up.
UNREACHABLE_PATIENCE = 15.0

#: How long the last try asked of a server down past the patience may take to be made and
#: fail (a server that said when to ask again, Retry-After, is not asked sooner: given up then)
LAST_TRY_WAIT = 10.0

#: Seconds between looks while no event comes: a grace running out, a server down a while.
LOOK_EVERY = 0.5
LOOK_EVERY_DOWN = 1.0


#: The exit code of each outcome (a stale row's: how its run visibly ended; a session that has
#: never run: nothing completed).
EXIT_OF: dict[Outcome, ExitCode] = {
    Outcome.COMPLETED: ExitCode.COMPLETED,
    Outcome.ABORTED: ExitCode.ABORTED,
    Outcome.ERROR: ExitCode.ERROR,
    Outcome.INTERRUPTED: ExitCode.UNKNOWN,
    Outcome.UNKNOWN: ExitCode.UNKNOWN,
    Outcome.NEVER_RAN: ExitCode.UNKNOWN,
    Outcome.INPUT: ExitCode.INPUT,
    Outcome.STALE_COMPLETED: ExitCode.COMPLETED,
    Outcome.STALE_ABORTED: ExitCode.ABORTED,
    Outcome.STALE: ExitCode.COMPLETED,
}


def exit_code_for(row: SessionRow) -> int | None:
    """The exit code a settled row gives, or None while the session has not settled."""
    ended = outcome(row)
    return None if ended is None else EXIT_OF[ended]


@dataclass
class Awaited:
    """How one awaited session ended: its exit code (None while it has not), last row, why."""

    session_id: str
    code: int | None = None
    row: SessionRow | None = None
    message: str | None = None
    #: when a View first said its run was cut off (interrupted), not yet confirmed
    cut_seen: float | None = None
    #: since when its row says its last message could not be read (None: it could)
    unread_since: float | None = None
    #: when its servers were asked to try again at once, their patience out (None: not yet)
    last_try: float | None = None


async def wait_many(
    session_ids: Sequence[str],
    servers: Servers,
    *,
    timeout: float | None,
    any_: bool = False,
    on_ready: Callable[[], None] | None = None,
) -> list[Awaited]:
    """Follow every server until each session settles (`any_`: until the first does).

    A session is looked for on every server. `--timeout` bounds the whole wait, the first look
    at the servers included; `--timeout 0` looks once (bounded by the request timeout). Sessions
    still open at the end get ExitCode.TIMEOUT; a server unreachable for longer than
    UNREACHABLE_PATIENCE gives ExitCode.USAGE to the sessions it holds (or might hold).

    The steps: the first look at every server (`_first_read`), then, at each change of the
    fleet, each open session looked up again (`_look`) until they have settled."""
    # (each server read for those sessions only: the others' last messages are not asked)
    fleet = Fleet.of_servers(
        servers, keeper=servers.keeper(lambda text: say("wait", text)), focus=session_ids
    )
    outcomes = {sid: Awaited(sid) for sid in dict.fromkeys(session_ids)}
    if fleet.keeper is not None:  # the sources' first lists (discovery's) before the first look
        await fleet.keeper.step(fleet, fleet.clock)
    changed = asyncio.Event()
    task = asyncio.create_task(fleet.run(changed.set))
    deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
    try:
        failed = await _first_read(fleet, task, timeout, servers.settings)
        if failed is not None:
            return _close(outcomes, *failed)
        if on_ready is not None:
            on_ready()
        return await follow(fleet, task, changed, outcomes, deadline, timeout, any_=any_)
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task


async def follow(
    fleet: Fleet,
    task: asyncio.Task[None],
    changed: asyncio.Event,
    outcomes: dict[str, Awaited],
    deadline: float | None,
    timeout: float | None,
    *,
    any_: bool = False,
    counts: Callable[[SessionRow], bool] = lambda row: True,
) -> list[Awaited]:
    """At each change of the fleet (its `task` running, setting `changed`), each open session
    looked up again (`_look`) until every one (`any_`: one) has settled, or the deadline
    passed. `counts(row)`: whether a settled row is the outcome (`prompt --wait`: only once
    the run it started was seen)."""

    def try_now(url: str) -> None:  # (a snapshot at once, past the monitor's backoff)
        monitor = fleet.monitor(url)
        if monitor is not None:
            monitor.request_snapshot(urgent=True)

    while True:
        changed.clear()
        view = fleet.current()
        now = time.time()
        for out in outcomes.values():
            if out.code is None:
                _look(out, view, now, try_now, counts)
                # its last message read again at once: unreadable, or a run read cut off, at
                # first sight (--timeout 0 looks once: what that look says is the answer)
                again = _unread(out, now, 0.0 if timeout == 0 else UNREACHABLE_PATIENCE)
                first = out.cut_seen is None
                if timeout != 0 and not _cut_off_confirmed(out, view, now) and first:
                    again = True
                monitor = fleet.monitor(out.row.server) if again and out.row else None
                if monitor is not None:
                    monitor.read_again(out.session_id)
        settled = [o for o in outcomes.values() if o.code is not None]
        if len(settled) == len(outcomes) or (any_ and settled):
            return list(outcomes.values())
        # woken by the stream; the short timer only re-evaluates grace deadlines locally
        wake = LOOK_EVERY if all(s.reachable for s in view.servers) else LOOK_EVERY_DOWN
        stop = await next_change(changed, task, deadline, timeout, wake)
        if stop is not None:
            return _close(outcomes, *stop)


async def _first_read(
    fleet: Fleet, task: asyncio.Task[None], timeout: float | None, settings: Settings
) -> tuple[ExitCode, str] | None:
    """The first look at every server (`--timeout` bounds it; 0: one request's timeout); why
    to stop when no server could be read: none answered in time (TIMEOUT; with `--timeout 0`
    USAGE, as the one look could not be made: "timed out" would say the run was seen not
    settled) or each said why not (USAGE). None: at least one was read."""
    first_look = None if timeout is None else (timeout or settings.request_timeout)
    pending = await first_looks(fleet, task, first_look)
    read = fleet.current().servers  # what the monitors published, as every reader sees
    if any(s.first_snapshot for s in read):
        return None
    if task.done():  # (before any first look ended: no --timeout ran out)
        return ExitCode.USAGE, why_stopped(task)
    if pending and timeout == 0:  # the one look could not be made: nothing was seen
        return ExitCode.USAGE, "; ".join(
            s.why_unread()
            if s.error
            else f"{s.url}: no answer within {first_look:g}s (the server answers too slowly)"
            for s in read
        )
    if pending:
        return ExitCode.TIMEOUT, f"timed out after {first_look:g}s (no snapshot yet)"
    return ExitCode.USAGE, "; ".join(s.why_unread() for s in read) or NO_SERVER


def _look(
    out: Awaited,
    view: View,
    now: float,
    try_now: Callable[[str], None],
    counts: Callable[[SessionRow], bool] = lambda row: True,
) -> None:
    """Look for an open session in the View: its row on a readable server gives its exit code
    once it has settled (and `counts`); on no server while every server is read, it is unknown
    (USAGE); on (or maybe on) a server that cannot be read now, it waits for that server a
    while (`try_now(url)` asks it again at once: `_unreadable`)."""
    row = _best_copy(view, out.session_id)
    info = _server(view, row.server) if row is not None else None
    if row is not None and info is not None and info.reachable:
        out.row, out.message, out.last_try = row, None, None
        out.code = exit_code_for(row) if counts(row) else None
        return
    if row is not None:
        out.row = row
    down = [s for s in view.servers if not s.reachable]
    if not down:
        out.code = ExitCode.USAGE
        if out.row is not None and out.row.server not in {s.url for s in view.servers}:
            # seen before on a server that left (taken out of the servers file, gone from
            # discovery): not an unknown session
            out.message = f"its server {out.row.server} is no longer watched"
            return
        urls = ", ".join(s.url for s in view.servers)
        out.message = f"unknown session {out.session_id} on {urls}"
        return
    _unreadable(out, [info] if info is not None else down, now, try_now)


def _best_copy(view: View, session_id: str) -> SessionRow | None:
    """The session's row; of several (named servers reading one storage each list it; the
    fleet keeps one copy only of discovered ones), a readable server's, and of those the one
    running it (`live_rank`: the others infer the run from the storage, and read it cut off
    while it runs): `wait` exited 5 for a running session when the other server was named
    first. A copy read cut off while another copy's server is down: the down one's."""

    def down(row: SessionRow) -> bool:
        info = _server(view, row.server)
        return info is None or not info.reachable

    found = view.find(session_id)
    best = min(found, key=lambda row: (down(row), live_rank(row)), default=None)
    if best is not None and best.reason == "interrupted":
        # read cut off by a server that infers the run from the storage, while one that may
        # be running it cannot be read now (a blip): that one's word is waited for
        return next((row for row in found if down(row)), best)
    return best


def _unread(out: Awaited, now: float, patience: float) -> bool:
    """A row read as unknown only because its last message could not be read (a 500 on that
    one request) is no outcome: `wait` exited 5 for a run that completed. It waits for a read
    that succeeds, and says the failure (USAGE) once it has lasted `patience` s, as for a
    server that cannot be read (`--timeout 0`: at once). Whether the session's message is to
    be asked again now (the first look that found it unreadable)."""
    row = out.row
    why = next((e for e in row.evidence if e.startswith(UNREADABLE)), None) if row else None
    if out.code is None or row is None or row.state != "unknown" or why is None:
        out.unread_since = None
        return False
    first = out.unread_since is None
    if out.unread_since is None:
        out.unread_since = now
    if not patience or now - out.unread_since > patience:
        out.code = ExitCode.USAGE
        out.message = f"{row.server}: {why}" + (
            f" (gave up after {patience:g}s)" if patience else ""
        )
        return False
    out.code = None
    return first


def _server(view: View, url: str) -> ServerInfo | None:
    """The View's server at `url` (the last listed at it; None: not one of its servers)."""
    return next((s for s in reversed(view.servers) if s.url == url), None)


def _cut_off_confirmed(out: Awaited, view: View, now: float) -> bool:
    """A run read as cut off (unknown, interrupted) is said only once a snapshot begun after
    a View first said so says it too (False until then: the code is taken back, and `cut_seen`
    set when it is first seen). A snapshot that reads the status gone but the last message
    not yet final reads a run cut off: `wait` exited 5 for a run `ocwatch abort` had just
    ended (seen on CI; the server seems to drop an aborted run's status a moment before it
    writes the message that says so).
    Any other outcome: True."""
    row = out.row
    if out.code is None or row is None or row.reason != "interrupted":
        out.cut_seen = None
        return True
    info = _server(view, row.server)
    if out.cut_seen is not None and info is not None and (info.snapshot_at or 0.0) > out.cut_seen:
        return True
    if out.cut_seen is None:
        out.cut_seen = now
    out.code = None
    return False


def _unreadable(
    out: Awaited, holders: Sequence[ServerInfo], now: float, try_now: Callable[[str], None]
) -> None:
    """A session on (or maybe on) servers that cannot be read now: said why; USAGE when they
    were never read, or have not been for UNREACHABLE_PATIENCE and a last try of each, asked
    once the patience ran out, failed too (a try begun since: one begun before that ends
    later is no answer to it; else it waits for them, at most LAST_TRY_WAIT). Their monitors
    back off between tries (up to 8-15 s), so the last try before then may be seconds old:
    `wait` gave up on a server that had been back a while (a restart). `try_now(url)` asks
    it."""
    since = min((s.error_since or now) for s in holders)
    out.message = "; ".join(s.why_unread() for s in holders)
    if not any(s.first_snapshot for s in holders):
        out.code = ExitCode.USAGE
        return
    if now - since <= UNREACHABLE_PATIENCE:
        return
    if out.last_try is None:
        out.last_try = now
        for s in holders:
            try_now(s.url)
        return
    tried = all((s.error_at or now) > out.last_try for s in holders)
    if tried or now - out.last_try > LAST_TRY_WAIT:
        out.code = ExitCode.USAGE
        out.message += f" (gave up after {UNREACHABLE_PATIENCE:g}s)"


async def next_change(
    changed: asyncio.Event,
    task: asyncio.Task[None],
    deadline: float | None,
    timeout: float | None,
    wake: float,
) -> tuple[ExitCode, str] | None:
    """Wait for the fleet's next change, at most `wake` seconds (less when the deadline is
    nearer); why to stop instead: the deadline passed (TIMEOUT, after `timeout` s) or the
    monitor stopped (USAGE). None: look again."""
    if deadline is not None:
        left = deadline - asyncio.get_running_loop().time()
        if left <= 0:
            return ExitCode.TIMEOUT, f"timed out after {timeout:g}s"
        wake = min(wake, left)
    if task.done():
        return ExitCode.USAGE, why_stopped(task)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(changed.wait(), timeout=wake)
    return None


def why_stopped(task: asyncio.Task[None]) -> str:
    """What a monitor task that ended says: its error, or that it stopped (cancelled, or
    returned: a fleet whose monitors all ended)."""
    if task.cancelled() or task.exception() is None:
        return "monitor stopped"
    return f"monitor stopped: {task.exception()}"


NO_SERVER = "no server to watch (`ocwatch servers` says what was looked at)"


async def first_looks(fleet: Fleet, task: asyncio.Task[None], timeout: float | None) -> int:
    """Wait until every server's first snapshot attempt ended (or the monitor task did, or
    `timeout` passed); returns how many servers have not answered yet."""
    loop = asyncio.get_running_loop()
    pending = {asyncio.ensure_future(m.first_snapshot()) for m in fleet.monitors}
    end = None if timeout is None else loop.time() + timeout
    try:
        while pending and not task.done():
            left = None if end is None else end - loop.time()
            if left is not None and left <= 0:
                break
            done, pending = await asyncio.wait(
                pending | {task}, timeout=left, return_when=asyncio.FIRST_COMPLETED
            )
            pending.discard(task)
    finally:
        for f in pending:
            f.cancel()
    return len(pending)


def _close(outcomes: dict[str, Awaited], code: int, message: str) -> list[Awaited]:
    """Give every open outcome `code` and `message`; return them all."""
    for out in outcomes.values():
        if out.code is None:
            out.code, out.message = code, message
    return list(outcomes.values())


async def wait_for(
    session_id: str,
    url: str,
    *,
    auth: Auth | None,
    settings: Settings,
    timeout: float | None,
    on_ready: Callable[[], None] | None = None,
) -> tuple[int, SessionRow | None, str | None]:
    """One session on one server: (exit code, last row seen, message for stderr). `on_ready` is
    called once the first snapshot is in (tests use it to know the waiter follows the server)."""
    servers = Servers((url,), settings, auth)
    (out,) = await wait_many([session_id], servers, timeout=timeout, on_ready=on_ready)
    return out.code if out.code is not None else ExitCode.USAGE, out.row, out.message


def run_wait(
    session_ids: Sequence[str],
    servers: Servers,
    *,
    timeout: float | None,
    as_json: bool,
    any_: bool = False,
) -> int:
    outs = asyncio.run(wait_many(session_ids, servers, timeout=timeout, any_=any_))
    if len(outs) == 1:
        out = outs[0]
        return report(
            out.code if out.code is not None else ExitCode.USAGE, out.row, out.message, as_json
        )
    return report_many(outs, any_, as_json)


def report_many(outs: Sequence[Awaited], any_: bool, as_json: bool) -> int:
    """Print several sessions' results; returns the overall exit code."""
    # --all: the worst of all; --any: of those that settled (the first, or the worst of the
    # first ones when several settled at once)
    code = worst(o.code for o in outs if o.code is not None)
    with pipe_safe():
        if as_json:
            print(
                text.dumps(
                    {
                        "exit_code": code,
                        "mode": "any" if any_ else "all",
                        "sessions": [
                            {
                                "id": o.session_id,
                                "exit_code": o.code,
                                "message": o.message,
                                "session": o.row.to_json() if o.row else None,
                            }
                            for o in outs
                        ],
                    },
                    indent=2,
                )
            )
        else:
            for o in outs:
                print(
                    f"{literal(o.session_id, escapes=True)}: "
                    + (words.waited(o.row) if o.row is not None else "not found")
                    + ("" if o.code is not None else " (still waiting)")
                    + (f" [exit {o.code}]" if o.code is not None else "")
                )
    for o in outs:
        if o.message and o.code not in (None, ExitCode.COMPLETED):
            say("wait", f"{o.session_id}: {o.message}")
    return code


def report(code: int, row: SessionRow | None, message: str | None, as_json: bool) -> int:
    """Print wait's result (server text made literal) and return the exit code."""
    with pipe_safe():
        if as_json:
            out: dict[str, Any] = {
                "session": row.to_json() if row else None,
                "exit_code": code,
                "message": message,
            }
            print(text.dumps(out, indent=2))
        elif row is not None:  # its last state, also when it timed out
            print(f"{literal(row.id, escapes=True)}: {words.waited(row)}")
            for p in row.pending:
                print(
                    f"  waiting for: {literal(p.summary, escapes=True)} "
                    f"[{literal(p.id, escapes=True)}]"
                )
    if message:
        say("wait", message)
    return code
