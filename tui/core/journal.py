"""The journal: events observed since the current snapshot's fetch began, bounded.

Entries carry a sequence number. A snapshot records the journal's `seq` when its fetch begins; once
that snapshot is in place, `cut(seq)` drops every entry older than it: the snapshot covers them.
`fold()` turns the entries into facts derive() reads (pure).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import NamedTuple, cast

from pydantic import ValidationError

from .events import Event
from .models import (
    Message,
    MessageError,
    MessageInfo,
    Part,
    PermissionRequest,
    QuestionRequest,
    Session,
    SessionStatus,
)


class Entry(NamedTuple):
    """An event as the journal keeps it, with its sequence number (a named tuple: one is made
    for every event kept, faster than a frozen dataclass)."""

    seq: int
    event: Event


#: An Entry made by tuple's own constructor (as events.parsed): `entry((seq, event))`
entry = cast(Callable[[tuple[int, Event]], Entry], partial(tuple.__new__, Entry))


class Journal:
    """A bounded, append-only log of events; cut when a newer snapshot supersedes it.

    It keeps the fold of its entries up to date as they arrive (`facts()`), so a View derived at
    a high rate does not fold thousands of events each time; a cut folds the rest again.
    """

    def __init__(
        self,
        limit: int = 5000,
        carry_for: float = 30.0,
        max_bytes: int = 64 * 2**20,
        max_sessions: int = 20_000,
    ) -> None:
        self._entries: deque[Entry] = deque()
        self._sizes: deque[int] = deque()  # each entry's size as received (its frame's length)
        self._bytes = 0
        self._limit = limit
        self._max_bytes = max_bytes
        self._carry_for = carry_for
        self.carry = Carry()
        self._facts = Facts()
        self._folded_from = 0  # the oldest entry the fold holds (the entries may start later)
        self.seq = 0  # sequence number the next entry gets
        self.overflowed = False
        # the fold's bound while no cut comes (snapshots failing): the sessions it holds facts
        # of, and the changes it lists (_bound)
        self._max_sessions = max_sessions
        self._max_changed = max(20 * limit, 4 * max_sessions)
        self._known: frozenset[str] = frozenset()  # the last cut's snapshot's ids (_bound)
        self.forgot = 0  # sessions whose facts _bound let go of, in all

    def add(self, event: Event, size: int = 0) -> int:
        """Append an event (`size`: its frame's length, what it holds); returns its sequence
        number. Overflow, past `limit` entries or `max_bytes` of them, drops the oldest entries
        and sets `overflowed` (the caller must then take a snapshot). What they said stays in
        the fold (they are facts observed after the snapshot; refolding thousands of entries
        at every overflow was most of a busy stream's cost) until a cut that covers them."""
        seq = self.seq
        self.seq += 1
        kept = entry((seq, event))
        self._entries.append(kept)
        self._sizes.append(size)
        self._bytes += size
        _fold_one(self._facts, kept)
        if len(self._entries) > self._limit or self._bytes > self._max_bytes:
            # drop the oldest tenth at once (by count, and as much as the byte bound asks)
            # until a snapshot (which the caller must now take) covers them
            for _ in range(min(max(1, self._limit // 10), len(self._entries) - 1)):
                self._drop_oldest()
            while self._bytes > self._max_bytes // 2 and len(self._entries) > 1:
                self._drop_oldest()
            self.overflowed = True
            facts = self._facts
            if len(facts.versions) > self._max_sessions or len(facts.changed) > self._max_changed:
                self._bound()
        return seq

    def _bound(self) -> None:
        """Keep the fold bounded while no cut comes (snapshots failing, and a stream naming
        session after session: 175,000 ids held 147 MB, never let go): fold again the entries
        kept, with what the old fold said of the sessions and requests the last snapshot listed
        (bounded by it). What it said of the others (ids no snapshot listed, whose entries are
        dropped) is let go of: the next snapshot, which an overflow asks for, reads them."""
        old = self._facts
        new = fold(self._entries, self.carry)
        known = self._known
        for name in ("sessions", "status", "messages", "errors", "touched", "versions"):
            have: dict[str, object] = getattr(new, name)
            for sid, value in getattr(old, name).items():
                if sid in known and sid not in have:
                    have[sid] = value
        for sid, value in old.retrying.items():
            if sid in known:
                new.retrying.setdefault(sid, value)
        new.deleted |= old.deleted & known
        for key, parts in old.parts.items():
            if key[0] in known:
                new.parts.setdefault(key, parts)
        for rid, ask in old.asked.items():
            if rid in known or ask.request.session_id in known:
                new.asked.setdefault(rid, ask)
        for rid, at in old.answered.items():
            if rid in known or rid in new.asked:
                new.answered.setdefault(rid, at)
        new.malformed = old.malformed
        self.forgot += max(0, len(old.versions) - len(new.versions))
        self._facts = new  # (a new fold: derive looks at every row again)

    def _drop_oldest(self) -> None:
        self._entries.popleft()
        self._bytes -= self._sizes.popleft()

    def cut(
        self,
        before: int,
        status: Mapping[str, SessionStatus] | None = None,
        known: Iterable[str] | None = None,
    ) -> None:
        """Drop entries with seq < before (a snapshot whose fetch began at `before` covers them):
        the fold is made again of the entries left, with what a cut carries over, whenever it
        held anything older than `before`.

        `status`: that snapshot's status map, which says which retries are still on (read after
        `before`, it is newer than the entries dropped): a session it reads retrying has that
        retry as the last one the fold knows (so that the busy the server reads while the next
        attempt is under way is still the retry, as when the stream saw the retry:
        Facts.retrying); a retry remembered of a session it reads neither busy nor retrying is
        over. The fold is made again whenever either changes what it holds.

        `known`: the ids of the sessions and requests that snapshot lists (what a fold bounded
        before the next cut keeps: _bound)."""
        if known is not None:
            self._known = frozenset(known)
        retrying = {sid: st for sid, st in (status or {}).items() if st.type == "retry"}
        over = status is not None and any(
            (st := status.get(sid)) is None or st.type not in ("busy", "retry")
            for sid in {*self._facts.retrying, *self.carry.retrying}
        )
        if self._folded_from < before or retrying or over:
            carry = self._carry_over(self._facts)
            if status is not None:
                kept = {
                    sid: st
                    for sid, st in carry.retrying.items()
                    if (now := status.get(sid)) is not None and now.type == "busy"
                }
                carry = replace(carry, retrying={**kept, **retrying})
            self.carry = carry
            while self._entries and self._entries[0].seq < before:
                self._drop_oldest()
            self._facts = fold(self._entries, self.carry)
            self._folded_from = self._entries[0].seq if self._entries else self.seq
        self.overflowed = False

    def _carry_over(self, facts: Facts) -> Carry:
        """Facts a snapshot cannot hold, kept for a while across a cut: the error a run reported
        and when each session's status last changed. (On 1.18.33 a failed or aborted run sends
        `session.error` and idle 50-80 ms before its message is saved; a snapshot taken in that
        window holds the unfinished message, and without these the row would read interrupted.)
        """
        latest = self._entries[-1].event.received if self._entries else 0.0
        horizon = latest - self._carry_for
        errors = {sid: e for sid, e in facts.carried_errors.items() if e.at >= horizon}
        errors.update({sid: e for sid, e in facts.errors.items() if e.at >= horizon})
        status_at = {sid: f.at for sid, f in facts.status.items() if f.at >= horizon}
        for sid, at in facts.carried_status_at.items():
            if at >= horizon:
                status_at.setdefault(sid, at)
        # a retry whose next attempt is under way: the snapshot will read busy meanwhile
        retrying = {
            sid: st
            for sid, st in facts.retrying.items()
            if sid in status_at or sid in facts.carried_status_at
        }
        return Carry(errors, status_at, retrying)

    def facts(self) -> Facts:
        """The fold of the entries since the last cut (those an overflow dropped included) and
        the carry: `fold(self.entries(), self.carry)` until an overflow. Read-only: derive()
        never mutates it; the journal replaces it on a cut."""
        return self._facts

    def entries(self) -> tuple[Entry, ...]:
        return tuple(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(frozen=True, slots=True)
class StatusFact:
    status: SessionStatus | None  # None: idle (absent from the status map)
    at: float


@dataclass(frozen=True, slots=True)
class ErrorFact:
    error: MessageError
    at: float


@dataclass(frozen=True)
class Carry:
    """What a cut keeps of the entries it drops (see Journal._carry_over)."""

    errors: dict[str, ErrorFact] = field(default_factory=dict)
    status_at: dict[str, float] = field(default_factory=dict)
    retrying: dict[str, SessionStatus] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AskFact:
    request: PermissionRequest | QuestionRequest
    at: float


@dataclass
class Facts:
    """What the journal says, folded: the latest fact of each kind per session."""

    sessions: dict[str, Session] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    status: dict[str, StatusFact] = field(default_factory=dict)
    # newest message per session, with its receive time
    messages: dict[str, tuple[MessageInfo, float]] = field(default_factory=dict)
    # (session id, message id) -> part id -> part
    parts: dict[tuple[str, str], dict[str, Part]] = field(default_factory=dict)
    errors: dict[str, ErrorFact] = field(default_factory=dict)
    asked: dict[str, AskFact] = field(default_factory=dict)  # request id -> ask
    answered: dict[str, float] = field(default_factory=dict)  # request id -> when
    touched: dict[str, float] = field(default_factory=dict)  # session id -> last event time
    versions: dict[str, int] = field(default_factory=dict)  # session id -> events applied
    # from before a cut (Journal._carry_over); derive reads them for unfinished runs only
    carried_errors: dict[str, ErrorFact] = field(default_factory=dict)
    carried_status_at: dict[str, float] = field(default_factory=dict)
    # session id -> its last retry status, while the attempt after it is under way (the server
    # reads busy between attempts); dropped when output arrives, the run ends or goes idle
    retrying: dict[str, SessionStatus] = field(default_factory=dict)
    malformed: int = 0
    # every session an applied event may have changed a fact of, in order (None: one whose
    # session is not known, which may change any row). derive's memo reads the tail it has not
    # seen to know which rows to look at again; bounded by the journal (a cut folds anew)
    changed: list[str | None] = field(default_factory=list)


def fold(entries: Iterable[Entry], carry: Carry | None = None) -> Facts:
    """Fold journal entries, oldest first, into Facts (starting from what a cut carried over).
    Pure; malformed payloads are counted."""
    f = Facts()
    if carry is not None:
        f.carried_errors.update(carry.errors)
        f.carried_status_at.update(carry.status_at)
        f.retrying.update(carry.retrying)
    for entry in entries:
        _fold_one(f, entry)
    return f


def _fold_one(f: Facts, entry: Entry) -> None:
    try:
        _apply(f, entry.event)
    except (ValidationError, TypeError, ValueError, KeyError, AttributeError):
        f.malformed += 1


def _apply(f: Facts, ev: Event) -> None:
    """Fold one event: its session is counted as changed, then its kind's step (_STEPS) says
    what fact it is."""
    sid = ev.session_id
    if sid is not None:
        f.versions[sid] = f.versions.get(sid, 0) + 1
        f.changed.append(sid)
        if ev.type != "session.deleted":
            f.touched[sid] = ev.received
    step = _STEPS.get(ev.type)
    if step is not None:
        step(f, ev, sid)


# Each step: (facts, event, its session id) -> None, folding that event's fact into `facts`.


def _session_put(f: Facts, ev: Event, sid: str | None) -> None:
    """session.created / session.updated: the session as it is now."""
    s = Session.parse(ev.properties["info"])
    f.sessions[s.id] = s
    f.deleted.discard(s.id)
    if s.id != sid:
        f.changed.append(s.id)


def _session_deleted(f: Facts, ev: Event, sid: str | None) -> None:
    p = ev.properties
    info = p.get("info") or {}
    dead = info.get("id") if isinstance(info, dict) else None
    dead = dead or p.get("sessionID")
    if isinstance(dead, str):
        f.deleted.add(dead)
        f.sessions.pop(dead, None)
        if dead != sid:
            f.changed.append(dead)


#: A busy status as the stream repeats it (a status event per step of a run): parsed once,
#: shared (the models are frozen), as SessionStatus.parse would give it
_BUSY_WIRE = {"type": "busy"}
_BUSY = SessionStatus.parse(_BUSY_WIRE)


def _status(f: Facts, ev: Event, sid: str | None) -> None:
    """session.status: the status entry now (idle without a reason: absent); a retry is
    remembered while the attempt after it is under way."""
    if not sid:
        return
    raw = ev.properties["status"]
    st = _BUSY if raw == _BUSY_WIRE else SessionStatus.parse(raw)
    f.status[sid] = StatusFact(None if st.type == "idle" and not st.reason else st, ev.received)
    if st.type == "retry":
        f.retrying[sid] = st
    elif st.type != "busy" and f.retrying:
        f.retrying.pop(sid, None)


def _idle(f: Facts, ev: Event, sid: str | None) -> None:
    if not sid:
        return
    if f.retrying:
        f.retrying.pop(sid, None)
    prev = f.status.get(sid)
    # a second idle changes nothing, nor does one after an idle that carried a reason
    if prev is None or (prev.status is not None and prev.status.type != "idle"):
        f.status[sid] = StatusFact(None, ev.received)


def _error(f: Facts, ev: Event, sid: str | None) -> None:
    err = ev.properties.get("error")
    if sid and isinstance(err, dict):
        f.errors[sid] = ErrorFact(MessageError.parse(err), ev.received)


def _message(f: Facts, ev: Event, sid: str | None) -> None:
    """message.updated: the session's newest message, unless this copy is older or would take
    back its end (regresses)."""
    if not sid:
        return
    info = MessageInfo.parse(ev.properties["info"])
    if f.retrying and (info.time.completed or info.error is not None):
        f.retrying.pop(sid, None)
    cur = f.messages.get(sid)
    if cur is None or info.id > cur[0].id or (info.id == cur[0].id and not regresses(info, cur[0])):
        f.messages[sid] = (info, ev.received)


def _part(f: Facts, ev: Event, sid: str | None) -> None:
    """message.part.updated: output (a retry's next attempt went through); a tool part is kept
    under its message (text streams are noise)."""
    raw = ev.properties["part"]
    if f.retrying and sid in f.retrying:
        del f.retrying[sid]
    if raw.get("type") != "tool":
        return
    part = Part.parse(raw)
    if part.message_id and part.id:
        owner = part.session_id or sid or ""
        if owner != sid:  # filed under the part's session: count it there too (DeriveMemo)
            f.versions[owner] = f.versions.get(owner, 0) + 1
            f.changed.append(owner)
        f.parts.setdefault((owner, part.message_id), {})[part.id] = part


def _asked(f: Facts, ev: Event, sid: str | None) -> None:
    p = ev.properties
    req: PermissionRequest | QuestionRequest = (
        PermissionRequest.parse(p) if ev.type == "permission.asked" else QuestionRequest.parse(p)
    )
    f.asked[req.id] = AskFact(req, ev.received)
    if req.session_id != sid:
        f.changed.append(req.session_id or None)


def _answered(f: Facts, ev: Event, sid: str | None) -> None:
    p = ev.properties
    rid = p.get("requestID") or p.get("permissionID") or p.get("id")
    if isinstance(rid, str):
        f.answered[rid] = ev.received
        if sid is None:  # whose request it answered is not said: any row may change
            f.changed.append(None)


#: Each event type the fold reads, and its step (_apply); other types only touch their session
_STEPS: dict[str, Callable[[Facts, Event, str | None], None]] = {
    "session.created": _session_put,
    "session.updated": _session_put,
    "session.deleted": _session_deleted,
    "session.status": _status,
    "session.idle": _idle,
    "session.error": _error,
    "message.updated": _message,
    "message.part.updated": _part,
    "permission.asked": _asked,
    "question.asked": _asked,
    "permission.replied": _answered,
    "question.replied": _answered,
    "question.rejected": _answered,
}


def final(info: MessageInfo) -> bool:
    """Whether a message is done: completed, or ended by an error."""
    return bool(info.time.completed) or info.error is not None


def regresses(new: MessageInfo, old: MessageInfo) -> bool:
    """Whether `new`, a copy of the message `old` is, would take back its end: a late or
    replayed older copy (a completed message never becomes unfinished again; issue 40)."""
    return new.role == old.role and final(old) and not final(new)


# The journal over the snapshot: what the events said since a snapshot began wins over what
# the snapshot read, fact by fact. Each rule is written once, for one session (derive's
# update of the sessions an event touched, the monitor's checks, raw.fact_sources) and for all
# of them (a derive from scratch); merge_message below is the last message's.


def session_after(listed: Mapping[str, Session], facts: Facts, sid: str) -> Session | None:
    """The session now: None once an event deleted it, else the events' copy, else the one
    listed (a snapshot's)."""
    if sid in facts.deleted:
        return None
    s = facts.sessions.get(sid)
    return s if s is not None else listed.get(sid)


def sessions_after(listed: Mapping[str, Session], facts: Facts) -> dict[str, Session]:
    """The sessions now (session_after of each): those listed, then the ones the events
    created, changed or deleted since."""
    sessions = dict(listed)
    sessions.update(facts.sessions)
    for sid in facts.deleted:
        sessions.pop(sid, None)
    return sessions


def status_after(
    facts: Facts,
    sid: str,
    snapshot_entry: SessionStatus | None,
) -> SessionStatus | None:
    """The session's status entry now: the last status event's since the snapshot, else the
    snapshot's (`snapshot_entry`); None: absent (idle)."""
    fact = facts.status.get(sid)
    return snapshot_entry if fact is None else fact.status


def statuses_after(listed: Mapping[str, SessionStatus], facts: Facts) -> dict[str, SessionStatus]:
    """Every session's status entry now (status_after of each; the absent left out)."""
    status = dict(listed)
    for sid, fact in facts.status.items():
        if fact.status is None:
            status.pop(sid, None)
        else:
            status[sid] = fact.status
    return status


def active_after(active: Collection[str], facts: Facts, sid: str) -> bool:
    """Whether the session runs by the active list (V2's): listed in it, and no status event
    since called it idle."""
    if sid not in active:
        return False
    fact = facts.status.get(sid)
    return fact is None or fact.status is not None


def actives_after(active: Collection[str], facts: Facts) -> set[str]:
    """The sessions that run by the active list now (active_after of each)."""
    return set(active) - {sid for sid, f in facts.status.items() if f.status is None}


def merge_message(snap: Message | None, facts: Facts, sid: str) -> Message | None:
    """The newest last message: the snapshot's (`snap`), overridden by newer journal updates
    and parts."""
    seen = facts.messages.get(sid)
    if seen is None:
        if snap is None:
            return None
        extra = facts.parts.get((sid, snap.info.id))
        if not extra:
            return snap
        return Message(info=snap.info, parts=_merge_parts(snap.parts, extra))
    info: MessageInfo = seen[0]
    if snap is not None and snap.info.id > info.id:
        return merge_message(snap, Facts(parts=facts.parts), sid)
    if snap is not None and snap.info.id == info.id and regresses(info, snap.info):
        info = snap.info  # the snapshot read it done: an older copy after it says nothing
    base_parts = snap.parts if snap is not None and snap.info.id == info.id else ()
    return Message(info=info, parts=_merge_parts(base_parts, facts.parts.get((sid, info.id), {})))


def _merge_parts(base: Iterable[Part], extra: dict[str, Part]) -> tuple[Part, ...]:
    merged = {p.id: p for p in base}
    merged.update(extra)
    return tuple(merged.values())
