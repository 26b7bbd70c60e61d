"""derive(): the pure function from (snapshot, journal, now, settings) to the View's rows.

No clock reads, no I/O, no mutation of inputs. The decision order (DESIGN.md):
input > retry > busy (stale detection) > idle with reason > unknown.
"""

from __future__ import annotations

import gc
import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import cast

from .journal import Entry, Facts, fold, merge_message, sessions_after, status_after
from .models import (
    Message,
    MessageError,
    MessageInfo,
    Part,
    PermissionRequest,
    QuestionRequest,
    Session,
    SessionStatus,
    id_time,
)
from .settings import Settings
from .snapshot import Snapshot
from .view import Pending, Reason, SessionRow, Settling, State

#: Finishes that do not end a run: the model asked for tools and another step follows.
NON_TERMINAL_FINISH = frozenset({"tool-calls", "tool_calls", "unknown"})
SERVER_REASONS: dict[str, Reason] = {
    "completed": "completed", "aborted": "aborted", "error": "error",
    "interrupted": "interrupted", "failed": "error", "cancelled": "aborted"}


@dataclass(frozen=True, slots=True)
class Link:
    """How the monitor currently reaches the server (an input to derive, not a clock read)."""

    reachable: bool = True
    error: str | None = None
    since: float | None = None


def ms(t: float | None) -> float | None:
    return None if t is None or t == 0 else t / 1000.0


#: "HH:MM" for each minute of a day, ":SSZ" for each second of a minute
_HM = tuple(f"{h:02d}:{m:02d}" for h in range(24) for m in range(60))
_SZ = tuple(f":{sec:02d}Z" for sec in range(60))


