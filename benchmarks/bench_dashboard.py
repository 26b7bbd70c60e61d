"""Benchmark: the dashboard with 2,000 sessions under a stream of 2,000 events per second.

    python benchmarks/bench_dashboard.py [--sessions 2000] [--rate 2000] [--changes 30]

The real app (headless, Textual's test driver) and the real client, monitor and derive run against
an in-process OpenCode API (httpx MockTransport: no sockets, the rest is production code) whose
event stream sends `rate` events per second: streamed-token noise, part updates and status
repeats for 200 busy sessions. Measured (issue 3 targets in brackets):

- startup to first paint of every row [< 1.5 s];
- a state change (a busy session finishes: status idle + completed message) until the table
  holds it and the next frame has been painted, p50/p95 over `changes` changes [p95 < 250 ms];
- a key press (cursor down, or up from the lower rows) until the cursor moved and the next
  frame has been painted, p50/p95 over 50 presses [< 100 ms]; with `--pane`, the details pane
  is open beside the table and reads each session the cursor rests on (issue 12: p95 < 50 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from textual import events
from textual.app import App
from textual.screen import Screen

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes import FakeAPI, wire_session  # noqa: E402
from tui.app import DashboardOptions, create_app  # noqa: E402
from tui.app.inspect import FleetPeek  # noqa: E402
from tui.app.widgets.session_table import SessionTable, row_key_str  # noqa: E402
from tui.core.fleet import Fleet  # noqa: E402
from tui.core.settings import Settings  # noqa: E402

URL = "http://bench"


def frame(etype: str, props: dict[str, Any]) -> bytes:
    body = json.dumps({"directory": "/p/a", "payload": {"type": etype, "properties": props}})
    return f"data: {body}\n\n".encode()


def noise_frames(sid: str) -> tuple[bytes, bytes, bytes]:
    """A busy session's noise: a streamed token, a part update and a busy status repeat."""
    part = {"sessionID": sid, "messageID": "msg_2", "partID": "prt_1"}
    return (
        frame("message.part.delta", {**part, "field": "text", "delta": "tok "}),
        frame(
            "message.part.updated",
            {
                "sessionID": sid,
                "part": {
                    "id": "prt_1",
                    "sessionID": sid,
                    "messageID": "msg_2",
                    "type": "text",
                    "text": "streaming",
                },
            },
        ),
        frame("session.status", {"sessionID": sid, "status": {"type": "busy"}}),
    )


def assistant(sid: str, done: float | None) -> dict[str, Any]:
    info: dict[str, Any] = {
        "id": "msg_2",
        "sessionID": sid,
        "role": "assistant",
        "time": {"created": 1_000},
    }
    if done is not None:
        info["time"]["completed"] = done
        info["finish"] = "stop"
    return info


class StreamAPI(FakeAPI):
    """FakeAPI plus an endless event stream at a fixed rate, and a queue of marker events."""

    def __init__(self, n: int, busy: int, rate: int) -> None:
        sessions = [
            wire_session(f"ses_{i:05d}", f"/p/{'ab'[i % 2]}", updated=1e12 + i) for i in range(n)
        ]
        status = {"/p/a": {}, "/p/b": {}}
        messages = {}
        for i in range(n):
            sid = f"ses_{i:05d}"
            done = None if i < busy else 2_000.0
            messages[sid] = [{"info": assistant(sid, done), "parts": []}]
            if i < busy:
                status["/p/" + "ab"[i % 2]][sid] = {"type": "busy"}
        super().__init__(
            sessions=sessions,
            status=status,
            messages=messages,
            projects=[{"id": "a", "worktree": "/p/a"}, {"id": "b", "worktree": "/p/b"}],
        )
        self.busy = busy
        self.rate = rate
        self.markers: asyncio.Queue[bytes] = asyncio.Queue()
        self.sent = 0
        self.finished: set[str] = set()

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.path != "/global/event":
            return super().handle(request)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=self.stream()
        )

    async def stream(self):  # type: ignore[no-untyped-def]
        rnd = random.Random(1)
        yield frame("server.connected", {})
        noise: dict[str, tuple[bytes, bytes, bytes]] = {}
        tick = 0.01
        per_tick = max(1, int(self.rate * tick))
        start = time.perf_counter()
        k = 0
        while True:
            chunks = []
            while not self.markers.empty():
                chunks.append(self.markers.get_nowait())
            for _ in range(per_tick):
                sid = f"ses_{rnd.randrange(self.busy):05d}"
                if sid in self.finished:
                    sid = f"ses_{self.busy - 1:05d}"  # the last busy one never finishes
                r = rnd.random()
                made = noise.get(sid)
                if made is None:  # (built once a session: the stream's own cost is a server's)
                    made = noise[sid] = noise_frames(sid)
                chunks.append(made[0 if r < 0.6 else 1 if r < 0.9 else 2])
            self.sent += per_tick
            yield b"".join(chunks)
            k += 1
            delay = start + k * tick - time.perf_counter()
            await asyncio.sleep(max(0.0, delay))

    def finish(self, sid: str) -> None:
        """A busy session's run ends: completed message, then status idle (as 1.18.33 sends)."""
        now = time.time() * 1000
        self.finished.add(sid)
        self.markers.put_nowait(
            frame("message.updated", {"sessionID": sid, "info": assistant(sid, now)})
        )
        self.markers.put_nowait(
            frame("session.status", {"sessionID": sid, "status": {"type": "idle"}})
        )
        self.markers.put_nowait(frame("session.idle", {"sessionID": sid}))
        folder = "/p/" + "ab"[int(sid[4:]) % 2]
        self.status[folder].pop(sid, None)
        self.messages[sid] = [{"info": assistant(sid, now), "parts": []}]


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


