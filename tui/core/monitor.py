"""ServerMonitor: one long-lived connection to one server (list, then watch; resync on any gap).

It owns the event stream, the journal and the current snapshot, and never derives state itself:
`rows(now)` calls the pure derive_server() on what it holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import raw
from .client import (
    AuthFailed,
    BadResponse,
    Client,
    Neither,
    NotFound,
    OcwatchError,
    Unreachable,
    WrongProtocol,
    describe_transport_error,
)
from .derive import Link
from .events import EventParser
from .journal import Journal, merge_message, sessions_after, status_after
from .models import SessionStatus
from .protocols import V1, V2, Protocol
from .settings import Auth, Settings
from .snapshot import MessageCache, Relist, Snapshot
from .store import ServerStore
from .tap import SNAPSHOT, Tap
from .view import ServerInfo, SessionRow

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("ocwatch.monitor")

Notify = Callable[[], None]
"""What a monitor calls when its rows may have changed. It may also have an `urgent` method:
called instead for an event that can settle a row (a run ending, something asked or answered),
which a dashboard draws at once rather than at its next redraw slot."""

#: Seconds a stream must stay up before its reconnect backoff starts again from the shortest.
HEALTHY_FOR = 30.0


class GivenUp(Unreachable):
    """A snapshot the monitor gave up itself: begun before the event stream came back after a
    gap, it cannot cover the gap (and one sent to a restarting server may hang). No sign that
    the server is down; the stream being back says it is up."""


@dataclass(frozen=True, slots=True)
class SnapshotStart:
    """Where a snapshot began: its number, the journal's position, the sessions the journal had
    touched (their messages are fetched again), and when."""

    number: int
    seq: int
    touched: frozenset[str]
    started: float
    relist: Relist | None = None  # the session list it takes instead of reading it (_relist)
    reverify: int = 0  # old vouched messages it may ask again (_reverify)


def watchdog_at(watchdog: asyncio.Timeout) -> float:
    """When `watchdog` fires (loop time)."""
    when = watchdog.when()
    assert when is not None  # (armed with a delay, never disarmed)
    return when


class ServerMonitor:
    """Keeps a Snapshot and a Journal of one server current. Run `run(notify)` as a task."""

    def __init__(
        self,
        url: str,
        *,
        auth: Auth | None = None,
        settings: Settings | None = None,
        clock: Callable[[], float] = time.time,
        transport: httpx.AsyncBaseTransport | None = None,
        name: str = "",
        client: Client | None = None,
        progressive: bool = False,
    ) -> None:
        """`client`: one made elsewhere (a replay's, answering from a recording).
        `progressive`: `run()` shows the first snapshot as it arrives (take_snapshot)."""
        self.progressive = progressive
        self.settings = settings or Settings()
        self.name = name  # the config's name for it ("": none, called by its URL)
        self.auth = auth  # its own credentials (an attached OpenCode TUI gets them too)
        self.client = client or Client(
            url,
            auth,
            timeout=self.settings.request_timeout,
            transport=transport,
            deadline=self.settings.request_deadline,
        )
        self.url = self.client.url
        self.clock = clock
        self.client.clock = clock
        self._tap: Tap | None = None
        self._snapshot_no = 0
        self.store = ServerStore(self.settings)
        """The snapshot, the journal and the rows derived from them (written here only)."""
        self.parser: Any = EventParser()  # (the protocol's: V2EventParser once probed V2)
        self.protocol: Protocol | None = None
        """The protocol the server speaks (None: not probed yet; read as V1 meanwhile)."""
        self._probed = asyncio.Event()  # the first probe ended (known, or the server down)
        self._stream_path = V1.event_path  # the route of the stream open now (or last)
        self.cache = MessageCache()
        # (last messages fetched, to fetch) while a snapshot is being taken
        self._loading: tuple[int, int] | None = None
        self._error: str | None = None
        self._error_since: float | None = None
        self._connected = False
        self._last_event_at: float | None = None
        self._snapshots_taken = 0
        self._fatal = False  # e.g. authentication failed: retrying will not help without a fix
        self._stream_error: str | None = None
        self._stream_connects = 0  # event streams opened (each one after the first: a reconnect)
        self._stream_drop: tuple[float, str] | None = None  # the last one's end: when, and why
        self._want_snapshot = asyncio.Event()
        self._urgent = asyncio.Event()
        self._snapshot_done = asyncio.Event()
        self._down_since: float | None = None  # rows last derived while unreachable, since
        self._gap_since: float | None = None  # the stream was lost then; no snapshot since
        # the snapshot loop's snapshot in flight (what it began from, its task), and whether the
        # stream's return cancelled it (see stream_opened)
        self._in_flight: tuple[SnapshotStart, asyncio.Task[Any]] | None = None
        self._superseded = False
        self._gave_up = False  # the last snapshot to end was given up (GivenUp)
        self._connected_at = 0.0
        self._stall_checked = False  # a snapshot was asked for the current silence
        # since when the event stream has carried every event (None: it is down): a resync
        # brings the last messages fetched after it up to date from the journal (snapshot.py)
        self._vouch_since: float | None = None
        self._request_samples: deque[tuple[float, int]] = deque()  # (time, client.requests)
        self._reverified_at: float | None = None  # the last snapshot's start (_reverify)
        self._reverify_credit = 0.0
        self._recent: deque[tuple[float, str]] = deque(maxlen=raw.KEPT)
        """The last frames used (receive time, data as received): the detail view's raw
        events (tui.core.raw)."""
        self._stream_task: _CancelScope | None = None
        self._notify: Notify = lambda: None
        self._notify_urgent: Notify = self._notify

    # -- what it holds, for reading (only the monitor writes it) --------------------------------
    @property
    def snapshot(self) -> Snapshot | None:
        """The current snapshot (a first one may still be loading: Snapshot.loading)."""
        return self.store.snapshot

    @property
    def journal(self) -> Journal:
        """What the event stream said since the snapshot's fetch began."""
        return self.store.journal

    @property
    def loading(self) -> tuple[int, int] | None:
        """(last messages fetched, to fetch) while a snapshot is being taken."""
        return self._loading

    @property
    def error(self) -> str | None:
        """Why the last snapshot failed (None: it succeeded)."""
        return self._error

    @property
    def error_since(self) -> float | None:
        return self._error_since

    @property
    def connected(self) -> bool:
        """The event stream is up."""
        return self._connected

    @property
    def last_event_at(self) -> float | None:
        return self._last_event_at

    @property
    def snapshots_taken(self) -> int:
        return self._snapshots_taken

    @property
    def drift_count(self) -> int:
        """Snapshots that corrected what the events had derived (DESIGN.md: drift)."""
        return self.store.drift_count

    @property
    def drift_examples(self) -> tuple[str, ...]:
        return tuple(self.store.drift_examples)

    @property
    def fatal(self) -> bool:
        """Retrying will not help without a fix (e.g. authentication failed)."""
        return self._fatal

    @property
    def stream_error(self) -> str | None:
        return self._stream_error

    @property
    def stream_connects(self) -> int:
        return self._stream_connects

    @property
    def stream_drop(self) -> tuple[float, str] | None:
        return self._stream_drop

    @property
    def recent(self) -> tuple[tuple[float, str], ...]:
        """The last frames used (receive time, data as received): the raw events."""
        return tuple(self._recent)

    @property
    def tap(self) -> Tap | None:
        """A recording's tap (tui.core.tap): told every answer, frame and stream change."""
        return self._tap

    @tap.setter
    def tap(self, tap: Tap | None) -> None:
        self._tap = self.client.tap = tap

    # -- reading ---------------------------------------------------------------------------------
    @property
    def reachable(self) -> bool:
        """Whether the rows are live: a snapshot is in, and either the last one succeeded or the
        event stream is up and has missed nothing since a snapshot did (a failed snapshot then
        keeps the last one and its journal)."""
        return self.store.snapshot is not None and self.link().reachable

    def link(self) -> Link:
        # the rows are live until a snapshot or a reconnect fails (a stream lost alone does not
        # make them wrong); then they are what an unreachable server's are until a snapshot
        # succeeds. A stream back after the gap (a server restart, a network cut) does not
        # vouch for what the last good snapshot showed: runs may have ended, or been cut off,
        # unseen
        up = self._error is None or (
            self._connected and not self._fatal and self._gap_since is None
        )
        return Link(up, self._error, self._error_since)

    def rows(self, now: float) -> dict[tuple[str, str], SessionRow]:
        """Derive this server's rows at `now` (keeps them as `previous` for time-in-state)."""
        link = self.link()
        rows = self.store.rows(now, link)
        snap = self.store.snapshot
        if snap is None:
            return rows
        if link.reachable:
            self._down_since = None
            if not self._stall_checked and self.stream_health(now) == "stalled":
                self._stall_checked = True  # the rows may be behind: read the server once
                self.request_snapshot()
            if snap.started_at < now - self.settings.snapshot_debounce and (self.store.confirming):
                # a run ended and only events from before its end call it busy: ask the
                # server (a snapshot) instead of calling it stale on old news
                self.request_snapshot()
        elif self._down_since is None:
            self._down_since = link.since or now
        return rows

    def _request_rate(self) -> float | None:
        """Requests a minute to this server over the last minute, from samples of the client's
        count taken as the View is read (None until a minute of samples exists)."""
        now, count = self.clock(), self.client.requests
        samples = self._request_samples
        if not samples or now - samples[-1][0] >= 5.0:
            samples.append((now, count))
        while len(samples) > 1 and now - samples[1][0] >= 60.0:
            samples.popleft()
        first_at, first = samples[0]
        if now - first_at < 60.0:
            return None
        return (count - first) * 60.0 / (now - first_at)

    def take_changed(self) -> list[tuple[str, str]] | None:
        """The keys whose rows changed since the last call, in the rows' order (every other row
        is the same object as then); None: any may have (rows derived whole, sessions came or
        went)."""
        return self.store.take_changed()

    def info(self) -> ServerInfo:
        """The server as published now (what readers read: never the monitor's fields)."""
        snap = self.store.snapshot
        return ServerInfo(
            url=self.url,
            name=self.name,
            version=snap.version if snap else None,
            protocol=self.protocol.name if self.protocol is not None else None,
            reachable=self.reachable,
            error=self._error,
            error_since=self._error_since,
            connected=self._connected,
            last_event_at=self._last_event_at,
            snapshot_at=snap.started_at if snap else None,
            drift_count=self.store.drift_count,
            drift_examples=tuple(self.store.drift_examples),
            skipped_events=self.parser.skipped,
            unknown_events=self.parser.unknown,
            loading=self._loading if snap is None or snap.loading else None,
            stream=self.stream_health(self.clock()),
            malformed=snap.skipped if snap else 0,
            malformed_examples=snap.malformed if snap else (),
            reconnects=max(0, self._stream_connects - 1),
            snapshots=self._snapshots_taken,
            stream_drop=self._stream_drop,
            stream_error=self._stream_error,
            requests=self.client.requests,
            requests_per_minute=self._request_rate(),
            vouched=self.vouches(),
            resync_every=self.resync_delay(),
            first_snapshot=snap is not None and not snap.loading,
        )

    def stream_health(self, now: float) -> str:
        """`connected`; `stalled` once a heartbeat is missed (no event for `stall_after` s;
        after `heartbeat_timeout` s it is dropped and reconnected); `lost` while reconnecting;
        `none` before the first connection."""
        if self._connected:
            quiet = now - max(self._last_event_at or 0.0, self._connected_at)
            return "stalled" if quiet > self.stall_after else "connected"
        return "lost" if self._connected_at else "none"

    @property
    def _beat(self) -> float:
        """How much longer than V1's this server's heartbeat period is (V2: 15 s, not 10)."""
        proto = self.protocol or V1
        return proto.heartbeat / V1.heartbeat

    @property
    def stall_after(self) -> float:
        """Seconds of silence before the stream reads stalled, fitted to the protocol."""
        return self.settings.stall_after * self._beat

    @property
    def heartbeat_timeout(self) -> float:
        """Seconds of silence before the stream is dropped, fitted to the protocol."""
        return self.settings.heartbeat_timeout * self._beat

    # -- running ---------------------------------------------------------------------------------
    def request_snapshot(self, urgent: bool = False) -> None:
        """Ask for a snapshot (debounced, coalesced). `urgent`: not held back by the spacing
        after the last one (a reconnect: the events of the gap are lost for good)."""
        self._want_snapshot.set()
        if urgent:
            self._urgent.set()

    def read_everything_again(self) -> None:
        """Take a snapshot now that reads every session's last message again (nothing cached),
        as a fresh monitor would: a recording starting mid-run begins with it."""
        self.cache = MessageCache()
        self.request_snapshot(urgent=True)

    async def first_snapshot(self) -> None:
        """Wait until the first snapshot attempt finished (successfully or not)."""
        await self._snapshot_done.wait()

    async def run(self, notify: Notify) -> None:
        """Run the stream, snapshot and resync loops until cancelled."""
        self._listen(notify)
        self.request_snapshot()
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self._stream_loop())
                tg.create_task(self._snapshot_loop())
                tg.create_task(self._resync_loop())
        finally:
            await self.client.aclose()

    async def snapshot_once(self, notify: Notify | None = None) -> None:
        """Take one snapshot now (no stream): what `status` does. `notify` as for run()."""
        if notify is not None:
            self._listen(notify)
        await self.take_snapshot()

    def _listen(self, notify: Notify) -> None:
        self._notify = notify
        self._notify_urgent = getattr(notify, "urgent", notify)

    async def _resync_loop(self) -> None:
        while True:
            await asyncio.sleep(self.resync_delay())
            self.request_snapshot()

    def resync_delay(self) -> float:
        """Seconds until the next periodic resync: resync_interval, or longer while the stream
        vouches for what it carried and a resync of this server's maps (three per folder and
        the active list) would ask for more than light_touch_per_minute allows."""
        base = self.settings.resync_interval
        budget = self.settings.light_touch_per_minute
        snap = self.store.snapshot
        if budget <= 0 or snap is None or not self.vouches():
            return base
        return max(base, 60.0 * (3 * len(snap.folders) + 1) / budget)

    def _expected_status(self, sid: str) -> SessionStatus | None:
        """What the last snapshot and the events since say the session's status is."""
        snap = self.store.snapshot
        return status_after(
            self.journal.facts(), sid, snap.status.get(sid) if snap is not None else None
        )

    def vouches(self) -> bool:
        """Whether the event stream has carried every event since the current snapshot began
        (connected, nothing missed or unreadable since)."""
        since, snap = self._vouch_since, self.store.snapshot
        return (
            self._connected
            and since is not None
            and snap is not None
            and (since <= snap.started_at)
        )

    async def _snapshot_loop(self) -> None:
        backoff = 0.5
        while True:
            await self._want_snapshot.wait()
            await asyncio.sleep(self.settings.snapshot_debounce)
            self._want_snapshot.clear()
            self._urgent.clear()
            began = time.monotonic()
            ok = await self.take_snapshot(progressive=self.progressive, supersedable=True)
            self._notify()
            if ok:
                backoff = 0.5
                # Snapshots are a safety net, not the live path (the journal is): under a flood
                # of idle events, space them by a multiple of what the last one cost.
                took = time.monotonic() - began
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(self.settings.snapshot_min_gap, 4 * took)):
                        await self._urgent.wait()
            else:
                # until one succeeds: the rows rest on the last one. Backed off, but the stream
                # coming back (urgent: the server answers again) asks at once
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(backoff * random.uniform(0.8, 1.2)):
                        await self._urgent.wait()
                backoff = 0.5 if self._urgent.is_set() else min(backoff * 2, 15.0)
                self.request_snapshot()

    def begin_snapshot(self) -> SnapshotStart:
        """What a snapshot starts from: the journal's position and the sessions it touched."""
        self._snapshot_no += 1
        started = self.clock()
        # what it reads is decided here, from what was known when it began (a replay calls
        # this when the recording says the snapshot began, and takes it when it ended)
        begun = SnapshotStart(
            self._snapshot_no,
            self.journal.seq,
            frozenset(self.journal.facts().touched),
            started,
            self._relist(started),
            self._reverify(started),
        )
        if self._tap is not None:
            self._tap.snapshot(self.url, begun.started, begun.number, True)
        return begun

    async def take_snapshot(
        self,
        begun: SnapshotStart | None = None,
        progressive: bool = False,
        supersedable: bool = False,
    ) -> bool:
        """Fetch a snapshot and make it the current one (begun: by `begin_snapshot`, which a
        replay calls when the recording says it began). `progressive`: while no complete
        snapshot is in, show it as it arrives (`_partial`). `supersedable` (the snapshot loop's):
        the stream coming back after a gap gives up on it if it began before (stream_opened)."""
        begun = begun or self.begin_snapshot()
        task = asyncio.current_task()
        if supersedable and task is not None:
            self._in_flight = (begun, task)
        partial = (
            self._partial
            if progressive and (self.store.snapshot is None or self.store.snapshot.loading)
            else None
        )
        try:
            snap = await self.read_snapshot(begun, partial)
        except OcwatchError as exc:
            self.snapshot_failed(begun, exc)
            return False
        except asyncio.CancelledError:
            flight = self._in_flight
            if task is None or not self._superseded or flight is None or flight[0] is not begun:
                raise  # not this snapshot given up by stream_opened
            self._superseded = False
            if task.uncancel() > 0:  # cancelled for good too (the monitor stopping)
                raise
            self.snapshot_failed(
                begun,
                GivenUp(
                    f"{self.url}: no answer to a snapshot begun before the event stream came "
                    "back (the server starting up?); asking again"
                ),
            )
            return False
        except Exception as exc:  # never let a surprise kill the monitor
            self.snapshot_crashed(begun, exc)
            return False
        finally:
            if self._in_flight is not None and self._in_flight[0] is begun:
                self._in_flight, self._superseded = None, False
        self.install_snapshot(begun, snap)
        return True

    async def read_snapshot(
        self, begun: SnapshotStart, partial: Callable[[Snapshot], None] | None = None
    ) -> Snapshot:
        """What the snapshot `begun` reads (its requests tagged with its number, for a
        recording). What it asks is decided as its answers come in, from the journal as it
        is then: a replay runs this as the recorded answers arrive (tui.record.replay)."""
        token = SNAPSHOT.set(begun.number)
        try:
            facts = self.journal.facts
            kw: dict[str, Any] = dict(
                clock=lambda: begun.started,
                journal_seq=begun.seq,
                touched=begun.touched,
                concurrency=self.settings.message_concurrency,
                progress=self._progress,
                vouch=lambda sid, msg: merge_message(msg, facts(), sid),
                expected_status=self._expected_status,
                vouched_since=lambda: self._vouch_since if self._connected else None,
                vouch_max_age=self.settings.vouch_max_age,
                partial=partial,
                relist=begun.relist,
                reverify=begun.reverify,
            )
            return await self._read_probed(kw)
        finally:
            SNAPSHOT.reset(token)
            self._loading = None

    async def _read_probed(self, kw: dict[str, Any]) -> Snapshot:
        """A snapshot read by the server's protocol, probed by the snapshot's first request
        (V1's `/global/health`, V2's `/api/info`): the one that answers as the other protocol
        (WrongProtocol) has the other probed, and the snapshot read by it."""
        proto = self.protocol or V1
        try:
            snap = await proto.fetch(self.client, self.cache, **kw)
        except WrongProtocol as first:
            other = V2 if proto is V1 else V1
            kw = {**kw, "relist": None}
            try:
                if other is V2:
                    info = await self.client.info()
                    self._use(V2)
                    snap = await V2.fetch(self.client, self.cache, info=info, **kw)
                else:
                    self._use(V1)
                    snap = await V1.fetch(self.client, self.cache, **kw)
            except (WrongProtocol, NotFound) as exc:
                self._probed.set()
                raise Neither(
                    f"{self.url}: answers, but speaks neither OpenCode protocol "
                    f"({_route(first)} and {_route(exc)} answer as no OpenCode server does; "
                    "is this an OpenCode server?)"
                ) from None
        except OcwatchError:
            self._probed.set()
            raise
        if self.protocol is None:
            self._use(proto)
        return snap

    def _use(self, proto: Protocol) -> None:
        """Read the server by `proto` from now on (a server of another protocol, or a first
        probe): its own parser and cache, and its event stream (a stream open on the other
        protocol's route is closed: the stream loop opens the right one)."""
        changed = self.protocol is not None and self.protocol is not proto
        if self.protocol is not proto:
            if changed or proto is not V1:
                self.parser = proto.parser()
                self.cache = MessageCache()
            self.protocol = proto
            self.client.protocol = proto.name  # (its other readers: the details, the report)
            log.info("%s speaks OpenCode %s", self.url, proto.name.upper())
            stream = self._stream_task
            if stream is not None and self._stream_path != proto.event_path:
                stream.cancel()
        self._probed.set()

    def snapshot_crashed(self, begun: SnapshotStart, exc: BaseException) -> None:
        """A snapshot failed with an error no check expected (a bug): logged, and failed."""
        log.error("snapshot failed", exc_info=exc)
        self.snapshot_failed(
            begun, BadResponse(f"{self.url}: snapshot failed ({type(exc).__name__}: {exc})")
        )

    def install_snapshot(self, begun: SnapshotStart, snap: Snapshot) -> None:
        """Make `snap`, read by `read_snapshot(begun)`, the current snapshot."""
        if self._tap is not None:
            self._tap.snapshot(self.url, self.clock(), begun.number, False)
        now = self.clock()
        outage = self._down_since or self._gap_since
        before = self.store.install(snap, begun.seq, now)
        self._reverify_credit = max(0.0, self._reverify_credit - snap.reverified)
        self.parser.prune(snap.sessions)
        self._snapshots_taken += 1
        self._error = None
        self._error_since = None
        self._fatal = False
        self._gave_up = False
        if self._connected and snap.started_at >= self._connected_at:
            self._gap_since = None  # this snapshot covers what the stream missed
        if before is not None:  # derive once from the new snapshot; the next View reuses it
            self.store.count_drift(before, self.rows(now), outage)
        self._snapshot_done.set()

    def _reverify(self, now: float) -> int:
        """How many old vouched messages this snapshot may ask again: reverify_per_minute,
        as credit earned since the last snapshot (at most a minute's, and at least one a
        snapshot once that has come)."""
        rate = self.settings.reverify_per_minute
        last, self._reverified_at = self._reverified_at, now
        if last is None:
            return 0
        self._reverify_credit = min(
            self._reverify_credit + (now - last) / 60.0 * rate, max(1.0, rate)
        )
        return int(self._reverify_credit)  # (what the snapshot asks is taken off it then)

    def _relist(self, started: float) -> Relist | None:
        """What a resync takes instead of reading the session list again, while the stream has
        carried every event since the last snapshot began (nothing missed or unreadable, see
        `vouches`) and the list is younger than `relist_every`: the last list with the sessions
        the events created, changed or deleted before this one began (the later ones stay in the
        journal). None: read it."""
        snap = self.store.snapshot
        if (
            snap is None
            or snap.loading
            or not self.vouches()
            or (started - snap.listed_at >= self.settings.relist_every)
        ):
            return None
        return Relist(
            sessions_after(snap.sessions, self.journal.facts()),
            snap.folders,
            snap.version,
            snap.listed_at,
            snap.instance,
        )

    def _partial(self, snap: Snapshot) -> None:
        """A first snapshot, shown before its last messages are all in (Snapshot.loading): the
        rows the maps decide (busy, retry, input) at once, the others as they arrive."""
        self.store.show_partial(snap)
        self._notify()

    def snapshot_failed(self, begun: SnapshotStart, exc: OcwatchError) -> None:
        """A snapshot could not be taken: the last one stays, the error is shown. One this
        monitor gave up itself (GivenUp) is no sign that the server went away: unless an outage
        is already shown (a snapshot or a reconnect failed: see stream_down), the rows stay live
        on the last snapshot and the journal, as while the stream was down, until the snapshot
        asked again comes in (a stream cut by the network, the server answering)."""
        if self._tap is not None:
            self._tap.snapshot(
                self.url, self.clock(), begun.number, False, exc.message, type(exc).__name__
            )
        self._gave_up = isinstance(exc, GivenUp)
        if self._gave_up and self._error is None:
            log.info(exc.message)
            return  # (nor is a first snapshot's attempt over: the one asked again ends it)
        self._fail(exc)
        self._snapshot_done.set()

    def _progress(self, done: int, total: int) -> None:
        """A snapshot's last messages arriving. Before the first snapshot the table is empty:
        tell the UI (each whole percent) so it can show how far the loading is."""
        before = self._loading
        self._loading = (done, total) if done < total else None
        if self.store.snapshot is None and (
            before is None
            or self._loading is None
            or done * 100 // total != before[0] * 100 // total
        ):
            self._notify()

    def _fail(self, exc: OcwatchError) -> None:
        if self._error is None:
            self._error_since = self.clock()
        self._error = exc.message
        self._fatal = isinstance(exc, AuthFailed)

    async def _stream_loop(self) -> None:
        import httpx  # (the stream is httpx's; a one-off `status` never opens it)

        backoff = 0.5
        loop = asyncio.get_running_loop()
        while True:
            began = loop.time()
            proto = self.protocol or V1
            self._stream_path = proto.event_path
            try:
                async with contextlib.AsyncExitStack() as stack:
                    self._stream_task = stack.enter_context(_CancelScope())
                    frames = await stack.enter_async_context(
                        self.client.events(
                            read_timeout=self.heartbeat_timeout,
                            max_event=self.settings.max_event,
                            path=proto.event_path,
                            comments=proto.comments,
                        )
                    )
                    self.stream_opened()
                    silence = self.heartbeat_timeout
                    # moved on by an event only once it would come sooner than `silence` after
                    # it, then by `slack`: a timer rescheduled per event cost a heap push and a
                    # cancelled handle each, a tenth of the stream's cost at 10,000 events/s
                    slack = min(1.0, silence / 10)
                    # two missed heartbeats: the stream is dead even if the socket is not
                    # (declared after `silence` to `silence + slack` without an event)
                    async with asyncio.timeout(silence + slack) as watchdog:
                        async for data in frames:
                            if (due := loop.time() + silence) >= watchdog_at(watchdog):
                                watchdog.reschedule(due + slack)
                            self.on_data(data)
                raise OcwatchError(f"{self.url}: event stream closed by the server")
            except asyncio.CancelledError:
                if not _CancelScope.switched():
                    raise
                # the probe found the server speaks another protocol: open its stream
                if self._connected:
                    self.stream_down(
                        OcwatchError(f"{self.url}: the server speaks another protocol")
                    )
                continue
            except TimeoutError:
                self.stream_down(
                    OcwatchError(
                        f"{self.url}: event stream silent for {self.heartbeat_timeout:g}s "
                        "(missed heartbeats); reconnecting"
                    )
                )
            except OcwatchError as exc:
                if (
                    isinstance(exc, BadResponse)
                    and not self._connected
                    and proto is not (self.protocol or V1)
                    or (self.protocol is None and isinstance(exc, BadResponse))
                ):
                    # the first route tried was the other protocol's (the probe had not
                    # answered yet): wait for it, then open the right one
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self.settings.request_timeout):
                            await self._probed.wait()
                    if (self.protocol or V1) is not proto:
                        continue
                self.stream_down(exc)
            except httpx.HTTPError as exc:
                self.stream_down(
                    describe_transport_error(self.url, exc)
                    if isinstance(exc, httpx.TransportError) and not self._connected
                    else OcwatchError(f"{self.url}: event stream lost ({type(exc).__name__})")
                )
            except Exception as exc:
                log.exception("event stream failed")
                self.stream_down(OcwatchError(f"{self.url}: event stream failed ({exc})"))
            if loop.time() - began >= HEALTHY_FOR:
                # it had stayed up: reconnect at once (a little jitter, so that many monitors
                # of one restarted server do not all come back in the same millisecond), as
                # every moment without a stream is one whose events are lost for good
                backoff = 0.5
                await asyncio.sleep(random.uniform(0, 0.1))
                continue
            await asyncio.sleep(backoff * random.uniform(0.5, 1.5))
            # a stream accepted and closed at once keeps backing off (no reconnect storm)
            backoff = min(backoff * 2, 15.0 if not self._fatal else 60.0)

    def stream_opened(self) -> None:
        """The event stream is up (a new connection)."""
        self._stream_connects += 1
        self._connected = True
        self._connected_at = self.clock()
        self._vouch_since = self._connected_at  # every event from now on arrives
        self._stream_error = None
        self.parser.reset_sequences()
        if self._tap is not None:
            self._tap.stream(self.url, self._connected_at, True, None)
        # no replay: whatever happened meanwhile is lost; read it now. A snapshot still in
        # flight that began before cannot cover the gap, and one sent while the server was
        # starting may get no answer until it times out (seen on 1.18.33: 10 s after a
        # restart): give it up and ask again. Once: the next runs its course, or a stream that
        # flaps faster than a snapshot takes would starve every snapshot
        flight = self._in_flight
        if flight is not None and self._gap_since is not None and not self._gave_up:
            begun, task = flight
            if begun.started < self._connected_at and not task.done():
                self._superseded = True
                task.cancel()
        self.request_snapshot(urgent=True)
        self._notify()

    def stream_down(self, exc: OcwatchError) -> None:
        if self._tap is not None:
            self._tap.stream(self.url, self.clock(), False, exc.message, type(exc).__name__)
        was = self._connected
        self._vouch_since = None
        if was and self._gap_since is None:
            self._gap_since = self.clock()
        elif not was and self._gap_since is not None and isinstance(exc, Unreachable):
            # a reconnect could not reach the server: not only the stream was lost, the server
            # went away (a restart may have cut runs off), as a failed snapshot would say. A
            # snapshot sent meanwhile may hang rather than fail (a server starting up)
            self._fail(exc)
        self._connected = False
        self._stream_error = exc.message
        if was:
            self._stream_drop = (self.clock(), exc.message)
            log.info("stream down: %s", exc.message)
        # the stream being down does not make the snapshot wrong; a server that cannot be
        # reached (a failing snapshot, a refused reconnect) does: probe it through a snapshot.
        self.request_snapshot()
        self._notify()

    def on_data(self, data: str) -> None:
        now = self.clock()
        if self._tap is not None:
            self._tap.frame(self.url, now, data)
        self._last_event_at = now
        self._stall_checked = False
        skipped = self.parser.skipped
        parsed = self.parser.parse(data, now)
        if parsed.gap or self.parser.skipped != skipped:
            self._vouch_since = now  # events were missed or unreadable: vouch from here on
            self.request_snapshot()
        ev = parsed.event
        if ev is None:
            return
        if parsed.control is not None:
            if ev.type in ("server.instance.disposed", "global.disposed"):
                self._vouch_since = now  # runs may have ended with no event
                self.request_snapshot()
            return
        self._recent.append((now, data[: raw.KEPT_BYTES]))  # bounded: a frame may be 16 MiB
        facts = self.journal.facts()
        malformed = facts.malformed
        self.journal.add(ev, len(data))
        for more in parsed.more:
            self.journal.add(more)
        if (
            ev.type == "message.removed"
            or facts.malformed != malformed
            or (self.journal.overflowed)
        ):
            # a fact the journal cannot hold; or it overflowed (a cut then folds only the
            # entries it kept): the next snapshot reads everything again
            self._vouch_since = now
        if self.journal.overflowed or ev.wants_snapshot:
            self.request_snapshot()
        if ev.may_settle:
            self._notify_urgent()
        else:
            self._notify()


def _route(exc: OcwatchError) -> str:
    """The route an error is about, as its message names it (`URL METHOD /path: ...`)."""
    head = exc.message.split(": ", 1)[0]
    parts = head.split()
    return parts[-1] if parts and parts[-1].startswith("/") else head


class _CancelScope:
    """The stream being read now, cancellable by a protocol switch: `cancel()` cancels the
    task that entered it, which then knows (`switched()`) that the switch cancelled it."""

    _switched: set[asyncio.Task[Any]] = set()

    def __enter__(self) -> _CancelScope:
        self.task = asyncio.current_task()
        self.live = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.live = False

    def cancel(self) -> None:
        if self.live and self.task is not None and not self.task.done():
            _CancelScope._switched.add(self.task)
            self.task.cancel()

    @staticmethod
    def switched() -> bool:
        """Whether the current task's cancellation was a switch (it is then taken back)."""
        task = asyncio.current_task()
        if task is None or task not in _CancelScope._switched:
            return False
        _CancelScope._switched.discard(task)
        task.uncancel()
        return True
