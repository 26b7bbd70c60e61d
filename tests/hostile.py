"""A hostile OpenCode look-alike on loopback: real HTTP, answers chosen per route.

It answers like 1.18.33 (health, the session list pages, per-folder maps, last messages, an
event stream that says `server.connected` and stays open) unless `routes[path]` says otherwise:
`Answer(status, body, headers)` for a bad answer, or `trickle` seconds between bytes.
"""

from __future__ import annotations

import gzip
import json
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    trickle: float | None = None  # seconds between single bytes of the body


def json_answer(data: Any, status: int = 200) -> Answer:
    return Answer(status, json.dumps(data).encode(), {"content-type": "application/json"})


def raw_json(text: str) -> Answer:
    """A JSON body written by hand (to carry what json.dumps will not write, e.g. `\\ud800`)."""
    return Answer(200, text.encode(), {"content-type": "application/json"})


def gzip_bomb(size: int) -> Answer:
    """`size` bytes of JSON-ish zeros, gzipped (a few hundred KB on the wire)."""
    body = gzip.compress(b"[" + b" " * size + b"]", compresslevel=9)
    return Answer(200, body, {"content-type": "application/json", "content-encoding": "gzip"})


def session(
    sid: str, title: Any = "a title", updated: Any = 1_795_985_018_000, **extra: Any
) -> dict[str, Any]:
    return {
        "id": sid,
        "title": title,
        "directory": "/tmp/p",
        "projectID": "prj",
        "version": "1.18.33",
        "time": {"created": 1_795_985_000_000, "updated": updated},
        **extra,
    }


class HostileServer:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        """`tls`: serve https with this server-side context."""
        self.sessions: list[Any] = [session("ses_ok")]
        self.messages: dict[str, Any] = {}
        self.routes: dict[str, Answer] = {}
        #: the event stream's answer instead of one that says `server.connected` and stays open
        self.stream: Answer | None = None
        #: each request's path (with its query) and headers (names in lower case), in order
        self.seen: list[tuple[str, dict[str, str]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                outer._serve(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        scheme = "http"
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def start(self) -> HostileServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _default(self, path: str) -> Answer:
        if path == "/global/health":
            return json_answer({"healthy": True, "version": "1.18.33"})
        if path in ("/experimental/session", "/session"):
            return (
                raw_json(self.sessions)
                if isinstance(self.sessions, str)
                else json_answer(self.sessions)
            )
        if path == "/project":
            return json_answer([])
        if path == "/session/status":
            return json_answer({})
        if path in ("/permission", "/question"):
            return json_answer([])
        if path.startswith("/session/") and path.endswith("/message"):
            got = self.messages.get(path.split("/")[2], [])
            return raw_json(got) if isinstance(got, str) else json_answer(got)
        return Answer(200, b"<!doctype html><html>web UI</html>", {"content-type": "text/html"})

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        path = urlsplit(h.path).path
        self.seen.append((h.path, {k.lower(): v for k, v in h.headers.items()}))
        if path == "/global/event" and self.stream is not None:
            ans = self.stream
            h.send_response(ans.status)
            for k, v in ans.headers.items():
                h.send_header(k, v)
            h.end_headers()
            try:
                h.wfile.write(ans.body)
                h.wfile.flush()
                time.sleep(3600)
            except OSError:
                pass
            return
        if path == "/global/event":
            h.send_response(200)
            h.send_header("content-type", "text/event-stream")
            h.end_headers()
            try:
                h.wfile.write(
                    b'data: {"payload": {"type": "server.connected", "properties": {}}}\n\n'
                )
                h.wfile.flush()
                time.sleep(3600)
            except OSError:
                pass
            return
        ans = self.routes.get(path) or self._default(path)
        h.send_response(ans.status)
        for k, v in ans.headers.items():
            h.send_header(k, v)
        h.send_header("content-length", str(len(ans.body)))
        h.end_headers()
        try:
            if ans.trickle is None:
                h.wfile.write(ans.body)
            else:
                for i in range(len(ans.body)):
                    h.wfile.write(ans.body[i : i + 1])
                    h.wfile.flush()
                    time.sleep(ans.trickle)
        except OSError:
            pass
