"""derive(): the View's rows of one server from (snapshot, journal, now, settings).

Same inputs, same rows: no clock reads, no I/O, no mutation of inputs. For each session it
gathers the facts the row is decided from into one `SessionInputs` (`_gather`, the only place;
as the plain tuple of its fields, see there), asks the pure `decide()` (decide.py, the design's
decision order) what they show and until when, and lays the caller's previous row over that
(`carry`: the settled state an unsettled row keeps, the time in state no fact dates, an
unreachable server). A `DeriveMemo` (owned by the caller) reuses a decision exactly when its
facts equal those it was decided from and the clock is inside its validity; passing one never
changes the result (a property test holds it to that).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from .decide import (
    BEFORE_CLAIMS,
    LOADING,
    SERVER_REASONS,
    Decided,
    Link,
    Request,
    SessionInputs,
    carry,
    clock_text,
    decide,
    ms,
    outcome,
    run_start,
)
from .journal import (
    Entry,
    Facts,
    active_after,
    actives_after,
    fold,
    merge_message,
    session_after,
    sessions_after,
    status_after,
    statuses_after,
)
from .models import Message, MessageError, Session, SessionStatus
from .settings import Settings
from .snapshot import Snapshot
from .snapshot import children_of as _children
from .view import SessionRow, ago

__all__ = [
    "SERVER_REASONS",
    "DeriveMemo",
    "Link",
    "ago",
    "clock_text",
    "derive_server",
    "inputs_of",
    "ms",
    "outcome",
    "run_start",
]

Rows = dict[tuple[str, str], SessionRow]


#: SessionInputs and _Memoed made without their Python-level `__new__`: one of each for every
#: session decided, and a first derive decides them all (docs/PERFORMANCE.md). (The records'
#: `_make` costs less than `__new__`, but `_make` is among the names a test keeps from being
#: read off another object: a Textual private)
_new = tuple.__new__


class _Memoed(NamedTuple):
    """A session's decision with a previous row carried over it (a decision shown as it is, the
    link up, is filed as it is: the Decided itself). Fields the reuse check unpacks: a
    NamedTuple's attributes cost more to read."""

    #: until when `row` holds: the decision's validity, or sooner where carry read the clock
    valid_until: float
    #: the decision with the previous row carried over it (what the rows show)
    row: SessionRow
    #: the row's key, made once: a key made per call is one more object for the collector
    key: tuple[str, str]
    #: the previous row `row` holds with: itself (carry makes a row handed back as its previous
    #: again), or while the link is down the one it was carried over (its last known state)
    held: SessionRow | None
    #: the decision itself (and the facts it was decided from): carried again over another
    #: previous row, while it holds
    decided: Decided


