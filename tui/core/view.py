"""The View: immutable rows derived whole from a snapshot plus the journal.

Everything the dashboard, `status --json`, `wait`, metrics and alerts read comes from here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple, get_args

from .models import PermissionRequest, QuestionRequest
from .words import was

#: A session's state (docs/STATES.md), and an idle (or unknown) row's reason: the one vocabulary.
State = Literal["busy", "retry", "input", "idle", "unknown"]
Reason = Literal["completed", "aborted", "error", "interrupted"]
#: Why a row is not settled: a prompt the server accepted but does not report busy for yet; an
#: idle reported before the run's final message is saved; a finished run that only events (sent
#: before it ended) call busy, until a snapshot confirms or denies it; a server not reachable; a
#: first snapshot that has not read the session's last message yet (the state is `busy` when the
#: server reports it running, else `unknown`).
Settling = Literal["starting", "finishing", "confirming", "unreachable", "loading"]
STATES: tuple[State, ...] = get_args(State)
REASONS: tuple[Reason, ...] = get_args(Reason)
SETTLING: tuple[Settling, ...] = get_args(Settling)
#: States in which a run goes on (and can be aborted): the stale flag aside.
RUNNING: tuple[State, ...] = ("busy", "retry", "input")
#: What a settled row is, as a transition compares it (SessionRow.settled_as)
Identity = tuple[State, Reason | None, bool]


def running(row: SessionRow | None) -> bool:
    """Whether the row is a run under way (busy, retrying or waiting; not stale)."""
    return row is not None and row.state in RUNNING and not row.stale


#: The state a row with each reason is in: a run cut off is unknown (the evidence contradicts
#: idle), every other ended run idle.
REASON_STATE: dict[Reason, State] = {
    "completed": "idle",
    "aborted": "idle",
    "error": "idle",
    "interrupted": "unknown",
}
#: Every (state, reason) a row can have, in the View's order ("": no reason).
STATE_REASONS: tuple[tuple[State, str], ...] = tuple(
    pair
    for state in STATES
    for pair in (*((state, r) for r in REASONS if REASON_STATE[r] == state), (state, ""))
)


@dataclass(frozen=True, slots=True)
class Pending:
    """An open permission or question, on the session itself or rolled up from a descendant:
    its one-line summary and the request as the server sent it."""

    kind: str  # "permission" | "question"
    id: str
    session_id: str
    summary: str
    request: PermissionRequest | QuestionRequest | None = field(
        default=None, compare=False, hash=False
    )

    @property
    def permission(self) -> PermissionRequest | None:
        """The request, when it is a permission."""
        return self.request if isinstance(self.request, PermissionRequest) else None

    @property
    def question(self) -> QuestionRequest | None:
        """The request, when it is a question."""
        return self.request if isinstance(self.request, QuestionRequest) else None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "session_id": self.session_id,
            "summary": self.summary,
        }


class LastKnown(NamedTuple):
    """What an unreachable server's session was, by the last facts read of it."""

    state: State
    reason: Reason | None
    stale: bool

    def said(self) -> str:
        """`busy`, `busy, stale`, `idle (completed)` (words.was)."""
        return was(self.state, self.reason, self.stale)


