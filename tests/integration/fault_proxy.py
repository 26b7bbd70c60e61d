"""A fault-injecting HTTP proxy on loopback, between ocwatch and a real `opencode serve`.

Every request is forwarded with `Connection: close` (one request per connection, so the proxy
needs no HTTP parser beyond the request head). Faults, switched at any time from the test:
- `fail[path] = status`: answer that status (JSON error body) instead of forwarding;
- `swallow`: event types whose `data:` frames on `/global/event` are dropped;
- `cut_streams()`: cut every open event stream in the middle of a frame;
- `stall = True`: open event streams stop passing anything on (no heartbeats either).
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.removeprefix("http://").partition(":")
        self.up_host, self.up_port = host, int(port.rstrip("/"))
        self.fail: dict[str, int] = {}
        self.swallow: set[str] = set()
        self.stall = False
        self.swallowed = 0
        self._streams: set[asyncio.StreamWriter] = set()
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

    def cut_streams(self) -> None:
        def cut() -> None:
            for w in list(self._streams):
                w.transport.abort()
        self._loop.call_soon_threadsafe(cut)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = server = self._loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        self._ready.set()
        self._loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            path = target.split("?", 1)[0]
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
            if path in self.fail:
                status = self.fail[path]
                payload = json.dumps({"name": "InjectedFault", "data": {
                    "message": f"fault proxy: {status}"}}).encode()
                writer.write(f"HTTP/1.1 {status} Injected\r\ncontent-type: application/json\r\n"
                             f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n"
                             .encode() + payload)
                await writer.drain()
                return
            request = ("\r\n".join([*kept, "Connection: close", "", ""])).encode("latin-1") + body
            for attempt in range(3):  # the server may reset a fresh connection: try it again
                up_r, up_w = await asyncio.open_connection(self.up_host, self.up_port)
                try:
                    up_w.write(request)
                    await up_w.drain()
                    if path == "/global/event":
                        self._streams.add(writer)
                        await self._pipe_events(up_r, writer)
                        break
                    head = await up_r.readuntil(b"\r\n\r\n")
                except (ConnectionResetError, asyncio.IncompleteReadError):
                    up_w.close()
                    if attempt == 2:
                        raise
                    continue
                await self._pipe_one(up_r, writer, head)
                up_w.close()
                break
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass  # the client sees the connection end, as with a real broken proxy
        finally:
            self._streams.discard(writer)
            writer.close()

    @staticmethod
    async def _pipe_one(up: asyncio.StreamReader, out: asyncio.StreamWriter,
                        head: bytes) -> None:
        """One response, to its end (the server may keep the connection open after it), told
        to the client as the connection's last (one request per connection here)."""
        lines = [h for h in head.split(b"\r\n")[:-2]
                 if not h.lower().startswith((b"connection:", b"keep-alive:"))]
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
        drop_blank = False
        async for line in self._lines(up, chunked):
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
            # pass it on un-chunked: the proxy answers with `connection: close` semantics
            out.write(f"{len(line):x}\r\n".encode() + line + b"\r\n" if chunked else line)
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