@dataclass
class DeriveMemo:
    """Decisions derive() may reuse on its next call (owned by one caller, e.g. a
    ServerMonitor), keyed on the facts they were decided from.

    A decision is reused exactly when the session's `SessionInputs` equal those it was decided
    from (but for the claim and quiet times when the decision did not read them: Decided.
    reads_claims; a resync moves them for every session), `now < valid_until` (no grace period
    ended, no "N s ago" ticked) and the clock has not gone back since the last call. The
    objects of sessions that did not change are the same across a resync (MessageCache,
    MessageCache.sessions_from), so the comparison is mostly by identity. The row carried over
    the previous row is filed with it, under the previous row it holds with (itself, the link
    being up: the next call, handed it back, reuses it as it is); over another previous row the
    decision is carried again (decide.carry), not decided again.

    Between two calls on the same snapshot and fold, with the caller's previous rows, only the
    rows that can differ are looked at (`_candidates`): the sessions the journal changed a fact
    of since (`Facts.changed`), those whose validity ended, and their ancestors (the requests and
    busy descendants rolled up); every other row is the previous one.
    """

    settings: Settings | None = None  # what the rows were decided with (decide's third input)
    link: Link | None = None  # the last call's link (an input of every row)
    snapshot: Snapshot | None = None
    facts: Facts | None = None
    #: each session's decision, as decide made it when its row is shown as it is (no previous
    #: row carried over it, the link up), else with the carried row (_Memoed)
    rows: dict[str, Decided | _Memoed] = field(default_factory=dict)
    last_rows: Rows | None = None  # what the last call returned
    last_now: float = -math.inf
    consumed: int = 0  # the length of `facts.changed` the last call saw
    #: (at, sid) of the rows that hold until a moment: a heap while `heaped`, else made one
    #: when next read (a first derive, which looks at every row, files thousands and reads none)
    deadlines: list[tuple[float, str]] = field(default_factory=list)
    heaped: bool = True
    # the keys whose rows the last call changed (other rows: the previous objects); None: it
    # derived every row, any may have changed
    changed: list[tuple[str, str]] | None = None
    merged: _Merged | None = None  # the last call's merged maps (kept up to date)
    listed: list[str] = field(default_factory=list)  # the sessions listed, in the rows' order
    values: list[Session] = field(default_factory=list)  # and those `children` was made of
    children: dict[str, list[str]] = field(default_factory=dict)
    _order: dict[str, int] | None = None  # `order`, once made for `listed`

    @property
    def order(self) -> dict[str, int]:
        """Each listed session's place in the rows: made when first asked for after the listing
        changed (a first derive, which looks at every row in order, never needs it)."""
        order = self._order
        if order is None:
            listed = self.listed
            order = self._order = dict(zip(listed, range(len(listed)), strict=True))
        return order

    def relisted(self, listed: list[str]) -> None:
        """The sessions listed changed (or their order): what was made of the old listing goes."""
        self.listed, self.values, self._order = listed, [], None


def derive_server(
    snapshot: Snapshot,
    entries: Iterable[Entry] | Facts,
    now: float,
    settings: Settings,
    *,
    previous: Rows | None = None,
    link: Link | None = None,
    memo: DeriveMemo | None = None,
) -> Rows:
    """Rows of one server. Same inputs, same rows. Only sessions the snapshot lists (or that the
    journal saw created after it) appear. `entries` is the journal, or its fold (Journal.facts()),
    which is the same input already folded; `previous` the rows of the caller's last call (time
    in state, and the settled state an unsettled row keeps, are read from them)."""
    facts = entries if isinstance(entries, Facts) else fold(entries)
    prev = previous or {}
    link = link or Link()
    if memo is None:
        merged = _merge(snapshot, facts)
        gathered = _gather(snapshot, facts, merged, link, merged.sessions.items())
        return _decided(gathered, snapshot.server, prev, link, now, settings)
    candidates, merged = _prepared(memo, snapshot, facts, prev, link, now, settings)
    rows: Rows
    looked_at: Iterable[tuple[str, Session]]
    if candidates is None:
        rows, looked_at = {}, merged.sessions.items()
    else:  # the previous rows, and only those that can differ looked at again
        rows, looked_at = dict(prev), [(sid, merged.sessions[sid]) for sid in candidates]
    gathered = _gather(snapshot, facts, merged, link, looked_at)
    pushed = _reused_or_decided(memo, gathered, rows, snapshot.server, prev, link, now, settings)
    if candidates is None and len(memo.rows) > len(rows):
        sessions = merged.sessions
        for sid in [sid for sid in memo.rows if sid not in sessions]:
            del memo.rows[sid]  # gone with the snapshot that listed it
    _watch(memo, pushed)
    memo.last_rows, memo.last_now, memo.consumed = rows, now, len(facts.changed)
    memo.changed = None
    if candidates is not None:
        server = snapshot.server
        keys = [(server, sid) for sid in candidates]
        memo.changed = [key for key in keys if rows[key] is not prev.get(key)]
    return rows


