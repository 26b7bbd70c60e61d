"""Quick reads: plain JSON GETs on kept-alive connections, on the event loop.

A first snapshot of a large server sends one `GET /session/{id}/message?limit=1` per session.
Through httpx these reads would be most of the snapshot's CPU; through `http.client` much less,
but it parses every answer's headers with the email package; through the few lines of HTTP/1.1
here least (docs/PERFORMANCE.md). So those reads go here, and only the clean case is
handled: an `http://` server, no proxy, an answer `200` with a JSON body in identity encoding,
within the client's size limit and deadline. Anything else (an error status, HTML, a redirect,
compression, a refused or lost connection) returns None, and the caller asks again through the
async client, which says what went wrong exactly as it does for every other route. A server that
stalls is not asked twice: silence for the client's `timeout` (its read timeout; a connection
not made within it) or an answer not complete by the deadline raises `Stalled`, which the
caller says as the async client would have said it.

Every snapshot GET of a plain-http server is read here first, so `ocwatch status` on a healthy
server never imports httpx (whose import is much of the command's start-up).

The answer reader (`_parse`) does no I/O: it reads a buffer and asks for more by yielding, so
the same reader serves a protocol on the event loop (`_Conn`, fed by `data_received`) and the
tests (fed any cut of any framing). Reads run on the loop itself, not in threads: threads only
took turns with the loop at the interpreter lock (at 10,000 sessions, eight reader threads made
`status` slower than four).
"""

from __future__ import annotations

import asyncio
import base64
import re
from collections.abc import Generator, Mapping
from typing import Any, cast
from urllib.parse import urlsplit

from . import text
from .settings import Auth

HEAD_MAX = 1 << 16  # an answer's status line and headers, at most
#: Seconds a connection may wait idle before it is not reused (httpx's keep-alive expiry): a
#: connection idle for long may have been forgotten by a firewall or NAT in between (or the
#: machine slept), and would then hear nothing, a false read timeout
KEEP_IDLE = 5.0
#: A request target as the client builds it: percent-encoded, nothing that could end the line
_SAFE_TARGET = re.compile(r"/[!-~]*")

#: What `_parse` gives: the body of a clean answer (else None), and whether the connection can
#: take another request
Answer = tuple[bytes | None, bool]
#: A reader: sent True when more bytes came into its buffer, False when the connection ended
Reader = Generator[None, bool, Answer]


class _Unclean(Exception):
    """The answer is not a clean 200 JSON one: asked again the usual way."""


