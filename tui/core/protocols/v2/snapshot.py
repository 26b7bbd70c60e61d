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
from typing import Any, NamedTuple

from pydantic import ValidationError

from ...client import Client, NotFound, OcwatchError
from ...decide import clock_text
from ...models import Message, PermissionRequest, QuestionRequest, Session, SessionStatus
from ...snapshot import (
    MessageCache,
    Relist,
    Snapshot,
    _models,
    confined,
    each_in_turn,
    reverified_first,
    unreadable_why,
)
from . import wire

#: Transcript entries read per session: the last turn and the markers after it
TAIL = 8


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
    if listed is not None and msg is not None:  # (an outcome no turn dates says nothing)
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
    older than `vouch_max_age` are read again, `reverify` of them at most (None: all)."""
    started = clock()
    before = client.requests
    bad_names: list[str] = []
    listed: dict[str, tuple[str | None, float | None]] = {}
    if relist is None:
        info = info or await client.info()
        raw_sessions = await client.v2_sessions()
        canon: list[dict[str, Any]] = []
        for raw in raw_sessions:
            t = raw.get("time") if isinstance(raw.get("time"), dict) else {}
            idle = t.get("idle") if isinstance(t, dict) else None
            outcome = raw.get("outcome")
            listed[str(raw.get("id"))] = (
                outcome if isinstance(outcome, str) else None,
                wire.num(idle),
            )
            canon.append(wire.session(raw))
        sessions_list, bad = cache.sessions_from(canon)
        bad_names += bad
        sessions = {s.id: s for s in sessions_list}
        version = info.get("version") if isinstance(info.get("version"), str) else None
        pid = info.get("pid")
        instance = str(pid) if isinstance(pid, int | str) else None
        listed_at = started
        found = {s.directory for s in sessions_list if s.directory}
    else:
        sessions = relist.sessions
        sessions_list = list(sessions.values())
        version, listed_at, instance = relist.version, relist.listed_at, relist.instance
        found = {d for d in relist.folders if d} | {
            s.directory for s in sessions_list if s.directory
        }
    dirs: list[str | None] = [*sorted(found)] or [None]

    async def per_folder(d: str | None) -> tuple[list[Any], list[Any]]:
        perms, forms = await asyncio.gather(
            client.v2_pending("/api/permission/request", d), client.v2_pending("/api/form", d)
        )
        return perms, forms

    active, results = await asyncio.gather(
        client.v2_active(), asyncio.gather(*(per_folder(d) for d in dirs))
    )
    permissions: dict[str, PermissionRequest] = {}
    questions: dict[str, QuestionRequest] = {}
    for perms, forms in results:
        ps, bad = _models(
            [wire.permission(p) for p in perms if isinstance(p, dict)],
            PermissionRequest,
            "permission",
        )
        bad_names += bad
        permissions.update({p.id: p for p in ps})
        qs, bad = _models(
            [wire.form(f) for f in forms if isinstance(f, dict)], QuestionRequest, "form"
        )
        bad_names += bad
        questions.update({q.id: q for q in qs})

    touched_set = set(touched)
    need: list[Session] = []
    vouched = 0
    since = vouched_since() if vouch is not None else None
    overdue: list[tuple[float, Session]] = []  # vouched but for their age: (fetched, session)

    def vouch_for(s: Session) -> None:
        assert vouch is not None
        running = s.id in active
        read = cache.get(s.id)
        now = vouch(s.id, read)
        cache.vouch(s, now, running)
        said = expected_status(s.id)
        old = cache.tails[s.id]
        if (now.info.id if now else None) != (read.info.id if read else None):
            # a newer turn than the one read: what the tail said of the read one is void
            cache.tails[s.id] = Tail(None, None, None, said, False)
        else:
            cache.tails[s.id] = Tail(old.outcome, old.idle_at, old.retry, said, old.shut_down)

    for s in sessions_list:
        running = s.id in active
        if (
            not running
            and s.id not in touched_set
            and s.id in cache.tails
            and cache.fresh(s, started)
        ):
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
            vouch_for(s)
            vouched += 1
            continue
        need.append(s)
    again, still = reverified_first(overdue, reverify)
    need += again  # read again: the safety net, a few at a time
    for s in still:
        vouch_for(s)
        vouched += 1
    need.sort(key=lambda s: (s.id not in active, -s.time.updated))

    def snapshot_now(loading: frozenset[str] = frozenset()) -> Snapshot:
        status: dict[str, SessionStatus] = {}
        for sid in sessions:
            st = status_of(
                sid, sid in active, cache.get(sid), cache.tails.get(sid), listed.get(sid)
            )
            if st is not None:
                status[sid] = st
        return Snapshot(
            server=client.url,
            started_at=started,
            sessions=sessions,
            status=status,
            permissions=permissions,
            questions=questions,
            messages={sid: cache.get(sid) for sid in sessions},
            version=version,
            journal_seq=journal_seq,
            requests=client.requests - before,
            vouched=vouched,
            reverified=len(again),
            skipped=len(bad_names),
            malformed=tuple(bad_names[:5]),
            loading=loading,
            folders=tuple(dirs),
            listed_at=listed_at,
            protocol="v2",
            instance=instance,
            unreadable=dict(unreadable),
        )

    unreadable: dict[str, str] = {}

    def unread(sid: str, why: str) -> None:
        unreadable[sid] = why
        bad_names.append(f"last message of {sid[:80]}")  # (said as every record not read)
        cache.forget(sid)  # read again by the next snapshot

    done = 0
    if progress is not None:
        progress(0, len(need))
    if partial is not None and need:
        partial(snapshot_now(frozenset(s.id for s in need)))

    async def tail_of(sid: str) -> None:
        nonlocal done
        s = sessions[sid]
        try:
            try:
                entries = await client.v2_messages(sid, TAIL)
            except NotFound:  # deleted between the list and this request
                cache.put(s, None, fetched=started)
                cache.tails[sid] = Tail(None, None, None)
                return
            except OcwatchError as exc:
                if not confined(exc):
                    raise
                unread(sid, unreadable_why(exc, sid))
                return
            raw_msg, tail = read_tail(entries, sid)
            msg: Message | None = None
            if raw_msg is not None:
                try:
                    msg = Message.parse(raw_msg)
                except ValidationError:
                    unread(sid, "its last message is malformed")
                    return
            cache.put(s, msg, running=sid in active, fetched=started)
            cache.tails[sid] = tail  # (read: nothing vouched for any more)
        finally:
            done += 1
            if progress is not None:
                progress(done, len(need))

    await each_in_turn([s.id for s in need], tail_of, concurrency)
    cache.prune(sessions)
    return snapshot_now()
