"""Snapshot: the complete state of one server, fetched over HTTP at one moment.

Status, permissions and questions are answered per project folder, so they are asked for every
folder the server knows (the sessions' `directory` values and `GET /project`). The last message of
a session is re-fetched only when it may have changed (its `time.updated` moved, it is not idle,
or the journal touched it); a cache keeps the others, so a resync of many idle, unchanged sessions
costs a bounded number of requests.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import ValidationError

from .client import BadResponse, Client, NotFound, OcwatchError
from .models import Message, PermissionRequest, QuestionRequest, Session, SessionStatus

log = logging.getLogger("ocwatch.snapshot")
_T = TypeVar("_T")
_R = TypeVar("_R")

#: Seconds at least between two partial snapshots (fetch_snapshot's `partial`): each one derives
#: and repaints every row, which at 10,000 sessions costs a good part of what reading takes.
PARTIAL_EVERY = 0.5


@dataclass(frozen=True)
class Snapshot:
    """Everything derive() needs from one server, fetched at `started_at` (client clock)."""

    server: str
    started_at: float
    sessions: dict[str, Session]
    status: dict[str, SessionStatus]
    permissions: dict[str, PermissionRequest]
    questions: dict[str, QuestionRequest]
    messages: dict[str, Message | None]  # last message per session; None: the session has none
    active: frozenset[str] = frozenset()
    version: str | None = None
    journal_seq: int = 0  # the journal's seq when the fetch began
    requests: int = 0  # HTTP requests this snapshot cost
    vouched: int = 0  # last messages the event stream vouched for (not asked again)
    skipped: int = 0  # malformed items skipped
    malformed: tuple[str, ...] = ()  # which ones ("session ses_x", first few)
    # a first snapshot published before it is complete (fetch_snapshot's `partial`): the
    # sessions whose last message is still being read (their `messages` entry means nothing)
    loading: frozenset[str] = frozenset()
    folders: tuple[str | None, ...] = ()  # the project folders the maps were asked for
    listed_at: float = 0.0  # when the session list was read (a listless resync keeps its time)
    reverified: int = 0  # vouched messages asked again only for being old (`reverify`)
    protocol: str = "v1"  # the protocol the server was read by (tui.core.protocols)
    instance: str | None = None  # which server process answered (V2: its pid), when it says
    # the sessions whose last message could not be read, and why (that session's failure alone:
    # `confined`); their `messages` entry means nothing
    unreadable: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Relist:
    """What a resync over a stream that vouches for every event takes instead of reading the
    session list, the health and the project folders again: the last list with the events'
    sessions laid over it, the folders and version then, and when that list was read."""

    sessions: dict[str, Session]
    folders: tuple[str | None, ...]
    version: str | None
    listed_at: float
    instance: str | None = None


@dataclass
class MessageCache:
    """Last message per session, keyed by the session's `time.updated` when it was fetched."""

    # session id -> (its time.updated, last message, whether it was running when fetched, when
    # the snapshot that fetched it began)
    entries: dict[str, tuple[float, Message | None, bool, float]] = field(default_factory=dict)
    # session id -> (a digest of the listed item, its Session): the digest, not the item (the
    # listed items kept whole would be a second copy of the whole listing, held for good)
    sessions: dict[str, tuple[bytes, Session]] = field(default_factory=dict)
    # V2: session id -> what its transcript's tail said besides its last turn (tui.core.
    # protocols.v2.snapshot: the run's idle marker, the retry it waits on)
    tails: dict[str, Any] = field(default_factory=dict)

    def fresh(self, s: Session, now: float, settle: float = 600.0) -> bool:
        """Whether the cached last message can be reused without asking again.

        `time.updated` alone is not enough (observed on 1.18.33: it does not move during a run,
        and a failed or aborted run persists its final message after it). So a message that may
        still change (a prompt without reply, an assistant message not completed) is asked again
        while it is younger than `settle` seconds; older ones only when `time.updated` moves or
        the event stream touched the session. A message fetched while the session was running is
        never reused once it stopped: the run's end (an abort, an error) may have been missed.
        """
        hit = self.entries.get(s.id)
        if hit is None or hit[0] != s.time.updated:
            return False
        msg, was_running = hit[1], hit[2]
        if msg is None or was_running:
            # (even a final one: a run's step completed, and the run went on, or ended in a
            # way this message does not say: V2 moves no time.updated for a refusal)
            return not was_running
        info = msg.info
        final = info.role == "assistant" and (info.time.completed or info.error is not None)
        if final:
            return True
        return now - info.time.created / 1000.0 > settle

    def vouched(self, s: Session, since: float | None, now: float, max_age: float) -> bool:
        """Whether the cached last message can be brought up to date from the journal instead
        of asking: it was fetched after `since` (from when the event stream has carried every
        event, so the journal holds every change to it since), at most `max_age` seconds before
        `now`, and the session's `time.updated` has not moved (a moved one is asked again)."""
        hit = self.entries.get(s.id)
        return (
            since is not None
            and hit is not None
            and hit[0] == s.time.updated
            and (since <= hit[3] and now - hit[3] <= max_age)
        )

    def get(self, sid: str) -> Message | None:
        hit = self.entries.get(sid)
        return hit[1] if hit else None

    def put(
        self, s: Session, msg: Message | None, running: bool = False, fetched: float = 0.0
    ) -> None:
        self.entries[s.id] = (s.time.updated, msg, running, fetched)

    def vouch(self, s: Session, msg: Message | None, running: bool) -> None:
        """Keep `msg` (the cached one brought up to date) as fetched when the cached one was."""
        hit = self.entries.get(s.id)
        self.entries[s.id] = (s.time.updated, msg, running, hit[3] if hit else 0.0)

    def forget(self, sid: str) -> None:
        """Drop what is kept of one session's last message (its next snapshot reads it)."""
        self.entries.pop(sid, None)
        self.tails.pop(sid, None)

    def prune(self, live: Iterable[str]) -> None:
        keep = set(live)
        for sid in [k for k in self.entries if k not in keep]:
            del self.entries[sid]
        for sid in [k for k in self.sessions if k not in keep]:
            del self.sessions[sid]
        for sid in [k for k in self.tails if k not in keep]:
            del self.tails[sid]

    def sessions_from(self, raw: list[dict[str, Any]]) -> tuple[list[Session], list[str]]:
        """Validate listed sessions, reusing the Session of an item equal to last time's (a
        resync of thousands of unchanged sessions then costs dict comparisons, not parsing)."""
        out: list[Session] = []
        bad: list[str] = []
        for item in raw:
            sid = item.get("id")
            hit = self.sessions.get(sid) if isinstance(sid, str) else None
            mark = _digest(item)
            if hit is not None and hit[0] == mark:
                out.append(hit[1])
                continue
            try:
                session = Session.parse(item)
            except ValidationError:
                bad.append(_name("session", item))
                continue
            self.sessions[session.id] = (mark, session)
            out.append(session)
        return out, bad