def _decided(
    gathered: Iterable[_Fields],
    server: str,
    prev: Rows,
    link: Link,
    now: float,
    settings: Settings,
) -> Rows:
    """Every gathered session decided, and its previous row carried over the decision (no
    memo)."""
    rows: Rows = {}
    get_prev = prev.get if prev else None  # (a first derive has no previous rows)
    reachable = link.reachable
    for fields in gathered:
        key = (server, fields[_SESSION].id)
        old = get_prev(key) if get_prev is not None else None
        decided = decide(_new(SessionInputs, fields), now, settings)
        # (nothing to carry over a first sight dated by the facts: see _reused_or_decided)
        if old is None and reachable and not decided[3]:
            rows[key] = decided[0]
        else:
            rows[key] = carry(decided, old, now, link)[0]
    return rows


def _prepared(
    memo: DeriveMemo,
    snapshot: Snapshot,
    facts: Facts,
    prev: Rows,
    link: Link,
    now: float,
    settings: Settings,
) -> tuple[list[str] | None, _Merged]:
    """The memo made ready for this call, and the merged maps: with the memo's fast path (see
    _candidates), those of its last call brought up to date for the sessions changed since
    (returned with them), instead of every session merged again (None: every row is looked
    at)."""
    if memo.settings != settings:
        memo.settings, memo.rows, memo.last_rows = settings, {}, None
    if memo.link != link:  # every row's input: every row is looked at again
        memo.link, memo.last_rows = link, None
    if now < memo.last_now:  # the clock gone back (NTP, a replay seeking): decide again
        memo.rows = {}
    candidates: list[str] | None = None
    merged = memo.merged
    if memo.facts is facts and memo.snapshot is snapshot and merged is not None:
        candidates = _candidates(memo, snapshot, facts, merged, prev, now, snapshot.server)
    memo.snapshot, memo.facts = snapshot, facts
    if candidates is None or merged is None:
        merged = memo.merged = _merge(snapshot, facts, memo)
    return candidates, merged


def _reused_or_decided(
    memo: DeriveMemo,
    gathered: Iterable[_Fields],
    rows: Rows,
    server: str,
    prev: Rows,
    link: Link,
    now: float,
    settings: Settings,
) -> list[tuple[float, str]]:
    """Each gathered session's row into `rows`: the memo's, when its facts and previous row are
    those it was filed with and it still holds; its decision carried over another previous row;
    else decided anew. Each row made is filed; returned: the (validity, session) of those that
    hold until a moment (the memo's deadlines to watch)."""
    cache = memo.rows
    get_hit = cache.get if cache else None  # (a first derive has nothing filed)
    get_prev = prev.get if prev else None  # (nor previous rows)
    reachable = link.reachable
    inf = math.inf
    pushed: list[tuple[float, str]] = []
    held: SessionRow | None
    for fields in gathered:
        sid = fields[_SESSION].id
        hit = get_hit(sid) if get_hit is not None else None
        if hit is None:
            key = (server, sid)
            old = get_prev(key) if get_prev is not None else None
            decided = decide(_new(SessionInputs, fields), now, settings)
            if old is None and reachable and not decided[3]:
                # a first sight dated by the facts, the link up: shown and filed as decided
                # (carry's first test, made here: a first derive would call it for every
                # session to learn that)
                rows[key] = decided[0]
                cache[sid] = decided
                if decided[1] != inf:
                    pushed.append((decided[1], sid))
                continue
        else:
            if isinstance(hit, Decided):  # shown as decided: the row holds with itself
                decided = hit
                row, valid_until, reads_claims, _, then = hit
                key, held = (server, sid), row
            else:
                valid_until, row, key, held, decided = hit
                reads_claims, then = decided[2], decided[4]
            old = get_prev(key) if get_prev is not None else None
            # the same facts (but for the claim times, for a decision that reads none)?
            if then != fields if reads_claims else then[:BEFORE_CLAIMS] != fields[:BEFORE_CLAIMS]:
                decided = decide(_new(SessionInputs, fields), now, settings)
            elif now < valid_until and (old is held or old == held):
                rows[key] = row  # the same facts, carried over the same previous row
                continue
            elif now >= decided[1]:  # the same facts, but the decision no longer holds
                decided = decide(_new(SessionInputs, fields), now, settings)
            # (else the same facts and decision, another previous row: carried over it again)
        if old is None and reachable and not decided[3]:  # (as above: nothing to carry)
            row, until = decided[0], inf
        else:
            row, until = carry(decided, old, now, link)
            if old is not None and old == row and _same_requests(old, row, fields[_REQUESTS]):
                row = old  # the same row: the same object
        rows[key] = row
        if row is decided[0] and until == inf and reachable:
            cache[sid] = decided  # shown as decided: filed as it is
            valid_until = decided[1]
        else:
            # filed with itself as the previous row it holds with: the next call, handed it
            # back, reuses it (carry makes it again); not so while the link is down
            valid_until = decided[1] if until > decided[1] else until
            cache[sid] = _new(_Memoed, (valid_until, row, key, row if reachable else old, decided))
        if valid_until != inf:
            pushed.append((valid_until, sid))
    return pushed


