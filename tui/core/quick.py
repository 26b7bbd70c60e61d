"""Quick reads: plain JSON GETs on kept-alive sockets, in worker threads.

A first snapshot of a large server sends one `GET /session/{id}/message?limit=1` per session.
Through httpx each costs about 1.3 ms of this process's CPU on loopback; through `http.client`
about 0.1 ms, and through the few lines of HTTP/1.1 here 0.04 ms (`http.client` parses every
answer's headers with the email package). So those reads go here, and only the clean case is
handled: an `http://` server, no proxy, an answer `200` with a JSON body in identity encoding,
within the client's size limit and deadline. Anything else (an error status, HTML, a redirect,
compression, a refused or lost connection, a timeout) returns None, and the caller asks again
through the async client, which says what went wrong exactly as it does for every other route.
"""

from __future__ import annotations

import base64
import contextlib
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import text
from .settings import Auth

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

CHUNK = 1 << 16
HEAD_MAX = 1 << 16  # an answer's status line and headers, at most
#: A request target as the client builds it: percent-encoded, nothing that could end the line
_SAFE_TARGET = re.compile(r"/[!-~]*")


class _Unclean(Exception):
    """The answer is not a clean 200 JSON one: asked again the usual way."""


def _answer(sock: socket.socket, deadline: float, max_body: int) -> tuple[bytes | None, bool]:
    """Read one HTTP/1.1 answer: (its body when it is a clean 200 JSON answer in identity
    encoding within `max_body`, else None; whether the connection can take another request).
    Every read is bounded (the head by HEAD_MAX, the body by `max_body`), and none starts past
    `deadline` (each waits at most the socket's timeout)."""
    buf = bytearray()

    def more() -> bool:
        """Read what has come into `buf`; False once the server closed the connection."""
        if time.monotonic() > deadline:
            raise TimeoutError
        chunk = sock.recv(CHUNK)
        buf.extend(chunk)
        return bool(chunk)

    try:
        while (end := buf.find(b"\r\n\r\n")) < 0:
            if len(buf) > HEAD_MAX or not more():
                raise _Unclean
        lines = bytes(buf[:end]).split(b"\r\n")
        del buf[: end + 4]
        version, _, status = lines[0].partition(b" ")
        if version not in (b"HTTP/1.1", b"HTTP/1.0") or status[:4] not in (b"200 ", b"200"):
            raise _Unclean
        headers: dict[bytes, bytes] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            name = name.lower()
            if not colon or not name or name != name.strip() or name in headers:
                raise _Unclean  # malformed, or said twice (a length told two ways)
            headers[name] = value.strip()
        if b"json" not in headers.get(b"content-type", b"") or headers.get(
            b"content-encoding", b"identity"
        ) not in (b"identity", b""):
            raise _Unclean
        reusable = version == b"HTTP/1.1" and headers.get(b"connection", b"").lower() != b"close"
        coding = headers.get(b"transfer-encoding")
        if coding is not None:
            if coding.lower() != b"chunked":
                raise _Unclean
            body = _chunked(buf, more, max_body)
        elif (length := headers.get(b"content-length")) is not None:
            size = int(length) if length.isdigit() else max_body + 1
            if size > max_body:
                raise _Unclean
            while len(buf) < size:
                if not more():
                    raise _Unclean  # closed mid-answer
            body = bytes(buf[:size])
            del buf[:size]
        else:  # the body ends when the connection does
            reusable = False
            while len(buf) <= max_body:
                if not more():
                    break
            else:
                raise _Unclean
            body = bytes(buf)
            buf.clear()
        return body, reusable and not buf  # bytes past the answer: not a clean connection
    except _Unclean:
        return None, False


def _chunked(buf: bytearray, more: Callable[[], bool], max_body: int) -> bytes:
    """A chunked body decoded from `buf` (read into by `more`), at most `max_body` bytes; what
    was read past its end is left in `buf`."""
    body = bytearray()
    pos = 0  # where the next chunk-size line starts in buf
    while True:
        while (eol := buf.find(b"\r\n", pos)) < 0:
            if len(buf) - pos > 1024 or not more():
                raise _Unclean  # a chunk-size line is short
        size_text = bytes(buf[pos:eol]).partition(b";")[0].strip()
        if not size_text or len(size_text) > 16 or size_text.strip(b"0123456789abcdefABCDEF"):
            raise _Unclean
        size = int(size_text, 16)
        pos = eol + 2
        if size == 0:
            while (eol := buf.find(b"\r\n", pos)) != pos:  # trailers, until the empty line
                if eol > pos:
                    pos = eol + 2
                elif len(buf) - pos > HEAD_MAX or not more():
                    raise _Unclean
            del buf[: pos + 2]
            return bytes(body)
        if len(body) + size > max_body:
            raise _Unclean
        while len(buf) < pos + size + 2:
            if not more():
                raise _Unclean
        if buf[pos + size : pos + size + 2] != b"\r\n":
            raise _Unclean
        body += buf[pos : pos + size]
        pos += size + 2


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
        head = [
            " HTTP/1.1",
            f"host: {parts.netloc.rpartition('@')[2]}",
            "accept: application/json",
            "accept-encoding: identity",
        ]
        if auth is not None:
            token = base64.b64encode(f"{auth.username}:{auth.password}".encode()).decode()
            head.append(f"authorization: Basic {token}")
        self._head = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        self._local = threading.local()
        self._open: set[socket.socket] = set()
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
        if self._closed or not _SAFE_TARGET.fullmatch(target):
            return None
        sock: socket.socket | None = None
        started = time.monotonic()
        try:
            sock = self._sock()
            sock.sendall(b"GET " + (self.base + target).encode("ascii") + self._head)
            body, reusable = _answer(sock, started + self.deadline, self.max_body)
            if not reusable:
                self._drop(sock)
            return text.loads(body) if body is not None else None
        except (OSError, ValueError, TimeoutError):
            if sock is not None:
                self._drop(sock)
            return None

    def _sock(self) -> socket.socket:
        sock: socket.socket | None = getattr(self._local, "sock", None)
        if sock is None:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._local.sock = sock
            with self._lock:
                self._open.add(sock)
        return sock

    def _drop(self, sock: socket.socket) -> None:
        sock.close()
        if getattr(self._local, "sock", None) is sock:
            self._local.sock = None
        with self._lock:
            self._open.discard(sock)

    def kill(self) -> None:
        """Cut every connection at once (a read past its deadline: its thread's read ends)."""
        with self._lock:
            conns = list(self._open)
        for sock in conns:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._closed = True
        self.kill()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            conns, self._open = list(self._open), set()
        for sock in conns:
            sock.close()