def _digest(item: dict[str, Any]) -> bytes:
    """What tells a listed item from any other (128 bits of its text as read: a server lists an
    unchanged session the same way, key order included)."""
    return hashlib.blake2b(repr(item).encode("utf-8", "surrogatepass"), digest_size=16).digest()


#: HTTP statuses that say the server as a whole cannot answer now (throttled, overloaded)
_SERVER_WIDE = frozenset({408, 429, 502, 503, 504})


def confined(exc: OcwatchError) -> bool:
    """Whether a failure to read one session's messages is that session's alone (its row says
    why; the rest of the snapshot stands): an answer that cannot be read (JSON nested too deep,
    a number too long, a record that is no message) or an error status of its own. A failure
    that says the server as a whole cannot answer (unreachable, a password refused, a redirect,
    the wrong protocol, a throttling or gateway status, a `Retry-After`) fails the snapshot."""
    return (
        type(exc) is BadResponse
        and exc.retry_after is None
        and (exc.status is None or exc.status not in _SERVER_WIDE)
    )


def unreadable_why(exc: OcwatchError, sid: str) -> str:
    """What a session's row says of its unreadable last message: the error without the route
    (the server's URL and the request are the same for every session)."""
    text = exc.message
    marker = f"/{sid}/"
    at = text.find(marker)
    if at >= 0:  # `<url> GET /session/<id>/message: <what>` -> `<what>`
        colon = text.find(": ", at)
        if colon >= 0:
            text = text[colon + 2 :]
    return text[:300]