def _watch(memo: DeriveMemo, pushed: list[tuple[float, str]]) -> None:
    """The memo's deadlines with `pushed` in, made anew from the rows filed when they hold too
    many that no longer count; many at once are made a heap when next read (_candidates)."""
    heap, cache = memo.deadlines, memo.rows
    if len(heap) + len(pushed) > 4 * len(cache) + 64:
        memo.deadlines = [
            (e.valid_until, sid) for sid, e in cache.items() if e.valid_until != math.inf
        ]
        memo.heaped = False
    elif len(pushed) > 64 or not memo.heaped:
        heap += pushed
        memo.heaped = False
    else:
        for item in pushed:
            heapq.heappush(heap, item)


def _same_requests(
    old: SessionRow, row: SessionRow, requests: tuple[tuple[Request, float | None], ...]
) -> bool:
    """Whether the old row's open requests are the very requests of the new one: those of the
    inputs (Pending compares by id and summary only: a request asked again under its id with
    other options is new), or the old row's own, held while the facts arrive (carry)."""
    if old.pending is row.pending:
        return True
    return len(requests) == len(old.pending) and all(
        p.request is req for p, (req, _) in zip(old.pending, requests, strict=True)
    )


def inputs_of(
    snapshot: Snapshot, entries: Iterable[Entry] | Facts, link: Link | None = None
) -> dict[str, SessionInputs]:
    """Every listed session's SessionInputs, as derive_server() gathers them."""
    facts = entries if isinstance(entries, Facts) else fold(entries)
    merged = _merge(snapshot, facts)
    return {
        fields[_SESSION].id: _new(SessionInputs, fields)
        for fields in _gather(snapshot, facts, merged, link or Link(), merged.sessions.items())
    }


#: A session's place in the tree: the requests open on it or below it (each with when the
#: stream saw it asked), its busy descendants, its children (sorted). Sessions with none of
#: these have no entry.
_Asked = tuple[Request, float | None]
_Family = tuple[tuple[_Asked, ...], tuple[str, ...], tuple[str, ...]]
_NONE: tuple[str, ...] = ()
_NO_REQUESTS: tuple[_Asked, ...] = ()
_NO_FAMILY: _Family = (_NO_REQUESTS, _NONE, _NONE)


#: SessionInputs' fields as a plain tuple, in its order (what _gather yields: see there why),
#: and where the session and its open requests sit in it
_Fields = tuple[
    str,
    Session,
    SessionStatus | None,
    SessionStatus | None,
    bool,
    str | None,
    Message | None,
    tuple[_Asked, ...],
    tuple[str, ...],
    tuple[str, ...],
    MessageError | None,
    MessageError | None,
    float | None,
    float | None,
    float | None,
    Link,
    float | None,
    float | None,
]
#: (literals: mypy types a tuple's item only at a literal index)
_SESSION: Final = 1
_REQUESTS: Final = 7
assert list(SessionInputs.__annotations__)[_SESSION] == "session"
assert list(SessionInputs.__annotations__)[_REQUESTS] == "requests"


