"""`ocwatch prompt SESSION_ID TEXT|-`: send a session a prompt; with `--wait`, follow it until
the run it starts settles and exit as `ocwatch wait` does (0 completed, 1 error, 3 aborted,
4 waiting for input, 5 unknown, 124 timed out, 2 could not)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import TextIO

from ..core import actions
from ..core.client import OcwatchError
from ..core.exitcodes import ExitCode
from ..core.fleet import Fleet
from ..core.settings import Auth, Settings
from ..core.text import literal
from ..core.view import SessionRow, running
from .output import pipe_safe
from .wait import Awaited, follow, report


def read_prompt(value: str, stdin: TextIO) -> str:
    """The prompt: the argument, or (`-`) standard input, at most MAX_PROMPT characters."""
    if value != "-":
        return value
    text = stdin.read(actions.MAX_PROMPT + 1)
    if len(text) > actions.MAX_PROMPT:
        raise actions.ActionError(
            f"the prompt on standard input is longer than {actions.MAX_PROMPT:,} characters"
        )
    return text


def run_prompt(
    session_id: str | None,
    text: str,
    url: str,
    *,
    new_in: str | None = None,
    auth: Auth | None,
    settings: Settings,
    wait: bool,
    timeout: float | None,
    as_json: bool = False,
    stdin: TextIO | None = None,
) -> int:
    """Send the prompt (to a new session in `new_in`, whose id is printed first); print what
    happened (exit 0), or follow the run (`wait`)."""
    try:
        prompt = read_prompt(text, stdin or sys.stdin)
        if new_in is not None:
            if not prompt.strip():
                raise actions.ActionError("the prompt is empty")
            session_id = asyncio.run(_new(new_in, prompt, url, auth))
            if not (wait and as_json):  # (the JSON row says it)
                with pipe_safe():
                    print(session_id, flush=True)
        assert session_id is not None
        if not wait:
            asyncio.run(_send(session_id, prompt, url, auth))
            with pipe_safe():
                print(f"sent the prompt to {literal(session_id, escapes=True)}")
            return 0
        code, row, message = asyncio.run(
            _send_and_wait(session_id, prompt, url, auth, settings, timeout)
        )
    except OcwatchError as exc:
        print(f"ocwatch prompt: {literal(exc.message, escapes=True)}", file=sys.stderr)
        return exc.exit_code
    return report(code, row, message, as_json)


async def _new(folder: str, prompt: str, url: str, auth: Auth | None) -> str:
    """A new session in `folder`, titled after the prompt's first line."""
    from ..core.client import Client

    async with Client(url, auth) as client:
        return await actions.new_session(client, folder, actions.title_of(prompt))


async def _send(session_id: str, prompt: str, url: str, auth: Auth | None) -> None:
    from ..core.client import Client

    async with Client(url, auth) as client:
        await actions.prompt(client, session_id, prompt)


async def _send_and_wait(
    session_id: str,
    prompt: str,
    url: str,
    auth: Auth | None,
    settings: Settings,
    timeout: float | None,
) -> tuple[int, SessionRow | None, str | None]:
    """Follow the server, send the prompt once its first snapshot is in, then wait until the
    session has been seen running since and settles (its run's end, never the one before)."""
    fleet = Fleet([url], auth=auth, settings=settings, focus=(session_id,))
    changed = asyncio.Event()
    task = asyncio.create_task(fleet.run(changed.set))
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    try:
        monitor = fleet.monitors[0]
        # (--timeout bounds the whole command, this first look too)
        first_look = (
            settings.command_deadline
            if timeout is None
            else min(timeout, settings.command_deadline)
        )
        await asyncio.wait(
            {asyncio.ensure_future(monitor.first_snapshot()), task},
            timeout=first_look,
            return_when=asyncio.FIRST_COMPLETED,
        )
        view = fleet.current()
        if not view.servers[0].first_snapshot:
            why = view.servers[0].error or f"{url}: no snapshot within {first_look:g}s"
            raise OcwatchError(f"{why}; the prompt was not sent")
        found = view.find(session_id)
        if not found:
            raise actions.ActionError(f"unknown session {session_id} on {url}")
        if running(found[0]):
            raise actions.ActionError(
                f"{session_id} is running: its prompt would wait for this run, and --wait "
                "would end with it (wait for it, or send without --wait)"
            )
        before = (found[0].state, found[0].reason, found[0].since)
        await fleet.act(url, lambda c: actions.prompt(c, session_id, prompt))
        seen_running = False

        def since_sent(row: SessionRow) -> bool:
            """Whether the row is the run the prompt started: running since it was sent (the
            events say so at once), or settled on another state than before it (a run too
            quick to be seen running). Its end then is the outcome, never the run before."""
            nonlocal seen_running
            moved = (row.state, row.reason, row.since) != before
            seen_running = seen_running or running(row) or (moved and row.settled)
            return seen_running

        (out,) = await follow(
            fleet,
            task,
            changed,
            {session_id: Awaited(session_id)},
            deadline,
            timeout,
            counts=since_sent,
        )
        return out.code if out.code is not None else ExitCode.USAGE, out.row, out.message
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        await fleet.aclose()
