"""Regenerate the README's screenshots from the demo (frozen, fixed clock: deterministic).

    python screenshots/make_screenshots.py          # writes screenshots/*.svg

Each screenshot runs the real dashboard through the real client against the built-in simulated
server, frozen in its starting world where every state is present at once.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tui.app import DashboardOptions, create_app  # noqa: E402
from tui.app.actions import FleetActions  # noqa: E402
from tui.app.inspect import FleetPeek  # noqa: E402
from tui.core.fleet import Fleet  # noqa: E402
from tui.core.settings import Settings  # noqa: E402
from tui.demo.server import DemoServer  # noqa: E402

OUT = ROOT / "screenshots"
NOW = 1_800_000_000.0  # the fixed "now" of the demo world and of the dashboard
PORT = 47960  # a fixed port keeps the header (and so the SVGs) identical between runs


def clock() -> float:
    return NOW


async def shoot(
    name: str,
    *,
    theme: str = "ocwatch-dark",
    size: tuple[int, int] = (160, 40),
    steps: Callable[..., Awaitable[None]] | None = None,
) -> None:
    server = DemoServer(clock=clock, seed=0, port=PORT)
    server.freeze()
    try:
        await server.start()
    except OSError:  # the fixed port is taken: any port will do (only the header differs)
        server = DemoServer(clock=clock, seed=0)
        server.freeze()
        await server.start()
    try:
        fleet = Fleet([server.url], settings=Settings(), clock=clock)
        app = create_app(
            fleet,
            DashboardOptions(
                theme=theme,
                server_urls=[server.url],
                clock=clock,
                actions=FleetActions(fleet),
                peek=FleetPeek(fleet),
            ),
        )
        async with app.run_test(size=size) as pilot:
            for _ in range(200):  # until the first snapshot is on screen
                await pilot.pause(0.05)
                if fleet.current().rows and app.screen.query("DataTable"):
                    break
            await pilot.pause(0.3)
            if steps is not None:
                await steps(pilot)
                await pilot.pause(0.3)
            for _ in range(100):  # what the selected session is doing, read from the server
                if not any(
                    w.is_running for w in app.workers if w.group in ("inspect", "conversation")
                ):
                    break
                await pilot.pause(0.05)
            await pilot.pause(0.3)
            app.save_screenshot(filename=f"{name}.svg", path=str(OUT))
    finally:
        await server.stop()
    print(f"wrote screenshots/{name}.svg")


async def open_stale(pilot) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("7")  # only stale rows
    await pilot.press("enter")


async def open_input(pilot) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("4")  # only rows waiting for input
    await pilot.press("enter")


async def answer_question(pilot) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("slash", *"Translate", "enter")  # the session asking a question
    await pilot.pause()
    await pilot.press("r", "down", "space")  # the dialog, the second option chosen


async def answer_permission(pilot) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("4", "down")
    await pilot.press("r")


async def on_busy(pilot) -> None:  # type: ignore[no-untyped-def]
    """The cursor on a run that hands work to a sub-agent."""
    app = pilot.app
    key = next(k for k, r in app.view.rows.items() if "OAuth" in r.title)
    app.main_screen.table.select_key(key)
    await pilot.pause(0.5)


async def conversation(pilot) -> None:  # type: ignore[no-untyped-def]
    await on_busy(pilot)
    await pilot.press("m")


async def main() -> None:
    await shoot("main")
    await shoot("main-80x24", size=(80, 24))
    await shoot("details-pane", size=(200, 50), steps=on_busy)
    await shoot("conversation", size=(120, 32), steps=conversation)
    await shoot("detail-stale", steps=open_stale)
    await shoot("detail-input", steps=open_input)
    await shoot("dialog-permission", size=(120, 32), steps=answer_permission)
    await shoot("dialog-question", size=(120, 32), steps=answer_question)
    await shoot("theme-light", theme="ocwatch-light")
    await shoot("theme-contrast", theme="ocwatch-contrast")


if __name__ == "__main__":
    asyncio.run(main())
