"""The monitor: bad streams are counted and survived; every (re)connect takes a fresh snapshot."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.fakes import FakeAPI, wire_session
from tui.core.monitor import ServerMonitor
from tui.core.settings import Settings

V2_FIXTURES = Path(__file__).parents[1] / "fixtures" / "v2"


def _payload(etype: str, sid: str = "ses_1", **props: object) -> str:
    return json.dumps(
        {"directory": "/p/a", "payload": {"type": etype, "properties": {"sessionID": sid, **props}}}
    )


class Told:
    """A notify that counts its calls, plain and urgent (tui.core.monitor.Notify)."""

    def __init__(self) -> None:
        self.plain = self.urgent_calls = 0

    def __call__(self) -> None:
        self.plain += 1

    def urgent(self) -> None:
        self.urgent_calls += 1


@pytest.mark.parametrize("tap", [False, True], ids=["plain", "recorded"])
async def test_the_frames_of_one_read_are_told_once_urgent_if_any_was(tap):
    """A read's frames each change the facts, but what they change is told once, after all of
    them (nothing runs between two frames of one read): urgently if any frame can settle a
    row, else plainly; a read of streamed tokens alone tells nothing, as before. A frame
    taken alone (`on_data`) still tells at once."""
    busy = _payload("session.status", status={"type": "busy"})
    part = _payload(
        "message.part.updated",
        part={"id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1", "type": "text"},
    )
    idle = _payload("session.idle")
    token = _payload("message.part.delta", messageID="msg_1", partID="prt_1", delta="x")

    class Tap:
        def frame(self, url: str, now: float, d: str) -> None:
            pass

    mon = ServerMonitor("http://x", clock=lambda: 5.0)
    told = Told()
    mon._listen(told)
    if tap:
        mon._tap = Tap()  # type: ignore[assignment]
    mon.on_frames([busy, part, token, busy])
    assert (told.plain, told.urgent_calls) == (1, 0)
    mon.on_frames([busy, idle, part])
    assert (told.plain, told.urgent_calls) == (1, 1)
    mon.on_frames([token, token])
    assert (told.plain, told.urgent_calls) == (1, 1)
    mon.on_data(part, 6.0)
    mon.on_data(busy, 6.0)
    assert (told.plain, told.urgent_calls) == (3, 1)
    assert mon._notify is told  # (restored after each read)
    await mon.client.aclose()


async def test_a_read_that_fails_midway_still_tells_and_keeps_its_notify():
    """A frame whose handling raises (a bug) ends the read: what the frames before it changed
    is still told, and the monitor's notify is its own again for the next read (a monitor
    left with the read's would never tell the app anything more)."""
    mon = ServerMonitor("http://x", clock=lambda: 5.0)
    told = Told()
    mon._listen(told)
    real = mon.on_data

    def failing(data: str, now: float | None = None) -> None:
        if data == "boom":
            raise RuntimeError("a parser bug")
        real(data, now)

    mon.on_data = failing  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        mon.on_frames([_payload("session.idle"), "boom", _payload("session.idle")])
    assert (told.plain, told.urgent_calls) == (0, 1)
    assert mon._notify is told and mon._notify_urgent == told.urgent
    mon.on_frames([_payload("session.status", status={"type": "busy"})])
    assert (told.plain, told.urgent_calls) == (1, 1)
    await mon.client.aclose()


FAST = Settings(snapshot_debounce=0.01, resync_interval=60, heartbeat_timeout=1.0)


def frame(etype: str, props: dict | None = None) -> bytes:
    body = json.dumps({"directory": "/p/a", "payload": {"type": etype, "properties": props or {}}})
    return f"data: {body}\n\n".encode()


class StreamingAPI(FakeAPI):
    """FakeAPI whose /global/event serves scripted streams, one per connection."""

    def __init__(self, streams: list[list[bytes]], **kw):
        super().__init__(**kw)
        self.streams = streams
        self.connects = 0

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.path != "/global/event":
            return super().handle(request)
        self.connects += 1
        chunks = self.streams.pop(0) if self.streams else [frame("server.connected")]
        hold = not self.streams  # the last stream stays open

        async def body():
            for c in chunks:
                yield c
            if hold:
                await asyncio.sleep(3600)

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())


