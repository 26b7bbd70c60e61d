"""The details pane on a real `opencode serve` (with a password): the reply text the scripted
model sent, its todo list and the tool waiting for a permission are on screen."""

from __future__ import annotations

import uuid

from tui.app import DashboardOptions, OcwatchApp, create_app
from tui.app.actions import FleetActions
from tui.app.inspect import FleetPeek
from tui.core.fleet import Fleet
from tui.core.settings import Auth

from .driver import Driver
from .oc_server import OpenCodeServer
from .test_dashboard_actions import SIZE, row_of, until, until_row


def pane_text(app: OcwatchApp) -> str:
    return app.main_screen.pane.text


async def test_the_pane_shows_what_real_sessions_did(
    oc_server_auth: OpenCodeServer, oc_auth: Driver
) -> None:
    words = f"The scripted model wrote this for the pane {uuid.uuid4().hex[:8]}."
    done = oc_auth.run("text", words)
    todo = oc_auth.run("todo")
    asking = oc_auth.run("permission", f"echo details-{uuid.uuid4().hex[:6]}")
    oc_auth.wait_completed_idle(done["id"])
    oc_auth.wait_completed_idle(todo["id"])
    oc_auth.wait_permission(asking["id"])
    user, password = oc_server_auth.auth or ("", "")
    fleet = Fleet([oc_server_auth.url], auth=Auth(user, password))
    app = create_app(
        fleet,
        DashboardOptions(
            server_urls=[oc_server_auth.url], actions=FleetActions(fleet), peek=FleetPeek(fleet)
        ),
    )
    async with app.run_test(size=SIZE) as pilot:
        checks = [
            (done["id"], [words, "fake/fake · agent build", "≈ 0% of 100.0k"]),
            (todo["id"], ["1/3 done · now: Fix the parser", "Tool finished (todo)."]),
            (asking["id"], ["running", "bash: echo details-", "I will run a command."]),
        ]
        for sid, wanted in checks:
            row = await until_row(pilot, app, sid, lambda r: r.settled, f"{sid} settled")
            await until(
                pilot,
                lambda row=row: app.main_screen.table.select_key(row.key),
                "the row on screen",
            )
            await until(
                pilot,
                lambda wanted=wanted: all(w in pane_text(app) for w in wanted),
                f"{wanted} in the pane (it shows {pane_text(app)!r})",
                timeout=30,
            )
        assert row_of(app, asking["id"]) is not None
