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
        self.stalled: set[str] = set()
        """Servers whose looks never answer."""
        self.clock = views.clock
        """When a look is read (the app's clock, as FleetPeek reads the fleet's)."""
        self.reply: str | None = None
        """The reply every session gave (None: one naming the session)."""
        self.output_at: dict[str, float] = {}
        """Servers whose stream is live: when it last carried output (stream_output_at)."""

    def stream_output_at(self, server: str) -> float | None:
        return self.output_at.get(server)

    async def activity(self, server: str, session_id: str, directory: str) -> Activity:
        self.looks.append(session_id)
        if self.gate is not None:
            await self.gate.wait()
        if server in self.stalled:
            await asyncio.Event().wait()
        if self.fail is not None:
            raise self.fail
        now = self.clock()
        return Activity(
            session_id,
            now,
            reply=self.reply or f"Reply of {session_id}.\nSecond line [bold]literal[/]",
            reply_at=now - 30,
            running=(ToolRun("bash", "npm test", "running", started=now - 130),),
            todos=(
                TodoItem("Read", "completed"),
                TodoItem("Fix it", "in_progress"),
                TodoItem("Test", "pending"),
            ),
            model="fake/fake",
            agent="build",
            tokens=TokenSplit(1200, 300, 50, 9000, 100),
            context=10_650,
            context_limit=100_000,
            messages=12,
        )


def chat(n: int, *, start: int = 0, text: str = "Reply") -> list[dict[str, object]]:
    """`n` messages as `GET /session/{id}/message` lists them: prompts and replies in turn,
    every third reply with a tool call, ids growing with time."""
    out: list[dict[str, object]] = []
    t0 = int(views.clock() * 1000) - 3_600_000
    for i in range(start, start + n):
        created = t0 + i * 1000
        if i % 2 == 0:
            out.append(
                {
                    "info": {
                        "id": f"msg_{i:06d}",
                        "role": "user",
                        "agent": "build",
                        "time": {"created": created},
                    },
                    "parts": [{"type": "text", "text": f"Prompt {i}"}],
                }
            )
            continue
        parts: list[dict[str, object]] = [{"type": "text", "text": f"{text} {i}\nline two"}]
        if i % 3 == 0:
            parts.append(
                {
                    "type": "tool",
                    "tool": "bash",
                    "state": {
                        "status": "completed",
                        "input": {"command": f"make step-{i}"},
                        "time": {"start": created + 100, "end": created + 2100},
                    },
                }
            )
        out.append(
            {
                "info": {
                    "id": f"msg_{i:06d}",
                    "role": "assistant",
                    "agent": "build",
                    "modelID": "fake",
                    "providerID": "fake",
                    "time": {"created": created, "completed": created + 900},
                    "finish": "stop",
                },
                "parts": parts,
            }
        )
    return out


class ChatPeek(FakePeek):
    """A FakePeek whose sessions have `messages` (a list the test may extend)."""

    def __init__(self, messages: list[dict[str, object]]) -> None:
        super().__init__()
        self.chat = messages
        self.reads: list[int | None] = []

    async def messages(
        self, server: str, session_id: str, directory: str, limit: int | None
    ) -> list[object]:
        self.reads.append(limit)
        if self.fail is not None:
            raise self.fail
        return list(self.chat if limit is None else self.chat[-limit:])