def _gather(
    snapshot: Snapshot,
    facts: Facts,
    merged: _Merged,
    link: Link,
    looked_at: Iterable[tuple[str, Session]],
) -> Iterator[_Fields]:
    """Each looked-at session's SessionInputs: the one place they are gathered. The server's
    open requests are rolled up the tree once, and its lookups bound once, for the whole loop.

    Each is yielded as the plain tuple of its fields, in SessionInputs' order (equal to the
    SessionInputs made of it): the memo compares it (or its fields before the claim times, for
    a decision that reads none), and only a session decided anew
    becomes the record. Kept so: a record made for every session looked at, the rows the memo
    reuses too, is a cost every resync would pay (docs/PERFORMANCE.md)."""
    sessions, status, active = merged.sessions, merged.status, merged.active
    # open requests: snapshot's, plus asked, minus answered
    open_reqs: dict[str, Request] = {}
    open_reqs.update(snapshot.permissions)
    open_reqs.update(snapshot.questions)
    ask_at: dict[str, float] = {}
    for rid, ask in facts.asked.items():
        open_reqs[rid] = ask.request
        ask_at[rid] = ask.at
    for rid in facts.answered:
        open_reqs.pop(rid, None)
    own: dict[str, list[_Asked]] = {}
    for rid in sorted(open_reqs):
        req = open_reqs[rid]
        if req.session_id in sessions:
            own.setdefault(req.session_id, []).append((req, ask_at.get(rid)))

    def running(sid: str) -> bool:
        st = status.get(sid)
        return sid in active or (st is not None and st.type in ("busy", "retry"))

    # per-server lookups, bound once: the loop below runs once per session
    get_family = _families(merged.children, own, running).get
    server = snapshot.server
    get_snap_msg = snapshot.messages.get
    snap_started, loading, unreadable = (
        snapshot.started_at,
        snapshot.loading,
        snapshot.unreadable,
    )
    get_status = status.get
    # the journal's maps, looked up only when not empty (after a resync they mostly are)
    get_status_fact = facts.status.get if facts.status else None
    get_touched = facts.touched.get if facts.touched else None
    get_retrying = facts.retrying.get if facts.retrying else None
    get_error = facts.errors.get if facts.errors else None
    get_carried = facts.carried_errors.get if facts.carried_errors else None
    get_carried_at = facts.carried_status_at.get if facts.carried_status_at else None
    journal_messages = bool(facts.messages or facts.parts)
    for sid, s in looked_at:
        requests, busy, kids = get_family(sid, _NO_FAMILY)
        unread = None
        if loading and sid in loading:
            unread = LOADING
        elif unreadable and sid in unreadable:
            unread = unreadable[sid]
        msg: Message | None = None
        if unread is None:
            msg = get_snap_msg(sid)
            if journal_messages:
                msg = merge_message(msg, facts, sid)
        st = get_status(sid)
        listed = sid in active
        seen_status = get_status_fact(sid) if get_status_fact is not None else None
        if seen_status is None:
            status_at = None
            # when the server last said the session runs: the snapshot that listed it; when it
            # last said it does not: the snapshot that did not (with no status event since,
            # the merged entry and active list are the snapshot's)
            claim = snap_started if st is not None or listed else None
            quiet = snap_started if claim is None else None
        else:  # the stream's last status fact: when it changed, and whether it said it runs
            status_at = seen_status.at
            runs = seen_status.status is not None
            claim = status_at if runs else None
            quiet = None if runs else status_at
        err = get_error(sid) if get_error is not None else None
        carried = get_carried(sid) if get_carried is not None else None
        yield (
            server,
            s,
            st,
            get_retrying(sid) if get_retrying is not None else None,
            listed,
            unread,
            msg,
            requests,
            busy,
            kids,
            err.error if err is not None else None,
            carried.error if carried is not None else None,
            get_carried_at(sid) if get_carried_at is not None else None,
            status_at,
            get_touched(sid) if get_touched is not None else None,
            link,
            claim,
            quiet,
        )