def clock_text(t: float) -> str:
    """HH:MM:SSZ in UTC (two table lookups: formatting dominated derive's hot path)."""
    sec = int(t) % 86400
    return _HM[sec // 60] + _SZ[sec % 60]


class Deadline:
    """When a decision read the clock: the first moment it could come out differently
    (a grace period ending, an "N s ago" text ticking). The memo reuses a row until then."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at = math.inf

    def by(self, t: float) -> None:
        if t < self.at:
            self.at = t

    def tick(self, now: float, t: float) -> None:
        """ago(now, t) changes its text at the next whole second after t."""
        self.by(t + int(max(0.0, now - t)) + 1)


class _Unread(Deadline):
    """The deadline of a decision no memo will reuse: nothing to record."""

    __slots__ = ()

    def by(self, t: float) -> None:
        pass

    def tick(self, now: float, t: float) -> None:
        pass


_UNREAD = _Unread()
#: A session's last message while a first snapshot has not read it yet (Snapshot.loading)
_LOADING = cast(Message, object())


def ago(now: float, t: float) -> str:
    d = int(max(0.0, now - t))
    if d < 60:
        return f"{d}s ago"
    if d < 3600:
        return f"{d // 60}m{d % 60:02d}s ago"
    return f"{d // 3600}h{d % 3600 // 60:02d}m ago"


def _pending_of(
    req: PermissionRequest | QuestionRequest,
) -> Pending:
    if isinstance(req, PermissionRequest):
        cmd = req.command
        pats = ", ".join(req.patterns)
        summary = f"permission {req.permission or '?'}"
        if cmd:
            summary += f": {cmd}"
        elif pats:
            summary += f": {pats}"
        return Pending("permission", req.id, req.session_id, summary, req)
    qs = req.questions
    first = qs[0].question if qs else ""
    summary = f"question: {first}" + (f" (+{len(qs) - 1} more)" if len(qs) > 1 else "")
    return Pending("question", req.id, req.session_id, summary, req)


#: A reusable row: (journal mark, requests, busy descendants, Session, row, valid until, the
#: snapshot's last message, the snapshot's status entry, listed as active, the row's key,
#: derived at, when the snapshot said it runs)
_Memoed = tuple[int | None, tuple[object, ...], tuple[str, ...], Session, SessionRow, float,
                Message | None, SessionStatus | None, bool, tuple[str, str], float, float | None]


@dataclass
class DeriveMemo:
    """Rows derive() may reuse on its next call (owned by one caller, e.g. a ServerMonitor).

    A row is reused only when nothing it was derived from changed:
    - the same Session object, the same last-message object and an equal status entry in the
      snapshot, the same membership of the active list (a resync reuses the objects of sessions
      that did not change: MessageCache, MessageCache.sessions_from);
    - what the journal says of the session: the same fold (`Facts`, held here) and the same
      per-session event count; or, across a snapshot cut, no journal fact about it at all, then
      or now;
    - equal requests rolled up (the requests themselves and when they were asked), the same busy
      descendants and children;
    - a clock not before the row was derived and still before the decision's Deadline (a grace
      period ending, an "N s ago" ticking);
    - the caller's previous row is this row (time-in-state is read from it).
    Passing a memo never changes the result; a property test holds it to that.

    Between two calls on the same snapshot and fold, with the caller's previous rows, only the
    rows that can differ are looked at (`_candidates`): the sessions the journal changed a fact
    of since (`Facts.changed`), those whose Deadline passed, and their ancestors (the requests
    and busy descendants rolled up); every other row is the previous one.
    """

    snapshot: Snapshot | None = None
    facts: Facts | None = None
    key: tuple[object, ...] = ()
    rows: dict[str, _Memoed] = field(default_factory=dict)
    last_rows: dict[tuple[str, str], SessionRow] | None = None  # what the last call returned
    last_now: float = -math.inf
    consumed: int = 0  # the length of `facts.changed` the last call saw
    deadlines: list[tuple[float, str]] = field(default_factory=list)  # a heap of (at, sid)
    # the keys whose rows the last call changed (other rows: the previous objects); None: it
    # derived every row, any may have changed
    changed: list[tuple[str, str]] | None = None
    merged: _Merged | None = None  # the last call's merged maps (kept up to date)
    order: dict[str, int] = field(default_factory=dict)  # each session's place in the rows


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while rows are built: derive allocates only acyclic, short-lived
    objects, and a full collection over a large snapshot doubled its time (see benchmarks/)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def derive_server(
    snapshot: Snapshot,
    entries: Iterable[Entry] | Facts,
    now: float,
    settings: Settings,
    *,
    previous: dict[tuple[str, str], SessionRow] | None = None,
    link: Link | None = None,
    memo: DeriveMemo | None = None,
) -> dict[tuple[str, str], SessionRow]:
    """Rows of one server. Same inputs, same rows. Only sessions the snapshot lists (or that the
    journal saw created after it) appear. `entries` is the journal, or its fold (Journal.facts()),
    which is the same input already folded."""
    with _gc_paused():
        return _derive(snapshot, entries, now, settings, previous or {}, link or Link(), memo)


#: A session's place in the tree: the requests open on it or below it, its busy descendants, its
#: children (sorted). Sessions with none of these have no entry.
_Family = tuple[tuple[Pending, ...], Sequence[str], tuple[str, ...]]


def _by_id(req: PermissionRequest | QuestionRequest) -> str:
    return req.id


def _children(sessions: dict[str, Session]) -> dict[str, list[str]]:
    """Each listed parent's listed children, in the sessions' order."""
    children: dict[str, list[str]] = {}
    for s in sessions.values():
        parent = s.parent_id
        if parent and parent in sessions:
            children.setdefault(parent, []).append(s.id)
    return children


def _families(
    children: dict[str, list[str]],
    own_pending: dict[str, list[Pending]],
    running: Callable[[str], bool],
) -> dict[str, _Family]:
    """Roll requests and busy descendants up the tree (`children`: see _children; memoised;
    iterative: it can be deep)."""
    rolled: dict[str, tuple[Pending, ...]] = {}
    busy_desc: dict[str, list[str]] = {}
    for root in children:  # leaves need no walk: their own requests are all they have
        if root in rolled:
            continue
        stack: list[tuple[str, bool]] = [(root, False)]
        on_path: set[str] = set()
        while stack:
            sid, done = stack.pop()
            if done:
                on_path.discard(sid)
                pend = list(own_pending.get(sid, ()))
                below: list[str] = []
                for c in children.get(sid, ()):
                    pend.extend(rolled.get(c, ()))
                    if running(c):
                        below.append(c)
                    below.extend(busy_desc.get(c, ()))
                rolled[sid] = tuple(pend)
                busy_desc[sid] = below
                continue
            if sid in rolled or sid in on_path:
                continue
            on_path.add(sid)
            stack.append((sid, True))
            for c in children.get(sid, ()):
                if c not in rolled and c not in on_path:
                    stack.append((c, False))
    out: dict[str, _Family] = {
        sid: (rolled[sid], busy_desc[sid] or (), tuple(sorted(kids)))
        for sid, kids in children.items()}
    for sid, own in own_pending.items():
        if sid not in out:
            out[sid] = (tuple(own), (), ())
    return out


def _derive(
    snapshot: Snapshot,
    entries: Iterable[Entry] | Facts,
    now: float,
    settings: Settings,
    prev: dict[tuple[str, str], SessionRow],
    link: Link,
    memo: DeriveMemo | None,
) -> dict[tuple[str, str], SessionRow]:
    facts = entries if isinstance(entries, Facts) else fold(entries)
    server = snapshot.server
    grace = settings.grace

    # the memo's fast path (see _candidates) first: it brings the merged maps of its last call
    # up to date for the sessions changed since, instead of merging every session again
    cache: dict[str, _Memoed] | None = None
    same_facts = same_snapshot = False
    candidates: list[str] | None = None
    merged: _Merged | None = None
    if memo is not None:
        mkey = (link.reachable, link.error, link.since, grace, server)
        if memo.key != mkey:
            memo.key, memo.rows, memo.last_rows = mkey, {}, None
        same_facts, same_snapshot = memo.facts is facts, memo.snapshot is snapshot
        if same_facts and same_snapshot and memo.merged is not None:
            candidates = _candidates(memo, snapshot, facts, memo.merged, prev, now, server)
            if candidates is not None:
                merged = memo.merged
        memo.snapshot, memo.facts = snapshot, facts
        cache = memo.rows
    if merged is None:
        merged = _merge(snapshot, facts)
        if memo is not None:
            memo.merged = merged
            memo.order = {sid: i for i, sid in enumerate(merged.sessions)}
    sessions, status, active, children = (
        merged.sessions, merged.status, merged.active, merged.children)

    # open requests: snapshot's, plus asked, minus answered
    open_reqs: dict[str, PermissionRequest | QuestionRequest] = {}
    open_reqs.update(snapshot.permissions)
    open_reqs.update(snapshot.questions)
    ask_at: dict[str, float] = {}
    for rid, ask in facts.asked.items():
        open_reqs[rid] = ask.request
        ask_at[rid] = ask.at
    for rid in facts.answered:
        open_reqs.pop(rid, None)

    own_pending: dict[str, list[Pending]] = {}
    for req in sorted(open_reqs.values(), key=_by_id):
        if req.session_id in sessions:
            own_pending.setdefault(req.session_id, []).append(_pending_of(req))

    def running(sid: str) -> bool:
        st = status.get(sid)
        return sid in active or (st is not None and st.type in ("busy", "retry"))

    families = _families(children, own_pending, running)
    # sessions the journal says anything about (a cut's carry included): their rows are reused
    # only while the fold they were derived from is the same
    carried = facts.carried_errors.keys() | facts.carried_status_at.keys()

    # per-server lookups, bound once: the loop below runs once per session
    get_family = families.get
    get_msg, get_status = snapshot.messages.get, status.get
    get_snap_status, snap_active = snapshot.status.get, snapshot.active
    get_status_fact, snap_started = facts.status.get, snapshot.started_at
    get_retrying = facts.retrying.get if facts.retrying else None
    get_error = facts.errors.get if facts.errors else None
    get_touched, get_prev, get_version = facts.touched.get, prev.get, facts.versions.get
    get_hit = cache.get if cache is not None else None
    journal_messages = bool(facts.messages or facts.parts)
    loading = snapshot.loading
    reachable = link.reachable
    no_pending: tuple[Pending, ...] = ()
    no_children: tuple[str, ...] = ()
    pending: tuple[Pending, ...]
    busy: Sequence[str]
    rows: dict[tuple[str, str], SessionRow]
    looked_at: Iterable[tuple[str, Session]]
    if candidates is None:
        rows, looked_at = {}, sessions.items()
    else:  # the previous rows, and only those that can differ looked at again
        rows, looked_at = dict(prev), [(sid, sessions[sid]) for sid in candidates]
    pushed: list[tuple[float, str]] = []
    for sid, s in looked_at:
        family = get_family(sid)
        if family is None:
            pending, busy, kids = no_pending, no_children, no_children
        else:
            pending, busy, kids = family
        msg = snap_msg = get_msg(sid) if not loading or sid not in loading else _LOADING
        # when the server last said the session runs: its status event, else the snapshot
        snap_st = get_snap_status(sid)
        listed = sid in snap_active
        snap_claim = snap_started if snap_st is not None or listed else None
        if get_hit is None:
            key = (server, sid)
            deadline: Deadline = _UNREAD
        else:
            pend_key: tuple[object, ...] = tuple([
                (open_reqs[p.id], ask_at.get(p.id)) for p in pending]) if pending else ()
            busy_t = tuple(busy) if busy else no_children
            mark = get_version(sid)
            if mark is None and carried and sid in carried:
                mark = 0
            hit = get_hit(sid)
            if hit is not None:
                key = hit[9]
                if (hit[3] is s and hit[0] == mark and hit[10] <= now < hit[5]
                        and hit[1] == pend_key and hit[2] == busy_t and hit[6] is snap_msg
                        and hit[8] == listed and (hit[7] is snap_st or hit[7] == snap_st)
                        and hit[11] == snap_claim
                        and hit[4].children == kids and (same_facts or mark is None)
                        and get_prev(key) is hit[4]):
                    rows[key] = hit[4]
                    continue
            else:
                key = (server, sid)
            deadline = Deadline()
        if snap_msg is _LOADING:
            msg = None
        elif journal_messages:
            msg = merge_message(msg, facts, sid)
        info = msg.info if msg is not None else None
        err_fact = get_error(sid) if get_error is not None else None
        st = get_status(sid)
        # the stream's last status fact: when it changed, and whether it said the session runs
        seen_status = get_status_fact(sid)
        status_at = seen_status.at if seen_status is not None else None
        claim = snap_claim if seen_status is None else (
            status_at if seen_status.status is not None else None)
        # when the server last said it does not run: its idle event, else the snapshot
        quiet = (snap_started if snap_claim is None else None) if seen_status is None else (
            seen_status.at if seen_status.status is None else None)
        if get_retrying is not None and st is not None and st.type == "busy" and (
                info is None or (info.role == "assistant" and not info.time.completed
                                 and msg is not None and not msg.parts)):
            last_retry = get_retrying(sid)
            if last_retry is not None:  # busy between two attempts, no output: still retrying
                st = replace(last_retry, message=(
                    f"{last_retry.message or 'retrying'} (next attempt under way)"))
        if snap_msg is _LOADING and not pending and (st is None or st.type != "retry"):
            decision = _loading(st, sid in active, status_at)
        else:
            decision = _decide(
                sid, s, st, sid in active, msg, info, pending, busy,
                err_fact.error if err_fact is not None else None, status_at, claim,
                quiet, ask_at, now, grace, facts, deadline,
            )
        state, reason, stale, evidence, settled, since_hint, ended, settling = decision
        updated = s.time.updated / 1000.0
        if info is not None:
            mt = info.time
            mtime = (mt.completed or mt.created) / 1000.0
            if mtime > updated:
                updated = mtime
        seen = get_touched(sid)
        if seen is not None and seen > updated:
            updated = seen
        old = get_prev(key)
        if old is not None and old.settling in ("unreachable", "loading"):
            old = None  # what an outage or a first snapshot loading showed is no settled state
        since: float | None
        if not settled:
            # the facts are still arriving: not a new state. Keep the last settled one (or, at
            # first sight, the run that is starting or finishing: busy); a row still loading
            # has none to keep: what the maps say (busy, or unknown until its message is read)
            if settling == "loading":
                since = since_hint
            elif old is not None:
                state, reason, stale, ended, since = (
                    old.state, old.reason, old.stale, old.ended, old.since)
            else:
                state, reason, stale, ended = "busy", None, False, None
                since = since_hint
        else:
            # time in state: from the server's facts, so that every monitor agrees
            since = since_hint
            if since is None:
                since = (old.since if old is not None and old.state == state
                         and old.reason == reason and old.since else now)
                evidence = (*evidence, "time in state counted from when ocwatch first saw it "
                                       "(no server fact dates it)")
        if not reachable:
            evidence = (_unreachable(link, state, reason), *evidence)
            state, reason, stale, settled, ended = "unknown", None, False, False, None
            settling = "unreachable"
            since = link.since or since
        err = info.error if info is not None and info.role == "assistant" else None
        if err is None and err_fact is not None:
            err = err_fact.error
        cost = s.cost
        tokens = s.tokens.total if s.tokens is not None else None
        if info is not None:
            if cost is None:
                cost = info.cost
            if tokens is None and info.tokens is not None:
                tokens = info.tokens.total
        retrying = st if st is not None and st.type == "retry" else None
        row = rows[key] = SessionRow(
            server, sid, s.title, s.directory, s.parent_id, state, reason, stale,
            evidence, pending, since, updated or None, cost, tokens, settled,
            err.text if err is not None else None,
            retrying.attempt if retrying is not None else None,
            retrying.message if retrying is not None else None,
            ms(retrying.next) if retrying is not None else None,
            kids, ended, settling,
        )
        if cache is not None:
            # reused until the decision could come out differently as time passes
            cache[sid] = (mark, pend_key, busy_t, s, row, deadline.at, snap_msg, snap_st, listed,
                          key, now, snap_claim)
            if deadline.at != math.inf:
                pushed.append((deadline.at, sid))
    if memo is not None and cache is not None:
        if not same_snapshot and len(cache) > len(rows):
            for sid in [sid for sid in cache if sid not in sessions]:
                del cache[sid]  # gone with the snapshot that listed it
        if candidates is None or len(memo.deadlines) > 4 * len(cache) + 64:
            memo.deadlines = [(e[5], sid) for sid, e in cache.items() if e[5] != math.inf]
            heapq.heapify(memo.deadlines)
        else:
            for item in pushed:
                heapq.heappush(memo.deadlines, item)
        memo.last_rows, memo.last_now, memo.consumed = rows, now, len(facts.changed)
        memo.changed = None
        if candidates is not None:
            keys = [(server, sid) for sid in candidates]
            memo.changed = [key for key in keys if rows[key] is not prev.get(key)]
    return rows


@dataclass(slots=True)
class _Merged:
    """The snapshot with the journal's facts laid over it: the sessions listed (created,
    updated, deleted since), each one's status entry, the active list, the tree."""

    sessions: dict[str, Session]
    status: dict[str, SessionStatus]
    active: set[str]
    children: dict[str, list[str]]


