"""A synthetic OpenCode server over real sockets, for the scale benchmark (bench_scale.py).

    python benchmarks/synthetic_server.py --sessions 2000 [--folders 4] [--busy 0.05] [--port 0]

Speaks the 1.18.33 wire format for the routes ocwatch reads (tests.fakes.FakeAPI answers them:
sessions paged as `/experimental/session` pages them, per-folder status / permission / question
maps, last messages), with HTTP/1.1 keep-alive on a threading server. `disable_nagle_algorithm`
is set: without it every keep-alive request after the first waits ~40 ms for a delayed ACK.
`/global/event` sends `server.connected`, then a heartbeat every 10 s and, with `--noise`, that
many streamed-token events a second. Prints `listening on http://HOST:PORT` when ready; counts
the requests of each route and prints them on SIGTERM / SIGINT.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes import FakeAPI, wire_session  # noqa: E402

T0 = 1_800_000_000.0


def world(n: int, folders: int, busy: float) -> FakeAPI:
    """N sessions in `folders` folders, a `busy` share running, the rest finished."""
    dirs = [f"/p/{chr(97 + i)}" for i in range(folders)]
    sessions = [
        wire_session(f"ses_{i:05d}", folder=dirs[i % folders], updated=(T0 - 60 * i) * 1000)
        for i in range(n)
    ]
    running = {s["id"] for s in sessions[: int(n * busy)]}
    status: dict[str, dict[str, Any]] = {d: {} for d in dirs}
    messages: dict[str, list[dict[str, Any]]] = {}
    for s in sessions:
        sid = s["id"]
        info: dict[str, Any] = {
            "id": "msg_0001",
            "sessionID": sid,
            "role": "assistant",
            "modelID": "m",
            "providerID": "p",
            "agent": "build",
            "cost": 0.01,
            "tokens": {
                "input": 1200,
                "output": 300,
                "reasoning": 0,
                "cache": {"read": 0, "write": 0},
            },
            "time": {"created": (T0 - 60 * 60) * 1000},
        }
        if sid in running:
            status[s["directory"]][sid] = {"type": "busy"}
        else:
            info["time"]["completed"] = (T0 - 50 * 60) * 1000
            info["finish"] = "stop"
        text = {
            "id": "prt_1",
            "sessionID": sid,
            "messageID": "msg_0001",
            "type": "text",
            "text": "Done: the tests pass. " * 8,
        }
        messages[sid] = [{"info": info, "parts": [text]}]
    return FakeAPI(
        sessions=sessions,
        status=status,
        messages=messages,
        projects=[{"id": d, "worktree": d} for d in dirs],
        active_route=True,  # 1.18.33 has `/api/session/active` (its v1 runs are not listed)
    )


def serve(api: FakeAPI, host: str, port: int, noise: int) -> ThreadingHTTPServer:
    hits: Counter[str] = Counter()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            path = self.path.split("?", 1)[0]
            with lock:
                hits["/session/{id}/message" if path.endswith("/message") else path] += 1
            if path == "/global/event":
                self.stream()
                return
            with lock:
                resp = api.handle(httpx.Request("GET", f"http://synthetic{self.path}"))
            body = resp.content
            self.send_response(resp.status_code)
            self.send_header("content-type", resp.headers.get("content-type", "application/json"))
            for name in ("x-next-cursor",):
                if name in resp.headers:
                    self.send_header(name, resp.headers[name])
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def handle(self) -> None:
            # a client that exits with connections kept alive resets them: not an error here
            with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                super().handle()

        def stream(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.end_headers()

            def send(etype: str, props: dict[str, Any]) -> None:
                data = json.dumps(
                    {"directory": "/p/a", "payload": {"type": etype, "properties": props}}
                )
                self.wfile.write(f"data: {data}\n\n".encode())

            try:
                send("server.connected", {})
                self.wfile.flush()
                beat = time.monotonic()
                while True:
                    if noise:
                        for _ in range(max(1, noise // 20)):
                            send(
                                "message.part.delta",
                                {
                                    "sessionID": "ses_00000",
                                    "messageID": "msg_0001",
                                    "partID": "prt_1",
                                    "field": "text",
                                    "delta": "tok ",
                                },
                            )
                        self.wfile.flush()
                        time.sleep(0.05)
                    else:
                        time.sleep(0.5)
                    if time.monotonic() - beat >= 10:
                        beat = time.monotonic()
                        send("server.heartbeat", {})
                        self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    server.hits = hits  # type: ignore[attr-defined]
    return server


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--folders", type=int, default=1)
    ap.add_argument("--busy", type=float, default=0.05)
    ap.add_argument("--noise", type=int, default=0, help="streamed-token events a second")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    server = serve(world(args.sessions, args.folders, args.busy), args.host, args.port, args.noise)

    def stop(*_: object) -> None:
        print(json.dumps(dict(server.hits)), flush=True)  # type: ignore[attr-defined]
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"listening on http://{args.host}:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
