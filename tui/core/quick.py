"""Quick reads: plain JSON GETs on kept-alive standard-library connections, in worker threads.

A first snapshot of a large server sends one `GET /session/{id}/message?limit=1` per session.
Through httpx each costs about 1.3 ms of this process's CPU on loopback; through `http.client`
about 0.4 ms (benchmarks/bench_scale.py). So those reads go here, and only the clean case is
handled: an `http://` server, no proxy, an answer `200` with a JSON body in identity encoding,
within the client's size limit and deadline. Anything else (an error status, HTML, a redirect,
compression, a refused or lost connection, a timeout) returns None, and the caller asks again
through the async client, which says what went wrong exactly as it does for every other route.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import socket
import threading
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import text
from .settings import Auth

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

CHUNK = 1 << 16


class QuickGet:
    """GETs of one `http://` server, `workers` at a time, each thread on its own connection."""

    def __init__(
        self,
        url: str,
        auth: Auth | None,
        *,
        timeout: float,
        deadline: float,
        max_body: int,
        workers: int = 8,
    ) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.base = parts.path.rstrip("/")
        self.timeout = timeout
        self.deadline = deadline
        self.max_body = max_body
        self.headers = {
            "accept": "application/json",
            "accept-encoding": "identity",
            "host": parts.netloc.rpartition("@")[2],
        }
        if auth is not None:
            token = base64.b64encode(f"{auth.username}:{auth.password}".encode()).decode()
            self.headers["authorization"] = f"Basic {token}"
        self._local = threading.local()
        self._open: set[http.client.HTTPConnection] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._workers = max(1, workers)
        self._pool: ThreadPoolExecutor | None = None

    @property
    def pool(self) -> ThreadPoolExecutor:
        """The worker threads (started on first use: most clients never read this way)."""
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(
                max_workers=self._workers, thread_name_prefix="ocwatch-quick"
            )
        return self._pool

    @staticmethod
    def usable(url: str, trust_env: bool) -> bool:
        """Whether a server can be read this way: plain http, and no proxy that httpx would
        send the request through (proxies from the environment, when trusted)."""
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            return False
        if not trust_env:
            return True
        import urllib.request  # (only here: it costs a few ms to import)

        proxies = urllib.request.getproxies()
        return not (proxies.get("http") or proxies.get("all")) or bool(
            urllib.request.proxy_bypass(parts.hostname)
        )

    def get(self, target: str) -> Any | None:
        """The parsed JSON answer of `GET target` (path and query, percent-encoded), or None
        when it is anything but a clean 200 JSON answer (the caller asks again the usual way).
        Runs in a worker thread."""
        if self._closed:
            return None
        conn = self._conn()
        started = time.monotonic()
        try:
            conn.request("GET", self.base + target, headers=self.headers)
            resp = conn.getresponse()
            ok = (
                resp.status == 200
                and resp.getheader("content-encoding", "identity") in ("identity", "")
                and "json" in resp.getheader("content-type", "")
            )
            body = bytearray()
            while ok:
                if time.monotonic() - started > self.deadline:
                    raise TimeoutError
                chunk = resp.read(CHUNK)
                if not chunk:
                    break
                body += chunk
                if len(body) > self.max_body:
                    ok = False
            if not ok or resp.will_close:
                self._drop(conn)  # (a body left unread: the connection cannot be reused)
            else:
                resp.close()  # read to its end: the connection takes the next request
            return text.loads(bytes(body)) if ok else None
        except (OSError, http.client.HTTPException, ValueError, TimeoutError):
            self._drop(conn)
            return None

    def _conn(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self._local.conn = conn
            with self._lock:
                self._open.add(conn)
        return conn

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        with self._lock:
            self._open.discard(conn)

    def kill(self) -> None:
        """Cut every connection at once (a read past its deadline: its thread's read ends)."""
        with self._lock:
            conns = list(self._open)
        for conn in conns:
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._closed = True
        self.kill()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            conns, self._open = list(self._open), set()
        for conn in conns:
            conn.close()
