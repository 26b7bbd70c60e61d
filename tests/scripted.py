"""A loopback server that writes scripted answers byte for byte: what the reader contract tests
(tests/unit/test_reader_contract.py, test_stream_contract.py) put each HTTP reader through."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Script:
    """What the server writes for a request: `pieces` in order (bytes are written, a float is a
    pause of that many seconds), then it closes the connection (`close`) or reads the next
    request on it."""

    pieces: list[bytes | float]
    close: bool = False


class ScriptedServer:
    """A server on loopback that writes each request's script (`scripts`, keyed by `key` of the
    request's path) and keeps what it was sent: each request's head (`heads`) and path
    (`requests`). `close`: every connection is closed after its first script."""

    def __init__(self, key: Callable[[str], str] = lambda path: path, close: bool = False) -> None:
        self.scripts: dict[str, Script] = {}
        self.heads: list[bytes] = []
        self.requests: list[str] = []
        self.url = ""
        self._key = key
        self._close = close
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.heads.append(head)
                path = head.split(b" ", 2)[1].decode().partition("?")[0]
                self.requests.append(path)
                script = self.scripts[self._key(path)]
                for piece in script.pieces:
                    if isinstance(piece, float):
                        await asyncio.sleep(piece)
                    else:
                        writer.write(piece)
                        await writer.drain()
                if script.close or self._close:
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()
            self._tasks.discard(task)

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()
