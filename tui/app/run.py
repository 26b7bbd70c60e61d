"""Entry points the CLI calls: the dashboard on real servers, and `ocwatch demo`."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from tui.core.fleet import Fleet
from tui.core.settings import Auth, Settings

from .app import create_app


def run_dashboard(urls: Sequence[str], *, auth: Auth | None, settings: Settings,
                  theme: str | None = None) -> int:
    """Run the dashboard on `urls` until the user quits; the exit code."""
    fleet = Fleet(list(urls), auth=auth, settings=settings)
    app = create_app(fleet, theme=theme, server_urls=list(urls))
    app.run()
    return app.return_code or 0


def run_demo(*, theme: str | None = None, speed: float = 1.0,
             settings: Settings | None = None) -> int:
    """Start the built-in simulated server on a loopback port and run the dashboard on it."""
    from tui.demo.server import DemoServer

    async def main() -> int:
        async with DemoServer(speed=speed) as server:
            fleet = Fleet([server.url], settings=settings or Settings())
            app = create_app(fleet, theme=theme, server_urls=[server.url])
            app.startup_message = (
                f"Demo: a simulated OpenCode server at {server.url}. Its sessions cycle through "
                "every state; press ? for the keys.")
            await app.run_async()
            return app.return_code or 0

    return asyncio.run(main())