@dataclass(slots=True)
class SessionRow:
    """One session as the View shows it. Times are epoch seconds (float).

    Never mutated once derive() built it: treat it as immutable. (Not `frozen=True` only because
    a frozen dataclass sets each field through object.__setattr__ as it is constructed, and
    derive() builds thousands.)"""

    __hash__ = None  # type: ignore[assignment]

    server: str
    id: str
    title: str
    directory: str
    parent_id: str | None
    state: State
    reason: Reason | None
    stale: bool
    evidence: tuple[str, ...]
    pending: tuple[Pending, ...]
    since: float | None
    updated: float | None
    cost: float | None
    tokens: int | None
    settled: bool = True  # False while the facts are still arriving (e.g. idle before the
    # final message is persisted); `wait` never stops on an unsettled row
    error: str | None = None  # last assistant error, "Name: message"
    retry_attempt: int | None = None
    retry_message: str | None = None
    retry_next: float | None = None
    children: tuple[str, ...] = ()
    ended: Reason | None = None  # for a stale row: how the messages show the run ended
    # (completed / aborted / error), although the server still reports busy
    settling: Settling | None = None  # while not settled, what the facts wait for (SETTLING); the
    # row then keeps its last settled state, reason and stale flag (docs/STATES.md)
    last_known: LastKnown | None = None  # an unreachable server's row (unknown): what its last
    # facts said, from when it went down (`since`); shown dimmed, and it keeps its place

    @property
    def key(self) -> tuple[str, str]:
        return (self.server, self.id)

    @property
    def settled_as(self) -> Identity:
        """What the row is, as a transition compares it: (state, reason, stale). A settled
        row's change of it is a transition (`transitions`), of the snapshot against the
        journal's row a drift (store.count_drift); its time, evidence, requests and the rest
        may change without one."""
        return (self.state, self.reason, self.stale)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "server": self.server,
            "title": self.title,
            "directory": self.directory,
            "parent_id": self.parent_id,
            "state": self.state,
            "reason": self.reason,
            "stale": self.stale,
            "evidence": list(self.evidence),
            "pending": [p.to_json() for p in self.pending],
            "since": iso(self.since),
            "updated": iso(self.updated),
            "cost": self.cost,
            "tokens": self.tokens,
            "settled": self.settled,
            "error": self.error,
            "retry": None
            if self.state != "retry"
            else {
                "attempt": self.retry_attempt,
                "message": self.retry_message,
                "next": iso(self.retry_next),
            },
            "children": list(self.children),
            "ended": self.ended,
            "settling": self.settling,
            "last_known": None
            if self.last_known is None
            else {
                "state": self.last_known.state,
                "reason": self.last_known.reason,
                "stale": self.last_known.stale,
            },
        }


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """Connection health of one server, as the View shows it."""

    url: str
    version: str | None = None
    reachable: bool = False
    protocol: str | None = None  # "v1" | "v2" once probed (tui.core.protocols)
    foreign: bool = False  # it answers, but speaks no OpenCode protocol (its error says how)
    name: str = ""  # what the config calls it (metric labels, alerts); "" : its URL
    labels: tuple[tuple[str, str], ...] = ()  # extra labels (an inventory file's), sorted
    error: str | None = None
    error_since: float | None = None  # when the current error began
    error_at: float | None = None  # when the last try that failed began (not one ocwatch gave up)
    connected: bool = False  # event stream up
    last_event_at: float | None = None
    snapshot_at: float | None = None
    drift_count: int = 0
    drift_examples: tuple[str, ...] = ()
    # runs that began and ended while events were missed, seen ended by a snapshot: (outcome
    # (core/outcome.py's Outcome), how many), since the monitor started (count_unseen_runs)
    unseen_runs: tuple[tuple[str, int], ...] = ()
    skipped_events: int = 0
    unknown_events: int = 0
    loading: tuple[int, int] | None = None  # first snapshot: (last messages fetched, to fetch)
    stream: str = "none"  # connected | stalled (a heartbeat missed) | lost | none (yet)
    malformed: int = 0  # records of the last snapshot that could not be read (skipped)
    malformed_examples: tuple[str, ...] = ()  # which ("session ses_x", the first few)
    reconnects: int = 0  # event streams opened after the first
    snapshots: int = 0  # snapshots taken (successfully) since the monitor started
    stream_drop: tuple[float, str] | None = None  # the last connected stream's end: when, why
    stream_error: str | None = None  # why the stream could not be opened last (None: it was)
    requests: int = 0  # HTTP requests sent to the server since the monitor started
    requests_per_minute: float | None = None  # over the last minute (None: not a minute yet)
    vouched: bool = False  # the stream carried every event since the snapshot (light touch)
    resync_every: float | None = None  # seconds between the periodic resyncs now (light touch)
    first_snapshot: bool = False  # a complete snapshot is in: every row rests on its facts

    @property
    def label(self) -> str:
        """The server's name, else its URL."""
        return self.name or self.url

    def why_unread(self) -> str:
        """Why this server cannot be read, in one line that names it (every command says it
        so): what its monitor said failed (the error names the URL), else `URL: unreachable`
        once it was read, or `URL: not read yet` before its first complete snapshot."""
        if self.error:
            return self.error
        return f"{self.url}: {'unreachable' if self.first_snapshot else 'not read yet'}"

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "name": self.label,
            "protocol": self.protocol,
            "version": self.version,
            "reachable": self.reachable,
            "error": self.error,
            "stream": self.stream,
            "malformed": self.malformed,
            "malformed_examples": list(self.malformed_examples),
        }


