"""ServerMonitor: one long-lived connection to one server (list, then watch; resync on any gap).

The live loop around a Reflector (tui.core.reflector): it reads the server (a snapshot, probed
for its protocol by its first request), keeps its event stream open, and runs the periodic
resync, and hands each thing that happens to the reflector's synchronous steps, which keep the
store and the link state (tui.core.link). It never derives state itself: `rows(now)` calls the
pure derive_server() on what the store holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .client import (
    BadResponse,
    Client,
    Neither,
    NotFound,
    OcwatchError,
    Unreachable,
    WrongProtocol,
    describe_transport_error,
)
from .journal import merge_message
from .protocols import V1, V2, Protocol
from .reflector import GivenUp, Notify, Reflector, SnapshotStart, log
from .settings import Auth, Settings
from .snapshot import Snapshot
from .tap import SNAPSHOT

if TYPE_CHECKING:
    import httpx

__all__ = ["GivenUp", "Notify", "ServerMonitor", "SnapshotStart"]

#: Seconds a stream must stay up before its reconnect backoff starts again from the shortest.
HEALTHY_FOR = 30.0


def watchdog_at(watchdog: asyncio.Timeout) -> float:
    """When `watchdog` fires (loop time)."""
    when = watchdog.when()
    assert when is not None  # (armed with a delay, never disarmed)
    return when


class ServerMonitor(Reflector):
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
        focus: frozenset[str] | None = None,
    ) -> None:
        """`client`: one made elsewhere (a replay's, answering from a recording).
        `progressive`: `run()` shows the first snapshot as it arrives (take_snapshot).
        `focus`: the only sessions looked at (`ocwatch wait`'s): each snapshot is of them and
        their descendants (tui.core.snapshot.narrow); None: of every session."""
        settings = settings or Settings()
        super().__init__(
            client
            or Client(
                url,
                auth,
                timeout=settings.request_timeout,
                transport=transport,
                deadline=settings.request_deadline,
            ),
            settings=settings,
            clock=clock,
            name=name,
            auth=auth,
        )
        self.progressive = progressive
        self.focus = focus
        self._want_snapshot = asyncio.Event()
        self._urgent = asyncio.Event()
        self._snapshot_done = asyncio.Event()
        self._probed = asyncio.Event()  # the first probe ended (known, or the server down)
        self._stream_path = V1.event_path  # the route of the stream open now (or last)
        self._stream_task: _CancelScope | None = None
        # the snapshot loop's snapshot in flight (what it began from, its task), and whether the
        # stream's return cancelled it (see _supersede)
        self._in_flight: tuple[SnapshotStart, asyncio.Task[Any]] | None = None
        self._superseded = False

    # -- what the steps ask for ----------------------------------------------------------------
    def request_snapshot(self, urgent: bool = False) -> None:
        """Ask for a snapshot (debounced, coalesced). `urgent`: not held back by the spacing
        after the last one (a reconnect: the events of the gap are lost for good)."""
        self._want_snapshot.set()
        if urgent:
            self._urgent.set()

    def _snapshot_ended(self) -> None:
        self._snapshot_done.set()

    def _supersede(self, connected_at: float) -> None:
        """A snapshot still in flight that began before the stream came back cannot cover the
        gap, and one sent while the server was starting may get no answer until it times out
        (seen on 1.18.33: 10 s after a restart): give it up and ask again. Once: the next runs
        its course, or a stream that flaps faster than a snapshot takes would starve every
        snapshot (LinkState.gave_up)."""
        flight = self._in_flight
        if flight is not None:
            begun, task = flight
            if begun.started < connected_at and not task.done():
                self._superseded = True
                task.cancel()

    def _protocol_changed(self, proto: Protocol) -> None:
        """A stream open on the other protocol's route is closed: the loop opens the right
        one."""
        stream = self._stream_task
        if stream is not None and self._stream_path != proto.event_path:
            stream.cancel()
        self._probed.set()

    # -- running ---------------------------------------------------------------------------------
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
                tg.create_task(self._slow_first())
        finally:
            await self.client.aclose()

    async def snapshot_once(self, notify: Notify | None = None) -> None:
        """Take one snapshot now (no stream): what `status` does. `notify` as for run(). It
        takes at most `command_deadline` s in all: past it the server is said too slow."""
        if notify is not None:
            self._listen(notify)
        begun = self.begin_snapshot()
        limit = self.settings.command_deadline
        try:
            async with asyncio.timeout(limit):
                await self.take_snapshot(begun)
        except TimeoutError:
            self.snapshot_failed(
                begun,
                Unreachable(
                    f"{self.url}: no complete snapshot within {limit:g}s (the server answers "
                    "too slowly; command_deadline, $OCWATCH_COMMAND_DEADLINE)"
                ),
            )

    async def _slow_first(self) -> None:
        """A first snapshot not in after command_deadline s is said (the server answers too
        slowly; it is still asked): the dashboard shows why, not "Connecting…" for minutes."""
        limit = self.settings.command_deadline
        try:
            await asyncio.wait_for(self._snapshot_done.wait(), limit)
            return  # (the first attempt ended: it says how itself)
        except TimeoutError:
            pass
        if self.store.snapshot is None and self.state.error is None:
            self.state = self.state.failed(
                f"{self.url}: no complete snapshot within {limit:g}s (the server answers too "
                "slowly); still asking",
                False,
                self.clock(),
            )
            self._notify()

    async def _resync_loop(self) -> None:
        while True:
            await asyncio.sleep(self.resync_delay())
            self.request_snapshot()

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
                wait = backoff * random.uniform(0.8, 1.2)
                asked = self._snapshot_wait
                if asked is not None:  # the server said when to ask again (Retry-After):
                    await asyncio.sleep(max(wait, asked))  # not before, whatever comes
                else:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(wait):
                            await self._urgent.wait()
                backoff = 0.5 if self._urgent.is_set() else min(backoff * 2, 15.0)
                self.request_snapshot()

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
                vouched_since=lambda: self.state.vouch_since if self.state.connected else None,
                vouch_max_age=self.settings.vouch_max_age,
                partial=partial,
                relist=begun.relist,
                reverify=begun.reverify,
                focus=self.focus,
            )
            return await self._read_probed(kw)
        finally:
            SNAPSHOT.reset(token)
            self._loading = None

    async def _read_probed(self, kw: dict[str, Any]) -> Snapshot:
        """A snapshot read by the server's protocol, probed by the snapshot's first request
        (V1's `/global/health`, V2's `/api/info`): the one that answers as the other protocol
        (WrongProtocol) has the other probed, and the snapshot read by it. The server is read by
        another protocol only once that one's probe answered (a known V2 server's `/api/info`
        failing once does not make it V1). Neither answering: `Neither` (one line, not
        "unreachable") for a server never read; a server that was read says what failed."""
        proto = self.protocol or V1
        try:
            snap = await proto.fetch(self.client, self.cache, **kw)
        except WrongProtocol as first:
            other = V2 if proto is V1 else V1
            kw = {**kw, "relist": None}
            try:
                if other is V2:
                    info = await self.client.info()
                    self.use(V2)
                    snap = await V2.fetch(self.client, self.cache, info=info, **kw)
                else:
                    await self.client.health()  # (asked again by the read: a switch only)
                    self.use(V1)
                    snap = await V1.fetch(self.client, self.cache, **kw)
            except (WrongProtocol, NotFound) as exc:
                self._probed.set()
                if self.protocol is not None:
                    raise first from None  # (a server read before: what its probe said)
                self._foreign = True
                raise Neither(
                    f"{self.url}: answers, but speaks neither OpenCode protocol "
                    f"({_route(first)} and {_route(exc)} answer as no OpenCode server does; "
                    "is this an OpenCode server?)"
                ) from None
        except OcwatchError:
            self._probed.set()
            raise
        if self.protocol is None:
            self.use(proto)
        self._foreign = False
        return snap

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
                    batches = await stack.enter_async_context(
                        self.client.event_batches(
                            read_timeout=self.heartbeat_timeout,
                            max_event=self.settings.max_event,
                            path=proto.event_path,
                            comments=proto.comments,
                        )
                    )
                    self.stream_opened()
                    silence = self.heartbeat_timeout
                    # moved on by an event only once it would come sooner than `silence` after
                    # it, then by `slack`: a timer rescheduled per event costs a heap push and a
                    # cancelled handle each, a noticeable share of the stream at a high rate
                    slack = min(1.0, silence / 10)
                    # two missed heartbeats: the stream is dead even if the socket is not
                    # (declared after `silence` to `silence + slack` without an event)
                    async with asyncio.timeout(silence + slack) as watchdog:
                        # (a read before `quiet_until` needs no move: it is the watchdog's
                        # time less `silence`, kept here rather than asked of it every read)
                        quiet_until = watchdog_at(watchdog) - silence
                        async for frames in batches:
                            if (now := loop.time()) >= quiet_until:
                                watchdog.reschedule(now + silence + slack)
                                quiet_until = now + slack
                            self.on_frames(frames)
                raise OcwatchError(f"{self.url}: event stream closed by the server")
            except asyncio.CancelledError:
                if not _CancelScope.switched():
                    raise
                # the probe found the server speaks another protocol: open its stream
                if self.state.connected:
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
                other_route = self.protocol is None or (
                    not self.state.connected and proto is not self.protocol
                )
                if isinstance(exc, BadResponse) and other_route:
                    # the route tried may be the other protocol's (the probe had not
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
                    if isinstance(exc, httpx.TransportError) and not self.state.connected
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
            wait = backoff * random.uniform(0.5, 1.5)
            if self._stream_wait is not None:  # the server said when to ask again
                wait = max(wait, self._stream_wait)
            await asyncio.sleep(wait)
            # a stream accepted and closed at once keeps backing off (no reconnect storm)
            backoff = min(backoff * 2, 15.0 if not self.state.fatal else 60.0)


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
