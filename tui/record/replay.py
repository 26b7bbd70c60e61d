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
from collections.abc import Callable, Sequence
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
from ..core.snapshot import Snapshot
from ..core.tap import SNAPSHOT
from ..core.view import Changes, Transition, View
from .format import Header, Record, RecordingError, notes_of, read

#: How often a replay derives a View without news, in recorded time (as the dashboard pulls)
TICK = 1.0
#: Records closer together than this (recorded seconds) came in one read: a live consumer
#: derived once after all of them, and so does a replay
BATCH = 0.002
#: Loop seconds at most a player applies records that are due without giving the event loop a
#: turn (the screen draws meanwhile)
YIELD_EVERY = 0.02
#: Turns of the event loop with no request begun or answered after which a snapshot being
#: replayed waits for an answer the file has not reached (Replay._settle)
SETTLE_TURNS = 8
_ERRORS: dict[str, type[OcwatchError]] = {
    c.__name__: c for c in (AuthFailed, BadResponse, GivenUp, NotFound, Redirected, Unreachable)
}


def _error(data: dict[str, Any], message: str) -> OcwatchError:
    """The error a record says happened, of the class it names (`error`; unknown or none: a
    plain OcwatchError)."""
    return _ERRORS.get(str(data.get("error")), OcwatchError)(message)


#: The largest value a recorded setting of seconds (a float) may have: a day
MAX_SETTING = 86_400


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
        if want is float and not 0 <= value <= MAX_SETTING:
            # (a day's timeout made the replay step through the day a second at a time)
            raise RecordingError(
                f"{path or 'the recording'}:1: the setting {f.name!r} is {value!r}, "
                f"outside 0 to {MAX_SETTING:,}"
            )
        got[f.name] = value
    return Settings(**got)


#: The most bytes of answers a replay keeps for requests its snapshots have not made yet, per
#: server (a live snapshot reads no answer larger than MAX_LISTING; a file of answers nobody
#: asks for made a 1.6 MB gzip take 1.6 GB)
MAX_KEPT_ANSWERS = 256 * 2**20
#: The most snapshots of one server a replay has open at once (live: one, and the one that
#: supersedes it; a file of 100,000 begun made the replay crawl)
MAX_OPEN_SNAPSHOTS = 8


def _size(rec: Record) -> int:
    """What an answer record kept takes, roughly (its body's text)."""
    data = rec.data
    return 256 + len(data.get("b") or "") + len(data.get("b64") or "")


class ReplayClient(Client):
    """A Client whose requests are answered with the responses recorded for the snapshot being
    replayed, as they come in the file: the same route methods and the same checks of every
    answer (`Client._check`), no network (and none of httpx's request building: a replay is
    much faster than the run). A request whose answer the replay has not reached yet waits for
    it, as the live one waited for the server."""

    def __init__(self, url: str) -> None:
        # every answer comes from the recording, none from a socket: an offline transport (no
        # connection pool, no TLS context to load for each server's client), and no quick reads
        super().__init__(url, transport=_OFFLINE)
        self.prefix = urlsplit(self.url).path
        #: per snapshot number: the answers come but not asked for yet, and the requests asked
        #: whose answers have not come yet
        self.answers: dict[int, dict[_Key, list[Record]]] = {}
        self.waiting: dict[int, dict[_Key, list[_Waiting]]] = {}
        #: requests begun or answered so far, and the tasks whose request was answered that
        #: have not waited for another since: a replay lets a snapshot run until none is left,
        #: or nothing moves (Replay._settle)
        self.moves = 0
        self.owing: set[asyncio.Future[Any]] = set()
        #: the bytes of the answers kept for requests not asked yet (bounded: MAX_KEPT_ANSWERS)
        self.kept = 0

    def answer(self, number: int, rec: Record) -> None:
        """A recorded answer of snapshot `number`: to the request waiting for it, or kept for
        the one that will ask."""
        self.moves += 1
        key = (rec.data["m"], rec.data["p"], rec.data["q"])
        waiting = self.waiting.get(number, {}).get(key)
        while waiting:
            future, task = waiting.pop(0)
            if not future.done():  # (a request cancelled meanwhile)
                future.set_result(rec)
                self.owing.add(task)
                return
        self.answers.setdefault(number, {}).setdefault(key, []).append(rec)
        self.kept += _size(rec)

    def asked(self, number: int) -> list[str]:
        """The requests of snapshot `number` still waiting for an answer."""
        return [
            f"{m} {p}?{q}"
            for (m, p, q), waiting in self.waiting.get(number, {}).items()
            for f, _task in waiting
            if not f.done()
        ]

    def forget(self, number: int) -> None:
        """Snapshot `number` is over: what it kept goes."""
        for kept in self.answers.pop(number, {}).values():
            self.kept -= sum(_size(rec) for rec in kept)
        for waiting in self.waiting.pop(number, {}).values():
            for f, _task in waiting:
                f.cancel()

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
        self.moves += 1
        number = SNAPSHOT.get()
        if number is None:  # (an action's: not recorded for replaying)
            raise Unreachable(f"{self.url} {method} {path}: not in the recording")
        key = (method, self.prefix + path, _query(params) if params else "")
        queue = self.answers.get(number, {}).get(key)
        if queue:
            taken = queue.pop(0)
            self.kept -= _size(taken)
            rec = taken.data
        else:
            future: asyncio.Future[Record] = asyncio.get_running_loop().create_future()
            task = asyncio.current_task()
            assert task is not None
            self.waiting.setdefault(number, {}).setdefault(key, []).append((future, task))
            self.owing.discard(task)
            rec = (await future).data
            self.moves += 1
        if isinstance(rec.get("refused"), str):  # refused while read, live: refused again
            raise BadResponse(rec["refused"])
        content = base64.b64decode(rec["b64"]) if "b64" in rec else rec.get("b", "").encode()
        # an empty stream, never read (the content is above): a Response made without one
        # reads its empty body at once, most of what answering a request costs here
        resp = httpx.Response(rec["st"], headers=rec["h"], stream=httpx.ByteStream(b""))
        if 300 <= resp.status_code < 400:
            raise self.redirected(resp, method, path)
        return self._check(resp, content, method, path, expect_json), resp.headers