PAINTS: list[float] = []
"""When each frame was handed to the terminal driver (App._display, wrapped below: every
screen update, a layout or a scroll included, ends there)."""


def record_paints() -> None:
    display = App._display

    def timed(self: App[object], screen: Screen[object], renderable: object) -> None:
        display(self, screen, renderable)  # type: ignore[arg-type]
        if renderable is not None and not self._batch_count:
            PAINTS.append(time.perf_counter())

    App._display = timed  # type: ignore[method-assign]


SHOWN_IDLE: dict[str, float] = {}
"""Row keys to watch -> when a table refresh first showed the row idle (0.0: not yet)."""
MOVES: list[float] = []
"""When the table cursor moved."""


def record_table_changes() -> None:
    """Time changes where the table makes them (not when a polling loop notices them: the
    frame may already be painted by then, and the next one may be much later)."""
    sync = SessionTable._sync_view

    def timed_sync(self: SessionTable, view: Any, *rest: Any) -> None:
        sync(self, view, *rest)
        for key, at in SHOWN_IDLE.items():
            if not at and self.has_row(key) and "idle" in str(self.get_row(key)[0]):
                SHOWN_IDLE[key] = time.perf_counter()

    SessionTable._sync_view = timed_sync  # type: ignore[method-assign]
    watch = SessionTable.watch_cursor_row

    def timed_watch(self: SessionTable, old: Any, new: Any) -> None:
        watch(self, old, new)
        if old != new:
            MOVES.append(time.perf_counter())

    SessionTable.watch_cursor_row = timed_watch  # type: ignore[method-assign]


async def painted_after(t: float) -> float:
    """When the first frame painted after `t` finished."""
    while not PAINTS or PAINTS[-1] <= t:
        await asyncio.sleep(0.001)
    return next(p for p in PAINTS if p > t)


async def run(n: int, rate: int, changes: int, pane: bool = False) -> None:
    record_paints()
    record_table_changes()
    api = StreamAPI(n, busy=200, rate=rate)
    fleet = Fleet([URL], settings=Settings(), transport=api.transport(), progressive=True)
    app = create_app(
        fleet, DashboardOptions(server_urls=[URL], peek=FleetPeek(fleet) if pane else None)
    )
    app.show_pane = pane
    t0 = time.perf_counter()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.main_screen.query_one(SessionTable)
        while table.row_count < n:
            await asyncio.sleep(0.005)
        startup = await painted_after(time.perf_counter()) - t0
        print(f"startup to first paint of {n} rows: {startup * 1000:.0f} ms")
        mon = fleet.monitors[0]
        while mon.snapshot is None or mon.snapshot.loading:
            await asyncio.sleep(0.005)
        loaded = time.perf_counter() - t0
        print(f"startup to every last message read: {loaded * 1000:.0f} ms")
        await pilot.pause(1.0)  # let the stream run
        latencies = []
        for i in range(changes):
            sid = f"ses_{i:05d}"
            key = row_key_str((URL, sid))
            SHOWN_IDLE[key] = 0.0
            t = time.perf_counter()
            api.finish(sid)
            while not SHOWN_IDLE[key]:
                if time.perf_counter() - t > 5:
                    raise SystemExit(f"{sid} never showed idle")
                await asyncio.sleep(0.002)
            shown = await painted_after(SHOWN_IDLE[key])
            latencies.append((shown - t) * 1000)
            await asyncio.sleep(0.1)
        print(
            f"state change on screen, {changes} changes under {rate} events/s: "
            f"p50 {pct(latencies, 50):.0f} ms, p95 {pct(latencies, 95):.0f} ms, "
            f"max {max(latencies):.0f} ms"
        )
        keys = []
        table.focus()
        # (the cursor follows the sessions that finished, near the end of the rows shown: it
        # moves up from there, or down from the top half)
        way = "down" if table.cursor_row < 60 else "up"
        for _ in range(50):
            # post the key as the terminal driver would, and time until the frame after the
            # cursor moved (pilot.press also waits for the app to fall idle, which a flood
            # never lets happen)
            moves = len(MOVES)
            t = time.perf_counter()
            app.post_message(events.Key(way, None))
            while len(MOVES) == moves:
                if time.perf_counter() - t > 5:
                    raise SystemExit("the cursor never moved")
                await asyncio.sleep(0.001)
            shown = await painted_after(MOVES[moves])
            keys.append((shown - t) * 1000)
            await asyncio.sleep(0.05)
        print(
            f"key press (cursor {way}) on screen{' with the details pane' if pane else ''}: "
            f"p50 {pct(keys, 50):.0f} ms, p95 {pct(keys, 95):.0f} ms"
        )
        if pane:
            print(f"sessions read by the pane: {len(app.inspector._kept)}")
        sent = api.sent
        print(
            f"events sent by the stream: {sent} ({sent / (time.perf_counter() - t0):.0f}/s); "
            f"snapshots taken: {fleet.monitors[0].snapshots_taken}"
        )
        mon = fleet.monitors[0]
        print(f"skipped {mon.parser.skipped}, unknown {mon.parser.unknown}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--changes", type=int, default=30)
    ap.add_argument(
        "--pane",
        action="store_true",
        help="the details pane open beside the table, reading where the cursor rests",
    )
    a = ap.parse_args()
    asyncio.run(run(a.sessions, a.rate, a.changes, a.pane))


if __name__ == "__main__":
    main()
