"""A fault-injecting HTTP proxy on loopback, between ocwatch and a real `opencode serve`.

Every request is forwarded with `Connection: close` (one request per connection, so the proxy
needs no HTTP parser beyond the request head). Faults, switched at any time from the test:
- `fail[path] = status`: answer that status (JSON error body) instead of forwarding;
- `swallow`: event types whose `data:` frames on `/global/event` are dropped;
- `cut_streams()`: cut every open event stream in the middle of a frame;
- `stall = True`: open event streams stop passing anything on (no heartbeats either);
- `answer[path] = bytes`: send these raw bytes as the whole response (see `redirect`, `html`,
  `empty`, `truncated_json`, `gzip_bomb`) instead of forwarding;
- `trickle[path] = seconds`: forward the response one byte per `seconds`;
- `inject(bytes)`: write raw bytes into every open event stream now (see `GARBLED`,
  `TRUNCATED`, `huge_line`).
`asked` counts the requests of each path.
"""

from __future__ import annotations

import asyncio
import collections
import json
import threading
import zlib
from typing import Any

#: Event-stream frames no server should send: not JSON, JSON cut short, bytes that are not UTF-8,
#: an unknown type and a known type with properties of the wrong shape.
GARBLED = (
    b"data: {not json at all\n\n"
    b"data: \xff\xfe\x00\x9b31m\n\n"
    b'data: {"directory": "/x", "payload": {"type": "no.such.event", "properties": {}}}\n\n'
    b'data: {"directory": "/x", "payload": {"type": "session.status", '
    b'"properties": {"sessionID": 7, "status": "busy"}}}\n\n'
)
#: A frame cut in the middle, then the next frame: the reader must not glue them into one.
TRUNCATED = b'data: {"directory": "/x", "payload": {"type": "session.st\n\n'