def _families(
    children: dict[str, list[str]],
    own: dict[str, list[_Asked]],
    running: Callable[[str], bool],
) -> dict[str, _Family]:
    """Roll requests and busy descendants up the tree (`children`: see _children; memoised;
    iterative: it can be deep; a leaf is read where its parent is rolled up, not walked)."""
    rolled: dict[str, tuple[_Asked, ...]] = {}
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
                pend = list(own.get(sid, ()))
                below: list[str] = []
                for c in children.get(sid, ()):
                    if c in children:
                        pend.extend(rolled.get(c, ()))
                        if running(c):
                            below.append(c)
                        below.extend(busy_desc.get(c, ()))
                    else:  # a leaf: its own requests, nothing below it
                        pend.extend(own.get(c, ()))
                        if running(c):
                            below.append(c)
                rolled[sid] = tuple(pend)
                busy_desc[sid] = below
                continue
            if sid in rolled or sid in on_path:
                continue
            on_path.add(sid)
            stack.append((sid, True))
            for c in children.get(sid, ()):
                if c in children and c not in rolled and c not in on_path:  # leaves: above
                    stack.append((c, False))
    out: dict[str, _Family] = {
        sid: (rolled[sid], tuple(busy_desc[sid]), tuple(sorted(kids)))
        for sid, kids in children.items()
    }
    for sid, asked in own.items():
        if sid not in out:
            out[sid] = (tuple(asked), _NONE, _NONE)
    return out


@dataclass(slots=True)
class _Merged:
    """The snapshot with the journal's facts laid over it: the sessions listed (created,
    updated, deleted since), each one's status entry, the active list, the tree."""

    sessions: dict[str, Session]
    status: dict[str, SessionStatus]
    active: set[str]
    children: dict[str, list[str]]


def _merge(snapshot: Snapshot, facts: Facts, memo: DeriveMemo | None = None) -> _Merged:
    sessions = sessions_after(snapshot.sessions, facts)
    status = statuses_after(snapshot.status, facts)
    active = actives_after(snapshot.active, facts)
    return _Merged(sessions, status, active, _tree(sessions, memo))


def _tree(sessions: dict[str, Session], memo: DeriveMemo | None) -> dict[str, list[str]]:
    """_children(sessions); with a memo, the last one made when the same sessions are listed in
    the same order (the same Session objects, or equal ones: a resync mostly reuses them), and
    the rows' order (`memo.order`) made again only when the sessions listed changed."""
    if memo is None:
        return _children(sessions)
    listed = list(sessions)
    if listed != memo.listed:
        memo.relisted(listed)
    values = list(sessions.values())
    if values != memo.values:
        memo.values, memo.children = values, _children(sessions)
    return memo.children


def _remerge(merged: _Merged, snapshot: Snapshot, facts: Facts, sid: str) -> None:
    """`merged` brought up to date for one session (what _merge would make of it)."""
    s = session_after(snapshot.sessions, facts, sid)
    if s is None:
        merged.sessions.pop(sid, None)
    else:
        merged.sessions[sid] = s
    st = status_after(facts, sid, snapshot.status.get(sid))
    if st is None:
        merged.status.pop(sid, None)
    else:
        merged.status[sid] = st
    if active_after(snapshot.active, facts, sid):
        merged.active.add(sid)
    else:
        merged.active.discard(sid)


def _candidates(
    memo: DeriveMemo,
    snapshot: Snapshot,
    facts: Facts,
    merged: _Merged,
    prev: dict[tuple[str, str], SessionRow],
    now: float,
    server: str,
) -> list[str] | None:
    """The sessions whose rows may differ from `prev`, when the memo can tell (the same snapshot
    and fold as its last call, whose rows `prev` is, and a clock not gone back), with `merged`
    brought up to date for them; None: any may (a session created, deleted or moved in the
    tree, an event of no known session), and `merged` must be made anew."""
    if memo.last_rows is not prev or now < memo.last_now or memo.consumed > len(facts.changed):
        return None
    dirty = set(facts.changed[memo.consumed :])
    if None in dirty:
        return None
    heap = memo.deadlines
    if not memo.heaped:
        heapq.heapify(heap)
        memo.heaped = True
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