def running_kind(st: SessionStatus | None) -> str | None:
    """A status entry's type, None for absent or idle (the status map drops idle sessions)."""
    return st.type if st is not None and st.type != "idle" else None


def _name(kind: str, raw: Any) -> str:
    """How a malformed record is named to the user: its kind and id, if it has a usable one."""
    rid = raw.get("id") if isinstance(raw, dict) else None
    return f"{kind} {rid[:80]}" if isinstance(rid, str) and rid else f"{kind} without an id"


def _models(items: Iterable[Any], model: Any, kind: str) -> tuple[list[Any], list[str]]:
    out: list[Any] = []
    bad: list[str] = []
    for raw in items:
        try:
            out.append(model.parse(raw))
        except ValidationError:
            bad.append(_name(kind, raw))
    return out, bad


async def fetch_snapshot(
    client: Client,
    cache: MessageCache,
    *,
    clock: Callable[[], float],
    journal_seq: int = 0,
    touched: Iterable[str] = (),
    concurrency: int = 8,
    probe_active: bool = True,
    progress: Callable[[int, int], None] | None = None,
    vouch: Callable[[str, Message | None], Message | None] | None = None,
    vouched_since: Callable[[], float | None] = lambda: None,
    vouch_max_age: float = 300.0,
    expected_status: Callable[[str], SessionStatus | None] = lambda _sid: None,
    partial: Callable[[Snapshot], None] | None = None,
    relist: Relist | None = None,
    reverify: int | None = None,
    focus: frozenset[str] | None = None,
) -> Snapshot:
    """Fetch one complete Snapshot. Raises OcwatchError when the server cannot answer.

    `progress(done, total)` is told how many of the last messages to fetch have arrived: once
    with 0 when the sessions are listed, then after each one (a first snapshot of a large server
    fetches one per session and takes seconds).

    A light touch: the last message of a running or touched session is asked again unless the
    event stream vouches for it (`vouched_since()`, read once the maps are in: since when the
    stream has carried every event, None: it does not vouch; MessageCache.vouched) and the
    status map agrees with what the events said (`expected_status(id)`, as `running_kind`; a
    status that changed with no event refutes the stream): then `vouch(session id, cached
    message)` brings it up to date from the journal.

    The last messages are read running sessions first, then the most recently updated. With
    `partial`, it is handed the Snapshot as soon as the maps are in (every last message still to
    read listed in `Snapshot.loading`), and again as they arrive (about every tenth of them, at
    least 200 apart, and PARTIAL_EVERY seconds), so that a large server is shown in the time of a
    handful of requests.

    `relist`: the session list is not read (nor the health, nor the project folders): the maps
    are asked for its folders and those of its sessions. `reverify`: at most that many vouched
    messages are asked again only for being older than `vouch_max_age`, the longest vouched
    first (None: all of them). `focus`: the snapshot is of those sessions and their
    descendants only (`narrow`)."""
    got = _Gathered(client, cache, clock(), journal_seq, client.requests)
    listed = await _list_sessions(got, relist)
    if focus is not None:
        listed = narrow(got, focus)
    await _read_maps(got)
    if probe_active:
        got.active |= await client.active() or set()
    need = _choose_reads(
        got,
        listed,
        set(touched),
        vouch=vouch,
        since=vouched_since() if vouch is not None else None,
        vouch_max_age=vouch_max_age,
        expected_status=expected_status,
        reverify=reverify,
    )
    await _read_last_messages(got, need, concurrency, progress, partial)
    cache.prune(got.sessions)
    return got.snapshot()