class Stalled(Exception):
    """The server did not answer in time: `why` is what the async client would have called it
    (`ConnectTimeout`, `ReadTimeout`), or `deadline` for an answer not complete by the deadline."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _parse(buf: bytearray, max_body: int, seen: dict[bytes, bytes] | None = None) -> Reader:
    """Read one HTTP/1.1 answer from `buf`, yielding whenever it needs more: (its body when it is
    a clean 200 JSON answer in identity encoding within `max_body`, else None; whether the
    connection can take another request). Every wait is bounded: the head by HEAD_MAX, the body
    by `max_body`; the caller bounds the time. The headers of a 200 answer (names lower-cased)
    go into `seen` when it is given."""
    try:
        while (end := buf.find(b"\r\n\r\n")) < 0:
            if len(buf) > HEAD_MAX or not (yield):
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
        if seen is not None:
            seen.update(headers)
        ctype = headers.get(b"content-type", b"")
        if b"json" not in ctype or b"html" in ctype:  # (html: the usual way says HTML)
            raise _Unclean
        if headers.get(b"content-encoding", b"identity") not in (b"identity", b""):
            raise _Unclean
        reusable = version == b"HTTP/1.1" and headers.get(b"connection", b"").lower() != b"close"
        coding = headers.get(b"transfer-encoding")
        if coding is not None and b"content-length" in headers:
            raise _Unclean  # a length told two ways
        if coding is not None:
            if coding.lower() != b"chunked":
                raise _Unclean
            body = yield from _chunked(buf, max_body)
        elif (length := headers.get(b"content-length")) is not None:
            size = int(length) if length.isdigit() else max_body + 1
            if size > max_body:
                raise _Unclean
            while len(buf) < size:
                if not (yield):
                    raise _Unclean  # closed mid-answer
            body = bytes(buf[:size])
            del buf[:size]
        else:  # the body ends when the connection does
            reusable = False
            while len(buf) <= max_body:
                if not (yield):
                    break
            else:
                raise _Unclean
            body = bytes(buf)
            buf.clear()
        return body, reusable and not buf  # bytes past the answer: not a clean connection
    except _Unclean:
        return None, False


def _chunked(buf: bytearray, max_body: int) -> Generator[None, bool, bytes]:
    """A chunked body decoded from `buf` (yielding for more), at most `max_body` bytes; what was
    read past its end is left in `buf`."""
    body = bytearray()
    pos = 0  # where the next chunk-size line starts in buf
    while True:
        while (eol := buf.find(b"\r\n", pos)) < 0:
            if len(buf) - pos > 1024 or not (yield):
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
                elif len(buf) - pos > HEAD_MAX or not (yield):
                    raise _Unclean
            del buf[: pos + 2]
            return bytes(body)
        if len(body) + size > max_body:
            raise _Unclean
        while len(buf) < pos + size + 2:
            if not (yield):
                raise _Unclean
        if buf[pos + size : pos + size + 2] != b"\r\n":
            raise _Unclean
        body += buf[pos : pos + size]
        pos += size + 2


class _Conn(asyncio.Protocol):
    """One kept-alive connection: one request at a time, its answer read by `_parse` as the
    bytes come. Bytes nobody asked for end the connection."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.reader: Reader | None = None
        self.answer: asyncio.Future[Answer] | None = None
        self.ended = False
        self.heard = 0.0  # the loop's time when the request went or the last bytes came
        self.idle_since = 0.0  # the loop's time when it was last put back, idle

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def ask(
        self, request: bytes, max_body: int, seen: dict[bytes, bytes] | None = None
    ) -> asyncio.Future[Answer]:
        """Send `request`; the future is its answer."""
        assert self.transport is not None and self.reader is None
        loop = asyncio.get_running_loop()
        self.answer = loop.create_future()
        self.heard = loop.time()
        self.reader = _parse(self.buf, max_body, seen)
        next(self.reader)  # (an empty buffer: it asks for bytes at once)
        self.transport.write(request)
        return self.answer

    def data_received(self, data: bytes) -> None:
        if self.reader is None:
            self.abort()
            return
        self.heard = self.answer.get_loop().time() if self.answer is not None else 0.0
        self.buf += data
        self._step(True)

    def silent(self) -> None:
        """Nothing came for the read timeout: the answer is a ReadTimeout."""
        self.reader = None
        if self.answer is not None and not self.answer.done():
            self.answer.set_exception(Stalled("ReadTimeout"))
        self.abort()

    def eof_received(self) -> bool:
        self._step(False)
        return False  # (and the transport closes)

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self._step(False)

    def _step(self, more: bool) -> None:
        if self.reader is None:
            return
        try:
            self.reader.send(more)
        except StopIteration as stop:
            self.reader = None
            if self.answer is not None and not self.answer.done():
                self.answer.set_result(stop.value)

    def abort(self) -> None:
        self.ended = True
        if self.transport is not None:
            self.transport.abort()


def head_text(headers: Mapping[bytes, bytes]) -> dict[str, str]:
    """An answer's headers as text, read as httpx reads a head (httpx.Headers.encoding): one
    encoding for all of it, UTF-8 when every name and value is UTF-8 (ASCII is), else latin-1."""
    try:
        for name, value in headers.items():
            name.decode("utf-8")
            value.decode("utf-8")
    except UnicodeDecodeError:
        encoding = "latin-1"
    else:
        encoding = "utf-8"
    return {name.decode(encoding): value.decode(encoding) for name, value in headers.items()}


def no_proxy(url: str, scheme: str, trust_env: bool) -> bool:
    """Whether `url` is a `scheme` URL with a host that httpx would reach with no proxy in
    between: none in the environment for that scheme (nor `all`), or the host bypasses them
    (`no_proxy`); the environment is read only when trusted (`trust_env`, as httpx reads it)."""
    parts = urlsplit(url)
    if parts.scheme != scheme or not parts.hostname:
        return False
    if not trust_env:
        return True
    import urllib.request  # (only here: it costs a few ms to import)

    proxies = urllib.request.getproxies()
    return not (proxies.get(scheme) or proxies.get("all")) or bool(
        urllib.request.proxy_bypass(parts.hostname)
    )