def _merge(snapshot: Snapshot, facts: Facts) -> _Merged:
    # sessions: snapshot, then journal creations/updates/deletions observed after it
    sessions = sessions_after(snapshot.sessions, facts)
    # status: snapshot map, overridden by status events observed after it
    status: dict[str, SessionStatus] = dict(snapshot.status)
    for sid, fact in facts.status.items():
        if fact.status is None:
            status.pop(sid, None)
        else:
            status[sid] = fact.status
    active = set(snapshot.active) - {sid for sid, f in facts.status.items() if f.status is None}
    return _Merged(sessions, status, active, _children(sessions))


def _remerge(merged: _Merged, snapshot: Snapshot, facts: Facts, sid: str) -> None:
    """`merged` brought up to date for one session (what _merge would make of it)."""
    s = None if sid in facts.deleted else (facts.sessions.get(sid)
                                           or snapshot.sessions.get(sid))
    if s is None:
        merged.sessions.pop(sid, None)
    else:
        merged.sessions[sid] = s
    st = status_after(facts, sid, snapshot.status.get(sid))
    if st is None:
        merged.status.pop(sid, None)
    else:
        merged.status[sid] = st
    fact = facts.status.get(sid)
    if sid in snapshot.active and (fact is None or fact.status is not None):
        merged.active.add(sid)
    else:
        merged.active.discard(sid)


