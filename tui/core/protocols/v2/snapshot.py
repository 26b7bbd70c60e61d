"""The V2 snapshot: everything derive() needs from one OpenCode 2.x server, read at one moment.

`/api/info` (version, the server's pid), every session (`/api/session`, paged: all folders),
the running ones (`/api/session/active`), pending permissions and forms of every folder the
sessions live in, and the transcript tail of each session that may have changed. The result is
the shared `Snapshot` (V1's shapes, tui.core.protocols.v2.wire), so full reconciliation, the
journal's cut and derive are exactly V1's.

How the status map is made (V2 has none):
- listed by `/api/session/active`: `busy`, or `retry` while its unfinished assistant message
  waits on a retry (`retry {attempt, at, error}`);
- not listed, and the transcript's newest entry after its last turn is an `idle {outcome}`
  marker (or the session's `outcome`, dated by `time.idle` after that turn): idle with that
  outcome as its reason (succeeded: completed, failed: error, interrupted: aborted);
- else absent: the last turn decides, as on V1 (an aborted step after a reject or a dismiss,
  which 2.0.15 ends with no marker; an assistant message never completed: cut off).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pydantic import ValidationError

from ...client import Client, NotFound, OcwatchError
from ...decide import clock_text
from ...models import Message, PermissionRequest, QuestionRequest, Session, SessionStatus
from ...snapshot import (
    Gathered,
    MessageCache,
    Relist,
    Snapshot,
    _models,
    confined,
    each_in_turn,
    narrow,
    per_folder,
    reverified_first,
    unreadable_why,
)
from . import wire

#: Transcript entries read per session: the last turn and the markers after it
TAIL = 8
#: Entries read at most when the newest TAIL hold no turn (agent or model switches, shell
#: commands after a run): the tail is read again, four times as deep each time, up to this
TAIL_MAX = 128


class Tail(NamedTuple):
    """What a transcript's tail says besides its last turn."""

    outcome: str | None  # the idle marker after the last turn (None: none)
    idle_at: float | None  # its time, epoch ms
    retry: dict[str, Any] | None  # the retry the unfinished last turn waits on (V1's shape)
    #: a tail not read again but vouched for by the stream: the status the events since the
    #: read say (None: none said), which the status map then takes
    vouched: SessionStatus | None = None
    #: the last turn is a step the server aborted with no marker after it and no refusal of the
    #: user's in it: what 2.0.15 leaves when it is stopped mid-run (SIGTERM)
    shut_down: bool = False


def read_tail(entries: list[dict[str, Any]], sid: str) -> tuple[dict[str, Any] | None, Tail]:
    """The last turn of a transcript tail (newest first) as V1's message, and its Tail."""
    outcome: str | None = None
    idle_at: float | None = None
    for raw in entries:
        kind = raw.get("type")
        if kind == "idle":
            if outcome is None:
                got = raw.get("outcome")
                outcome = got if isinstance(got, str) else "unknown"
                t = raw.get("time")
                idle_at = wire.num(t.get("created")) if isinstance(t, dict) else None
            continue
        msg = wire.message(raw, sid)
        if msg is None:
            continue
        cut = outcome is None and wire.cut_by_shutdown(raw)
        return msg, Tail(outcome, idle_at, wire.retry_of(raw), shut_down=cut)
    return None, Tail(outcome, idle_at, None)


