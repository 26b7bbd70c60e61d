"""wait's first look when the monitor task ends before any server answered: it says so and
exits USAGE (it formatted a missing --timeout as a number: a traceback)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from tui.cli.wait import _first_read, next_change
from tui.core.exitcodes import ExitCode
from tui.core.settings import Settings


class _Silent:
    """A monitor whose first snapshot never ends."""

    async def first_snapshot(self) -> None:
        await asyncio.Event().wait()


def _fleet() -> Any:
    return SimpleNamespace(monitors=[_Silent()], current=lambda: SimpleNamespace(servers=[]))


async def _failing() -> None:
    raise RuntimeError("boom [red]x[/red]")


def test_a_monitor_that_fails_before_the_first_look_is_said_with_no_timeout() -> None:
    async def main() -> tuple[ExitCode, str] | None:
        task = asyncio.ensure_future(_failing())
        return await _first_read(_fleet(), task, None, Settings())

    assert asyncio.run(main()) == (ExitCode.USAGE, "monitor stopped: boom [red]x[/red]")


def test_a_cancelled_monitor_is_said_stopped_not_a_traceback() -> None:
    async def main() -> tuple[ExitCode, str] | None:
        task = asyncio.ensure_future(asyncio.Event().wait())
        await asyncio.sleep(0)
        task.cancel()
        return await _first_read(_fleet(), task, None, Settings())

    assert asyncio.run(main()) == (ExitCode.USAGE, "monitor stopped")


def test_next_change_says_a_monitor_that_ended_without_error() -> None:
    async def main() -> tuple[ExitCode, str] | None:
        async def done() -> None:
            return None

        task = asyncio.ensure_future(done())
        await task
        return await next_change(asyncio.Event(), task, None, None, 0.1)

    assert asyncio.run(main()) == (ExitCode.USAGE, "monitor stopped")