@dataclass
class Gathered:
    """What one snapshot reader (either protocol's) has read so far; its steps fill it in
    turn, and `snapshot()` makes a Snapshot of it at any point (a partial one, or the complete
    one at the end). Each protocol adds what only it reads."""

    client: Client
    cache: MessageCache
    started: float
    journal_seq: int
    requests_before: int  # the client's request count when the fetch began
    sessions: dict[str, Session] = field(default_factory=dict)
    folders: list[str | None] = field(default_factory=list)
    version: str | None = None
    listed_at: float = 0.0
    permissions: dict[str, PermissionRequest] = field(default_factory=dict)
    questions: dict[str, QuestionRequest] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)
    bad_names: list[str] = field(default_factory=list)  # the malformed records, in read order
    vouched: int = 0
    reverified: int = 0
    unreadable: dict[str, str] = field(default_factory=dict)

    def unread(self, sid: str, why: str) -> None:
        """The session's last message cannot be read: its row says `why`, and the next
        snapshot asks again."""
        self.unreadable[sid] = why
        self.bad_names.append(f"last message of {sid[:80]}")  # (said as every record not read)
        self.cache.forget(sid)

    def made(
        self, status: dict[str, SessionStatus], loading: frozenset[str], **more: Any
    ) -> Snapshot:
        """The Snapshot of what was read, with the status map the protocol has (`more`: the
        fields only it fills)."""
        return Snapshot(
            server=self.client.url,
            started_at=self.started,
            sessions=self.sessions,
            status=status,
            permissions=self.permissions,
            questions=self.questions,
            messages={sid: self.cache.get(sid) for sid in self.sessions},
            version=self.version,
            journal_seq=self.journal_seq,
            requests=self.client.requests - self.requests_before,
            vouched=self.vouched,
            reverified=self.reverified,
            skipped=len(self.bad_names),
            malformed=tuple(self.bad_names[:5]),
            loading=loading,
            folders=tuple(self.folders),
            listed_at=self.listed_at,
            unreadable=dict(self.unreadable),
            **more,
        )


def children_of(sessions: Mapping[str, Session]) -> dict[str, list[str]]:
    """Each listed parent's listed children, in the sessions' order."""
    children: dict[str, list[str]] = {}
    for s in sessions.values():
        parent = s.parent_id
        if parent and parent in sessions:
            children.setdefault(parent, []).append(s.id)
    return children


def family_of(sessions: Mapping[str, Session], focus: Iterable[str]) -> dict[str, Session]:
    """The sessions of `focus` that are listed, with all their listed descendants (what their
    rows roll up: a sub-agent's run, its requests), in the listed order."""
    kids = children_of(sessions)
    keep: set[str] = set()
    todo = [sid for sid in focus if sid in sessions]
    while todo:  # (iterative: a tree can be deep; `keep` stops a cycle)
        sid = todo.pop()
        if sid not in keep:
            keep.add(sid)
            todo.extend(kids.get(sid, ()))
    return {sid: s for sid, s in sessions.items() if sid in keep}


def narrow(got: Gathered, focus: frozenset[str]) -> list[Session]:
    """Keep of what was listed only the sessions a reader looks at (`focus`: `ocwatch wait`'s)
    and their descendants, and ask the per-folder routes of their folders only: the others'
    last messages are never read (a `wait` on a server of 1,000 sessions asked for 1,000).
    A server lists a session's status and requests in the session's own folder (1.18.33, even
    for a prompt sent through another folder: tests/integration); one kept session without a
    folder has every folder asked, as a whole snapshot asks them. Those sessions, in the
    listed order."""
    got.sessions = kept = family_of(got.sessions, focus)
    if kept and all(s.directory for s in kept.values()):
        got.folders = [*sorted({s.directory for s in kept.values()})]
    elif not kept:  # (on this server, nothing of the focus: no map to ask)
        got.folders = []
    return list(kept.values())


@dataclass
class _Gathered(Gathered):
    """V1's: the server's own status map (`active`: what the active list adds)."""

    status: dict[str, SessionStatus] = field(default_factory=dict)

    def running(self, sid: str) -> bool:
        """Whether the status map or the active list says the session runs."""
        return sid in self.status or sid in self.active

    def snapshot(self, loading: frozenset[str] = frozenset()) -> Snapshot:
        return self.made(self.status, loading, active=frozenset(self.active))