def status_of(
    sid: str,
    running: bool,
    msg: Message | None,
    tail: Tail | None,
    listed: tuple[str | None, float | None] | None,
) -> SessionStatus | None:
    """A session's entry in the status map (see the module's docstring). `listed`: the
    session's `outcome` and `time.idle` as listed (None: not read this time)."""
    if (
        tail is not None
        and tail.vouched is not None
        and (running == (tail.vouched.type in ("busy", "retry")))
    ):
        return tail.vouched
    if running:
        if tail is not None and tail.retry is not None:
            return SessionStatus.parse(tail.retry)
        return SessionStatus(type="busy")
    turn_at = 0.0
    if msg is not None:
        turn_at = msg.info.time.created
    if tail is not None and tail.outcome is not None:
        reason = wire.OUTCOME_REASON.get(tail.outcome)
        if reason is not None:
            when = f" at {clock_text(tail.idle_at / 1000)}" if tail.idle_at else ""
            return SessionStatus(
                type="idle", reason=reason, message=f"transcript: idle ({tail.outcome}){when}"
            )
    # (an outcome no turn dates says nothing; nor against a turn that says no time)
    if listed is not None and msg is not None and turn_at > 0:
        outcome, idle_at = listed
        reason = wire.OUTCOME_REASON.get(outcome or "")
        if reason is not None and idle_at is not None and idle_at >= turn_at:
            return SessionStatus(
                type="idle",
                reason=reason,
                message=f"session outcome {outcome} (idle at {clock_text(idle_at / 1000)})",
            )
    if tail is not None and tail.shut_down:
        return SessionStatus(
            type="idle",
            reason="interrupted",
            message=(
                "last step aborted by the server with no idle marker and no refusal of the "
                "user's: the server stopped mid-run"
            ),
        )
    return None


async def fetch_snapshot_v2(
    client: Client,
    cache: MessageCache,
    *,
    clock: Callable[[], float],
    journal_seq: int = 0,
    touched: Iterable[str] = (),
    concurrency: int = 8,
    progress: Callable[[int, int], None] | None = None,
    partial: Callable[[Snapshot], None] | None = None,
    relist: Relist | None = None,
    info: dict[str, Any] | None = None,
    vouch: Callable[[str, Message | None], Message | None] | None = None,
    vouched_since: Callable[[], float | None] = lambda: None,
    vouch_max_age: float = 300.0,
    expected_status: Callable[[str], SessionStatus | None] = lambda _sid: None,
    reverify: int | None = None,
    focus: frozenset[str] | None = None,
    **_unused: Any,
) -> Snapshot:
    """Read one complete V2 Snapshot. Raises OcwatchError when the server cannot answer.
    `info`: the `/api/info` answer the probe already read. `relist`: the session list is not
    read (nor `/api/info`): the maps are asked for its folders. `progress` and `partial` as
    for V1's fetch_snapshot (the sessions whose transcript is still read are `loading`).
    A light touch, as V1's: the transcript of a running or touched session is read again unless
    the event stream vouches for it (`vouched_since()`, MessageCache.vouched) and says it runs
    when the active list does (`expected_status(id)`): then `vouch(id, cached message)` brings
    it up to date from the journal, and the status the events say is its entry. Vouched tails
    older than `vouch_max_age` are read again, `reverify` of them at most (None: all).
    `focus`: of those sessions and their descendants only (tui.core.snapshot.narrow).

    The steps, as V1's: list the sessions (`_list_sessions`), read the active list and the
    open asks (`_read_maps`), choose whose transcript tail to read (`_choose_reads`), read them
    (`_read_tails`)."""
    got = _Gathered(client, cache, clock(), journal_seq, client.requests)
    await _list_sessions(got, relist, info)
    if focus is not None:
        got.listed = narrow(got, focus)
    await _read_maps(got)
    need = _choose_reads(
        got,
        set(touched),
        vouch=vouch,
        since=vouched_since() if vouch is not None else None,
        vouch_max_age=vouch_max_age,
        expected_status=expected_status,
        reverify=reverify,
    )
    await _read_tails(got, need, concurrency, progress, partial)
    cache.prune(got.sessions)
    return got.snapshot()


