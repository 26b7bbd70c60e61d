"""The event stream read straight from its socket: the standard library's asyncio streams, the
answer parsed by httptools (the llhttp parser's bindings, maintained with uvloop).

An OpenCode server sends each event as its own chunk of a chunked body (1.18.33 and 2.0.15 both).
Through httpx every chunk climbs h11, httpcore and httpx one by one: 13-17 us of CPU an event on
the 2-core machine, five to six times a bare socket reader's whole work, most of it h11's
per-chunk bookkeeping (7-11 us a chunk alone), so h11 under the standard library's streams
would not do either. Here a read of the socket takes whatever has come (up to `READ` bytes, many
events at a busy time), httptools decodes its chunks in C, and the body's bytes go on as one
piece: 1.4-2.1 us an event, half the bare reader's (`benchmarks/bench_stream.py`).

Used by `Client.events` for a server reached without a proxy and without a test's transport;
anything else keeps httpx's stream. What is asked and refused is the same either way: the
request carries the client's credentials (Basic) and asks for an uncompressed stream; https is
verified against `tls.trusted()`; the connection waits at most the client's timeout, each read
at most `read_timeout`; the answer's head is bounded (`HEAD_MAX`). Failures are raised as the
httpx errors httpx would have raised (ConnectError, ConnectTimeout, ReadTimeout, ReadError,
RemoteProtocolError), so that the caller says them as it does for httpx's stream.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httptools
import httpx

#: Bytes asked of the socket per read (what has come is taken, up to this)
READ = 1 << 16
#: The answer's status line and headers, at most (h11's limit is 16 KiB)
HEAD_MAX = 1 << 16


class _Answer:
    """httptools' callbacks: the head, then the body's pieces as each feed decodes them."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self.head_done = False
        self.done = False
        self.parts: list[bytes] = []
        self.on_body = self.parts.append

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        text = _header_text(value)
        got = self.headers.get(key)
        self.headers[key] = text if got is None else f"{got}, {text}"  # (as httpx joins them)

    def on_headers_complete(self) -> None:
        self.head_done = True

    def on_message_complete(self) -> None:
        self.done = True


def _header_text(value: bytes) -> str:
    """A header's value as httpx reads it: UTF-8 when it is, else latin-1."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


class EventStream:
    """One event stream's answer: `status_code`, `headers` (names lower-cased), and its body's
    bytes (`body()`) as they come. Opened by `open_stream`; `aclose()` drops the connection."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        parser: httptools.HttpResponseParser,
        answer: _Answer,
        read_timeout: float,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._parser = parser
        self._answer = answer
        self._read_timeout = read_timeout
        self.status_code = 0
        self.headers = answer.headers
        self._framed = False  # a body that says where it ends (read with its head)

    def _head_read(self) -> None:
        self.status_code = self._parser.get_status_code()
        coding = self.headers.get("transfer-encoding", "").lower()
        # the connection ending before the end of the body it announced is an error
        self._framed = "chunked" in coding or "content-length" in self.headers

    async def body(self) -> AsyncIterator[bytes]:
        """The body's bytes, a piece for each read of the socket (what its chunks held)."""
        answer, parts = self._answer, self._answer.parts
        while True:
            if parts:
                piece = parts[0] if len(parts) == 1 else b"".join(parts)
                parts.clear()
                yield piece
            if answer.done:
                return
            data = await self._read()
            if not data:
                if self._framed:
                    raise httpx.RemoteProtocolError(
                        "peer closed connection without sending complete message body"
                    )
                return
            self._feed(data)

    async def _read(self) -> bytes:
        try:
            async with asyncio.timeout(self._read_timeout):
                return await self._reader.read(READ)
        except TimeoutError:
            raise httpx.ReadTimeout("timed out") from None
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__) from exc

    def _feed(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            raise httpx.RemoteProtocolError(f"malformed answer ({exc})") from None

    def aclose(self) -> None:
        """Drop the connection (an event stream is never read to its end)."""
        self._writer.transport.abort()


async def open_stream(
    url: str,
    target: str,
    headers: list[tuple[str, str]],
    *,
    tls: ssl.SSLContext | None,
    connect_timeout: float,
    read_timeout: float,
) -> EventStream:
    """`GET target` of the server at `url` (`http://` or `https://`, verified by `tls`), read
    until its head has come. Raises the httpx error httpx would have raised."""
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    netloc = parts.netloc.rpartition("@")[2]
    lines = [f"GET {target} HTTP/1.1", f"host: {netloc}"]
    lines += [f"{name}: {value}" for name, value in headers]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    try:
        async with asyncio.timeout(connect_timeout):
            reader, writer = await asyncio.open_connection(
                host,
                port,
                ssl=tls if https else None,
                server_hostname=host if https else None,
                limit=READ,
            )
    except TimeoutError:
        raise httpx.ConnectTimeout("timed out") from None
    except (OSError, ssl.SSLError) as exc:
        raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
    answer = _Answer()
    parser = httptools.HttpResponseParser(answer)
    stream = EventStream(reader, writer, parser, answer, read_timeout)
    try:
        writer.write(request)
        seen = 0
        while not answer.head_done:
            data = await stream._read()
            if not data:
                raise httpx.RemoteProtocolError("server disconnected without sending a response")
            seen += len(data)
            stream._feed(data)
            if not answer.head_done and seen > HEAD_MAX:
                raise httpx.RemoteProtocolError(
                    f"the answer's head is longer than {HEAD_MAX // 1024} KiB"
                )
    except BaseException:
        stream.aclose()
        raise
    stream._head_read()
    return stream