class QuickGet:
    """GETs of one `http://` server on kept-alive connections, as many at once as are asked
    (the snapshot reads `message_concurrency` at a time); at most `keep` wait idle between."""

    def __init__(
        self,
        url: str,
        auth: Auth | None,
        *,
        timeout: float,
        deadline: float,
        max_body: int,
        keep: int = 16,
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
        self._idle: list[_Conn] = []
        self._open: set[_Conn] = set()
        self._keep = keep
        self._closed = False
        self._patrol: asyncio.TimerHandle | None = None
        self.received = 0  # the bytes of the answers' bodies read so far

    @staticmethod
    def usable(url: str, trust_env: bool) -> bool:
        """Whether a server can be read this way: plain http, and no proxy that httpx would
        send the request through (no_proxy)."""
        return no_proxy(url, "http", trust_env)

    async def get(self, target: str, seen: dict[bytes, bytes] | None = None) -> Any | None:
        """The parsed JSON answer of `GET target` (path and query, percent-encoded), or None
        when it is anything but a clean 200 JSON answer (the caller asks again the usual way);
        its headers go into `seen` when it is given. Raises Stalled when the server is silent
        for `timeout` (connecting or answering) or the answer is not complete by `deadline`."""
        if self._closed or not _SAFE_TARGET.fullmatch(target):
            return None
        request = b"GET " + (self.base + target).encode("ascii") + self._head
        conn: _Conn | None = None
        try:
            async with asyncio.timeout(self.deadline):
                conn = self._take() or await self._connect()
                if self._closed:  # closed while connecting: nothing is asked any more
                    self._drop(conn)
                    return None
                answer = conn.ask(request, self.max_body, seen)
                self._patrolled()
                body, reusable = await answer
        except TimeoutError:  # the deadline's (an OSError too: caught first)
            if conn is not None:
                self._drop(conn)
            raise Stalled("deadline") from None
        except OSError:
            body, reusable = None, False
        except BaseException:  # cancelled or stalled mid-answer: in no known state
            if conn is not None:
                self._drop(conn)
            raise
        if conn is not None:
            if reusable and not conn.ended and not self._closed and len(self._idle) < self._keep:
                conn.idle_since = asyncio.get_running_loop().time()
                self._idle.append(conn)
            else:
                self._drop(conn)
        if body is None:
            return None
        self.received += len(body)
        try:
            return text.loads(body)
        except ValueError:
            return None

    def _take(self) -> _Conn | None:
        """The most recently used idle connection still fit to reuse (open, and idle for at
        most KEEP_IDLE); the others are dropped."""
        now = asyncio.get_running_loop().time()
        while self._idle:
            conn = self._idle.pop()
            if not conn.ended and now - conn.idle_since <= KEEP_IDLE:
                return conn
            self._drop(conn)
        return None

    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.timeout):
                _transport, conn = await loop.create_connection(_Conn, self.host, self.port)
        except TimeoutError:
            raise Stalled("ConnectTimeout") from None
        self._open.add(conn)  # (asyncio sets TCP_NODELAY on its TCP transports)
        return conn

    def _patrolled(self) -> None:
        """One timer for every read in flight, not one a read: every quarter of the read
        timeout it ends the reads that heard nothing for `timeout` (so a silent server is
        called so after 1 to 1.25 times the timeout)."""
        if self._patrol is None and not self._closed:
            loop = asyncio.get_running_loop()
            self._patrol = loop.call_later(self.timeout / 4, self._patrol_round, loop)

    def _patrol_round(self, loop: asyncio.AbstractEventLoop) -> None:
        self._patrol = None
        now, busy = loop.time(), False
        for conn in list(self._open):
            if conn.reader is None:
                continue
            if now - conn.heard >= self.timeout:
                conn.silent()
                self._open.discard(conn)
            else:
                busy = True
        if busy:
            self._patrolled()

    def _drop(self, conn: _Conn) -> None:
        conn.abort()
        self._open.discard(conn)

    def close(self) -> None:
        """End every connection, idle or in use (a read in flight answers None)."""
        self._closed = True
        if self._patrol is not None:
            self._patrol.cancel()
            self._patrol = None
        conns, self._open, self._idle = list(self._open), set(), []
        for conn in conns:
            conn.abort()