@dataclass
class _Gathered(Gathered):
    """V2's: no status map (it is made from the active list and each transcript), the listed
    order and outcomes, and the server's instance."""

    listed: list[Session] = field(default_factory=list)  # the sessions in the server's order
    #: per session, its `outcome` and `time.idle` as listed (none: the list was not read)
    outcomes: dict[str, tuple[str | None, float | None]] = field(default_factory=dict)
    instance: str | None = None

    def snapshot(self, loading: frozenset[str] = frozenset()) -> Snapshot:
        cache = self.cache
        status: dict[str, SessionStatus] = {}
        for sid in self.sessions:
            st = status_of(
                sid,
                sid in self.active,
                cache.get(sid),
                cache.tails.get(sid),
                self.outcomes.get(sid),
            )
            if st is not None:
                status[sid] = st
        return self.made(status, loading, protocol="v2", instance=self.instance)


async def _list_sessions(
    got: _Gathered, relist: Relist | None, info: dict[str, Any] | None
) -> None:
    """Step 1: the sessions (with each one's listed outcome), their folders, the version and
    the server's instance (its pid): read from the server (`/api/info` unless the probe read
    it, every session), or taken from `relist`."""
    if relist is not None:
        got.sessions = relist.sessions
        got.listed = list(got.sessions.values())
        got.version, got.listed_at, got.instance = relist.version, relist.listed_at, relist.instance
        found = {d for d in relist.folders if d} | {s.directory for s in got.listed if s.directory}
    else:
        info = info or await got.client.info()
        canon: list[dict[str, Any]] = []
        for raw in await got.client.v2_sessions():
            got.outcomes[str(raw.get("id"))] = _listed_outcome(raw)
            canon.append(wire.session(raw))
        got.listed, bad = got.cache.sessions_from(canon)
        got.bad_names += bad
        got.sessions = {s.id: s for s in got.listed}
        got.version = info.get("version") if isinstance(info.get("version"), str) else None
        pid = info.get("pid")
        got.instance = str(pid) if isinstance(pid, int | str) else None
        got.listed_at = got.started
        found = {s.directory for s in got.listed if s.directory}
    got.folders = [*sorted(found)] or [None]


def _listed_outcome(raw: dict[str, Any]) -> tuple[str | None, float | None]:
    """A listed session's `outcome` and `time.idle` (epoch ms), when they are there."""
    t = raw.get("time") if isinstance(raw.get("time"), dict) else {}
    idle = t.get("idle") if isinstance(t, dict) else None
    outcome = raw.get("outcome")
    return outcome if isinstance(outcome, str) else None, wire.num(idle)


async def _read_maps(got: _Gathered) -> None:
    """Step 2: the active list, and the open permissions and forms of every folder
    (per_folder, a few folders at a time)."""
    client = got.client

    async def pending(d: str | None) -> tuple[list[Any], list[Any]]:
        perms, forms = await asyncio.gather(
            client.v2_pending("/api/permission/request", d), client.v2_pending("/api/form", d)
        )
        return perms, forms

    got.active, results = await asyncio.gather(client.v2_active(), per_folder(got.folders, pending))
    for perms, forms in results:
        ps, bad = _models(
            [wire.permission(p) for p in perms if isinstance(p, dict)],
            PermissionRequest,
            "permission",
        )
        got.bad_names += bad
        got.permissions.update({p.id: p for p in ps})
        qs, bad = _models(
            [wire.form(f) for f in forms if isinstance(f, dict)], QuestionRequest, "form"
        )
        got.bad_names += bad
        got.questions.update({q.id: q for q in qs})