async def wait_until(cond, timeout=30.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        assert loop.time() < end, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_bad_frames_are_counted_and_a_cut_stream_reconnects_with_a_fresh_snapshot():
    busy = {"sessionID": "ses_1", "status": {"type": "busy"}}
    streams = [
        [
            frame("server.connected"),
            b"data: {not json}\n\n",
            frame("totally.new.event"),
            frame("session.status", busy),
            b'data: {"payload": {"type": "sess',
        ],  # cut mid-frame
        [frame("server.connected")],
    ]
    api = StreamingAPI(streams, sessions=[wire_session("ses_1")])
    mon = ServerMonitor("http://x", settings=FAST, transport=api.transport())
    task = asyncio.create_task(mon.run(lambda: None))
    try:
        await wait_until(lambda: api.connects >= 2 and mon.snapshots_taken >= 2 and mon.connected)
        assert mon.parser.skipped >= 1 and mon.parser.unknown == 1
        assert mon.error is None
        rows = mon.rows(1e12)
        assert set(k[1] for k in rows) == {"ses_1"}
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_html_event_stream_is_reported_not_crashed():
    api = FakeAPI(sessions=[wire_session("ses_1")])  # /global/event answers the HTML page
    mon = ServerMonitor("http://x", settings=FAST, transport=api.transport())
    task = asyncio.create_task(mon.run(lambda: None))
    try:
        await wait_until(lambda: mon.stream_error is not None and mon.snapshots_taken >= 1)
        assert "not an event stream" in mon.stream_error
        assert not mon.connected
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_silent_stream_is_declared_dead_and_reconnected():
    # two streams that connect and then say nothing: the read timeout (heartbeat_timeout) ends them
    class Silent(StreamingAPI):
        def handle(self, request):
            if request.url.path != "/global/event":
                return FakeAPI.handle(self, request)
            self.connects += 1

            async def body():
                yield frame("server.connected")
                await asyncio.sleep(3600)

            return httpx.Response(
                200, headers={"content-type": "text/event-stream"}, content=body()
            )

    api = Silent([], sessions=[])
    settings = Settings(snapshot_debounce=0.01, heartbeat_timeout=0.2)
    mon = ServerMonitor("http://x", settings=settings, transport=api.transport())
    task = asyncio.create_task(mon.run(lambda: None))
    try:
        await wait_until(lambda: api.connects >= 2)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_flowing_stream_keeps_its_watchdog_without_rearming_it_per_event(monkeypatch):
    """Events keep the stream alive; the watchdog moves on at most every `slack` (a tenth of
    the silence allowed), not once per event; once they stop, the stream is declared dead
    `heartbeat_timeout` to `heartbeat_timeout + slack` after the last one."""
    rearmed: list[float] = []
    reschedule = asyncio.Timeout.reschedule

    def spy(self, when):  # type: ignore[no-untyped-def]
        if when is not None and 1.0 <= when - asyncio.get_running_loop().time() <= 1.1:
            rearmed.append(when)  # (the watchdog's; not the requests' own deadlines)
        return reschedule(self, when)

    monkeypatch.setattr(asyncio.Timeout, "reschedule", spy)
    times: dict[str, float] = {}

    class Flowing(StreamingAPI):
        def handle(self, request):
            if request.url.path != "/global/event":
                return FakeAPI.handle(self, request)
            self.connects += 1

            async def body():
                yield frame("server.connected")
                for _ in range(100 if self.connects == 1 else 0):
                    await asyncio.sleep(0.01)
                    yield frame("server.heartbeat")
                times.setdefault("last", asyncio.get_running_loop().time())
                await asyncio.sleep(3600)

            return httpx.Response(
                200, headers={"content-type": "text/event-stream"}, content=body()
            )

    api = Flowing([], sessions=[])
    settings = Settings(snapshot_debounce=0.01, heartbeat_timeout=1.0)
    mon = ServerMonitor("http://x", settings=settings, transport=api.transport())
    down = mon.stream_down

    def stream_down(exc):  # type: ignore[no-untyped-def]
        times.setdefault("down", asyncio.get_running_loop().time())
        down(exc)

    mon.stream_down = stream_down  # type: ignore[method-assign]
    task = asyncio.create_task(mon.run(lambda: None))
    try:
        await wait_until(lambda: "down" in times)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    silent = times["down"] - times["last"]
    # the timeout and one slack after the last event; what is left to 2 s is a loaded
    # machine's late timer (a watchdog armed once per timeout would say up to 2 s)
    assert 1.0 <= silent < 1.9
    assert 0 < len(rearmed) <= 20  # ~1 s of events every 10 ms: one rearm per 0.1 s at most


async def test_unreachable_then_reachable_recovers():
    state = {"up": False}
    api = FakeAPI(sessions=[wire_session("ses_1")])

    def handler(req: httpx.Request) -> httpx.Response:
        if not state["up"]:
            raise httpx.ConnectError("connection refused", request=req)
        return api.handle(req)

    mon = ServerMonitor("http://x", settings=FAST, transport=httpx.MockTransport(handler))
    task = asyncio.create_task(mon.run(lambda: None))
    try:
        await wait_until(lambda: mon.error is not None)
        assert "cannot connect" in mon.error and not mon.reachable
        state["up"] = True
        await wait_until(lambda: mon.reachable)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_stream_back_after_a_gap_does_not_vouch_for_the_old_snapshot():
    """Seen on a real 1.18.33 restarted mid-run: the stream came back before any snapshot
    could be read (the first one after the restart timed out), and the rows read busy, as the
    snapshot from before the crash had them, on a server called reachable. Until a snapshot
    taken since the gap succeeds, they are an unreachable server's: unknown, not settled, with
    the last known state; then the snapshot's."""
    from tui.core.client import OcwatchError, Unreachable

    clock = [1e9]
    api = FakeAPI(sessions=[wire_session("ses_1")], status={"/p/a": {"ses_1": {"type": "busy"}}})
    mon = ServerMonitor(
        "http://x", settings=FAST, transport=api.transport(), clock=lambda: clock[0]
    )
    key = ("http://x", "ses_1")
    await mon.snapshot_once()
    mon.stream_opened()
    assert (mon.rows(clock[0])[key].state, mon.reachable) == ("busy", True)
    clock[0] += 1
    mon.stream_down(OcwatchError("event stream lost"))  # the server goes away
    mon.snapshot_failed(mon.begin_snapshot(), Unreachable("http://x: cannot connect"))
    assert mon.rows(clock[0])[key].state == "unknown" and not mon.reachable
    clock[0] += 3
    mon.stream_opened()  # back: the stream first
    row = mon.rows(clock[0])[key]
    assert not mon.reachable
    assert (row.state, row.settled, row.settling) == ("unknown", False, "unreachable")
    assert row.evidence[0].startswith("server unreachable: http://x: cannot connect")
    assert "last known state: busy" in row.evidence[0]
    api.status = {"/p/a": {}}  # the run was cut off by the restart: no longer busy
    clock[0] += 1
    await mon.snapshot_once()
    await mon.client.aclose()
    row = mon.rows(clock[0])[key]
    assert mon.reachable and row.state == "idle" and row.settled


async def test_the_stream_back_after_a_gap_gives_up_a_snapshot_begun_before_it(caplog):
    """A snapshot sent while the server was restarting may hang until its read timeout (10 s
    on 1.18.33). When the stream comes back after the gap, that snapshot cannot cover it: it is
    given up (said as such) and asked again, so the rows are right at once, not 10 s later. One
    begun after the stream came back is not given up; and status's own snapshots never are.
    Giving it up is no sign that the server is down (its stream is back): with no outage shown
    before, the rows stay live meanwhile; a stream cut under load made them flicker unknown."""
    from tui.core.client import OcwatchError

    caplog.set_level(logging.INFO, "ocwatch.monitor")
    api = FakeAPI(sessions=[wire_session("ses_1")], status={"/p/a": {"ses_1": {"type": "busy"}}})
    hang = asyncio.Event()
    hung: list[str] = []

    async def handler(req: httpx.Request) -> httpx.Response:
        if hang.is_set() and req.url.path == "/session/status":
            hung.append(req.url.path)
            await asyncio.sleep(3600)  # the restarting server: no answer
        return api.handle(req)

    clock = [1e9]
    mon = ServerMonitor(
        "http://x", settings=FAST, transport=httpx.MockTransport(handler), clock=lambda: clock[0]
    )
    await mon.snapshot_once()
    mon.stream_opened()
    clock[0] += 1
    mon.stream_down(OcwatchError("event stream lost"))
    hang.set()
    flight = asyncio.create_task(mon.take_snapshot(supersedable=True))
    await wait_until(lambda: hung)
    clock[0] += 2
    api.status = {"/p/a": {}}
    hang.clear()
    mon.stream_opened()  # the server is back
    await asyncio.wait({flight}, timeout=2)  # (not wait_for: its timeout would cancel it)
    assert flight.done() and flight.result() is False
    assert "begun before the event stream came back" in caplog.text
    assert mon.error is None and mon.reachable
    row = mon.rows(clock[0])[("http://x", "ses_1")]
    assert (row.state, row.settled) == ("busy", True)  # the last snapshot's, not "unknown"
    assert mon._want_snapshot.is_set()  # asked again
    assert await mon.take_snapshot(supersedable=True) is True
    assert mon.reachable and mon.rows(clock[0])[("http://x", "ses_1")].state == "idle"
    # begun after the stream came back: kept
    hang.set()
    hung.clear()
    clock[0] += 1
    mon.stream_down(OcwatchError("event stream lost"))
    mon.stream_opened()
    late = asyncio.create_task(mon.take_snapshot(supersedable=True))
    await wait_until(lambda: hung)
    mon.stream_opened()
    await asyncio.sleep(0.05)  # (time for a wrong give-up: late, it passes)
    assert not late.done()
    late.cancel()
    await asyncio.gather(late, return_exceptions=True)
    assert late.cancelled()  # a cancel that is not a give-up goes through
    # status's own snapshot (not the loop's), begun before the stream came back: kept
    clock[0] += 1
    mon.stream_down(OcwatchError("event stream lost"))
    hung.clear()
    plain = asyncio.create_task(mon.take_snapshot())
    await wait_until(lambda: hung)
    clock[0] += 1
    mon.stream_opened()
    await asyncio.sleep(0.05)  # (time for a wrong give-up: late, it passes)
    assert not plain.done()
    plain.cancel()
    await asyncio.gather(plain, return_exceptions=True)
    assert plain.cancelled()
    await mon.client.aclose()


def hanging_monitor(
    status: dict[str, dict[str, str]],
) -> tuple[ServerMonitor, FakeAPI, asyncio.Event, list[float], list[str]]:
    """A monitor of one session (`status`: its status map) whose status route gets no answer
    while `hang` is set (a server starting up); its clock reads `clock[0]`; `hung` holds a
    path per request left hanging (wait on it: the snapshot is in flight)."""
    hang = asyncio.Event()
    hung: list[str] = []
    api = FakeAPI(sessions=[wire_session("ses_1")], status={"/p/a": status})

    async def handler(req: httpx.Request) -> httpx.Response:
        if hang.is_set() and req.url.path == "/session/status":
            hung.append(req.url.path)
            await asyncio.sleep(3600)
        return api.handle(req)

    clock = [1e9]
    mon = ServerMonitor(
        "http://x", settings=FAST, transport=httpx.MockTransport(handler), clock=lambda: clock[0]
    )
    return mon, api, hang, clock, hung


async def test_a_first_snapshot_given_up_is_not_the_first_attempt_over():
    """The stream lost and back while the very first snapshot hangs: it is given up, and those
    waiting for the first snapshot (wait, report) wait on for the one asked again, rather than
    find a server with neither rows nor an error."""
    from tui.core.client import OcwatchError

    mon, _api, hang, clock, hung = hanging_monitor({})
    hang.set()
    mon.stream_opened()
    mon.stream_down(OcwatchError("event stream lost"))
    flight = asyncio.create_task(mon.take_snapshot(supersedable=True))
    first = asyncio.create_task(mon.first_snapshot())
    await wait_until(lambda: hung)
    clock[0] += 1
    mon.stream_opened()
    await asyncio.wait({flight}, timeout=30)
    assert flight.done() and flight.result() is False
    await asyncio.sleep(0.01)  # (time for a wrong ending of `first`: late, it passes)
    assert not first.done() and mon.error is None
    hang.clear()
    assert await mon.take_snapshot(supersedable=True) is True
    await asyncio.wait_for(first, 30)
    assert mon.reachable and mon.rows(clock[0])[("http://x", "ses_1")].state == "idle"
    await mon.client.aclose()


async def test_a_snapshot_given_up_during_an_outage_keeps_the_outage_shown():
    """The server went away (a snapshot failed), a snapshot sent meanwhile hangs, the stream
    comes back: the hung snapshot is given up and the outage stays shown, now saying so, until
    the snapshot asked again comes in (a stream back does not vouch for the old rows)."""
    from tui.core.client import OcwatchError, Unreachable

    mon, api, hang, clock, hung = hanging_monitor({"ses_1": {"type": "busy"}})
    key = ("http://x", "ses_1")
    await mon.snapshot_once()
    mon.stream_opened()
    clock[0] += 1
    mon.stream_down(OcwatchError("event stream lost"))
    mon.snapshot_failed(mon.begin_snapshot(), Unreachable("http://x: cannot connect"))
    hang.set()
    flight = asyncio.create_task(mon.take_snapshot(supersedable=True))
    await wait_until(lambda: hung)
    clock[0] += 2
    mon.stream_opened()
    await asyncio.wait({flight}, timeout=30)
    assert flight.done() and flight.result() is False
    assert not mon.reachable and "begun before the event stream came back" in (mon.error or "")
    row = mon.rows(clock[0])[key]
    assert (row.state, row.settled, row.settling) == ("unknown", False, "unreachable")
    hang.clear()
    api.status = {"/p/a": {}}
    assert await mon.take_snapshot(supersedable=True) is True
    assert mon.reachable and mon.rows(clock[0])[key].state == "idle"
    await mon.client.aclose()


async def test_a_refused_reconnect_shows_the_restart_that_no_snapshot_saw_fail():
    """A restart that no snapshot saw fail: the stream lost, a reconnect refused, a snapshot
    sent as the server came up hangs, the stream back. The refused reconnect says the server
    went away (a run may have been cut off): from then on it is unreachable, through the
    give-up, the rows unknown until the snapshot asked again comes in, not the old busy."""
    from tui.core.client import OcwatchError, Unreachable

    mon, api, hang, clock, hung = hanging_monitor({"ses_1": {"type": "busy"}})
    key = ("http://x", "ses_1")
    await mon.snapshot_once()
    mon.stream_opened()
    clock[0] += 1
    mon.stream_down(OcwatchError("event stream lost"))
    assert mon.reachable  # (the stream lost: the rows rest on the last snapshot meanwhile)
    mon.stream_down(Unreachable("http://x: cannot connect (refused)"))  # a reconnect attempt
    assert not mon.reachable and mon.error == "http://x: cannot connect (refused)"
    row = mon.rows(clock[0])[key]
    assert (row.state, row.settled, row.settling) == ("unknown", False, "unreachable")
    hang.set()
    flight = asyncio.create_task(mon.take_snapshot(supersedable=True))
    await wait_until(lambda: hung)
    clock[0] += 2
    mon.stream_opened()
    await asyncio.wait({flight}, timeout=30)
    assert flight.done() and flight.result() is False
    assert not mon.reachable and "begun before the event stream came back" in (mon.error or "")
    row = mon.rows(clock[0])[key]
    assert (row.state, row.settled, row.settling) == ("unknown", False, "unreachable")
    hang.clear()
    api.status = {"/p/a": {}}  # the restart cut the run off
    assert await mon.take_snapshot(supersedable=True) is True
    assert mon.reachable and mon.rows(clock[0])[key].state == "idle"
    # the next gap starts clean: a cut with no refused reconnect leaves the rows live
    clock[0] += 1
    mon.stream_down(OcwatchError("event stream lost"))
    hung.clear()
    hang.set()
    flight = asyncio.create_task(mon.take_snapshot(supersedable=True))
    await wait_until(lambda: hung)
    clock[0] += 1
    mon.stream_opened()
    await asyncio.wait({flight}, timeout=30)
    assert flight.result() is False and mon.reachable and mon.error is None
    await mon.client.aclose()


async def test_the_stream_back_cuts_short_a_failed_snapshots_backoff(monkeypatch):
    """After a failed snapshot the loop waits (0.5 s, doubling to 15 s) before asking again;
    the stream coming back means the server answers: it asks at once, so the rows an outage
    made unknown are right again as soon as the server is; and its backoff starts again from
    0.5 s."""
    from tui.core import monitor as monitor_mod

    # the backoff's jitter: a tenth of it (0.05 s doubling) for the first six failures, then
    # ten times it (the 7th waits 150 s), so that "at once" and "from 0.5 s again" (5 s) stand
    # far apart from "after the backoff", however slow a loaded machine runs
    mon: ServerMonitor | None = None
    monkeypatch.setattr(
        monitor_mod.random,
        "uniform",
        lambda a, b: 0.1 if mon is None or mon._snapshot_no < 7 else 10.0,
    )
    down = asyncio.Event()
    down.set()
    api = FakeAPI(sessions=[wire_session("ses_1")], status={})

    async def handler(req: httpx.Request) -> httpx.Response:
        if down.is_set():
            raise httpx.ConnectError("refused", request=req)
        return api.handle(req)

    mon = ServerMonitor("http://x", settings=FAST, transport=httpx.MockTransport(handler))
    loop = asyncio.create_task(mon._snapshot_loop())
    try:
        mon.request_snapshot()
        await wait_until(lambda: mon._snapshot_no == 7)  # failed 6 times: waiting 150 s now
        await asyncio.sleep(0.1)  # (the 7th failing: stream_opened during it asks at once too)
        mon.stream_opened()  # asked at once (failing still): the backoff back to 0.5 s
        await wait_until(lambda: mon._snapshot_no == 8, timeout=20)  # (not 150 s)
        await wait_until(lambda: mon._snapshot_no == 9, timeout=30)  # (5 s, not 150 s)
        down.clear()
        mon.stream_opened()  # during the 9th's backoff (10 s): asked at once
        await wait_until(lambda: mon.reachable, timeout=5)
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        await mon.client.aclose()


async def test_a_flapping_stream_gives_up_one_snapshot_not_every_one():
    """A stream cut again and again, faster than a snapshot takes (a bad proxy): the stream
    back gives up the snapshot in flight once; the next runs its course, or no snapshot would
    ever come in (and those waiting for the first one would wait for ever). One that ends, in
    success or failure, lets the next be given up again; and a reconnect refused meanwhile
    shows the outage at once, whether or not the snapshot in flight is given up."""
    from tui.core.client import OcwatchError, Unreachable

    slow = asyncio.Event()
    refuse = asyncio.Event()
    asked: list[str] = []  # a path per status request: the snapshot in flight
    api = FakeAPI(sessions=[wire_session("ses_1")], status={})

    async def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/session/status":
            asked.append(req.url.path)
            await slow.wait()
            if refuse.is_set():
                raise httpx.ConnectError("refused", request=req)
        return api.handle(req)

    clock = [1e9]
    mon = ServerMonitor(
        "http://x", settings=FAST, transport=httpx.MockTransport(handler), clock=lambda: clock[0]
    )

    def flap(refused: bool = False) -> None:
        clock[0] += 1
        mon.stream_down(OcwatchError("event stream lost"))
        if refused:
            mon.stream_down(Unreachable("http://x: cannot connect (refused)"))
        clock[0] += 1
        mon.stream_opened()

    async def given_up(snapshot: asyncio.Task[bool]) -> bool:
        await asyncio.wait({snapshot}, timeout=30)
        return snapshot.done() and snapshot.result() is False

    mon.stream_opened()
    first = asyncio.create_task(mon.take_snapshot(supersedable=True))
    await wait_until(lambda: len(asked) == 1)
    flap()
    assert await given_up(first)
    second = asyncio.create_task(mon.take_snapshot(supersedable=True))
    await wait_until(lambda: len(asked) == 2)
    flap()
    await asyncio.sleep(0.05)  # (time for a wrong give-up: late, it passes)
    assert not second.done()  # not given up in its turn
    slow.set()
    assert await asyncio.wait_for(second, 30) is True
    await asyncio.wait_for(mon.first_snapshot(), 30)
    # a snapshot that came in: the next stream back may give one up again
    slow.clear()
    third = asyncio.create_task(mon.take_snapshot(supersedable=True))
    await wait_until(lambda: len(asked) == 3)
    flap()
    assert await given_up(third) and mon.reachable
    # the next is not given up; the server restarts meanwhile: the refused reconnect says so
    fourth = asyncio.create_task(mon.take_snapshot(supersedable=True))
    await wait_until(lambda: len(asked) == 4)
    flap(refused=True)
    await asyncio.sleep(0.05)  # (time for a wrong give-up: late, it passes)
    assert not fourth.done() and not mon.reachable
    assert mon.rows(clock[0])[("http://x", "ses_1")].settling == "unreachable"
    refuse.set()
    slow.set()
    assert await asyncio.wait_for(fourth, 30) is False  # failed: not given up
    # a snapshot that failed: the next stream back may give one up again
    slow.clear()
    fifth = asyncio.create_task(mon.take_snapshot(supersedable=True))
    await wait_until(lambda: len(asked) == 5)
    flap()
    assert await given_up(fifth)
    assert "begun before the event stream came back" in (mon.error or "")
    await mon.client.aclose()


async def test_a_failed_snapshot_with_a_stream_that_missed_nothing_keeps_the_rows_live():
    """The other side of the rule: a snapshot that fails while the stream has been up all along
    (no gap) leaves the rows live, from the last snapshot and the events since."""
    from tui.core.client import Unreachable

    api = FakeAPI(sessions=[wire_session("ses_1")], status={"/p/a": {"ses_1": {"type": "busy"}}})
    mon = ServerMonitor("http://x", settings=FAST, transport=api.transport(), clock=lambda: 1e9)
    await mon.snapshot_once()
    mon.stream_opened()
    mon.snapshot_failed(mon.begin_snapshot(), Unreachable("http://x: timed out (ReadTimeout)"))
    await mon.client.aclose()
    row = mon.rows(1e9)[("http://x", "ses_1")]
    assert mon.reachable and (row.state, row.settled) == ("busy", True)


async def test_drift_counts_what_events_said_and_the_snapshot_contradicts():
    api = FakeAPI(sessions=[wire_session("ses_1")], status={"/p/a": {}})
    mon = ServerMonitor("http://x", settings=FAST, transport=api.transport(), clock=lambda: 1e9)
    await mon.snapshot_once()
    mon.on_data(
        frame("session.status", {"sessionID": "ses_1", "status": {"type": "busy"}})
        .decode()[len("data: ") :]
        .strip()
    )
    assert mon.rows(1e9)[("http://x", "ses_1")].state == "busy"  # what the View showed
    await mon.snapshot_once()  # the server never reports it busy: the event was wrong
    await mon.client.aclose()
    assert mon.drift_count == 1
    assert mon.drift_examples[0] == "ses_1: events said busy, snapshot says idle"
    assert mon.rows(1e9)[("http://x", "ses_1")].state == "idle"


async def test_the_first_snapshot_shows_how_far_it_has_loaded():
    """A first snapshot of a large server takes seconds: ServerInfo.loading says how far it is,
    the UI is told about each whole percent (not each message), and nothing is left once done."""
    ids = [f"ses_{i:04d}" for i in range(400)]
    api = FakeAPI(sessions=[wire_session(s) for s in ids])
    mon = ServerMonitor("http://x", settings=FAST, transport=api.transport())
    seen: list[tuple[int, int] | None] = []
    await mon.snapshot_once(lambda: seen.append(mon.info().loading))
    assert seen[0] == (0, 400)
    assert [s for s in seen[1:-1] if s is not None] == [(4 * p, 400) for p in range(1, 100)]
    assert seen[-1] is None and mon.info().loading is None
    seen.clear()
    await mon.snapshot_once()  # a resync: the table is there, nothing to show
    assert seen == [] and mon.info().loading is None
    await mon.client.aclose()


async def test_an_unterminated_event_line_is_cut_at_the_limit_not_kept():
    async def body():
        yield b'data: {"a": 1}\r\n\r\ndata: two\ndata: lines\n\n: a comment\nevent: x\n'
        for _ in range(64):  # 4 MiB of one line that never ends
            yield b"x" * 65536

    assert await events_before_the_cut(body()) == ['{"a": 1}', "two\nlines"]


async def events_before_the_cut(body: AsyncIterator[bytes]) -> list[str]:
    """The events `sse_data` gives of `body` (async bytes) under a 1 MiB limit, before the
    event that passes it ends the stream (OcwatchError; the test fails if none does)."""
    from tui.core.client import OcwatchError, sse_data

    got = []
    with pytest.raises(OcwatchError, match="larger than 1 MiB"):
        async for data in sse_data(httpx.Response(200, content=body), "http://x", 2**20):
            got.append(data)
    return got


async def test_an_event_of_many_empty_data_lines_is_bounded_as_one_long_line():
    """Empty `data:` lines carry no bytes but each is kept (a review's 60 MB of them took
    `watch` to 918 MB under a 16 MiB limit): each line counts what keeping it costs."""
    from tui.core.client import LINE_COST

    kept: list[int] = []

    async def body():
        yield b"data: first\n\n"
        for _ in range(64):  # 64 x 16,384 empty data lines, no blank line ending the event
            kept.append(1)
            yield b"data:\n" * 16384

    assert await events_before_the_cut(body()) == ["first"]
    assert len(kept) <= 2**20 // LINE_COST // 16384 + 1  # (cut within the limit's lines)


async def test_a_chunk_of_many_lines_lets_the_event_loop_run():
    """A chunk of the stream holding a million blank lines (what a few KB of gzip inflate to)
    is read line by line: the event loop runs meanwhile (a review found `wait --timeout 10`
    and Ctrl-C held for a minute)."""
    from tui.core.client import sse_data

    async def body():
        yield b"\n" * 1_000_000 + b"data: last\n\n"

    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    before = ticks
    got = [data async for data in sse_data(httpx.Response(200, content=body()), "http://x", 2**20)]
    during = ticks - before
    task.cancel()
    assert got == ["last"]
    assert during > 100, during


async def test_the_events_of_one_read_come_as_one_batch_of_bounded_size():
    """The monitor takes each read's events at once (one clock read, one watchdog check for
    all): a read of 3,000 events comes as batches of at most BATCH_LINES lines' worth, in
    order, and a comment (V2's heartbeat) holds its place as an empty string."""
    from tui.core.client import BATCH_LINES, _sse_batches

    async def chunks():
        yield b"".join(b"data: %d\n\n" % i for i in range(3000)) + b": beat\n"
        yield b"data: last\n\n"

    batches = [b async for b in _sse_batches(chunks(), "http://x", 2**20, comments=True)]
    assert [d for b in batches for d in b] == [str(i) for i in range(3000)] + ["", "last"]
    assert len(batches) == 1 + -(-6001 // BATCH_LINES) and batches[-1] == ["last"]
    assert all(len(b) <= BATCH_LINES // 2 + 1 for b in batches)


async def test_frames_of_one_read_are_stamped_with_one_moment():
    ticks = iter(range(100, 200))
    mon = ServerMonitor("http://x", clock=lambda: float(next(ticks)))
    seen: list[tuple[str, float | None]] = []
    mon.on_data = lambda data, now=None: seen.append((data, now))  # type: ignore[method-assign]
    mon.on_frames(["a", "b", ""])
    mon.on_frames(["c"])
    assert seen == [("a", 100.0), ("b", 100.0), ("", 100.0), ("c", 101.0)]
    await mon.client.aclose()


async def test_a_stream_closed_at_once_backs_off_instead_of_storming(monkeypatch):
    import tui.core.monitor as monitor_mod

    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay, *a, **kw):
        if delay in (0.5, 1.0, 2.0, 4.0, 8.0, 15.0):
            delays.append(delay)
            delay = 0
        return await real_sleep(delay, *a, **kw)

    monkeypatch.setattr(monitor_mod.random, "uniform", lambda a, b: 1.0)
    monkeypatch.setattr(monitor_mod.asyncio, "sleep", sleep)
    api = StreamingAPI(
        [[frame("server.connected")] for _ in range(8)], sessions=[wire_session("ses_1")]
    )
    mon = ServerMonitor("http://x", settings=FAST, transport=api.transport())
    task = asyncio.create_task(mon.run(lambda: None))
    try:
        await wait_until(lambda: len(delays) >= 5)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert delays[:5] == [0.5, 1.0, 2.0, 4.0, 8.0]


def test_a_silent_stream_reads_stalled_and_asks_for_a_snapshot():
    from tests.builders import T0

    clock = {"t": T0}
    mon = ServerMonitor(
        "http://x", settings=FAST, clock=lambda: clock["t"], transport=FakeAPI().transport()
    )
    mon._connected, mon._connected_at, mon._last_event_at = True, T0, T0
    assert mon.info().stream == "connected"
    clock["t"] = T0 + FAST.stall_after + 1
    assert mon.info().stream == "stalled"
    from tests.builders import session, snap

    mon.store.snapshot = snap([session("s1")], started_at=T0)
    mon._want_snapshot.clear()
    mon.rows(clock["t"])
    assert mon._want_snapshot.is_set()
    mon._connected = False
    assert mon.info().stream == "lost"


async def test_a_stream_that_stayed_up_reconnects_at_once(monkeypatch):
    """Every moment without a stream loses events for good: after a stream that had stayed
    healthy is cut, the next connect waits at most 0.1 s of jitter, not a backoff step."""
    import tui.core.monitor as monitor_mod

    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay, *a, **kw):
        delays.append(delay)
        return await real_sleep(0 if delay > 0.05 else delay, *a, **kw)

    monkeypatch.setattr(monitor_mod, "HEALTHY_FOR", 0.0)  # every stream counts as healthy
    monkeypatch.setattr(monitor_mod.random, "uniform", lambda a, b: b)
    monkeypatch.setattr(monitor_mod.asyncio, "sleep", sleep)
    api = StreamingAPI(
        [[frame("server.connected")] for _ in range(5)], sessions=[wire_session("ses_1")]
    )
    mon = ServerMonitor("http://x", settings=FAST, transport=api.transport())
    task = asyncio.create_task(mon.run(lambda: None))
    try:
        await wait_until(lambda: api.connects >= 5)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert 0.1 in delays and not [d for d in delays if 0.1 < d < FAST.resync_interval], delays


def test_a_run_that_ended_while_events_were_missed_is_drift():
    """Busy before the outage and busy after it, but since a later prompt: a run ended and the
    next began unseen. That is said as drift (the transitions cannot show what nobody saw)."""
    from tests.builders import T0
    from tui.core.view import SessionRow

    def row(since: float) -> SessionRow:
        return SessionRow(
            server="http://x",
            id="ses_1",
            title="",
            directory="/p/a",
            parent_id=None,
            state="busy",
            reason=None,
            stale=False,
            evidence=(),
            pending=(),
            since=since,
            updated=since,
            cost=None,
            tokens=None,
        )

    mon = ServerMonitor("http://x", settings=FAST, transport=FakeAPI().transport())
    key = ("http://x", "ses_1")
    mon.store.count_drift({key: row(T0)}, {key: row(T0)}, outage=T0 + 5)
    assert mon.drift_count == 0  # the same run
    mon.store.count_drift({key: row(T0)}, {key: row(T0 + 8)})
    assert mon.drift_count == 0  # no outage: the events saw it (the journal derived it)
    mon.store.count_drift({key: row(T0)}, {key: row(T0 + 8)}, outage=T0 + 5)
    assert mon.drift_count == 1
    assert "a run ended and the next began while events were missed" in mon.drift_examples[-1]


async def test_a_reconnect_takes_its_snapshot_without_waiting_out_the_spacing(monkeypatch):
    """Snapshots are spaced by 4x what the last one took (a flood of events must not turn into
    a flood of snapshots); a reconnect's is not held back: events of the gap are lost for good,
    and a run that ends and restarts meanwhile would go unseen."""
    import types

    import tui.core.monitor as monitor_mod

    ticks = iter(range(0, 10**9, 1000))  # every snapshot "takes" 1000 s: spacing = the cap
    monkeypatch.setattr(
        monitor_mod,
        "time",
        types.SimpleNamespace(monotonic=lambda: float(next(ticks)), time=monitor_mod.time.time),
    )
    monkeypatch.setattr(monitor_mod, "HEALTHY_FOR", 0.0)
    mon: ServerMonitor | None = None

    class CutAfterTheFirstSnapshot(StreamingAPI):
        """The first stream ends once the first snapshot is in (so its reconnect comes after
        that snapshot, never folded into it); the second stays open."""

        def handle(self, request: httpx.Request) -> httpx.Response:
            if request.url.path != "/global/event":
                return super().handle(request)
            self.connects += 1
            first = self.connects == 1

            async def body():
                yield frame("server.connected")
                while first and (mon is None or mon.snapshots_taken < 1):
                    await asyncio.sleep(0.01)
                if not first:
                    await asyncio.sleep(3600)

            return httpx.Response(
                200, headers={"content-type": "text/event-stream"}, content=body()
            )

    api = CutAfterTheFirstSnapshot([], sessions=[wire_session("ses_1")])
    slow = Settings(
        snapshot_debounce=0.01, resync_interval=3600, heartbeat_timeout=5.0, snapshot_min_gap=3600
    )
    mon = ServerMonitor("http://x", settings=slow, transport=api.transport())
    task = asyncio.create_task(mon.run(lambda: None))
    try:
        await wait_until(lambda: api.connects >= 2 and mon.snapshots_taken >= 2)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_401_on_the_event_stream_says_what_a_401_anywhere_says():
    """One message for a refused password, whichever route met it: with a user given, that the
    server refused it (not the no-password hint)."""
    from tui.core.settings import Auth

    class Refusing(StreamingAPI):
        def handle(self, request: httpx.Request) -> httpx.Response:
            if request.url.path == "/global/event":
                return httpx.Response(401, headers={"www-authenticate": "Basic"})
            return super().handle(request)

    api = Refusing([], sessions=[wire_session("ses_1")])
    mon = ServerMonitor(
        "http://x", auth=Auth("opencode", "wrong"), settings=FAST, transport=api.transport()
    )
    task = asyncio.create_task(mon.run(lambda: None))
    try:
        await wait_until(lambda: mon.stream_error is not None)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert mon.stream_error == mon.client.auth_failed().message
    assert "refused user 'opencode'" in mon.stream_error


async def test_an_event_that_can_settle_a_row_is_told_as_urgent():
    """A run ending, something asked or answered: the monitor calls its notify's `urgent()`
    (a dashboard draws it at once); a part, a token or a busy repeat: the plain notify."""
    calls: list[str] = []

    class Notify:
        def __call__(self) -> None:
            calls.append("changed")

        def urgent(self) -> None:
            calls.append("urgent")

    mon = ServerMonitor(
        "http://x", settings=FAST, transport=FakeAPI(sessions=[wire_session("ses_1")]).transport()
    )
    await mon.snapshot_once(Notify())
    mon._connected = True
    told = {}
    for etype, props in [
        ("session.status", {"sessionID": "ses_1", "status": {"type": "busy"}}),
        (
            "message.part.updated",
            {
                "sessionID": "ses_1",
                "part": {"id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1", "type": "text"},
            },
        ),
        ("session.status", {"sessionID": "ses_1", "status": {"type": "idle"}}),
        ("session.idle", {"sessionID": "ses_1"}),
        ("permission.asked", {"id": "per_1", "sessionID": "ses_1", "permission": "bash"}),
    ]:
        calls.clear()
        mon.on_data(json.dumps({"type": etype, "properties": props}))
        told[etype + ("/" + props["status"]["type"] if "status" in props else "")] = calls[-1]
    assert told == {
        "session.status/busy": "changed",
        "message.part.updated": "changed",
        "session.status/idle": "urgent",
        "session.idle": "urgent",
        "permission.asked": "urgent",
    }


def test_retry_after_is_read_as_seconds_or_a_date_and_bounded() -> None:
    from email.utils import formatdate

    from tui.core.client import MAX_RETRY_AFTER, retry_after

    assert retry_after("120", 0.0) == 120.0
    assert retry_after(None, 0.0) is None and retry_after("soon", 0.0) is None
    assert retry_after("\u00b2", 0.0) is None  # (a digit to str.isdigit, not to float: no crash)
    assert retry_after("99999999", 0.0) == MAX_RETRY_AFTER
    now = 1_800_000_000.0
    assert retry_after(formatdate(now + 30, usegmt=True), now) == pytest.approx(30.0, abs=1)
    assert retry_after(formatdate(now - 30, usegmt=True), now) == 0.0


async def test_a_snapshot_refused_with_retry_after_is_not_asked_again_before_it() -> None:
    """Issue 40: 24 requests a minute against `Retry-After: 120`. The snapshot loop waits what
    the server asked before its next snapshot."""
    import asyncio

    import httpx

    from tui.core.monitor import ServerMonitor

    hits = {"n": 0}

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/global/health":
            hits["n"] += 1
            return httpx.Response(429, headers={"retry-after": "30"}, json={"name": "TooMany"})
        return httpx.Response(404)

    mon = ServerMonitor("http://busy", transport=httpx.MockTransport(handle))
    loop_task = asyncio.create_task(mon._snapshot_loop())
    mon.request_snapshot()
    try:
        await mon.first_snapshot()
        assert mon.error is not None and "HTTP 429" in mon.error
        await asyncio.sleep(1.5)  # (the old backoff asked again within 0.6 s, then 1.2 s)
        assert hits["n"] == 1
    finally:
        loop_task.cancel()
        await asyncio.gather(loop_task, return_exceptions=True)


async def test_a_first_snapshot_slower_than_the_deadline_is_said_while_it_is_asked() -> None:
    """Issue 40: a server answering every request slowly kept the dashboard at "Connecting…"
    for minutes. Past command_deadline the monitor says the server answers too slowly."""
    import asyncio

    import httpx

    from tui.core.monitor import ServerMonitor
    from tui.core.settings import Settings

    release = asyncio.Event()

    async def handle(request: httpx.Request) -> httpx.Response:
        await release.wait()
        return httpx.Response(503)

    mon = ServerMonitor(
        "http://slow",
        transport=httpx.MockTransport(handle),
        settings=Settings(command_deadline=0.3),
    )
    task = asyncio.create_task(mon.run(lambda: None))
    try:
        await wait_until(lambda: mon.info().error)
        info = mon.info()
        assert info.error is not None and "no complete snapshot within 0.3s" in info.error
        assert not info.reachable
    finally:
        release.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def _fed(frames: list[str], v2: bool, by_batch: bool, tap: object = None) -> ServerMonitor:
    from tui.core.protocols import V2

    mon = ServerMonitor("http://x", clock=lambda: 50.0)
    if v2:
        mon.use(V2)
    mon._tap = tap  # type: ignore[assignment]
    if by_batch:
        mon.on_frames(frames)
    else:
        for data in frames:
            mon.on_data(data, 50.0)
    return mon


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
async def test_a_batch_passes_over_streamed_tokens_as_its_frames_one_by_one_would(v2):
    """Streamed tokens, most of a busy stream, are passed over unparsed where a read's frames
    come in (`on_frames`; V2: also the noise that carries no sequence): the same facts, output
    and counts as each frame taken alone, and the parser never reached for them; a recording
    is still handed every frame."""
    from tests.recorded import frames

    if v2:
        data = [d for _, d in json.loads((V2_FIXTURES / "completed.json").read_text())["frames"]]
        # (and the noise 2.0.15 sends with no sequence to keep)
        kinds = ['"type":"session.text.delta"', '"type":"session.usage.updated"']
        made = ("session.reasoning.delta", "session.tool.input.delta", "session.tool.progress")
        sid = json.loads(data[-1])["data"]["sessionID"]
        extra = [  # (compact, as a V2 server writes them)
            json.dumps(
                {"id": f"evt_q{i}", "type": t, "data": {"sessionID": sid, "delta": "x"}},
                separators=(",", ":"),
            )
            for i, t in enumerate(made)
        ]
        kinds += [f'"type":"{t}"' for t in made]
    else:
        data = frames("completed")
        kinds = ['"type":"message.part.delta"', '"type": "message.part.delta"']
        extra = [  # (a space after the colon, as some writers put it)
            json.dumps({"payload": {"type": "message.part.delta", "properties": {}}})
        ]
    # streamed between the run's frames, with a heartbeat (an empty frame)
    data = data[:3] + extra + [""] + data[3:]
    tokens = [d for d in data if any(k in d for k in kinds)]
    assert all(any(k in d for d in tokens) for k in kinds) and len(tokens) < len(data)
    one, batch = _fed(data, v2, by_batch=False), _fed(data, v2, by_batch=True)

    def seen(mon: ServerMonitor) -> object:
        j = mon.store.journal
        return (
            [(e.seq, e.event.type, e.event.properties) for e in j._entries],
            mon.output_at,
            mon._last_event_at,
            mon.parser.skipped,
            mon.parser.unknown,
            mon.state,
        )

    assert seen(batch) == seen(one)
    parsed: list[str] = []
    mon = ServerMonitor("http://x", clock=lambda: 50.0)
    if v2:
        from tui.core.protocols import V2

        mon.use(V2)
    real = mon.parser.parse
    mon.parser.parse = lambda d, now: parsed.append(d) or real(d, now)  # type: ignore[method-assign]
    mon.on_frames(data)
    assert parsed == [d for d in data if d not in tokens]
    only_tokens = ServerMonitor("http://x", clock=lambda: 7.0)
    if v2:
        only_tokens.use(V2)
    only_tokens.on_frames(tokens)
    assert only_tokens.output_at == only_tokens._last_event_at == 7.0

    class Tap:
        def __init__(self) -> None:
            self.frames: list[str] = []

        def frame(self, url: str, now: float, d: str) -> None:
            self.frames.append(d)

    tap = Tap()
    _fed(data, v2, by_batch=True, tap=tap)
    assert tap.frames == data
    for m in (one, batch, mon, only_tokens):
        await m.client.aclose()


def test_the_v2_noise_passed_over_at_sight_carries_no_sequence():
    """V2 types passed over unparsed (besides the streamed tokens) must never carry a
    `durable` sequence: one skipped would make the next of its session look like a gap (a
    snapshot each time). Every recorded 2.0.15 frame of those types is checked: a server
    that starts sending them with one fails here."""
    from tui.core.protocols.v2.events import V2EventParser

    quick = [q.strip('"') for q in V2EventParser.QUICK]
    seen = 0
    for path in V2_FIXTURES.glob("*.json"):
        for _, d in json.loads(path.read_text())["frames"]:
            frame = json.loads(d)
            if isinstance(frame, dict) and frame.get("type") in quick:
                seen += 1
                assert "durable" not in frame, (path.name, frame["type"])
    assert seen > 10
