"""Replaying a recording: the same monitors, parser, journal, snapshot code and derive as a live
run, fed from the file instead of the network, on the recorded clock.

Each record goes where its live counterpart went: a frame to `ServerMonitor.on_data`, a stream
change to `stream_opened` / `stream_down`, a snapshot's begin to `begin_snapshot` and its end to
`take_snapshot`, whose requests a transport answers with the responses recorded for that very
snapshot. So the same file gives the same Views: derive reads only the recorded inputs and the
recorded clock.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..core.client import (
    AuthFailed,
    BadResponse,
    Client,
    NotFound,
    OcwatchError,
    Redirected,
    Unreachable,
)
from ..core.fleet import Fleet
from ..core.gcpause import gc_relaxed
from ..core.monitor import GivenUp, ServerMonitor, SnapshotStart
from ..core.raw import RawFacts
from ..core.settings import Settings
from ..core.view import Changes, Transition, View
from .format import Header, Record, RecordingError, read

#: How often a replay derives a View without news, in recorded time (as the dashboard pulls)
TICK = 1.0
#: Records closer together than this (recorded seconds) came in one read: a live consumer
#: derived once after all of them, and so does a replay
BATCH = 0.002
_ERRORS: dict[str, type[OcwatchError]] = {
    c.__name__: c for c in (AuthFailed, BadResponse, GivenUp, NotFound, Redirected, Unreachable)
}


def _error(data: dict[str, Any], message: str) -> OcwatchError:
    """The error a record says happened, of the class it names (`error`; unknown or none: a
    plain OcwatchError)."""
    return _ERRORS.get(str(data.get("error")), OcwatchError)(message)


def settings_of(header: Header, path: Path | None = None) -> Settings:
    """The recorded settings (what derive decided with), known fields only, each of the type
    the default has (RecordingError otherwise)."""
    defaults = Settings()
    got: dict[str, Any] = {}
    for f in dataclasses.fields(Settings):
        if f.name not in header.settings:
            continue
        value, want = header.settings[f.name], type(getattr(defaults, f.name))
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if type(value) is not want or (want is float and not math.isfinite(value)):
            raise RecordingError(
                f"{path or 'the recording'}:1: the setting {f.name!r} is "
                f"{value!r}, not a {want.__name__}"
            )
        got[f.name] = value
    return Settings(**got)


class ReplayClient(Client):
    """A Client whose requests are answered with the responses recorded for the snapshot being
    replayed: the same route methods and the same checks of every answer (`Client._check`), no
    network (and none of httpx's request building: a replay is much faster than the run)."""

    def __init__(self, url: str) -> None:
        # every answer comes from the recording, none from a socket: an offline transport (no
        # connection pool, no TLS context to load: ~18 ms a client), and no quick reads
        super().__init__(url, transport=_OFFLINE)
        self.prefix = urlsplit(self.url).path
        self.pending: dict[tuple[str, str, str], list[Record]] = {}
        self.missing: list[str] = []

    async def request_with_headers(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        expect_json: bool = True,
    ) -> tuple[Any, httpx.Headers]:
        self.requests += 1
        full = self.prefix + path
        query = _query(params) if params else ""
        queue = self.pending.get((method, full, query))
        if not queue:
            self.missing.append(f"{method} {full}?{query}")
            raise Unreachable(f"{self.url} {method} {path}: not in the recording")
        rec = queue.pop(0).data
        if isinstance(rec.get("refused"), str):  # refused while read, live: refused again
            raise BadResponse(rec["refused"])
        content = base64.b64decode(rec["b64"]) if "b64" in rec else rec.get("b", "").encode()
        # an empty stream, never read (the content is above): a Response made without one
        # reads its empty body at once, most of what answering a request costs here
        resp = httpx.Response(rec["st"], headers=rec["h"], stream=httpx.ByteStream(b""))
        if 300 <= resp.status_code < 400:
            raise self.redirected(resp, method, path)
        return self._check(resp, content, method, path, expect_json), resp.headers


class _Offline(httpx.AsyncBaseTransport):
    """The transport of a replay's client: never asked (ReplayClient answers every request
    from the recording); anything that reaches it finds no network."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("a replay has no network", request=request)


_OFFLINE = _Offline()


def _query(params: dict[str, Any]) -> str:
    """The query string a live request with `params` had (as the recording has it)."""
    try:  # the few distinct ones (a directory, a limit) made once: httpx builds them slowly
        return _query_of(tuple((k, type(v), v) for k, v in params.items()))
    except TypeError:  # a value that cannot be a key
        return str(httpx.QueryParams(params))


@functools.lru_cache(maxsize=256)
def _query_of(items: tuple[tuple[str, type, Any], ...]) -> str:
    return str(httpx.QueryParams({k: v for k, _type, v in items}))


class Replay:
    """The fleet of a recording, advanced record by record on the recorded clock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header, self._records = read(path)
        self.settings = settings_of(self.header, path)
        self.now = self.header.created
        self.start = self.header.created
        self._clients = [ReplayClient(url) for url, _ in self.header.servers]
        monitors = [
            ServerMonitor(
                client.url, settings=self.settings, clock=self.clock, name=name, client=client
            )
            for client, (_url, name) in zip(self._clients, self.header.servers, strict=True)
        ]
        self.fleet = Fleet.of(monitors, self.settings, self.clock)
        self._begun: dict[tuple[int, int], SnapshotStart] = {}
        self._groups: dict[tuple[int, int], list[Record]] = {}
        self.records = 0  # applied so far
        self.events = 0  # frames among them
        self.ended: str | None = None  # the `end` record's why, once reached
        self._next: Record | None = None
        self._exhausted = False

    def clock(self) -> float:
        return self.now

    def peek(self) -> Record | None:
        """The next record, not applied yet (None: the file is done)."""
        if self._next is None and not self._exhausted:
            self._next = next(self._records, None)
            self._exhausted = self._next is None
        return self._next

    async def step(self) -> Record | None:
        """Apply the next record (the clock moves to its time); None when there is none."""
        rec = self.peek()
        if rec is None:
            return None
        if rec.kind == "frame":
            self._step_frame(rec)
            return rec
        self._next = None
        self.now = max(self.now, rec.t)
        await self._apply(rec)
        self.records += 1
        return rec

    def _step_frame(self, rec: Record) -> None:
        """`step()` for a frame record, the commonest (most of a recording), with no
        coroutine: making and awaiting one that never suspends costs more than the frame's
        own bookkeeping."""
        self._next = None
        self.now = max(self.now, rec.t)
        self.events += 1
        self.fleet.monitors[rec.server].on_data(rec.data["d"])
        self.records += 1

    async def advance(self, until: float) -> int:
        """Apply every record up to `until` (recorded time); the clock ends there."""
        n = 0
        while (rec := self.peek()) is not None and rec.t <= until:
            await self.step()
            n += 1
        self.now = max(self.now, until)
        return n

    async def _apply(self, rec: Record) -> None:
        data = rec.data
        if rec.kind == "end":
            self.ended = str(data.get("why") or "ended")
            return
        monitor = self.fleet.monitors[rec.server]
        if rec.kind == "http":
            if isinstance(data.get("n"), int):  # a snapshot's (an action's: not replayed)
                self._groups.setdefault((rec.server, data["n"]), []).append(rec)
        elif rec.kind == "stream":
            if data["up"]:
                monitor.stream_opened()
            else:
                monitor.stream_down(_error(data, str(data.get("why") or "stream lost")))
        elif rec.kind == "snap":
            key = (rec.server, data["n"])
            if data["begin"]:
                self._begun[key] = monitor.begin_snapshot()
                return
            begun = self._begun.pop(key, None)
            responses = self._groups.pop(key, [])
            if begun is None:  # the recording started while this snapshot was being taken
                return
            failed = data.get("failed")
            if isinstance(failed, str):
                monitor.snapshot_failed(begun, _error(data, failed))  # AuthFailed: fatal
                return
            answers = self._clients[rec.server]
            answers.pending = {}
            for r in responses:
                key3 = (r.data["m"], r.data["p"], r.data["q"])
                answers.pending.setdefault(key3, []).append(r)
            await monitor.take_snapshot(begun)
            if answers.missing:
                raise RecordingError(
                    f"{self.path}:{rec.line}: the snapshot asked for what was not recorded "
                    f"({answers.missing[0]}); was the file made by another ocwatch version?"
                )

    # -- what consumers read ---------------------------------------------------------------------
    def view(self) -> View:
        """The View at the recorded clock (pulls it: transitions and timelines move on)."""
        return self.fleet.current(self.now)

    @property
    def last_changes(self) -> Changes | None:
        return self.fleet.last_changes

    def history(self, key: tuple[str, str]) -> list[Transition]:
        return self.fleet.history(key)

    async def follow(
        self,
        observe: Callable[[View, Changes | None], Any],
        *,
        until: float | None = None,
        tick: float = TICK,
        spacing: float = BATCH,
    ) -> None:
        """Replay the file (up to `until`, recorded time; None: to its end) at full speed,
        handing the observer a View as a live consumer would have pulled one: after each batch
        of news (records closer than `spacing` to the first of them: frames that came in one
        read) and at least once per `tick`. The cyclic GC collects less often meanwhile
        (gc_relaxed: a replay at full speed is a batch of short-lived objects)."""
        with gc_relaxed():
            await self._follow(observe, until, tick, spacing)

    async def _follow(
        self,
        observe: Callable[[View, Changes | None], Any],
        until: float | None,
        tick: float,
        spacing: float,
    ) -> None:
        observe(self.view(), self.last_changes)
        last_pull = self.now
        news: float | None = None  # when the first record not yet pulled was applied
        quiet_since = self.now  # the last record's time: after `window` nothing changes
        window = self.window
        applied = 0
        while True:
            rec = self.peek()
            if rec is not None and until is not None and rec.t > until:
                rec = None
            if news is not None and (rec is None or rec.t >= news + spacing):
                observe(self.view(), self.last_changes)  # pulled soon after the news
                last_pull, news = self.now, None
                continue
            if rec is None:
                break
            if news is None and rec.t > last_pull + tick:  # quiet: the View as time passes
                if last_pull + tick > quiet_since + window:  # ... until it cannot change
                    await self.advance(rec.t - tick)  # (a suspended laptop: hours at once)
                else:
                    await self.advance(last_pull + tick)
                observe(self.view(), self.last_changes)
                last_pull = self.now
                continue
            if rec.kind == "frame":  # (step()'s, without awaiting it)
                self._step_frame(rec)
            else:
                await self.step()
            quiet_since = self.now
            news = self.now if news is None else news
            applied += 1
            if applied % 500 == 0:
                await asyncio.sleep(0)  # a dashboard seeking through a long file stays live
        while until is not None and self.now + tick < min(until, quiet_since + window):
            await self.advance(self.now + tick)  # time passing after the news
            observe(self.view(), self.last_changes)
        if until is not None:
            await self.advance(until)
        observe(self.view(), self.last_changes)

    @property
    def window(self) -> float:
        """Recorded seconds after the last record within which the View still changes as
        time passes (grace periods, a silent stream called stalled, then lost)."""
        s = self.settings
        return max(s.grace, s.stall_after, s.heartbeat_timeout) + 2 * TICK


async def replay_to(path: Path, at: float | None = None) -> tuple[Replay, View]:
    """Replay the file up to `at` (recorded epoch seconds; None: its end), pulling as a live
    consumer would; the View there."""
    replay = Replay(path)
    await replay.follow(lambda _v, _c: None, until=at)
    return replay, replay.view()


class ReplaySource:
    """A ViewSource (tui.core.source) driven by a recording on its recorded clock: the
    dashboard's `ocwatch replay`. It plays at `speed` times the recorded pace and can pause,
    step one record, change speed and seek (backwards by replaying from the start, which is
    exact and fast)."""

    SPEEDS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 100.0, 1000.0)

    def __init__(self, path: Path, *, speed: float = 1.0, start: float | None = None) -> None:
        self.path = path
        self.replay = Replay(path)
        self.speed = speed
        self.paused = False
        self.start_at = start
        self.last_changes: Changes | None = None
        self.first = self.replay.start
        self._wake = asyncio.Event()
        self._notify: Callable[[], None] = lambda: None
        self._seek_to: float | None = None
        self._steps = 0

    # -- ViewSource -----------------------------------------------------------------------------
    def clock(self) -> float:
        """The recorded clock (what the dashboard shows times against)."""
        return self.replay.now

    def current(self, now: float | None = None) -> View:
        view = self.replay.view()
        self.last_changes = self.replay.last_changes
        return view

    def history(self, key: tuple[str, str]) -> list[Transition]:
        return self.replay.history(key)

    def raw(self, key: tuple[str, str], limit: int = 20) -> RawFacts | None:
        """What the recording said about one session so far, raw."""
        return self.replay.fleet.raw(key, limit)

    async def run(self, notify: Callable[[], None]) -> None:
        self._notify = notify
        if self.start_at is not None:
            await self.replay.follow(lambda _v, _c: None, until=self.start_at)
        notify()
        loop = asyncio.get_running_loop()
        while True:
            if self._seek_to is not None:
                await self._seek()
                notify()
            rec = self.replay.peek()
            if self.paused or rec is None:  # wait for a key (or a seek)
                self._wake.clear()
                if self._steps:
                    self._steps -= 1
                    if rec is not None:
                        await self.replay.step()
                        notify()
                    continue
                await self._wake.wait()
                continue
            if rec.t > self.replay.now:  # let recorded time pass, at `speed`
                began = loop.time()
                wait = min((rec.t - self.replay.now) / self.speed, 0.1)
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait)
                self.replay.now = min(rec.t, self.replay.now + (loop.time() - began) * self.speed)
                notify()
                continue
            await self.replay.step()
            notify()

    # -- controls -------------------------------------------------------------------------------
    def toggle_pause(self) -> None:
        self.paused = not self.paused
        self._wake.set()

    def step_once(self) -> None:
        """Apply the next record (pauses first)."""
        self.paused = True
        self._steps += 1
        self._wake.set()

    def faster(self, by: int = 1) -> None:
        """The next speed up (`by` 1) or down (`by` -1) of SPEEDS."""
        at = min(range(len(self.SPEEDS)), key=lambda i: abs(self.SPEEDS[i] - self.speed))
        self.speed = self.SPEEDS[max(0, min(len(self.SPEEDS) - 1, at + by))]
        self._wake.set()

    def seek(self, delta: float) -> None:
        """Move `delta` recorded seconds (back: replayed from the start up to there)."""
        self._seek_to = max(self.first, (self._seek_to or self.replay.now) + delta)
        self._wake.set()

    async def _seek(self) -> None:
        target, self._seek_to = self._seek_to, None
        assert target is not None
        if target < self.replay.now:
            self.replay = Replay(self.path)
        await self.replay.follow(lambda _v, _c: None, until=target)

    @property
    def finished(self) -> bool:
        return self.replay.peek() is None

    def status(self) -> str:
        """`replay of FILE · 16:59:32 (+12s of 24s) · 2x · paused`."""
        from datetime import datetime

        now = self.replay.now
        clock = datetime.fromtimestamp(now).strftime("%Y-%m-%d %H:%M:%S")
        state = "paused" if self.paused else ("ended" if self.finished else "playing")
        speed = f"{self.speed:g}x"
        return (
            f"replay of {self.path.name} · {clock} (+{now - self.first:.0f}s) · {speed} · "
            f"{state} · {self.replay.events:,} events"
        )