def _candidates(memo: DeriveMemo, snapshot: Snapshot, facts: Facts, merged: _Merged,
                prev: dict[tuple[str, str], SessionRow], now: float,
                server: str) -> list[str] | None:
    """The sessions whose rows may differ from `prev`, when the memo can tell (the same snapshot
    and fold as its last call, whose rows `prev` is, and a clock not gone back), with `merged`
    brought up to date for them; None: any may (a session created, deleted or moved in the
    tree, an event of no known session), and `merged` must be made anew."""
    if memo.last_rows is not prev or now < memo.last_now or memo.consumed > len(facts.changed):
        return None
    dirty = set(facts.changed[memo.consumed:])
    if None in dirty:
        return None
    heap = memo.deadlines
    while heap and heap[0][0] <= now:
        dirty.add(heapq.heappop(heap)[1])
    sessions = merged.sessions
    out: dict[str, None] = {}
    for sid in dirty:
        assert sid is not None
        _remerge(merged, snapshot, facts, sid)
        s = sessions.get(sid)
        old = prev.get((server, sid))
        if s is None or old is None:
            if s is None and old is None:
                continue  # neither listed nor shown: no row, then or now
            return None  # a row appears or goes: its parent's children change
        if s.parent_id != old.parent_id:
            return None
        cur: str | None = sid
        while cur is not None and cur not in out:  # the session and its ancestors
            out[cur] = None
            s = sessions[cur]
            cur = s.parent_id if s.parent_id and s.parent_id in sessions else None
    return sorted(out, key=memo.order.__getitem__)  # in the rows' order


