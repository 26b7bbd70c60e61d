"""What the dashboard can do to a server: abort a run, reply to a permission, answer a question.

The app talks to an `Actions` object so tests can pass a fake. `FleetActions` uses the live
Fleet's own clients (and asks the monitor for a snapshot once the server accepted, so the row
changes as soon as the server confirms); `ClientActions` opens a client per action for other
sources. Both raise `OcwatchError` (with a one-line `.message`) when the server refuses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from tui.core import actions as core
from tui.core.client import Client, NotFound
from tui.core.fleet import Fleet
from tui.core.models import QuestionRequest
from tui.core.settings import Auth
from tui.core.source import ViewSource

T = TypeVar("T")


class Actions(Protocol):
    """Acting on a server, addressed by its URL (a row's `server`)."""

    async def abort(self, server: str, session_id: str) -> None:
        """Abort the session's run."""
        ...

    async def reply(self, server: str, request_id: str, reply: str,
                    message: str | None) -> None:
        """Reply `once`, `always` or `reject` (with an optional message) to a permission."""
        ...

    async def answer(self, server: str, request_id: str, answers: list[list[str]] | None,
                     reject: bool) -> None:
        """Answer a question request (one list of labels or typed text per question), or
        reject it."""
        ...


async def answer_request(client: Client, request_id: str, answers: list[list[str]] | None,
                         reject: bool) -> None:
    """Answer every question of a request with its own answers (or reject the request).

    `core.answer_question` maps a flat list of labels onto the questions, which is ambiguous
    when two questions share a label; the dialog knows which answer goes with which question."""
    if reject or answers is None:
        await core.answer_question(client, request_id, reject=True)
        return
    loc = await core.locate_request(client, request_id)
    if not isinstance(loc.request, QuestionRequest):
        raise core.ActionError(f"{request_id} is a permission, not a question")
    if len(answers) != len(loc.request.questions):
        raise core.ActionError(
            f"question {request_id} has {len(loc.request.questions)} questions, "
            f"got {len(answers)} answers")
    try:
        await client.reply_question(request_id, answers, loc.directory)
    except NotFound:
        raise core.ActionError(
            f"question {request_id} is no longer open (already answered?)") from None


class FleetActions:
    """Actions through the live Fleet's clients; a success asks for a snapshot at once."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet

    async def _on(self, server: str, act: Callable[[Client], Awaitable[T]]) -> T:
        monitor = self.fleet.monitor(server)
        if monitor is None:
            raise core.ActionError(f"{server} is not one of the watched servers")
        result = await act(monitor.client)
        monitor.request_snapshot()  # the row changes when the server confirms, not before
        return result

    async def abort(self, server: str, session_id: str) -> None:
        await self._on(server, lambda c: core.abort(c, session_id))

    async def reply(self, server: str, request_id: str, reply: str,
                    message: str | None) -> None:
        await self._on(server, lambda c: core.reply_permission(c, request_id, reply, message))

    async def answer(self, server: str, request_id: str, answers: list[list[str]] | None,
                     reject: bool) -> None:
        await self._on(server, lambda c: answer_request(c, request_id, answers, reject))


class ClientActions:
    """Actions through a client opened for each action (sources other than a Fleet)."""

    def __init__(self, auth: Auth | None = None) -> None:
        self.auth = auth

    async def _on(self, server: str, act: Callable[[Client], Awaitable[T]]) -> T:
        async with Client(server, self.auth) as client:
            return await act(client)

    async def abort(self, server: str, session_id: str) -> None:
        await self._on(server, lambda c: core.abort(c, session_id))

    async def reply(self, server: str, request_id: str, reply: str,
                    message: str | None) -> None:
        await self._on(server, lambda c: core.reply_permission(c, request_id, reply, message))

    async def answer(self, server: str, request_id: str, answers: list[list[str]] | None,
                     reject: bool) -> None:
        await self._on(server, lambda c: answer_request(c, request_id, answers, reject))


def default_actions(source: ViewSource, auth: Auth | None = None) -> Actions | None:
    """The Fleet's actions for a Fleet, none for a StaticSource (fixed Views, no server),
    a client per action for any other source."""
    from tui.core.source import StaticSource

    if isinstance(source, Fleet):
        return FleetActions(source)
    if isinstance(source, StaticSource):
        return None
    return ClientActions(auth)
