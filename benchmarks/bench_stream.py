"""Benchmark: the CPU the event stream costs per event, over a real local socket (issue 42 item 2).

    python benchmarks/bench_stream.py [--events 200000] [--runs 3] [--profile v1|v2]

A server process sends a firehose of events as an OpenCode server sends them (HTTP/1.1,
`text/event-stream`, each event its own chunk of a chunked body), then ends the body and closes:
V1 at `/global/event` in bench_ingest's mix (60 % streamed-token deltas, 30 % text part
updates, 10 % busy status repeats), V2 at `/api/event` in bench_v2_ingest's mix (real 2.0.15
frames), with V2's `: heartbeat` comment every 1,000 events. Each reader runs in a process of
its own, and its CPU (user + system, `time.process_time`) from the request to the end of the
body is divided by the events it read:

- `bare`: a bare Python socket reader: `recv`, split lines, `json.loads` the `data:` of every
  frame that is not a delta (no HTTP parsing: the chunk-size lines are lines it skips);
- `v1` / `v2`: ocwatch's stream as production runs it: the monitor's stream loop (its
  watchdog included), `Client.event_batches`, the parser into the journal;
- `v1-read` / `v2-read`: `Client.event_batches` alone (what the reading costs
  without the parser);
- `v1-parse` / `v2-parse`: the monitor's `on_frames` of the same frames, 256 at a time (as
  a busy stream's reads bring them), no I/O (what the parser and the journal cost).

Printed per run: microseconds of CPU per event of each, and each ocwatch reader's ratio to the
bare reader of the same protocol in the same run [issue 42: <= 2x]. `--profile v1` runs that
reader once under cProfile instead and prints where its time goes.

    python benchmarks/bench_stream.py --dashboard [--rate 50000] [--runs 3] [--load]

runs bench_dashboard's measurement (2,000 sessions, a busy session finishing: state change until
its frame is painted, p50/p95 over 30 changes) against a server in another process over a real
socket (its API from bench_dashboard's StreamAPI, its stream `rate` events a second, an event a
chunk, in 10 ms batches), once with the stream read directly and once through httpx
(`OCWATCH_DIRECT_STREAM=0`) in each run; `--load` keeps a second process spinning meanwhile
[issue 42: p95 <= 100 ms at 50,000 events/s, the machine loaded]. Each run also says the rate
the dashboard read (below the server's when it falls behind) and, while the stream ran, the
share of a core its process took and how often it pulled a View and what that took.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import os
import pstats
import random
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

READERS = ("bare-v1", "v1", "v1-read", "v1-parse", "bare-v2", "v2", "v2-read", "v2-parse")


# -- the server ----------------------------------------------------------------------------------
def chunk(event: bytes) -> bytes:
    """One chunk of a chunked body holding `event` (as an OpenCode server sends each event)."""
    return b"%x\r\n%s\r\n" % (len(event), event)


def body(frames: list[str], beat: int = 0) -> bytes:
    """A chunked body of `frames`, one chunk an event (a comment every `beat` events), ended."""
    out = []
    for i, f in enumerate(frames):
        out.append(chunk(f"data: {f}\n\n".encode()))
        if beat and i % beat == beat - 1:
            out.append(chunk(b": heartbeat\n"))
    out.append(b"0\r\n\r\n")
    return b"".join(out)


def serve(n: int) -> None:
    """Serve the two streams on a local port (printed) until killed: one connection at a time,
    each sent its whole body, then closed."""
    from benchmarks.bench_ingest import frames as v1_frames
    from benchmarks.bench_v2_ingest import frames as v2_frames

    bodies = {
        b"/global/event": body(v1_frames(n, 200)),
        b"/api/event": body(v2_frames(n, 200), beat=1000),
    }
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
        b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    )
    srv = socket.create_server(("127.0.0.1", 0))
    print(srv.getsockname()[1], flush=True)
    while True:
        conn, _ = srv.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            req = b""
            while b"\r\n\r\n" not in req:
                got = conn.recv(65536)
                if not got:
                    break
                req += got
            path = req.split(b" ", 2)[1] if req.count(b" ") >= 2 else b""
            data = bodies.get(path.split(b"?")[0])
            if data is None:
                conn.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                continue
            with contextlib.suppress(OSError):
                conn.sendall(head)
                view = memoryview(data)
                for i in range(0, len(data), 1 << 16):  # as a server flushes: piece by piece
                    conn.sendall(view[i : i + (1 << 16)])


def serve_dashboard(sessions: int, rate: int) -> None:
    """bench_dashboard's API and stream over a real socket (printed: the port), until killed;
    a line `finish SID` on stdin ends that session's run (its events go out with the next
    batch)."""
    import queue
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import httpx

    from benchmarks.bench_dashboard import StreamAPI, frame, noise_frames

    api = StreamAPI(sessions, busy=200, rate=rate)
    lock = threading.Lock()
    markers: queue.SimpleQueue[bytes] = queue.SimpleQueue()

    def commands() -> None:
        for line in sys.stdin:
            sid = line.split()[1]
            with lock:
                api.finish(sid)
                while not api.markers.empty():
                    markers.put(api.markers.get_nowait())

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.split("?", 1)[0] == "/global/event":
                self.stream()
                return
            with lock:
                resp = api.handle(httpx.Request("GET", f"http://bench{self.path}"))
            self.send_response(resp.status_code)
            for name, value in resp.headers.items():
                if name not in ("content-length", "transfer-encoding"):
                    self.send_header(name, value)
            self.send_header("content-length", str(len(resp.content)))
            self.end_headers()
            self.wfile.write(resp.content)

        def stream(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            rnd = random.Random(1)
            noise: dict[str, tuple[bytes, ...]] = {}
            tick = 0.01
            per_tick = max(1, int(rate * tick))
            out = [chunk(frame("server.connected", {}))]
            start = time.perf_counter()
            k = 0
            with contextlib.suppress(OSError):
                while True:
                    while not markers.empty():
                        out.append(chunk(markers.get()))
                    for _ in range(per_tick):
                        sid = f"ses_{rnd.randrange(api.busy):05d}"
                        if sid in api.finished:
                            sid = f"ses_{api.busy - 1:05d}"  # the last busy one never finishes
                        made = noise.get(sid)
                        if made is None:
                            made = noise[sid] = tuple(chunk(f) for f in noise_frames(sid))
                        r = rnd.random()
                        out.append(made[0 if r < 0.6 else 1 if r < 0.9 else 2])
                    self.wfile.write(b"".join(out))
                    self.wfile.flush()
                    out.clear()
                    k += 1
                    time.sleep(max(0.0, start + k * tick - time.perf_counter()))

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    threading.Thread(target=commands, daemon=True).start()
    srv.serve_forever()


class SocketAPI:
    """bench_dashboard's StreamAPI, served by another process (serve_dashboard)."""

    def __init__(self, n: int, busy: int, rate: int) -> None:
        self.rate = rate
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve-dashboard", "--sessions", str(n)]
            + ["--rate", str(rate)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}"
        self.started = time.perf_counter()

    def transport(self) -> None:
        return None  # (real sockets)

    def finish(self, sid: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"finish {sid}\n")
        self.proc.stdin.flush()

    @property
    def sent(self) -> int:
        return int(self.rate * (time.perf_counter() - self.started))  # (as paced)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def dashboard(sessions: int, rate: int) -> None:
    """bench_dashboard's run, its API served by another process over a real socket."""
    import benchmarks.bench_dashboard as bench
    from tui.app import OcwatchApp
    from tui.core.monitor import ServerMonitor

    # the frames the dashboard read, counted where the stream loop hands them over: the rate it
    # kept up with (the server's writes block when it falls behind, so `rate` is at most asked)
    read = [0, 0.0, 0.0]
    on_frames = ServerMonitor.on_frames

    def counted(monitor: ServerMonitor, frames: list[str]) -> None:
        if not read[0]:
            read[1] = time.perf_counter()
        read[0] += len(frames)
        read[2] = time.perf_counter()
        on_frames(monitor, frames)

    # the app's pulls once the stream runs: how many, and the CPU they and the process take
    pulls = [0, 0.0, 0.0]  # pulls, their CPU seconds, the process's CPU when the first came
    pull = OcwatchApp.pull

    def timed(app: OcwatchApp) -> None:
        began = time.process_time()
        pull(app)
        if read[0]:
            if not pulls[0]:
                pulls[2] = began
            pulls[0] += 1
            pulls[1] += time.process_time() - began

    ServerMonitor.on_frames = counted  # type: ignore[method-assign]
    OcwatchApp.pull = timed  # type: ignore[method-assign]
    api = SocketAPI(sessions, 200, rate)
    bench.URL = api.url  # (read by run() as it starts)
    bench.StreamAPI = lambda n, busy, rate: api  # type: ignore[assignment,misc]
    try:
        asyncio.run(bench.run(sessions, rate, 30))
    finally:
        api.stop()
        span = max(read[2] - read[1], 1e-9)
        print(f"frames read: {read[0]} at {read[0] / span:.0f}/s")
        if pulls[0]:  # (a run that read nothing, or never pulled, has no such figures)
            cpu = time.process_time() - pulls[2]
            print(
                f"while streaming: the process {cpu / span:.2f} of a core; {pulls[0]} pulls "
                f"({pulls[0] / span:.1f}/s) {pulls[1] / span:.2f} of a core (averaged over "
                "the whole run: loading, the changes and the key presses)"
            )