def _unreachable(link: Link, state: str, reason: str | None) -> str:
    """The evidence line a row gets while the server cannot be reached."""
    return (f"server unreachable{': ' + link.error if link.error else ''}; "
            f"last known state: {state}{' (' + reason + ')' if reason else ''}")


#: (state, reason, stale, evidence, settled, since, ended, settling): `since` is when the state
#: began by the server's facts (None: no fact dates it); `ended` is, for a stale row, how the
#: messages show the run ended although the server still reports busy; `settling` says, for an
#: unsettled decision, what the facts wait for (view.SETTLING)
Decision = tuple[State, Reason | None, bool, tuple[str, ...], bool, float | None, Reason | None,
                 Settling | None]


def run_start(info: MessageInfo, now: float) -> float | None:
    """When the run the last message belongs to began: its prompt's creation (the user message,
    or the one the assistant message answers, dated by its id)."""
    if info.role != "assistant":
        return ms(info.time.created)
    return id_time(info.parent_id, now) or ms(info.time.created)


def _decide(
    sid: str,
    s: Session,
    st: SessionStatus | None,
    in_active: bool,
    msg: Message | None,
    info: MessageInfo | None,
    pending: tuple[Pending, ...],
    busy_children: Sequence[str],
    stream_error: MessageError | None,
    status_at: float | None,
    claim_at: float | None,
    quiet_at: float | None,
    ask_at: dict[str, float],
    now: float,
    grace: float,
    facts: Facts,
    deadline: Deadline,
) -> Decision:
    """One session's Decision. `info` is `msg.info` (read once by the caller); `status_at` when
    the stream last changed its status; `claim_at` when the server last said it runs (that
    event, or the snapshot that listed it); `quiet_at` when it last said it does not."""
    # 1. input: something is asked of the user (here or in a descendant)
    if pending:
        return _input(s.id, st, pending, ask_at, now)
    if st is not None:
        kind = st.type
        # 2. retry
        if kind == "retry":
            return _retry(st, status_at, info)
        # 3. busy (stale detection): busy, or a state this monitor does not know
        if kind != "idle" or in_active:
            return _busy(kind, msg, info, busy_children, status_at, claim_at, now, grace,
                         deadline)
        # 4. idle with a reason the server gave
        if st.reason:
            reason = SERVER_REASONS.get(st.reason)
            if reason is not None:
                state: State = "unknown" if reason == "interrupted" else "idle"
                dated = None
                if info is not None:
                    dated = ms(info.time.completed) or ms(info.time.created)
                return state, reason, False, (f"server reports idle, reason {st.reason}",), \
                    True, dated or status_at, None, None
    elif in_active:
        return _busy("running (/api/session/active)", msg, info, busy_children, status_at,
                     claim_at, now, grace, deadline)
    # 5. absent from the status map (or idle): the messages tell
    if msg is None or info is None:
        if stream_error is not None:
            return _idle_error(stream_error, "session.error event", status_at)
        return "idle", None, False, ("no messages yet",), True, ms(s.time.created), None, None
    if info.role == "assistant":
        return _not_running(sid, msg, info, stream_error, status_at, quiet_at, now, grace, facts,
                            deadline)
    return _unanswered(info, stream_error, status_at, quiet_at, now, grace, deadline)


