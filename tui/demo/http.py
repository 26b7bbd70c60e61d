"""A tiny HTTP/1.1 server on asyncio streams: JSON/HTML responses and Server-Sent Event streams.

One request per connection: plain responses carry `Content-Length` and `Connection: close`;
event streams use chunked transfer encoding and stay open until the source ends, the client
goes away or `drop_streams()` cuts them (as a crashing server would). Standard library only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

log = logging.getLogger(__name__)

MAX_BODY = 1 << 20
MAX_HEADERS = 100


@dataclass(slots=True)
class Request:
    """A parsed request: method, decoded path, query (last value wins), lower-cased headers."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""

    def json(self) -> Any:
        """The body decoded as JSON (`None` when empty); raises ValueError when malformed."""
        if not self.body.strip():
            return None
        return json.loads(self.body)


@dataclass(slots=True)
class Response:
    """A complete response sent with `Content-Length` and `Connection: close`."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class EventStream:
    """A `text/event-stream` response: each string from `source` is sent as `data: ...\\n\\n`
    (with `comments`, an empty one as the comment `: heartbeat`, as V2 beats)."""

    source: AsyncIterator[str]
    headers: dict[str, str] = field(default_factory=dict)
    comments: bool = False


Handler = Callable[[Request], Awaitable[Response | EventStream]]


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON response (compact, UTF-8)."""
    body = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    return Response(status, body, "application/json", dict(headers or {}))


def html_response(text: str, status: int = 200) -> Response:
    """An HTML response."""
    return Response(status, text.encode(), "text/html; charset=utf-8")


class BadRequest(Exception):
    """The request could not be parsed."""


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_reason(status)}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """Read one request; `None` on a clean EOF before any byte, BadRequest when malformed."""
    line = await reader.readline()
    if not line:
        return None
    try:
        method, target, version = line.decode("latin-1").strip().split(" ")
    except ValueError as exc:
        raise BadRequest("bad request line") from exc
    if not version.startswith("HTTP/1."):
        raise BadRequest("unsupported protocol")
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADERS + 1):
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n", b""):
            break
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep:
            raise BadRequest("bad header line")
        headers[name.strip().lower()] = value.strip()
    else:
        raise BadRequest("too many headers")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise BadRequest("chunked request bodies are not supported")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError as exc:
        raise BadRequest("bad content-length") from exc
    if length < 0 or length > MAX_BODY:
        raise BadRequest("body too large")
    body = await reader.readexactly(length) if length else b""
    parts = urlsplit(target)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    return Request(method.upper(), unquote(parts.path) or "/", query, headers, body)


class HttpServer:
    """Serves `handler` on a loopback port; tracks connections so it can cut them."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._server: asyncio.base_events.Server | None = None
        self._conns: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._streams: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self, host: str, port: int) -> int:
        """Bind and start accepting; returns the bound port."""
        self._server = await asyncio.start_server(self._on_connect, host, port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    def drop_streams(self) -> None:
        """Abort every open event stream connection (no terminating chunk, like a crash)."""
        for task in list(self._streams):
            self._abort(task)

    async def stop(self) -> None:
        """Stop accepting and abort every open connection."""
        if self._server is not None:
            self._server.close()
        tasks = list(self._conns)
        for task in tasks:
            self._abort(task)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
            self._server = None

    def _abort(self, task: asyncio.Task[None]) -> None:
        writer = self._conns.get(task)
        if writer is not None:
            writer.transport.abort()
        task.cancel()

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns[task] = writer
        try:
            await self._serve(reader, writer, task)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # client went away, or we cut the connection (stop, drop_streams)
        except Exception:  # a bug in a handler must not kill the server
            log.exception("demo http: request failed")
        finally:
            self._conns.pop(task, None)
            self._streams.discard(task)
            writer.close()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, task: asyncio.Task[None]
    ) -> None:
        try:
            request = await read_request(reader)
        except (BadRequest, ValueError, asyncio.LimitOverrunError) as exc:
            error = {"name": "BadRequest", "data": {"message": str(exc)}}
            await self._send(writer, json_response(error, 400))
            return
        if request is None:
            return
        result = await self._handler(request)
        if isinstance(result, Response):
            await self._send(writer, result)
            return
        self._streams.add(task)
        await self._stream(reader, writer, result)

    async def _send(self, writer: asyncio.StreamWriter, resp: Response) -> None:
        headers = {
            "Content-Type": resp.content_type,
            "Content-Length": str(len(resp.body)),
            "Connection": "close",
            **resp.headers,
        }
        writer.write(_head(resp.status, headers) + resp.body)
        await writer.drain()

    async def _stream(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stream: EventStream
    ) -> None:
        headers = {
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "Transfer-Encoding": "chunked",
            "Connection": "close",
            **stream.headers,
        }
        writer.write(_head(200, headers))
        await writer.drain()

        async def pump() -> None:
            async for text in stream.source:
                if stream.comments and not text:
                    data = b": heartbeat\n\n"
                else:
                    data = f"data: {text}\n\n".encode()
                writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()

        async def client_gone() -> None:
            while await reader.read(4096):
                pass

        pump_task = asyncio.create_task(pump())
        eof_task = asyncio.create_task(client_gone())
        try:
            await asyncio.wait({pump_task, eof_task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (pump_task, eof_task):
                t.cancel()
            await asyncio.gather(pump_task, eof_task, return_exceptions=True)
            aclose = getattr(stream.source, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
        if pump_task.done() and not pump_task.cancelled() and pump_task.exception():
            exc = pump_task.exception()
            if not isinstance(exc, ConnectionError):
                raise exc  # type: ignore[misc]
