"""The dashboard against the built-in demo server (real HTTP + SSE through the Fleet)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from tui.app import DashboardOptions, create_app
from tui.app.actions import FleetActions
from tui.app.widgets.session_table import SessionTable
from tui.core.fleet import Fleet

demo_server = pytest.importorskip("tui.demo.server")


async def test_demo_state_change_reaches_the_table() -> None:
    async with demo_server.DemoServer(speed=20.0, heartbeat=1.0) as server:
        fleet = Fleet([server.url])
        app = create_app(
            fleet, DashboardOptions(server_urls=[server.url], actions=FleetActions(fleet))
        )
        async with app.run_test(size=(160, 48)) as pilot:
            table = app.main_screen.query_one(SessionTable)

            def states() -> dict[str, str]:
                return {key: table.get_cell(key, "state").plain for key in table.row_keys}

            async def until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
                loop = asyncio.get_running_loop()
                deadline = loop.time() + timeout
                while not condition():
                    assert loop.time() < deadline, "timed out"
                    await pilot.pause(0.05)

            await until(lambda: table.row_count > 0)
            first = states()
            await until(lambda: any(states().get(k, v) != v for k, v in first.items()))
            server_bar = str(app.main_screen.query_one("#servers").render())
            assert "connected" in server_bar


async def test_a_scripted_restart_is_told_as_one() -> None:
    """Issue 41 item 10: the demo's own restart (its script's) is said to be scripted, so that a
    newcomer does not take it for a fault."""
    from tui.app.run import wire_demo

    server = demo_server.DemoServer(speed=20.0, heartbeat=1.0)
    server.freeze()
    async with server:
        fleet = Fleet([server.url])
        app = create_app(
            fleet, DashboardOptions(server_urls=[server.url], actions=FleetActions(fleet))
        )
        wire_demo(app, server, read_only=False)
        async with app.run_test(size=(120, 30)) as pilot:
            await server.restart()
            await pilot.pause()
            said = [n.message for n in app._notifications]
            assert any(m.startswith("A scripted restart (demo)") for m in said), said