def _loading(st: SessionStatus | None, in_active: bool, status_at: float | None) -> Decision:
    """A first snapshot has listed the session but not read its last message yet: busy when the
    server reports it running (not settled: its stale check rests on that message), else
    unknown (absent from the status map is idle or unknown until the messages agree)."""
    note = "last message not read yet (the first snapshot is loading)"
    if st is not None and st.type != "idle" or in_active:
        label = st.type if st is not None and st.type != "idle" else "running"
        return "busy", None, False, (f"server reports {label}", note), False, status_at, None, \
            "loading"
    return "unknown", None, False, ("not in the status map", note), False, None, None, "loading"


def _input(sid: str, st: SessionStatus | None, pending: tuple[Pending, ...],
           ask_at: dict[str, float], now: float) -> Decision:
    """Requests open here or in a descendant: the user is asked for input, since the first
    request was made (its id dates it; else when the stream said it was asked)."""
    ev = [p.summary if p.session_id == sid else f"{p.summary} (sub-agent {p.session_id})"
          for p in pending]
    if st is not None:
        ev.append(f"server reports {st.type} while waiting")
    times = [t for t in (id_time(p.id, now) or ask_at.get(p.id) for p in pending)
             if t is not None]
    return "input", None, False, tuple(ev), True, min(times) if times else None, None, None


def _retry(st: SessionStatus, status_at: float | None, info: MessageInfo | None) -> Decision:
    """Retrying, since the step whose model call failed began (its assistant message)."""
    attempt = f"retry attempt {st.attempt if st.attempt is not None else '?'}"
    if st.message:
        attempt += f": {st.message}"
    since = status_at
    if info is not None and info.role == "assistant" and not info.time.completed:
        since = ms(info.time.created) or since
    if st.next:
        return "retry", None, False, (
            attempt, f"next attempt at {clock_text(st.next / 1000)}"), True, since, None, None
    return "retry", None, False, (attempt,), True, since, None, None