def dashboards(sessions: int, rate: int, runs: int, load: bool) -> None:
    """`runs` runs of `dashboard`, each with the stream read directly and through httpx."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if load else None
    print(
        f"dashboard, {sessions} sessions, {rate} events/s over a real socket"
        f"{', a second process spinning' if load else ''}: state change until painted"
    )
    try:
        for run in range(runs):
            for way, env in (("direct", "1"), ("httpx", "0")):
                out = subprocess.run(
                    [sys.executable, __file__, "--dashboard-one", "--sessions", str(sessions)]
                    + ["--rate", str(rate)],
                    env={**os.environ, "OCWATCH_DIRECT_STREAM": env},
                    capture_output=True,
                    text=True,
                )
                said = [line for line in out.stdout.splitlines() if "state change" in line]
                rates = [
                    line[len("frames ") :] if line.startswith("frames read") else line
                    for line in out.stdout.splitlines()
                    if line.startswith(("frames read", "while streaming"))
                ]
                why = [line for line in out.stderr.splitlines() if "never showed" in line]
                got = (
                    said[0].split(": ", 1)[1]
                    if said
                    else f"no figure ({why[-1] if why else out.stderr[-300:]})"
                )
                kept = "".join(f"; {line}" for line in rates)
                print(f"run {run + 1}, stream read {way}: {got}{kept}", flush=True)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()


# -- the readers ---------------------------------------------------------------------------------
def bare(port: int, path: str) -> int:
    """A bare Python socket reader: the events it read."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        f"GET {path} HTTP/1.1\r\nhost: bench\r\naccept: text/event-stream\r\n\r\n".encode()
    )
    loads = json.loads
    rest = b""
    events = 0
    while True:
        got = sock.recv(1 << 16)
        if not got:
            break
        lines = (rest + got).split(b"\n")
        rest = lines.pop()
        for line in lines:
            if line[:5] == b"data:":
                events += 1
                if b'.delta"' not in line:
                    loads(line[6:])
    sock.close()
    return events


