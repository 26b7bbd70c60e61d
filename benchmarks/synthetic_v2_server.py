"""A synthetic OpenCode V2 (2.x) server over real sockets, for bench_v2.py.

    python benchmarks/synthetic_v2_server.py --sessions 2000 [--folders 2] [--busy 0.05]

Speaks the 2.0.15 wire format of the routes ocwatch reads, in the shapes captured from the real
server (tests/fixtures/v2): `/api/info`, `/api/session` paged by cursor, `/api/session/active`,
`/api/permission/request` and `/api/form` per folder, transcripts (`user`, `assistant`, and an
`idle {succeeded}` marker for finished runs), and `/api/event`: `server.connected`, then an SSE
comment heartbeat every 15 s. `POST /_control/finish?session=ID` ends a running session: its
transcript gets its marker, and `session.execution.succeeded` goes out on every stream (the
server prints the time it sent it). Basic auth `opencode:pw` (V2 always asks). Prints `listening
on http://HOST:PORT` when ready, and the requests per route on SIGTERM / SIGINT.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import queue
import signal
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

T0 = 1_800_000_000_000  # ms
AUTH = "Basic " + base64.b64encode(b"opencode:pw").decode()


class World:
    def __init__(self, n: int, folders: int, busy: float) -> None:
        self.dirs = [f"/p/{chr(97 + i)}" for i in range(folders)]
        self.lock = threading.Lock()
        self.sessions: list[dict[str, Any]] = []
        self.transcripts: dict[str, list[dict[str, Any]]] = {}
        self.active: set[str] = set()
        self.listeners: list[queue.Queue[bytes]] = []
        for i in range(n):
            sid = f"ses_{i:05d}synthetic"
            updated = T0 - 60_000 * i
            running = i < int(n * busy)
            s: dict[str, Any] = {
                "id": sid,
                "projectID": "prj",
                "cost": 0.01,
                "tokens": {
                    "input": 1200,
                    "output": 300,
                    "reasoning": 0,
                    "cache": {"read": 0, "write": 0},
                },
                "time": {"created": updated - 5000, "updated": updated},
                "title": f"synthetic session {i}",
                "location": {"directory": self.dirs[i % folders]},
            }
            user = {
                "id": f"msg_{i:05d}u",
                "type": "user",
                "text": "go",
                "time": {"created": updated},
            }
            assistant: dict[str, Any] = {
                "id": f"msg_{i:05d}a",
                "type": "assistant",
                "agent": "build",
                "model": {"id": "m", "providerID": "p"},
                "content": [{"type": "text", "text": "Done: the tests pass. " * 8}],
                "time": {"created": updated + 100},
            }
            tail = [assistant, user]
            if running:
                self.active.add(sid)
            else:
                assistant["time"]["completed"] = updated + 900
                assistant["finish"] = "stop"
                s["outcome"] = "succeeded"
                s["time"]["idle"] = updated + 1000
                tail.insert(
                    0,
                    {
                        "id": f"msg_{i:05d}z",
                        "type": "idle",
                        "outcome": "succeeded",
                        "time": {"created": updated + 1000},
                    },
                )
            self.sessions.append(s)
            self.transcripts[sid] = tail

    def finish(self, sid: str) -> float:
        now = int(time.time() * 1000)
        with self.lock:
            self.active.discard(sid)
            tail = self.transcripts[sid]
            tail[0]["time"]["completed"] = now - 1
            tail[0]["finish"] = "stop"
            tail.insert(
                0,
                {
                    "id": f"msg_{sid}z",
                    "type": "idle",
                    "outcome": "succeeded",
                    "time": {"created": now},
                },
            )
            for s in self.sessions:
                if s["id"] == sid:
                    s["outcome"], s["time"]["idle"] = "succeeded", now
            frame = json.dumps(
                {
                    "id": "evt_fin",
                    "created": now,
                    "type": "session.execution.succeeded",
                    "data": {"sessionID": sid},
                },
                separators=(",", ":"),
            )
            for q in self.listeners:
                q.put(f"data: {frame}\n\n".encode())
        return time.time()


def serve(world: World, host: str, port: int) -> ThreadingHTTPServer:
    hits: Counter[str] = Counter()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args: object) -> None:
            pass

        def handle(self) -> None:
            with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                super().handle()

        def send(self, status: int, obj: Any, ctype: str = "application/json") -> None:
            body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802
            url = urlsplit(self.path)
            if url.path == "/_control/finish":
                sid = parse_qs(url.query)["session"][0]
                self.send(200, {"sent": world.finish(sid)})
            else:
                self.send(404, {"_tag": "NotFound"})

        def do_GET(self) -> None:  # noqa: N802
            url = urlsplit(self.path)
            path, q = url.path, parse_qs(url.query)
            key = "/api/session/{id}/message" if path.endswith("/message") else path
            with lock:
                hits[key] += 1
            if self.headers.get("authorization") != AUTH:
                self.send(401, {"_tag": "UnauthorizedError"})
                return
            if path == "/api/event":
                self.stream()
                return
            with world.lock:
                if path == "/api/info":
                    self.send(200, {"version": "2.0.15", "pid": 1, "urls": [], "paths": {}})
                elif path == "/api/session":
                    limit = int(q.get("limit", ["50"])[0])
                    start = int(q.get("cursor", ["0"])[0])
                    page = world.sessions[start : start + limit]
                    nxt = str(start + limit) if start + limit < len(world.sessions) else None
                    self.send(200, {"data": page, "cursor": {"previous": None, "next": nxt}})
                elif path == "/api/session/active":
                    self.send(200, {"data": {s: {"type": "running"} for s in world.active}})
                elif path in ("/api/permission/request", "/api/form"):
                    d = q.get("location[directory]", [None])[0]
                    self.send(200, {"location": {"directory": d}, "data": []})
                elif path.startswith("/api/session/") and path.endswith("/message"):
                    sid = path.split("/")[3]
                    limit = int(q.get("limit", ["50"])[0])
                    tail = world.transcripts.get(sid)
                    if tail is None:
                        self.send(404, {"_tag": "SessionNotFoundError"})
                    else:
                        self.send(200, {"data": tail[:limit], "cursor": {}})
                else:
                    self.send(200, b"<!doctype html>", "text/html")

        def stream(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            q: queue.Queue[bytes] = queue.Queue()
            with world.lock:
                world.listeners.append(q)
            try:
                self.wfile.write(b'data: {"id":"evt_0","type":"server.connected","data":{}}\n\n')
                self.wfile.flush()
                beat = time.monotonic()
                while True:
                    try:
                        self.wfile.write(q.get(timeout=0.5))
                        self.wfile.flush()
                    except queue.Empty:
                        pass
                    if time.monotonic() - beat >= 15:
                        beat = time.monotonic()
                        self.wfile.write(b": heartbeat\n\n")
                        self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return
            finally:
                with world.lock:
                    world.listeners.remove(q)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    server.hits = hits  # type: ignore[attr-defined]
    return server


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--folders", type=int, default=2)
    ap.add_argument("--busy", type=float, default=0.05)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    server = serve(World(args.sessions, args.folders, args.busy), args.host, args.port)

    def stop(*_: object) -> None:
        print(json.dumps(dict(server.hits)), flush=True)  # type: ignore[attr-defined]
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"listening on http://{args.host}:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