def _not_running(
    sid: str,
    msg: Message,
    info: MessageInfo,
    stream_error: MessageError | None,
    status_at: float | None,
    quiet_at: float | None,
    now: float,
    grace: float,
    facts: Facts,
    deadline: Deadline,
) -> Decision:
    """Not running, and the last message is the assistant's: how (or whether) the run ended.

    A run the snapshot shows unfinished reads what the journal carried across a snapshot cut
    (the run's final message may not have been saved yet)."""
    times = info.time
    completed = times.completed
    done = completed / 1000.0 if completed else None
    ended = outcome(msg, info, done)
    if ended is not None:
        return "idle", ended[0], False, (ended[1],), True, done or status_at, None, None
    carried_error = facts.carried_errors.get(sid)
    carried_at = facts.carried_status_at.get(sid)
    if stream_error is None and carried_error is not None:
        stream_error = carried_error.error
    if stream_error is not None:
        return _idle_error(stream_error, "session.error event", status_at or carried_at)
    # absent, but the run visibly did not end: unknown
    if done is None:
        what = "last assistant message never completed"
    else:
        what = (f"last assistant step completed at {clock_text(done)} with finish "
                f"{info.finish!r}, and no next step followed")
    tool = _open_tool(msg)
    if tool is not None:
        what += f"; tool {tool.tool or '?'} left {tool.state.status}"  # type: ignore[union-attr]
    last_activity = max(filter(None, [done, ms(times.created)]), default=None)
    start = max(filter(None, [status_at or carried_at, last_activity]), default=now)
    if now - start <= grace:
        deadline.by(start + grace)
        return "unknown", None, False, (
            "server reports not busy; " + what + " (waiting for the final message)",
        ), False, run_start(info, now), None, "finishing"
    if quiet_at is None or quiet_at < (last_activity or 0.0):
        # only what the server said before this run's last activity calls it not running (a
        # busy event may have been lost): ask it again before calling the run cut off
        deadline.by(now)  # depends on the snapshot's time: never reused across one
        return "unknown", None, False, (
            "server reports not busy, but said so before the run's last activity; " + what
            + " (asking the server again)",), False, run_start(info, now), None, "confirming"
    return "unknown", "interrupted", False, (
        "server reports not busy (absent from the status map)", what,
        "the run was cut off (server restart or crash?)"), True, last_activity, None, None


def _unanswered(
    info: MessageInfo,
    stream_error: MessageError | None,
    status_at: float | None,
    quiet_at: float | None,
    now: float,
    grace: float,
    deadline: Deadline,
) -> Decision:
    """Not running, and the last message is a user prompt with no reply."""
    if stream_error is not None:
        return _idle_error(stream_error, "session.error event", status_at)
    sent = info.time.created
    created = ms(sent) or now
    start = max(created, status_at or 0.0)
    if not sent:
        deadline.by(now)  # the evidence reads the clock itself: never reuse it
    if now - start <= grace:
        deadline.by(start + grace)
        return "unknown", None, False, (
            f"prompt sent at {clock_text(created)}; no reply yet and the server does not report "
            "busy (the run is starting)",), False, ms(sent), None, "starting"
    if quiet_at is None or quiet_at < created:
        # the server's "not busy" predates the prompt: its busy may have been lost
        deadline.by(now)
        return "unknown", None, False, (
            f"prompt sent at {clock_text(created)}; the server said not busy before it "
            "(asking the server again)",), False, ms(sent), None, "confirming"
    deadline.tick(now, created)
    return "unknown", None, False, (
        f"prompt sent at {clock_text(created)} ({ago(now, created)}) has no reply",
        "server does not report busy (absent from the status map)"), True, ms(sent), None, None


def _open_tool(msg: Message) -> Part | None:
    """The message's first tool call still pending or running, if any."""
    for part in msg.parts:
        if part.is_open_tool:
            return part
    return None


#: Tool errors by which the user ended the run (the server then stops after a `tool-calls` step).
_REFUSALS = ("rejected", "dismissed")


def _refusal(msg: Message) -> Part | None:
    """The message's tool call the user refused (a rejected permission, a dismissed question),
    if any."""
    for part in msg.parts:
        st = part.state
        if part.type == "tool" and st is not None and st.status == "error" and st.error and any(
                w in st.error.lower() for w in _REFUSALS):
            return part
    return None