_Key = tuple[str, str, str]  # a request: method, path, query
_Waiting = tuple["asyncio.Future[Record]", "asyncio.Future[Any]"]  # its answer, and its task


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
        #: where the file is cut short, once read there (read() cut)
        self.cut: list[str] = []
        self.header, self._records = read(path, self.cut)
        self.settings = settings_of(self.header, path)
        self.now = self.header.created
        self.start = self.header.created
        self._clients = [ReplayClient(url) for url, _ in self.header.servers]
        # a focused fleet's recording (report's) is read as it was: its snapshots of the
        # focus alone, asking only what was asked
        focus = None if self.header.focus is None else frozenset(self.header.focus)
        monitors = [
            ServerMonitor(
                client.url,
                settings=self.settings,
                clock=self.clock,
                name=name,
                client=client,
                focus=focus,
            )
            for client, (_url, name) in zip(self._clients, self.header.servers, strict=True)
        ]
        self.fleet = Fleet.of(monitors, self.settings, self.clock, focus)
        #: the client whose answers the snapshots being read have not caught up with
        self._owed: ReplayClient | None = None
        #: the snapshots being read: (server, number) -> where it began, and the reading
        self._taking: dict[tuple[int, int], tuple[SnapshotStart, asyncio.Future[Snapshot]]] = {}
        self.records = 0  # applied so far
        self.events = 0  # frames among them
        self.last_at = self.header.created  # the latest time of the records applied
        self.ended: str | None = None  # the `end` record's why, once reached
        self._next: Record | None = None
        self._exhausted = False

    def clock(self) -> float:
        return self.now

    def notes(self) -> list[str]:
        """What a reader should know of the file read so far: where it is cut short, or, read
        to its end, that it has no end record."""
        if self.peek() is not None:
            return list(self.cut)
        return notes_of(self.path, self.cut, self.ended is not None)

    def peek(self) -> Record | None:
        """The next record, not applied yet (None: the file is done)."""
        if self._next is None and not self._exhausted:
            self._next = next(self._records, None)
            self._exhausted = self._next is None
        return self._next

    async def step(self) -> Record | None:
        """Apply the next record (the clock moves to its time); None when there is none."""
        rec = self.peek()
        if rec is not None and rec.kind == "frame" and self._owed is None:
            self._step_frame(rec)  # (the commonest, with no coroutine)
            return rec
        rec = await self._step()
        await self.catch_up()
        return rec

    async def _step(self) -> Record | None:
        """`step()`, but a snapshot being read may not have caught up yet with the answers
        applied (run on as far as they let it): it does before the next record of another
        kind, and at the end of `advance` and `follow`. Answers in a row come to the same."""
        rec = self.peek()
        if rec is None:
            await self.catch_up()
            await self.aclose()
            return None
        if rec.kind == "frame":
            if self._owed is not None:
                await self.catch_up()
            self._step_frame(rec)
            return rec
        self._next = None
        self.now = max(self.now, rec.t)
        await self._apply(rec)
        self.records += 1
        self.last_at = max(self.last_at, rec.t)
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
        self.last_at = max(self.last_at, rec.t)

    async def advance(self, until: float) -> int:
        """Apply every record up to `until` (recorded time); the clock ends there."""
        n = 0
        while (rec := self.peek()) is not None and rec.t <= until:
            await self._step()
            n += 1
        await self.catch_up()
        if rec is None:
            await self.aclose()
        self.now = max(self.now, until)
        return n

    async def _apply(self, rec: Record) -> None:
        data = rec.data
        client = self._clients[rec.server] if rec.server >= 0 else None
        if self._owed is not None and (rec.kind != "http" or self._owed is not client):
            await self.catch_up()
        if rec.kind == "end":
            self.ended = str(data.get("why") or "ended")
            return
        assert client is not None
        monitor = self.fleet.monitors[rec.server]
        if rec.kind == "http":
            # a snapshot's answer (an action's is not replayed; nor is a snapshot the
            # recording started in the middle of); by the number the replay gave it. The
            # snapshot catches up with it before the next record of another kind (answers
            # in a row come to the same: nothing else changed in between)
            n = data.get("n")
            taking = self._taking.get((rec.server, n)) if isinstance(n, int) else None
            if taking is not None:
                client.answer(taking[0].number, rec)
                self._owed = client
                if client.kept > MAX_KEPT_ANSWERS:
                    raise RecordingError(
                        f"{self.path}:{rec.line}: more than {MAX_KEPT_ANSWERS // 2**20} MiB of "
                        "answers to requests never made; not a recording ocwatch writes"
                    )
        elif rec.kind == "stream":
            if data["up"]:
                monitor.stream_opened()
            else:
                monitor.stream_down(_error(data, str(data.get("why") or "stream lost")))
        elif rec.kind == "snap":
            key = (rec.server, data["n"])
            if data["begin"]:
                if sum(server == rec.server for server, _n in self._taking) >= MAX_OPEN_SNAPSHOTS:
                    raise RecordingError(
                        f"{self.path}:{rec.line}: more than {MAX_OPEN_SNAPSHOTS} snapshots of "
                        "one server begun and not ended; not a recording ocwatch writes"
                    )
                # read as it was live: asking as the answers come in, with the frames that
                # came meanwhile applied, up to the end record, where it is installed
                begun = monitor.begin_snapshot()
                reading = asyncio.ensure_future(monitor.read_snapshot(begun))
                self._taking[key] = (begun, reading)
                client.owing.add(reading)
                self._owed = client  # (it runs to its first request before the next record)
                return
            taking = self._taking.pop(key, None)
            if taking is None:  # the recording started while this snapshot was being taken
                return
            begun, task = taking
            await self._settle(client)
            failed = data.get("failed")
            if not task.done():  # it waits for an answer the file does not have
                asked = client.asked(begun.number)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
                if not isinstance(failed, str):  # (live, it failed waiting for it)
                    raise RecordingError(
                        f"{self.path}:{rec.line}: the snapshot asked for what was not recorded "
                        f"({asked[0] if asked else 'a request'}); was the file made by another "
                        "ocwatch version?"
                    )
            client.forget(begun.number)
            exc = None if task.cancelled() else task.exception()
            if isinstance(failed, str):
                monitor.snapshot_failed(begun, _error(data, failed))  # AuthFailed: fatal
            elif isinstance(exc, OcwatchError):
                monitor.snapshot_failed(begun, exc)
            elif exc is not None:
                monitor.snapshot_crashed(begun, exc)
            else:
                monitor.install_snapshot(begun, task.result())

    async def catch_up(self) -> None:
        """The snapshots being read, run on with the answers applied since (`_settle`)."""
        if self._owed is not None:
            client, self._owed = self._owed, None
            await self._settle(client)

    async def _settle(self, client: ReplayClient) -> None:
        """Let the snapshots being read run until each waits for an answer the file has not
        reached yet (or is done): as live, where the program ran on until it waited again
        before the next frame or answer came. Settled when every task whose request was
        answered (or that began) waits for another answer and a turn of the loop passed with
        nothing moving; else when nothing (no request begun or answered: `client.moves`) moved
        for SETTLE_TURNS turns, more than the longest stretch a snapshot runs between two (a
        round of gathers ending: 3 turns in the tests)."""
        still = 0
        taking = self._taking.values()
        while still < SETTLE_TURNS and any(not t.done() for _b, t in taking):
            moves = client.moves
            await asyncio.sleep(0)
            if client.moves != moves:
                still = 0
            elif not client.owing:
                break
            else:
                still += 1
        client.owing.clear()

    async def aclose(self) -> None:
        """Stop the snapshots still being read (a file that ends in one, a replay abandoned):
        they never ended, live either."""
        taking, self._taking = self._taking, {}
        for _begun, task in taking.values():
            task.cancel()
        await asyncio.gather(*(task for _b, task in taking.values()), return_exceptions=True)
        for server, n in taking:
            self._clients[server].forget(n)

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
                await self.catch_up()
                observe(self.view(), self.last_changes)  # pulled soon after the news
                last_pull, news = self.now, None
                continue
            if rec is None:
                if self.peek() is None:
                    await self.aclose()
                break
            if news is None and rec.t > last_pull + tick:  # quiet: the View as time passes
                if last_pull + tick > quiet_since + window:  # ... until it cannot change
                    await self.advance(rec.t - tick)  # (a suspended laptop: hours at once)
                else:
                    await self.advance(last_pull + tick)
                observe(self.view(), self.last_changes)
                last_pull = self.now
                continue
            if rec.kind == "frame" and self._owed is None:  # (_step()'s, without awaiting it)
                self._step_frame(rec)
            else:
                await self._step()
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
        await self.catch_up()
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