async def _list_sessions(got: _Gathered, relist: Relist | None) -> list[Session]:
    """Step 1: the sessions, the project folders and the version: read from the server (its
    health, every page of the session list, its folders), or taken from `relist`. The sessions
    in the server's order."""
    client = got.client
    if relist is not None:
        got.sessions = relist.sessions
        listed = list(got.sessions.values())
        found = {d for d in relist.folders if d} | {s.directory for s in listed if s.directory}
        got.folders = [*sorted(found)] or [None]
        got.version, got.listed_at = relist.version, relist.listed_at
        return listed
    health = await client.health()
    listed, bad = got.cache.sessions_from(await client.all_sessions())
    got.bad_names += bad
    got.sessions = {s.id: s for s in listed}
    got.folders = await client.folders(listed)
    got.version = health.get("version") if isinstance(health.get("version"), str) else None
    got.listed_at = got.started
    return listed


#: Folders whose maps a snapshot reads at once (each folder's three together): a server of
#: thousands of folders is read FOLDERS_AT_ONCE at a time, not with thousands of connections
#: (3,000 folders opened 9,000 and read as a timeout: the server said unreachable)
FOLDERS_AT_ONCE = 8


def per_folder(
    folders: Sequence[str | None], read: Callable[[str | None], Awaitable[_R]]
) -> asyncio.Future[list[_R]]:
    """`read` of each folder, FOLDERS_AT_ONCE at a time, in the folders' order. (A gate, not
    workers: up to FOLDERS_AT_ONCE folders this runs as one gather of them did, turn for turn,
    which a replay's reading of a recorded snapshot counts on: tui.record.replay._settle.)"""
    gate = asyncio.Semaphore(FOLDERS_AT_ONCE)

    async def one(d: str | None) -> _R:
        async with gate:
            return await read(d)

    return asyncio.gather(*(one(d) for d in folders))  # (a future: no task of its own)


async def _read_maps(got: _Gathered) -> None:
    """Step 2: the status, permission and question maps of every folder (per_folder)."""
    client = got.client

    async def maps(d: str | None) -> tuple[dict[str, Any], list[Any], list[Any]]:
        st, perms, qs = await asyncio.gather(
            client.status(d), client.permissions(d), client.questions(d)
        )
        return st, perms, qs

    for st, perms, qs in await per_folder(got.folders, maps):
        for sid, raw in st.items():
            try:
                got.status[sid] = SessionStatus.parse(raw)
            except ValidationError:
                got.bad_names.append(f"status of {sid[:80]}")
        ps, bad = _models(perms, PermissionRequest, "permission")
        got.bad_names += bad
        got.permissions.update({p.id: p for p in ps})
        qq, bad = _models(qs, QuestionRequest, "question")
        got.bad_names += bad
        got.questions.update({q.id: q for q in qq})


def _choose_reads(
    got: _Gathered,
    listed: list[Session],
    touched: set[str],
    *,
    vouch: Callable[[str, Message | None], Message | None] | None,
    since: float | None,
    vouch_max_age: float,
    expected_status: Callable[[str], SessionStatus | None],
    reverify: int | None,
) -> list[Session]:
    """Step 3: the sessions whose last message is asked for, in the order to ask (running
    first, then the most recently updated). The others keep their cached message: fresh and
    not running nor touched, or vouched for by the event stream (brought up to date by `vouch`
    here; those vouched for longer than `vouch_max_age` are asked again, `reverify` at most)."""
    cache, started = got.cache, got.started
    need: list[Session] = []
    overdue: list[tuple[float, Session]] = []  # vouched but for their age: (fetched, session)
    for s in listed:
        if (
            cache.fresh(s, started)
            and s.id not in got.status
            and s.id not in got.active
            and (s.id not in touched)
        ):
            continue
        if (
            vouch is not None
            and s.id not in got.active
            and cache.vouched(s, since, started, math.inf)
            and running_kind(expected_status(s.id)) == running_kind(got.status.get(s.id))
        ):
            fetched = cache.entries[s.id][3]
            if started - fetched > vouch_max_age:
                overdue.append((fetched, s))
                continue
            cache.vouch(s, vouch(s.id, cache.get(s.id)), got.running(s.id))
            got.vouched += 1
            continue
        need.append(s)
    again, still = reverified_first(overdue, reverify)
    need += again  # asked again: the safety net, a few at a time
    got.reverified = len(again)
    for s in still:
        assert vouch is not None
        cache.vouch(s, vouch(s.id, cache.get(s.id)), got.running(s.id))
        got.vouched += 1
    # what is running first (its stale check rests on it), then what changed last
    need.sort(key=lambda s: (not got.running(s.id), -s.time.updated))
    return need


