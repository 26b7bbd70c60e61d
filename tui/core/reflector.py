"""Reflector: one server's store kept current by synchronous steps (client-go's Reflector).

Each step is what one thing that happened does to what the monitor holds: a frame of the event
stream (`on_data`), the stream coming up or going down, a snapshot beginning, installed, failed.
A step reads the clock it is given, writes the store, the link state (tui.core.link) and the
parser, and says what should follow (`request_snapshot`, the notifications); it awaits nothing.
The live loop (tui.core.monitor) calls these steps as its connections deliver; a replay
(tui.record.replay) calls them as a recording says, so a replay runs the live path.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from . import raw
from .client import AuthFailed, BadResponse, Client, OcwatchError, Unreachable
from .derive import Link
from .events import EventParser
from .journal import Journal, sessions_after, status_after
from .link import LinkState
from .models import SessionStatus
from .protocols import V1, Protocol
from .settings import Auth, Settings
from .snapshot import MessageCache, Relist, Snapshot
from .store import ServerStore
from .tap import Tap
from .view import ServerInfo, SessionRow

log = logging.getLogger("ocwatch.monitor")

Notify = Callable[[], None]
"""What a monitor calls when its rows may have changed. It may also have an `urgent` method:
called instead for an event that can settle a row (a run ending, something asked or answered),
which a dashboard draws at once rather than at its next redraw slot."""


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


class Reflector:
    """The store of one server and the synchronous steps that keep it current."""

    def __init__(
        self,
        client: Client,
        *,
        settings: Settings,
        clock: Callable[[], float],
        name: str = "",
        auth: Auth | None = None,
    ) -> None:
        self.settings = settings
        self.name = name  # the config's name for it ("": none, called by its URL)
        self.labels: tuple[tuple[str, str], ...] = ()  # its inventory's extra labels
        self.auth = auth  # its own credentials (an attached OpenCode TUI gets them too)
        self.client = client
        self.url = client.url
        self.clock = clock
        client.clock = clock
        self._tap: Tap | None = None
        self._snapshot_no = 0
        self.store = ServerStore(settings)
        """The snapshot, the journal and the rows derived from them (written here only)."""
        self.parser: Any = EventParser()  # (the protocol's: V2EventParser once probed V2)
        self.protocol: Protocol | None = None
        """The protocol the server speaks (None: not probed yet; read as V1 meanwhile)."""
        self.cache = MessageCache()
        self._state = LinkState()
        # the time of the last frame while the journal overflowed, not yet laid into _state:
        # each such frame moves the vouch on (LinkState.unvouched), which `state` does at its
        # next reading rather than a new LinkState a frame at the highest rates
        self._unvouch_at: float | None = None
        # a frame's arrival, beside the link state (every frame sets them: the hot path)
        self._last_event_at: float | None = None
        self.output_at: float | None = None
        """When the stream last carried something else than a heartbeat or a control event
        (streamed tokens included): whether anything is happening on the server at all."""
        self._stall_checked = False  # a snapshot was asked for the current silence
        # (last messages fetched, to fetch) while a snapshot is being taken
        self._loading: tuple[int, int] | None = None
        self._snapshots_taken = 0
        self._foreign = False  # the last probe found a server speaking no OpenCode protocol
        # seconds the server asked to wait (Retry-After) with the last failed snapshot / stream
        self._snapshot_wait: float | None = None
        self._stream_wait: float | None = None
        self._request_samples: deque[tuple[float, int]] = deque()  # (time, client.requests)
        self._reverified_at: float | None = None  # the last snapshot's start (_reverify)
        self._reverify_credit = 0.0
        self._recent: deque[tuple[float, str]] = deque(maxlen=raw.KEPT)
        """The last frames used (receive time, data as received): the detail view's raw
        events (tui.core.raw)."""
        self._notify: Notify = lambda: None
        self._notify_urgent: Notify = self._notify

    # -- what it holds, for reading (only the steps write it) -----------------------------------
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
        return self.state.error

    @property
    def error_since(self) -> float | None:
        return self.state.error_since

    @property
    def connected(self) -> bool:
        """The event stream is up."""
        return self.state.connected

    @property
    def last_event_at(self) -> float | None:
        return self._last_event_at

    @property
    def snapshots_taken(self) -> int:
        return self._snapshots_taken

    @property
    def drift_count(self) -> int:
        """Snapshots that corrected what the events had derived (docs/STATES.md#drift)."""
        return self.store.drift_count

    @property
    def drift_examples(self) -> tuple[str, ...]:
        return tuple(self.store.drift_examples)

    @property
    def fatal(self) -> bool:
        """Retrying will not help without a fix (e.g. authentication failed)."""
        return self.state.fatal

    @property
    def stream_error(self) -> str | None:
        return self.state.stream_error

    @property
    def stream_connects(self) -> int:
        return self.state.stream_connects

    @property
    def stream_drop(self) -> tuple[float, str] | None:
        return self.state.stream_drop

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

    @property
    def state(self) -> LinkState:
        """How the server is reached (tui.core.link: replaced whole by each step)."""
        at = self._unvouch_at
        if at is not None:
            self._unvouch_at = None
            self._state = self._state.unvouched(at)
        return self._state

    @state.setter
    def state(self, state: LinkState) -> None:
        self._unvouch_at = None
        self._state = state

    # the link state's fields by their former names (benchmarks and tests set them directly)
    @property
    def _connected(self) -> bool:
        return self.state.connected

    @_connected.setter
    def _connected(self, value: bool) -> None:
        self.state = replace(self.state, connected=value)

    @property
    def _connected_at(self) -> float:
        return self.state.connected_at

    @_connected_at.setter
    def _connected_at(self, value: float) -> None:
        self.state = replace(self.state, connected_at=value)

    # -- reading ---------------------------------------------------------------------------------
    @property
    def reachable(self) -> bool:
        """Whether the rows are live: a snapshot is in, and either the last one succeeded or the
        event stream is up and has missed nothing since a snapshot did (a failed snapshot then
        keeps the last one and its journal)."""
        return self.store.snapshot is not None and self.link().reachable

    def link(self) -> Link:
        """How the server is reached, as derive reads it (LinkState.link)."""
        return self.state.link()

    def rows(self, now: float) -> dict[tuple[str, str], SessionRow]:
        """Derive this server's rows at `now` (keeps them as `previous` for time-in-state)."""
        link = self.link()
        rows = self.store.rows(now, link)
        snap = self.store.snapshot
        if snap is None:
            return rows
        self.state = self.state.seen(link.reachable, link.since, now)
        if link.reachable:
            if not self._stall_checked and self.stream_health(now) == "stalled":
                self._stall_checked = True  # the rows may be behind: read the server once
                self.request_snapshot()
            if snap.started_at < now - self.settings.snapshot_debounce and (self.store.confirming):
                # a run ended and only events from before its end call it busy: ask the
                # server (a snapshot) instead of calling it stale on old news
                self.request_snapshot()
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
        st = self.state
        return ServerInfo(
            url=self.url,
            name=self.name,
            labels=self.labels,
            version=snap.version if snap else None,
            protocol=self.protocol.name if self.protocol is not None else None,
            foreign=self._foreign,
            reachable=self.reachable,
            error=st.error,
            error_since=st.error_since,
            error_at=st.error_at,
            connected=st.connected,
            last_event_at=self._last_event_at,
            snapshot_at=snap.started_at if snap else None,
            drift_count=self.store.drift_count,
            drift_examples=tuple(self.store.drift_examples),
            unseen_runs=tuple(sorted(self.store.unseen_runs.items())),
            skipped_events=self.parser.skipped,
            unknown_events=self.parser.unknown,
            loading=self._loading if snap is None or snap.loading else None,
            stream=self.stream_health(self.clock()),
            malformed=snap.skipped if snap else 0,
            malformed_examples=snap.malformed if snap else (),
            reconnects=max(0, st.stream_connects - 1),
            snapshots=self._snapshots_taken,
            stream_drop=st.stream_drop,
            stream_error=st.stream_error,
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
        return self.state.stream_health(now, self.stall_after, self._last_event_at)

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
        snap = self.store.snapshot
        return self.state.vouches(snap.started_at if snap is not None else None)

    # -- what follows a step (the live loop acts on these) ---------------------------------------
    def request_snapshot(self, urgent: bool = False) -> None:
        """Ask for a snapshot (the live loop takes it, debounced and coalesced; a replay takes
        the ones its recording says were taken). `urgent`: not held back by the spacing after
        the last one (a reconnect: the events of the gap are lost for good)."""

    def _snapshot_ended(self) -> None:
        """A snapshot attempt is over (installed, or failed for good): the live loop's waiters."""

    def _supersede(self, connected_at: float) -> None:
        """The stream came back after a gap: a snapshot in flight that began before cannot cover
        it (the live loop gives it up and asks again)."""

    def _protocol_changed(self, proto: Protocol) -> None:
        """The server is read by `proto` from now on (the live loop opens its stream)."""

    def read_everything_again(self) -> None:
        """Take a snapshot now that reads every session's last message again (nothing cached),
        as a fresh monitor would: a recording starting mid-run begins with it."""
        self.cache = MessageCache()
        self.request_snapshot(urgent=True)

    def read_again(self, session_id: str) -> None:
        """Take a snapshot now that reads `session_id`'s last message again (not the cached
        copy, nor one the stream vouches for): a reader confirming what one read said before
        it acts on it (`wait` on a run that reads cut off)."""
        self.cache.entries.pop(session_id, None)
        self.request_snapshot(urgent=True)

    def _listen(self, notify: Notify) -> None:
        self._notify = notify
        self._notify_urgent = getattr(notify, "urgent", notify)

    # -- the steps -------------------------------------------------------------------------------
    def use(self, proto: Protocol) -> None:
        """Read the server by `proto` from now on (a server of another protocol, or a first
        probe): its own parser and cache, and its event stream."""
        if self.protocol is proto:
            return
        changed = self.protocol is not None
        if changed or proto is not V1:
            self.parser = proto.parser()
            self.cache = MessageCache()
        self.protocol = proto
        self.client.protocol = proto.name  # (its other readers: the details, the report)
        log.info("%s speaks OpenCode %s", self.url, proto.name.upper())
        self._protocol_changed(proto)

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

    def snapshot_crashed(self, begun: SnapshotStart, exc: BaseException) -> None:
        """A snapshot failed with an error no check expected (a bug): logged, and failed."""
        log.error("snapshot failed", exc_info=exc)
        self.snapshot_failed(
            begun, BadResponse(f"{self.url}: snapshot failed ({type(exc).__name__}: {exc})")
        )

    def install_snapshot(self, begun: SnapshotStart, snap: Snapshot) -> None:
        """Make `snap`, read by the snapshot `begun`, the current snapshot."""
        if self._tap is not None:
            self._tap.snapshot(self.url, self.clock(), begun.number, False, protocol=snap.protocol)
        now = self.clock()
        outage = self.state.down_since or self.state.gap_since
        before = self.store.install(snap, begun.seq, now)
        self._reverify_credit = max(0.0, self._reverify_credit - snap.reverified)
        self.parser.prune(snap.sessions)
        self._snapshots_taken += 1
        # (it covers what the stream missed when it began after the stream came back)
        self.state = self.state.installed(snap.started_at)
        if before is not None:  # derive once from the new snapshot; the next View reuses it
            after = self.rows(now)
            self.store.count_drift(before, after, outage)
            self.store.count_unseen_runs(before, after)
        self._snapshot_ended()

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
        gave_up = isinstance(exc, GivenUp)
        self.state = self.state.giving_up(gave_up)
        self._snapshot_wait = getattr(exc, "retry_after", None)
        if gave_up and self.state.error is None:
            log.info(exc.message)
            return  # (nor is a first snapshot's attempt over: the one asked again ends it)
        # (one given up is no try that failed: when the last one began stays)
        self._fail(exc, self.state.error_at if gave_up else begun.started)
        self._snapshot_ended()

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

    def _fail(self, exc: OcwatchError, tried_at: float | None = None) -> None:
        """A try that began at `tried_at` (None: now) failed."""
        fatal = isinstance(exc, AuthFailed)
        self.state = self.state.failed(exc.message, fatal, self.clock(), tried_at)

    def stream_opened(self) -> None:
        """The event stream is up (a new connection)."""
        self.state = self.state.opened(self.clock())
        connected_at = self.state.connected_at
        self.parser.reset_sequences()
        if self._tap is not None:
            self._tap.stream(self.url, connected_at, True, None)
        # no replay: whatever happened meanwhile is lost; read it now (a snapshot in flight
        # that began before cannot cover the gap: _supersede)
        if self.state.gap_since is not None and not self.state.gave_up:
            self._supersede(connected_at)
        self.request_snapshot(urgent=True)
        self._notify()

    def stream_down(self, exc: OcwatchError) -> None:
        """The event stream went down, or could not be opened."""
        if self._tap is not None:
            self._tap.stream(self.url, self.clock(), False, exc.message, type(exc).__name__)
        was = self.state.connected
        self._stream_wait = getattr(exc, "retry_after", None)
        # a reconnect that cannot reach a server whose stream was lost: the server went away
        # (a restart may have cut runs off), as a failed snapshot would say. A snapshot sent
        # meanwhile may hang rather than fail (a server starting up)
        self.state = self.state.dropped(exc.message, isinstance(exc, Unreachable), self.clock())
        if was:
            log.info("stream down: %s", exc.message)
        # the stream being down does not make the snapshot wrong; a server that cannot be
        # reached (a failing snapshot, a refused reconnect) does: probe it through a snapshot.
        self.request_snapshot()
        self._notify()

    def on_frames(self, frames: list[str]) -> None:
        """The frames one read of the event stream brought, in order (each as on_data), read
        at one moment."""
        now = self.clock()
        on_data = self.on_data
        # a change the frames make is told once, after them (urgent if any was): nothing runs
        # between two frames of one read, so a notify a frame only said it again (a dashboard's
        # notify is two calls, a few percent of its process under a flood)
        notify, urgent = self._notify, self._notify_urgent
        told: list[bool] = []
        self._notify = partial(told.append, False)
        self._notify_urgent = partial(told.append, True)
        try:
            if self._tap is not None:  # (a recording is handed every frame)
                for data in frames:
                    on_data(data, now)
            else:
                # the frames its parser knows as noise at sight (streamed tokens, most of a
                # busy stream) are passed over here, as on_data would: output, nothing to parse
                quick = self.parser.QUICK
                output = False
                for data in frames:
                    at = data.find('"type":')
                    if at >= 0 and data.startswith(quick, at + 7):
                        output = True
                    else:
                        on_data(data, now)
                if output:
                    self._last_event_at = self.output_at = now
                    self._stall_checked = False
        finally:
            self._notify, self._notify_urgent = notify, urgent
            if told:
                (urgent if True in told else notify)()

    def on_data(self, data: str, now: float | None = None) -> None:
        """One frame of the event stream (its `data`; an empty one: a heartbeat comment),
        read at `now` (None: now)."""
        if now is None:
            now = self.clock()
        if self._tap is not None:
            self._tap.frame(self.url, now, data)
        self._last_event_at = now
        self._stall_checked = False
        parser = self.parser
        skipped = parser.skipped
        parsed = parser.parse(data, now)
        if parsed.control is None and data and not data.isspace():
            self.output_at = now  # (streamed tokens too: anything but heartbeats)
        if parsed.gap or parser.skipped != skipped:
            self.state = self.state.unvouched(now)  # events were missed or unreadable
            self.request_snapshot()
        ev = parsed.event
        if ev is None:
            return
        if parsed.control is not None:
            if ev.type in ("server.instance.disposed", "global.disposed"):
                self.state = self.state.unvouched(now)  # runs may have ended with no event
                self.request_snapshot()
            return
        self._recent.append((now, data[: raw.KEPT_BYTES]))  # bounded: a frame may be 16 MiB
        journal = self.store.journal
        facts = journal.facts()
        malformed = facts.malformed
        journal.add(ev, len(data))
        for more in parsed.more:
            journal.add(more)
        overflowed = journal.overflowed
        # a fact the journal cannot hold; or it overflowed (a cut then folds only the entries
        # it kept): the next snapshot reads everything again
        if ev.type == "message.removed" or facts.malformed != malformed:
            self.state = self.state.unvouched(now)
        elif overflowed:
            self._unvouch_at = now  # (the same, laid into the state when it is next read)
        if overflowed or ev.wants_snapshot:
            self.request_snapshot()
        if ev.may_settle:
            self._notify_urgent()
        else:
            self._notify()
