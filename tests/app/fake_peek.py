"""A fake `Peek` (what a session is doing) for the dashboard tests."""

from __future__ import annotations

import asyncio

from tui.core.activity import Activity, TodoItem, TokenSplit, ToolRun

from . import views


class FakePeek:
    """Answers every look with an Activity naming the session; records each look."""

    def __init__(self) -> None:
        self.looks: list[str] = []
        self.fail: Exception | None = None
        self.gate: asyncio.Event | None = None

    async def activity(self, server: str, session_id: str, directory: str) -> Activity:
        self.looks.append(session_id)
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        now = views.clock()
        return Activity(
            session_id, now, reply=f"Reply of {session_id}.\nSecond line [bold]literal[/]",
            reply_at=now - 30,
            running=(ToolRun("bash", "npm test", "running", started=now - 130),),
            todos=(TodoItem("Read", "completed"), TodoItem("Fix it", "in_progress"),
                   TodoItem("Test", "pending")),
            model="fake/fake", agent="build", tokens=TokenSplit(1200, 300, 50, 9000, 100),
            context=10_650, context_limit=100_000, messages=12)