async def _read_last_messages(
    got: _Gathered,
    need: list[Session],
    concurrency: int,
    progress: Callable[[int, int], None] | None,
    partial: Callable[[Snapshot], None] | None,
) -> None:
    """Step 4: read the last message of each of `need`, `concurrency` at a time, telling
    `progress` after each and `partial` a Snapshot now and then (fetch_snapshot's docstring)."""
    client, cache, started = got.client, got.cache, got.started
    done = 0
    if progress is not None:
        progress(0, len(need))
    arrived: set[str] = set()
    step = max(200, len(need) // 10)
    shown = [0, time.monotonic()]  # messages read, and when, at the last partial
    if partial is not None and need:
        partial(got.snapshot(frozenset(s.id for s in need)))

    async def last_message(s: Session) -> None:
        nonlocal done
        try:
            try:
                raw = await client.messages(s.id, limit=1, directory=s.directory or None)
            except NotFound:  # deleted between the list and this request
                cache.put(s, None, fetched=started)
                return
            except OcwatchError as exc:
                if not confined(exc):
                    raise
                got.unread(s.id, unreadable_why(exc, s.id))
                return
            msgs, bad = _models(raw, Message, f"message of {s.id[:80]}")
            if bad and not msgs:  # its last message is there but is no message
                got.unread(s.id, "its last message is malformed")
                return
            got.bad_names.extend(bad)
            cache.put(s, msgs[-1] if msgs else None, running=got.running(s.id), fetched=started)
        finally:
            done += 1
            arrived.add(s.id)
            if progress is not None:
                progress(done, len(need))
            if (
                partial is not None
                and done < len(need)
                and (done - shown[0] >= step and time.monotonic() - shown[1] >= PARTIAL_EVERY)
            ):
                shown[:] = [done, time.monotonic()]
                partial(got.snapshot(frozenset(x.id for x in need if x.id not in arrived)))

    await each_in_turn(need, last_message, concurrency)


def reverified_first(
    overdue: list[tuple[float, Session]], reverify: int | None
) -> tuple[list[Session], list[Session]]:
    """Of the sessions vouched for but for their age ((fetched, session)), those a snapshot
    reads again (the longest vouched first, `reverify` at most; None: all), and the rest."""
    order = [s for _fetched, s in sorted(overdue, key=lambda item: item[0])]
    budget = len(order) if reverify is None else max(0, reverify)
    return order[:budget], order[budget:]


async def each_in_turn(
    items: Iterable[_T], read: Callable[[_T], Awaitable[None]], concurrency: int
) -> None:
    """`read` every item, in their order, `concurrency` at a time (a snapshot's per-session
    reads); one failing (or this being cancelled) stops the others too."""
    todo = list(items)
    order = iter(todo)  # shared by the workers: each takes the next one, in that order

    async def worker() -> None:
        for item in order:
            await read(item)
            # a server on loopback can answer without the loop ever waiting: let the rest of
            # the program (the dashboard painting the partial rows) in between two requests
            await asyncio.sleep(0)

    workers = [asyncio.ensure_future(worker()) for _ in range(max(1, min(concurrency, len(todo))))]
    try:
        await asyncio.gather(*workers)
    except BaseException:  # one failed (or this was cancelled): stop the others too
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