async def ocwatch(port: int, proto_name: str, parse: bool) -> int:
    """ocwatch's stream as production reads it: the events it read."""
    from tui.core.monitor import ServerMonitor
    from tui.core.protocols import V1, V2

    proto = V2 if proto_name == "v2" else V1
    mon = ServerMonitor(f"http://127.0.0.1:{port}")
    if proto is V2:
        mon.use(V2)
    events = 0
    if not parse:
        async with mon.client.event_batches(
            read_timeout=mon.heartbeat_timeout,
            max_event=mon.settings.max_event,
            path=proto.event_path,
            comments=proto.comments,
        ) as batches:
            async for frames in batches:
                for data in frames:
                    events += bool(data)  # (not the heartbeats)
        await mon.client.aclose()
        return events
    done = asyncio.Event()
    on_frames = mon.on_frames

    def counted(frames: list[str]) -> None:
        # counted where a read's frames come in: the streamed tokens skipped at sight never
        # reach on_data
        nonlocal events
        events += sum(map(bool, frames))  # (not the heartbeats)
        on_frames(frames)

    def ended(exc: Any) -> None:
        done.set()

    mon.on_frames = counted  # type: ignore[method-assign]
    mon.stream_down = ended  # type: ignore[method-assign]
    task = asyncio.create_task(mon._stream_loop())
    await done.wait()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await mon.client.aclose()
    if mon.parser.skipped:
        raise SystemExit(f"the parser skipped {mon.parser.skipped} frames")
    return events