def _choose_reads(
    got: _Gathered,
    touched: set[str],
    *,
    vouch: Callable[[str, Message | None], Message | None] | None,
    since: float | None,
    vouch_max_age: float,
    expected_status: Callable[[str], SessionStatus | None],
    reverify: int | None,
) -> list[Session]:
    """Step 3: the sessions whose transcript tail is read, in the order to read (running
    first, then the most recently updated). The others keep their cached tail: fresh and not
    running nor touched, or vouched for by the event stream (brought up to date here, by
    `_vouch_for`; those vouched for longer than `vouch_max_age` are read again, `reverify` at
    most)."""
    cache, started, active = got.cache, got.started, got.active
    need: list[Session] = []
    overdue: list[tuple[float, Session]] = []  # vouched but for their age: (fetched, session)
    for s in got.listed:
        running = s.id in active
        if not running and s.id not in touched and s.id in cache.tails and cache.fresh(s, started):
            continue
        said = expected_status(s.id) if vouch is not None else None
        if (
            vouch is not None
            and s.id in cache.tails
            and cache.vouched(s, since, started, math.inf)
            and (said is not None and said.type in ("busy", "retry")) == running
        ):
            fetched = cache.entries[s.id][3]
            if started - fetched > vouch_max_age:
                overdue.append((fetched, s))
                continue
            _vouch_for(got, s, vouch, expected_status)
            continue
        need.append(s)
    again, still = reverified_first(overdue, reverify)
    need += again  # read again: the safety net, a few at a time
    got.reverified = len(again)
    for s in still:
        assert vouch is not None
        _vouch_for(got, s, vouch, expected_status)
    need.sort(key=lambda s: (s.id not in active, -s.time.updated))
    return need


def _vouch_for(
    got: _Gathered,
    s: Session,
    vouch: Callable[[str, Message | None], Message | None],
    expected_status: Callable[[str], SessionStatus | None],
) -> None:
    """A session the event stream vouches for: its cached message brought up to date from the
    journal, and its tail made to say the status the events say (what the tail said of an
    older turn is void)."""
    cache = got.cache
    read = cache.get(s.id)
    now = vouch(s.id, read)
    cache.vouch(s, now, s.id in got.active)
    said = expected_status(s.id)
    old = cache.tails[s.id]
    if (now.info.id if now else None) != (read.info.id if read else None):
        cache.tails[s.id] = Tail(None, None, None, said, False)
    else:
        cache.tails[s.id] = Tail(old.outcome, old.idle_at, old.retry, said, old.shut_down)
    got.vouched += 1


async def _read_tails(
    got: _Gathered,
    need: list[Session],
    concurrency: int,
    progress: Callable[[int, int], None] | None,
    partial: Callable[[Snapshot], None] | None,
) -> None:
    """Step 4: read the transcript tail of each of `need`, `concurrency` at a time, telling
    `progress` after each (`partial` is handed the Snapshot once, before the first)."""
    client, cache, started = got.client, got.cache, got.started
    done = 0
    if progress is not None:
        progress(0, len(need))
    if partial is not None and need:
        partial(got.snapshot(frozenset(s.id for s in need)))

    async def tail_of(sid: str) -> None:
        nonlocal done
        s = got.sessions[sid]
        try:
            limit = TAIL
            while True:
                try:
                    entries = await client.v2_messages(sid, limit)
                except NotFound:  # deleted between the list and this request
                    cache.put(s, None, fetched=started)
                    cache.tails[sid] = Tail(None, None, None)
                    return
                except OcwatchError as exc:
                    if not confined(exc):
                        raise
                    got.unread(sid, unreadable_why(exc, sid))
                    return
                raw_msg, tail = read_tail(entries, sid)
                if raw_msg is not None or len(entries) < limit:
                    break  # (a turn, or the whole transcript read)
                if limit >= TAIL_MAX:
                    got.unread(sid, f"no turn among the newest {limit} transcript entries")
                    return
                limit = min(limit * 4, TAIL_MAX)
            msg: Message | None = None
            if raw_msg is not None:
                try:
                    msg = Message.parse(raw_msg)
                except ValidationError:
                    got.unread(sid, "its last message is malformed")
                    return
            cache.put(s, msg, running=sid in got.active, fetched=started)
            cache.tails[sid] = tail  # (read: nothing vouched for any more)
        finally:
            done += 1
            if progress is not None:
                progress(done, len(need))

    await each_in_turn([s.id for s in need], tail_of, concurrency)
