"""`ocwatch wait`: follow the event stream until a session settles; exit with its outcome."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from ..core.fleet import Fleet
from ..core.settings import Auth, Settings
from ..core.view import SessionRow
from .output import literal, pipe_safe

EXIT_COMPLETED = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_ABORTED = 3
EXIT_INPUT = 4
EXIT_UNKNOWN = 5
EXIT_TIMEOUT = 124

#: How long the server may stay unreachable mid-wait (a restart) before `wait` gives up.
UNREACHABLE_PATIENCE = 15.0


def exit_code_for(row: SessionRow) -> int | None:
    """The exit code a settled row gives, or None while the session has not settled."""
    if not row.settled:
        return None
    if row.state == "input":
        return EXIT_INPUT
    if row.state == "unknown":
        return EXIT_UNKNOWN
    if row.state == "idle":
        if row.reason is None:  # a session that has never run: nothing completed
            return EXIT_UNKNOWN
        return {"error": EXIT_ERROR, "aborted": EXIT_ABORTED}.get(row.reason, EXIT_COMPLETED)
    if row.stale:  # the run visibly ended although the server still says busy
        return {"error": EXIT_ERROR, "aborted": EXIT_ABORTED}.get(row.ended or "", EXIT_COMPLETED)
    return None


async def wait_for(
    session_id: str,
    url: str,
    *,
    auth: Auth | None,
    settings: Settings,
    timeout: float | None,
    on_ready: Callable[[], None] | None = None,
) -> tuple[int, SessionRow | None, str | None]:
    """Returns (exit code, last row seen, message for stderr). `on_ready` is called once the
    first snapshot is in (tests use it to know the waiter is following the server)."""
    fleet = Fleet([url], auth=auth, settings=settings)
    mon = fleet.monitors[0]
    changed = asyncio.Event()
    task = asyncio.create_task(fleet.run(changed.set))
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    row: SessionRow | None = None
    # --timeout bounds the whole wait, the first look at the server included; `--timeout 0`
    # looks once (bounded by the request timeout)
    first_look = None if timeout is None else (timeout or settings.request_timeout)
    try:
        first = asyncio.ensure_future(mon.first_snapshot())
        done, _ = await asyncio.wait({first, task}, timeout=first_look,
                                     return_when=asyncio.FIRST_COMPLETED)
        if not done:
            first.cancel()
            return EXIT_TIMEOUT, None, f"timed out after {first_look:g}s (no snapshot yet)"
        if mon.snapshot is None:
            return EXIT_USAGE, None, mon.error or f"{mon.url}: unreachable"
        if on_ready is not None:
            on_ready()
        while True:
            changed.clear()
            view = fleet.current()
            if not mon.link().reachable:
                since = mon.error_since or time.time()
                if time.time() - since > UNREACHABLE_PATIENCE:
                    return EXIT_USAGE, row, f"{mon.error} (gave up after {UNREACHABLE_PATIENCE:g}s)"
            else:
                found = view.find(session_id)
                if not found:
                    return EXIT_USAGE, None, f"unknown session {session_id} on {mon.url}"
                row = found[0]
                code = exit_code_for(row)
                if code is not None:
                    return code, row, None
            wake = 0.5 if mon.error is None else 1.0
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    return EXIT_TIMEOUT, row, f"timed out after {timeout:g}s"
                wake = min(wake, left)
            if task.done():
                exc = task.exception()
                return EXIT_USAGE, row, f"monitor stopped: {exc}"
            # woken by the stream; the short timer only re-evaluates grace deadlines locally
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), timeout=wake)
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task


def run_wait(
    session_id: str, url: str, *, auth: Auth | None, settings: Settings,
    timeout: float | None, as_json: bool,
) -> int:
    code, row, message = asyncio.run(
        wait_for(session_id, url, auth=auth, settings=settings, timeout=timeout))
    return report(code, row, message, as_json)


def report(code: int, row: SessionRow | None, message: str | None, as_json: bool) -> int:
    """Print wait's result (server text made literal) and return the exit code."""
    with pipe_safe():
        if as_json:
            out: dict[str, Any] = {"session": row.to_json() if row else None, "exit_code": code,
                                   "message": message}
            print(json.dumps(out, indent=2))
        elif row is not None:  # its last state, also when it timed out
            word = row.state + (f" ({row.reason})" if row.reason else "")
            if row.stale:
                word += f"; run {row.ended or 'ended'}, but the server still reports busy (stale)"
            elif row.state == "idle" and row.reason is None:
                word += "; it has never run"
            print(f"{literal(row.id)}: {word}")
            for p in row.pending:
                print(f"  waiting for: {literal(p.summary)} [{literal(p.id)}]")
    if message:
        print(f"ocwatch wait: {literal(message)}", file=sys.stderr)
    return code
