"""The dashboard acting on a real V2 (2.0.15) server (issue 39, item 1): the same keys as on V1
(tests/integration/test_dashboard_actions.py), pressed with Pilot on a live Fleet; the server
is seen to apply each, and the row changes when it confirms."""

from __future__ import annotations

import asyncio
import json
import uuid

from textual.widgets import RadioSet

from tui.app import DashboardOptions, OcwatchApp, create_app
from tui.app.actions import FleetActions
from tui.app.screens.confirm import ConfirmScreen
from tui.app.screens.permission import PermissionScreen
from tui.app.screens.question import QuestionScreen
from tui.core.fleet import Fleet
from tui.core.settings import Auth

from .driver_v2 import V2Driver
from .oc_server import OpenCodeServer
from .scripted_model import ScriptedModel
from .test_dashboard_actions import SIZE, asking, errors, idle, press_on, until_row


def dashboard(server: OpenCodeServer) -> OcwatchApp:
    assert server.password is not None
    fleet = Fleet([server.url], auth=Auth("opencode", server.password))
    return create_app(
        fleet, DashboardOptions(server_urls=[server.url], actions=FleetActions(fleet))
    )


async def test_a_permission_approved_from_the_dashboard_completes(
    oc2: V2Driver, oc2_server: OpenCodeServer
) -> None:
    sid = await asyncio.to_thread(oc2.run, "permission", "echo v2-dashboard-once")
    app = dashboard(oc2_server)
    async with app.run_test(size=SIZE) as pilot:
        row = await until_row(pilot, app, sid, asking("permission"), "the permission")
        await press_on(pilot, app, row, "r")
        assert isinstance(app.screen, PermissionScreen)
        await pilot.press("o")
        await until_row(pilot, app, sid, idle("completed"), "completed after once")
        assert errors(app) == []
    assert (await asyncio.to_thread(oc2.session, sid)).get("outcome") == "succeeded"


async def test_a_form_answered_from_the_dashboard_completes(
    oc2: V2Driver, oc2_server: OpenCodeServer
) -> None:
    sid = await asyncio.to_thread(oc2.run, "question")
    form = await asyncio.to_thread(oc2.wait_form, sid)
    first = form["fields"][0]["options"][0]
    app = dashboard(oc2_server)
    async with app.run_test(size=SIZE) as pilot:
        row = await until_row(pilot, app, sid, asking("question"), "the form")
        await press_on(pilot, app, row, "r")
        assert isinstance(app.screen, QuestionScreen)
        assert isinstance(app.focused, RadioSet)
        await pilot.press("space", "ctrl+s")  # the first option
        await until_row(pilot, app, sid, idle("completed"), "completed after the answer")
        assert errors(app) == []
    said = json.dumps(await asyncio.to_thread(oc2.messages, sid, 10))
    assert f'=\\"{first["value"]}\\"' in said


async def test_abort_from_the_dashboard_interrupts(
    oc2: V2Driver, oc2_server: OpenCodeServer, scripted_model: ScriptedModel
) -> None:
    key = f"v2-dash-abort-{uuid.uuid4().hex[:8]}"
    sid = await asyncio.to_thread(oc2.run, "hang", key)
    app = dashboard(oc2_server)
    try:
        async with app.run_test(size=SIZE) as pilot:
            row = await until_row(pilot, app, sid, lambda r: r.state == "busy", "busy")
            await press_on(pilot, app, row, "a")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await until_row(pilot, app, sid, idle("aborted"), "aborted")
            assert errors(app) == []
        assert (await asyncio.to_thread(oc2.session, sid)).get("outcome") == "interrupted"
    finally:
        scripted_model.release(key)