def parse(proto: str) -> tuple[float, int]:
    """CPU seconds and events of the monitor's on_data over the stream's frames, no I/O."""
    from benchmarks.bench_ingest import frames as v1_frames
    from benchmarks.bench_v2_ingest import frames as v2_frames
    from tui.core.monitor import ServerMonitor
    from tui.core.protocols import V2

    n = int(os.environ["BENCH_STREAM_EVENTS"])
    data = v2_frames(n, 200) if proto == "v2" else v1_frames(n, 200)
    mon = ServerMonitor("http://127.0.0.1:1")
    if proto == "v2":
        mon.use(V2)
    on_frames = mon.on_frames
    batches = [data[i : i + 256] for i in range(0, len(data), 256)]  # (as reads bring them)
    started = time.process_time()
    for batch in batches:
        on_frames(batch)
    return time.process_time() - started, len(data)


def read(reader: str, port: int) -> tuple[float, int]:
    """CPU seconds and events of one reader's run."""
    proto = reader.split("-")[-1] if reader.startswith("bare") else reader[:2]
    path = "/api/event" if proto == "v2" else "/global/event"
    if not reader.startswith("bare"):  # (imported before the clock: what a stream costs)
        # as the command line starts (tui.cli.main): the collector paused while the modules
        # load, what they made frozen, so no collection walks it again
        from tui.core import gcpause

        was_on = gcpause.pause_for_imports()
        import httpx  # noqa: F401

        import tui.core.monitor  # noqa: F401
        import tui.core.protocols  # noqa: F401

        with contextlib.suppress(ImportError):
            import tui.core.stream  # noqa: F401
        gcpause.imports_loaded(was_on)
    if reader.endswith("-parse"):
        return parse(reader[:2])
    started = time.process_time()
    if reader.startswith("bare"):
        events = bare(port, path)
    else:
        events = asyncio.run(ocwatch(port, proto, parse=not reader.endswith("-read")))
    return time.process_time() - started, events


def child(reader: str, port: int, events: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--read", reader, "--port", str(port)],
        env={**os.environ, "BENCH_STREAM_EVENTS": str(events)},
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(out.stdout))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", choices=READERS)
    ap.add_argument("--read", choices=READERS, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dashboard", action="store_true")
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--rate", type=int, default=50_000)
    ap.add_argument("--load", action="store_true", help="a second process spinning meanwhile")
    ap.add_argument("--dashboard-one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--serve-dashboard", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve_dashboard:
        serve_dashboard(a.sessions, a.rate)
        return
    if a.dashboard_one:
        dashboard(a.sessions, a.rate)
        return
    if a.dashboard:
        dashboards(a.sessions, a.rate, a.runs, a.load)
        return
    if a.serve:
        serve(a.events)
        return
    if a.read:
        cpu, events = read(a.read, a.port)
        print(json.dumps({"cpu": cpu, "events": events}))
        return
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--events", str(a.events)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        if a.profile:
            os.environ["BENCH_STREAM_EVENTS"] = str(a.events)  # (the -parse readers' count)
            prof = cProfile.Profile()
            prof.enable()
            cpu, events = read(a.profile, port)
            prof.disable()
            print(f"{a.profile}: {cpu / events * 1e6:.2f} us/event under cProfile ({events:,})")
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
            return
        print(
            f"{a.events:,} events a stream, chunked one event a chunk, local socket, "
            f"{os.cpu_count()} cores; CPU of the reading process per event:"
        )
        for run in range(a.runs):
            got = {r: child(r, port, a.events) for r in READERS}
            us = {r: g["cpu"] / g["events"] * 1e6 for r, g in got.items()}
            short = [r for r, g in got.items() if g["events"] != a.events]
            if short:
                raise SystemExit(f"readers {short} read {[got[r]['events'] for r in short]}")
            print(
                f"run {run + 1}: "
                + " | ".join(
                    f"{p.upper()} bare {us['bare-' + p]:.2f} us, ocwatch {us[p]:.2f} us "
                    f"({us[p] / us['bare-' + p]:.2f}x) [<= 2x]; its reading alone "
                    f"{us[p + '-read']:.2f} us ({us[p + '-read'] / us['bare-' + p]:.2f}x), "
                    f"its parsing alone {us[p + '-parse']:.2f} us "
                    f"({us[p + '-parse'] / us['bare-' + p]:.2f}x)"
                    for p in ("v1", "v2")
                )
            )
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