@dataclass(frozen=True, slots=True, repr=False)
class View:
    """The whole world at one moment: servers and session rows (keyed by (server, id))."""

    generated_at: float
    servers: tuple[ServerInfo, ...]
    rows: dict[tuple[str, str], SessionRow]

    def __repr__(self) -> str:
        """Short: asyncio formats the repr of a finished task's result more than once as
        asyncio.run() returns (Python 3.11 restores the SIGINT handler through an Enum lookup
        that formats its value), and a long repr of every row of a large fleet each time would
        hold the exit."""
        return (
            f"View(generated_at={self.generated_at!r}, servers={len(self.servers)}, "
            f"rows={len(self.rows)})"
        )

    def find(self, session_id: str) -> list[SessionRow]:
        return [r for r in self.rows.values() if r.id == session_id]

    def counts(self) -> dict[str, int]:
        return count_states(self.rows.values())

    def to_json(self) -> dict[str, Any]:
        rows = sorted(self.rows.values(), key=lambda r: (r.server, r.directory, r.id))
        return {
            "generated_at": iso(self.generated_at),
            "servers": [s.to_json() for s in self.servers],
            "sessions": [r.to_json() for r in rows],
        }


@dataclass(frozen=True, slots=True)
class Transition:
    """A session's settled state changed: `before` is the last settled row (None: first sight),
    `after` the new one (None: the session is gone)."""

    key: tuple[str, str]
    before: SessionRow | None
    after: SessionRow | None
    at: float


Settled = dict[tuple[str, str], SessionRow]


@dataclass(frozen=True, slots=True)
class Changes:
    """What one View changed against the settled rows before it (see `transitions`)."""

    transitions: list[Transition]
    settled: Settled  # the last settled row of every session in the View
    asks: list[Transition]  # a session still waiting for input, asked something new


def transitions(before: Settled | None, after: View) -> Changes:
    """The transition contract (docs/STATES.md), pure: from the last settled row of each session
    (`before`, as the last call returned it in `Changes.settled`) to the View `after`.

    A transition is a change of a settled row's (state, reason, stale), a session seen settled
    for the first time (`before` None), or a session gone from the View (`after` None). An
    unsettled row emits nothing and keeps its last settled row, so no consumer ever sees a
    state the facts have not settled. A row waiting for input that is asked something new
    (other requests, same state) is no transition; it is listed in `asks` (alerts read it)."""
    old = before or {}
    out: list[Transition] = []
    asks: list[Transition] = []
    settled: Settled = {}
    at = after.generated_at
    rows = after.rows
    for key, row in rows.items():
        prev = old.get(key)
        if prev is row:  # derive's memo reused the row: nothing changed
            settled[key] = row
            continue
        _step(key, row, prev, settled, out, asks, at)
    # sessions gone, by key (not by when each was first settled: the same whichever way the
    # settled rows were kept, transitions_of's or this)
    for key in sorted(key for key in old if key not in rows):
        out.append(Transition(key, old[key], None, at))
    return Changes(out, settled, asks)


def transitions_of(before: Settled, after: View, changed: Iterable[tuple[str, str]]) -> Changes:
    """`transitions(before, after)` when only the rows of `changed` can differ from the View
    `before` was taken from (the same sessions, every other row the same object): it looks at
    those alone. A property test holds it equal to `transitions`."""
    out: list[Transition] = []
    asks: list[Transition] = []
    settled: Settled = dict(before)
    at = after.generated_at
    rows = after.rows
    for key in changed:
        row = rows[key]
        prev = before.get(key)
        if prev is not row:
            _step(key, row, prev, settled, out, asks, at)
    return Changes(out, settled, asks)