def outcome(msg: Message, info: MessageInfo, done: float | None) -> tuple[Reason, str] | None:
    """How an assistant message ended a run: (reason, evidence), or None if it did not end one.
    `info` is `msg.info` (an assistant's), `done` its completion time in seconds (or None).

    An error ends it (aborted for MessageAbortedError); a completed message with a terminal finish
    completes it; a `tool-calls` step whose tool the user refused (a rejected permission or a
    dismissed question) ends it too: the server stops there, with no error on the message.
    """
    error = info.error
    if error is not None:
        if error.name == "MessageAbortedError":
            return "aborted", f"last assistant message: aborted ({error.name})"
        return "error", f"last assistant message: {error.text}"
    if done is None:
        return None
    finish = info.finish
    if finish not in NON_TERMINAL_FINISH:
        return "completed", (f"last assistant message completed at {clock_text(done)}"
                             f" (finish: {finish or 'none'})")
    part = _refusal(msg)
    if part is not None and part.state is not None:
        return "aborted", (f"the user refused tool {part.tool or '?'}: {part.state.error} "
                           f"(step ended {clock_text(done)})")
    return None


def _idle_error(err: MessageError, where: str, at: float | None) -> Decision:
    if err.name == "MessageAbortedError":
        return "idle", "aborted", False, (f"{where}: aborted ({err.name})",), True, at, None, None
    return "idle", "error", False, (f"{where}: {err.text}",), True, at, None, None


def _busy(
    label: str,
    msg: Message | None,
    info: MessageInfo | None,
    busy_children: Sequence[str],
    status_at: float | None,
    claim_at: float | None,
    now: float,
    grace: float,
    deadline: Deadline,
) -> Decision:
    """Busy, since its run began (the prompt); stale when the run visibly ended and the server
    still said it runs after that (a status event or a snapshot taken past the grace period)."""
    reported = (f"server reports {label} since {clock_text(status_at)}" if status_at
                else f"server reports {label}")
    if msg is None or info is None:
        return "busy", None, False, (reported, "no message yet"), True, status_at, None, None
    began = run_start(info, now) or status_at
    if info.role != "assistant":
        return "busy", None, False, (reported, "last message is a prompt (run starting)"), True, \
            began, None, None
    tool = _open_tool(msg)
    times = info.time
    completed = times.completed
    done = completed / 1000.0 if completed else None
    ended = outcome(msg, info, done) if done is not None else None
    if ended is None or tool is not None or busy_children:
        ev = [reported]
        if tool is not None:
            ev.append(f"tool {tool.tool or '?'} {tool.state.status if tool.state else '?'}")
        if busy_children:
            ev.append("sub-agent busy: " + ", ".join(busy_children[:3]))
        if done is None:
            refused = None if tool is not None or busy_children else _refusal(msg)
            if refused is not None:
                at = ms(refused.state.ended) if refused.state else None
                if at is not None and now - at <= grace:
                    # the user refused the tool: the run ends as soon as the server saves the
                    # step (1.18.33 still reads busy for ~100 ms). Not a new state yet
                    deadline.by(at + grace)
                    return "busy", None, False, (
                        reported, f"the user refused tool {refused.tool or '?'}: the run is "
                                  "ending"), False, began, None, "finishing"
            started = ms(times.created) or now
            if not times.created:
                deadline.by(now)
            ev.append(f"assistant message streaming since {clock_text(started)}")
        elif ended is None:
            ev.append(f"step finished with {info.finish!r}; next step pending")
        return "busy", None, False, tuple(ev), True, began, None, None
    assert done is not None
    held_since = max(done, status_at or 0.0)
    deadline.tick(now, done)
    since_done = ago(now, done)
    facts = (
        reported,
        f"{ended[1]}, {since_done}",
        "no tool call pending or running",
        "nothing asked; no sub-agent busy",
    )
    if now - held_since > grace:
        if claim_at is None or claim_at < held_since + grace:
            # only what the server said before the run ended calls it busy (its idle event may
            # have been lost): not stale until the server says so again
            return "busy", None, False, (
                f"run ended {since_done}; asking the server whether it still reports {label}",
                *facts), False, began, None, "confirming"
        deadline.tick(now, held_since)
        held = since_done if held_since == done else ago(now, held_since)
        return "busy", None, True, (
            f"STALE: run ended {held} but the server still reports {label}",
            *facts, f"the server said {label} at {clock_text(claim_at)}, after the run ended"), \
            True, began, ended[0], None
    deadline.by(held_since + grace)
    return "busy", None, False, (*facts, f"within the {grace:g}s grace period"), True, \
        began, None, None