def response(status: str, body: bytes, *headers: str) -> bytes:
    """A whole raw HTTP/1.1 response that closes the connection."""
    head = [f"HTTP/1.1 {status}", *headers, f"content-length: {len(body)}", "connection: close"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def redirect(status: int, location: str) -> bytes:
    return response(f"{status} Redirect", b"", f"location: {location}")


def html() -> bytes:
    """What a reverse proxy's login page (or the server's web UI) answers."""
    return response(
        "200 OK",
        b"<!doctype html><html><body>Sign in</body></html>",
        "content-type: text/html; charset=utf-8",
    )


def empty() -> bytes:
    return response("200 OK", b"", "content-type: application/json")


def truncated_json() -> bytes:
    return response(
        "200 OK", b'[{"id": "per_1", "sessionID": "ses_', "content-type: application/json"
    )


def gzip_bomb(mib: int = 256) -> bytes:
    """A small gzip body that expands to `mib` MiB of zeros (256 MiB is about 260 KB)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(2**20)
    body = b"".join(z.compress(block) for _ in range(mib)) + z.flush()
    return response("200 OK", body, "content-type: application/json", "content-encoding: gzip")


def huge_line(mib: int = 20) -> bytes:
    """One `data:` line of `mib` MiB, longer than ocwatch reads (16 MiB), then its end."""
    return b"data: " + b"x" * (mib * 2**20) + b"\n\n"


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.removeprefix("http://").partition(":")
        self.up_host, self.up_port = host, int(port.rstrip("/"))
        self.fail: dict[str, int] = {}
        self.swallow: set[str] = set()
        self.stall = False
        self.answer: dict[str, bytes] = {}
        self.trickle: dict[str, float] = {}
        self.swallowed = 0
        self.asked: collections.Counter[str] = collections.Counter()  # requests by path
        self._streams: set[asyncio.StreamWriter] = set()
        self._chunked: dict[asyncio.StreamWriter, bool] = {}
        self._mid_frame: set[asyncio.StreamWriter] = set()  # a frame begun, not yet ended
        self._pending: dict[asyncio.StreamWriter, list[bytes]] = {}  # injected, to send after it
        self._server: asyncio.Server | None = None
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.url = ""
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> FaultProxy:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Close the listener and every connection, then end the loop's thread."""

        async def shut() -> None:
            if self._server is not None:
                self._server.close()
            for w in list(self._streams):
                w.transport.abort()
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def inject(self, data: bytes) -> None:
        """Write `data` into every open event stream, between two of the server's frames."""

        def send() -> None:
            for w in list(self._streams):
                if w in self._mid_frame:
                    self._pending.setdefault(w, []).append(data)
                else:
                    self._write(w, data)

        self._loop.call_soon_threadsafe(send)

    def _write(self, out: asyncio.StreamWriter, data: bytes) -> None:
        if out.transport.is_closing():
            return
        out.write(
            f"{len(data):x}\r\n".encode() + data + b"\r\n" if self._chunked.get(out) else data
        )

    def cut_streams(self) -> None:
        def cut() -> None:
            for w in list(self._streams):
                w.transport.abort()

        self._loop.call_soon_threadsafe(cut)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = server = self._loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", 0)
        )
        self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        self._ready.set()
        self._loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            path = target.split("?", 1)[0]
            self.asked[path] += 1
            length = 0
            kept = [lines[0]]
            for h in lines[1:]:
                if not h:
                    continue
                name = h.split(":", 1)[0].strip().lower()
                if name == "content-length":
                    length = int(h.split(":", 1)[1])
                if name in ("connection", "keep-alive", "accept-encoding"):
                    continue
                kept.append(h)
            body = await reader.readexactly(length) if length else b""
            if path in self.answer:
                writer.write(self.answer[path])
                await writer.drain()
                return
            if path in self.fail:
                status = self.fail[path]
                payload = json.dumps(
                    {"name": "InjectedFault", "data": {"message": f"fault proxy: {status}"}}
                ).encode()
                writer.write(
                    f"HTTP/1.1 {status} Injected\r\ncontent-type: application/json\r\n"
                    f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n".encode()
                    + payload
                )
                await writer.drain()
                return
            request = ("\r\n".join([*kept, "Connection: close", "", ""])).encode("latin-1") + body
            for attempt in range(3):  # the server may reset a fresh connection: try it again
                up_r, up_w = await asyncio.open_connection(self.up_host, self.up_port)
                try:
                    up_w.write(request)
                    await up_w.drain()
                    if path in ("/global/event", "/api/event"):
                        self._streams.add(writer)
                        if path in self.fail:  # failed (and cut) while this one connected
                            writer.transport.abort()
                            break
                        await self._pipe_events(up_r, writer)
                        break
                    head = await up_r.readuntil(b"\r\n\r\n")
                except (ConnectionResetError, asyncio.IncompleteReadError):
                    up_w.close()
                    if attempt == 2:
                        raise
                    continue
                if path in self.trickle:
                    await self._trickle(up_r, writer, head, self.trickle[path])
                else:
                    await self._pipe_one(up_r, writer, head)
                up_w.close()
                break
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass  # the client sees the connection end, as with a real broken proxy
        except asyncio.CancelledError:
            # the proxy stopping (`stop`): end quietly (a cancelled connection task makes 3.11's
            # asyncio log a traceback from the callback start_server added to it)
            pass
        finally:
            self._streams.discard(writer)
            self._chunked.pop(writer, None)
            self._mid_frame.discard(writer)
            self._pending.pop(writer, None)
            writer.close()

    @staticmethod
    async def _trickle(
        up: asyncio.StreamReader, out: asyncio.StreamWriter, head: bytes, every: float
    ) -> None:
        """The response, head included, one byte per `every` seconds (told as the connection's
        last; the client gives up long before the end, which is the point)."""
        lines = [
            h
            for h in head.split(b"\r\n")[:-2]
            if not h.lower().startswith((b"connection:", b"keep-alive:"))
        ]
        data = b"\r\n".join([*lines, b"connection: close", b"", b""])
        while data:
            out.write(data[:1])
            await out.drain()
            await asyncio.sleep(every)
            data = data[1:] or await up.read(1)

    @staticmethod
    async def _pipe_one(up: asyncio.StreamReader, out: asyncio.StreamWriter, head: bytes) -> None:
        """One response, to its end (the server may keep the connection open after it), told
        to the client as the connection's last (one request per connection here)."""
        lines = [
            h
            for h in head.split(b"\r\n")[:-2]
            if not h.lower().startswith((b"connection:", b"keep-alive:"))
        ]
        out.write(b"\r\n".join([*lines, b"connection: close", b"", b""]))
        low = head.lower()
        if b"transfer-encoding: chunked" in low:
            while True:
                size_line = await up.readuntil(b"\r\n")
                size = int(size_line.split(b";")[0], 16)
                out.write(size_line + await up.readexactly(size + 2))
                if size == 0:
                    break
        else:
            length = 0
            for h in low.split(b"\r\n"):
                if h.startswith(b"content-length:"):
                    length = int(h.split(b":", 1)[1])
            out.write(await up.readexactly(length))
        await out.drain()

    async def _pipe_events(self, up: asyncio.StreamReader, out: asyncio.StreamWriter) -> None:
        head = await up.readuntil(b"\r\n\r\n")
        out.write(head)
        chunked = b"transfer-encoding: chunked" in head.lower()
        self._chunked[out] = chunked
        drop_blank = False
        async for line in self._lines(up, chunked):
            if out.transport.is_closing():
                return
            if self.stall:
                continue
            if line.startswith(b"data:"):
                try:
                    obj: Any = json.loads(line[5:])
                    etype = (obj.get("payload") or obj).get("type")
                except (ValueError, AttributeError):
                    etype = None
                if etype in self.swallow:
                    self.swallowed += 1
                    drop_blank = True
                    continue
            elif drop_blank and not line.strip():
                drop_blank = False
                continue
            self._write(out, line)
            if line.strip():
                self._mid_frame.add(out)
            else:
                self._mid_frame.discard(out)
                for data in self._pending.pop(out, []):
                    self._write(out, data)
            await out.drain()

    @staticmethod
    async def _lines(up: asyncio.StreamReader, chunked: bool):  # type: ignore[no-untyped-def]
        """The event stream's lines (with their newline), through chunked encoding."""
        buf = b""
        while True:
            if chunked:
                size_line = await up.readuntil(b"\r\n")
                size = int(size_line.split(b";")[0], 16)
                if size == 0:
                    return
                data = await up.readexactly(size + 2)
                buf += data[:-2]
            else:
                data = await up.read(65536)
                if not data:
                    return
                buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                yield line + b"\n"
