"""What the dashboard can do to a server: abort a run, reply to a permission, answer a question,
send a prompt.

The app talks to an `Actions` object, passed in by whoever builds it (tests pass a fake; a
dashboard on fixed Views passes none). `FleetActions` acts through the live Fleet (`Fleet.act`:
its own clients, and a snapshot once the server accepted, so the row changes as soon as the
server confirms); `ClientActions` opens a client per action. Both raise `OcwatchError` (with a
one-line `.message`) when the server refuses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from tui.core import actions as core
from tui.core.client import Client
from tui.core.fleet import Fleet
from tui.core.settings import Auth

T = TypeVar("T")


class Actions(Protocol):
    """Acting on a server, addressed by its URL (a row's `server`)."""

    async def abort(self, server: str, session_id: str) -> None:
        """Abort the session's run."""
        ...

    async def reply(self, server: str, request_id: str, reply: str, message: str | None) -> None:
        """Reply `once`, `always` or `reject` (with an optional message) to a permission."""
        ...

    async def answer(
        self, server: str, request_id: str, answers: list[list[str]] | None, reject: bool
    ) -> None:
        """Answer a question request (one list of labels or typed text per question), or
        reject it."""
        ...

    async def prompt(self, server: str, session_id: str, text: str) -> None:
        """Send the session a prompt (its run starts on the server)."""
        ...

    async def new_session(self, server: str, folder: str, text: str) -> str:
        """A new session in the project `folder`, sent `text` as its first prompt ("": none);
        its id."""
        ...


class _ThroughClient:
    """The three actions, each through `_on(server, act)`, which subclasses provide."""

    async def _on(self, server: str, act: Callable[[Client], Awaitable[T]]) -> T:
        raise NotImplementedError

    async def abort(self, server: str, session_id: str) -> None:
        await self._on(server, lambda c: core.abort(c, session_id))

    async def reply(self, server: str, request_id: str, reply: str, message: str | None) -> None:
        await self._on(server, lambda c: core.reply_permission(c, request_id, reply, message))

    async def answer(
        self, server: str, request_id: str, answers: list[list[str]] | None, reject: bool
    ) -> None:
        # one list of answers per question: the dialog knows which answer goes with which
        # question (a flat list of labels is ambiguous when two questions share a label)
        await self._on(
            server,
            lambda c: core.answer_question(
                c, request_id, answers=answers, reject=reject or answers is None
            ),
        )

    async def prompt(self, server: str, session_id: str, text: str) -> None:
        await self._on(server, lambda c: core.prompt(c, session_id, text))

    async def new_session(self, server: str, folder: str, text: str) -> str:
        return await self._on(server, lambda c: core.start_session(c, folder, text))


class FleetActions(_ThroughClient):
    """Actions through the live Fleet's clients; a success asks for a snapshot at once."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet

    async def _on(self, server: str, act: Callable[[Client], Awaitable[T]]) -> T:
        return await self.fleet.act(server, act)


class ClientActions(_ThroughClient):
    """Actions through a client opened for each action (sources other than a Fleet)."""

    def __init__(self, auth: Auth | None = None) -> None:
        self.auth = auth

    async def _on(self, server: str, act: Callable[[Client], Awaitable[T]]) -> T:
        async with Client(server, self.auth) as client:
            return await act(client)
