"""A fake `Actions`: records every call, and fails with a given error when told to."""

from __future__ import annotations

import asyncio
from typing import Any

from tui.core.client import OcwatchError


class FakeActions:
    """Records `(name, server, *args)` per call; `fail` (an OcwatchError) is raised instead;
    `gate` (an Event), when set up, holds every call until it is set."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.fail: OcwatchError | None = None
        self.gate: asyncio.Event | None = None

    async def _do(self, *call: Any) -> None:
        if self.gate is not None:
            await self.gate.wait()
        self.calls.append(call)
        if self.fail is not None:
            raise self.fail

    async def abort(self, server: str, session_id: str) -> None:
        await self._do("abort", server, session_id)

    async def reply(self, server: str, request_id: str, reply: str, message: str | None) -> None:
        await self._do("reply", server, request_id, reply, message)

    async def answer(
        self, server: str, request_id: str, answers: list[list[str]] | None, reject: bool
    ) -> None:
        await self._do("answer", server, request_id, answers, reject)

    async def prompt(self, server: str, session_id: str, text: str) -> None:
        await self._do("prompt", server, session_id, text)

    async def new_session(self, server: str, folder: str, text: str) -> str:
        await self._do("new_session", server, folder, text)
        return "ses_new"