def merged(first: Changes, then: Changes) -> Changes:
    """The changes of two pulls in a row, as one: the transitions and asks of both, in order,
    and the settled rows of the second."""
    return Changes([*first.transitions, *then.transitions], then.settled, [*first.asks, *then.asks])


class ReplaySource:
    """A ViewSource (tui.core.source) driven by a recording on its recorded clock: the
    dashboard's `ocwatch replay`. It plays at `speed` times the recorded pace and can pause,
    step one record, change speed and seek (backwards by replaying from the start, which is
    exact and fast).

    It pulls the View itself, as a live consumer pulled it: after each batch of records that
    came in one read (`follow`'s batches) and as recorded time passes, never between two
    records of a batch; `current()` hands the dashboard the last pull, with the transitions
    of every pull since it last asked. So the timeline, the unread marks and the alerts are
    the same at any speed and however often the screen is drawn (they were pulled at the
    screen's pace: at 10x a busy step of under a second could go unseen)."""

    SPEEDS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 100.0, 1000.0)

    def __init__(
        self,
        path: Path,
        *,
        speed: float = 1.0,
        start: float | None = None,
        notes: Sequence[str] = (),
    ) -> None:
        self.path = path
        #: what the screen should say of the file (where it is cut short, Replay.notes)
        self.notes = list(notes)
        self.replay = Replay(path)
        self.speed = speed
        self.paused = False
        self.start_at = start
        self.last_changes: Changes | None = None
        self.first = self.replay.start
        self._wake = asyncio.Event()
        #: (loop time, recorded time) the pace is counted from: recorded time passes at `speed`
        #: from there (None: from the next wait; a key that changes the pace resets it)
        self._anchor: tuple[float, float] | None = None
        self._notify: Callable[[], None] = lambda: None
        self._seek_to: float | None = None
        self._steps = 0
        self._view: View | None = None  # the last pull
        self._pulled_at = -math.inf  # (its recorded time)
        self._unread: Changes | None = None  # the changes of the pulls current() has not handed on

    # -- ViewSource -----------------------------------------------------------------------------
    def clock(self) -> float:
        """The recorded clock (what the dashboard shows times against)."""
        return self.replay.now

    def current(self, now: float | None = None) -> View:
        """The View of the last pull (`now` is not read: the recorded clock is the time), and
        as `last_changes` the transitions of every pull since the last call."""
        if self._view is None:
            self._pull()
        assert self._view is not None
        if self._unread is not None:
            self.last_changes, self._unread = self._unread, None
        return self._view

    def _pull(self) -> None:
        """Pull the View at the recorded clock (transitions and timelines move on)."""
        self._pulled_at = self.replay.now
        self._view = self.replay.view()
        got = self.replay.last_changes
        if got is not None:
            was = self._unread
            self._unread = got if was is None else merged(was, got)

    def history(self, key: tuple[str, str]) -> list[Transition]:
        return self.replay.history(key)

    def raw(self, key: tuple[str, str], limit: int = 20) -> RawFacts | None:
        """What the recording said about one session so far, raw."""
        return self.replay.fleet.raw(key, limit)

    async def run(self, notify: Callable[[], None]) -> None:
        self._notify = notify
        if self.start_at is not None:
            await self.replay.follow(lambda _v, _c: None, until=self.start_at)
        self._pull()
        notify()
        loop = asyncio.get_running_loop()
        yielded = loop.time()  # when the loop last had a turn while records were due
        news: float | None = None  # when the first record not yet pulled was applied
        while True:
            if self._seek_to is not None:
                await self._seek()
                news = None
                self._pull()
                notify()
            rec = self.replay.peek()
            if news is not None and (rec is None or rec.t >= news + BATCH):
                await self.replay.catch_up()  # the batch is in: pulled, as follow() pulls it
                news = None
                self._pull()
                notify()
                continue
            if self.paused or rec is None:  # wait for a key (or a seek)
                self._anchor = None
                self._wake.clear()
                if self._steps:
                    self._steps -= 1
                    if rec is not None:  # a record at a time: each one pulled
                        await self.replay.step()
                        news = None
                        self._pull()
                        notify()
                    continue
                await self._wake.wait()
                continue
            if rec.t > self.replay.now:  # let recorded time pass, at `speed`
                # counted from an anchor, not from each wait: a wait is at least the loop's
                # tick (1 ms), so records closer than that at the speed, waited for one by
                # one, played 2,000 events of 100 s in 2.9 s at 100x, 20,000 in 26 s
                if self._anchor is None:
                    self._anchor = (loop.time(), self.replay.now)
                real0, rec0 = self._anchor
                speed = self.speed
                reached = rec0 + (loop.time() - real0) * speed
                if reached < rec.t:
                    self._wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(
                            self._wake.wait(), min((rec.t - reached) / speed, 0.1)
                        )
                    reached = rec0 + (loop.time() - real0) * speed
                elif loop.time() - yielded >= YIELD_EVERY:  # behind: the screen still gets a turn
                    await asyncio.sleep(0)
                    yielded = loop.time()
                target = min(rec.t, max(reached, self.replay.now))
                if news is None:  # (a batch is not cut)
                    # grace periods end as time passes: pulled as follow() pulls while nothing
                    # comes, a recorded TICK after the last pull, for as long as time can still
                    # change the View (its `window` after the last record)
                    quiet_until = self.replay.last_at + self.replay.window
                    while (at := self._pulled_at + TICK) < rec.t and at <= min(target, quiet_until):
                        self.replay.now = at
                        self._pull()
                self.replay.now = target
                notify()
                continue
            await self.replay.step()
            if news is None:
                news = self.replay.now

    # -- controls -------------------------------------------------------------------------------
    def _poke(self) -> None:
        """A key changed the pace (pause, speed, seek, a step): the loop wakes, and recorded
        time is counted again from where it is."""
        self._anchor = None
        self._wake.set()

    def toggle_pause(self) -> None:
        self.paused = not self.paused
        self._poke()

    def step_once(self) -> None:
        """Apply the next record (pauses first)."""
        self.paused = True
        self._steps += 1
        self._poke()

    def faster(self, by: int = 1) -> None:
        """The next speed up (`by` 1) or down (`by` -1) of SPEEDS."""
        at = min(range(len(self.SPEEDS)), key=lambda i: abs(self.SPEEDS[i] - self.speed))
        self.speed = self.SPEEDS[max(0, min(len(self.SPEEDS) - 1, at + by))]
        self._poke()

    def seek(self, delta: float) -> None:
        """Move `delta` recorded seconds (back: replayed from the start up to there)."""
        self._seek_to = max(self.first, (self._seek_to or self.replay.now) + delta)
        self._poke()

    async def _seek(self) -> None:
        target, self._seek_to = self._seek_to, None
        assert target is not None
        if target < self.replay.now:
            await self.replay.aclose()
            self.replay = Replay(self.path)
            self._unread = None  # (another run of the file: what it changed is not to come)
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