def _step(
    key: tuple[str, str],
    row: SessionRow,
    prev: SessionRow | None,
    settled: Settled,
    out: list[Transition],
    asks: list[Transition],
    at: float,
) -> None:
    """One row against its last settled one: what `settled` keeps, and its transition."""
    if not row.settled:
        if prev is not None:
            settled[key] = prev
        return
    settled[key] = row
    if prev is None or prev.settled_as != row.settled_as:
        out.append(Transition(key, prev, row, at))
    elif row.state == "input" and {p.id for p in row.pending} - {p.id for p in prev.pending}:
        asks.append(Transition(key, prev, row, at))


class TransitionFeed:
    """Keeps the settled rows between Views: `feed(view)` returns that View's Changes."""

    def __init__(self) -> None:
        self.settled: Settled | None = None

    def feed(self, view: View, changed: Iterable[tuple[str, str]] | None = None) -> Changes:
        """`changed`: when known, the only rows that can differ from the last View fed (the
        same sessions, every other row the same object); None: any may."""
        if changed is None or self.settled is None:
            changes = transitions(self.settled, view)
        else:
            changes = transitions_of(self.settled, view, changed)
        self.settled = changes.settled
        return changes


# "Needs attention first": input, stale, retry, unknown, busy, errors, the rest.
_RANK = {"input": 0, "retry": 2, "unknown": 3, "busy": 4, "idle": 7}


def count_states(rows: Iterable[SessionRow]) -> dict[str, int]:
    """Rows per state (every state present, zero or not), and how many are stale."""
    out: dict[str, int] = {s: 0 for s in STATES}
    out["stale"] = 0
    for r in rows:
        out[r.state] += 1
        out["stale"] += r.stale
    return out


def waiting_requests(rows: Iterable[SessionRow]) -> int:
    """The requests waiting for input: each open request once, by server and id (a sub-agent's
    shows on its own row and, rolled up, on its ancestors': one request all the same); a row
    waiting on none it lists counts one."""
    seen: set[tuple[str, str]] = set()
    unlisted = 0
    for r in rows:
        if r.state != "input":
            continue
        if not r.pending:
            unlisted += 1
        for p in r.pending:
            seen.add((r.server, p.id))
    return len(seen) + unlisted


def attention_rank(row: SessionRow) -> int:
    """Lower is more urgent: input, stale busy, retry, unknown, busy, idle error/aborted/other,
    then rows whose last message is not read yet (a first snapshot loading: they claim nothing).
    The dashboard's state sort and the `status` table both order by it."""
    # (an unreachable server's row keeps its place: what it last was)
    state, reason, stale = row.last_known or row.settled_as
    if stale:
        return 1
    if row.settling == "loading" and state == "unknown":
        return 9
    if state == "idle":
        return {"error": 5, "aborted": 6}.get(reason or "", 7)
    return _RANK.get(state, 8)


def loaded(progress: tuple[int, int]) -> str:
    """`812/2,005`: a first snapshot's last messages fetched so far (ServerInfo.loading)."""
    done, total = progress
    return f"{done:,}/{total:,}"


def duration(seconds: float | None, unknown: str = "–") -> str:
    """Compact duration: `4s`, `2m05s`, `1h02m`, `3d04h`; `unknown` when there is none."""
    if seconds is None:
        return unknown
    s = int(seconds)
    if s < 0:  # (not max(): it parses keywords, and derive calls this per session)
        s = 0
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def ago(now: float, t: float, *, coarse: bool = False) -> str:
    """How long before `now` `t` was: `4s ago`, `2m05s ago`, `1h02m ago`, `3d04h ago` (its
    `duration`), or `coarse`, one unit: `12s ago`, `3m ago`, `2h ago`, `5d ago`. The one time
    text of the evidence (derive) and the table (format.age)."""
    s = int(now - t)
    if s < 0:
        s = 0
    if not coarse or s < 60:
        return duration(s) + " ago"
    if s < 3600:
        return f"{s // 60}m ago"
    if s < 86400:
        return f"{s // 3600}h ago"
    return f"{s // 86400}d ago"


def duration_next(seconds: float) -> int:
    """The whole number of seconds at which `duration(seconds)` next reads differently."""
    s = max(0, int(seconds))
    if s < 3600:
        return s + 1
    if s < 86400:
        return (s // 60 + 1) * 60
    return (s // 3600 + 1) * 3600


def iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
