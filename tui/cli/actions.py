"""`ocwatch abort | reply | answer`: act on a server from a script (exit 0, or 2 on error)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..core import actions
from ..core.client import Client, OcwatchError
from ..core.settings import Auth
from ..core.text import literal
from .output import pipe_safe

T = TypeVar("T")


def _run(
    url: str, auth: Auth | None, act: Callable[[Client], Awaitable[T]], ok: Callable[[T], str]
) -> int:
    """Run `act` on the server; print `ok(its result)` (exit 0) or the error (exit 2)."""

    async def go() -> T:
        async with Client(url, auth) as client:
            return await act(client)

    try:
        result = asyncio.run(go())
    except OcwatchError as exc:
        print(f"ocwatch: {literal(exc.message, escapes=True)}", file=sys.stderr)
        return exc.exit_code
    with pipe_safe():
        print(ok(result))
    return 0


def run_abort(session_id: str, url: str, *, auth: Auth | None) -> int:
    return _run(
        url,
        auth,
        lambda c: actions.abort(c, session_id),
        lambda running: (
            f"aborted {session_id}"
            if running
            else f"{session_id} was not running (the server reports it idle): nothing to abort"
        ),
    )


def run_reply(
    request_id: str, reply: str, message: str | None, url: str, *, auth: Auth | None
) -> int:
    return _run(
        url,
        auth,
        lambda c: actions.reply_permission(c, request_id, reply, message),
        lambda _: f"replied {reply} to {request_id}",
    )


def run_answer(
    request_id: str,
    options: list[str] | None,
    text: list[str] | None,
    reject: bool,
    url: str,
    *,
    auth: Auth | None,
) -> int:
    return _run(
        url,
        auth,
        lambda c: actions.answer_question(c, request_id, options=options, text=text, reject=reject),
        lambda _: f"{'rejected' if reject else 'answered'} {request_id}",
    )
