"""The dashboard acting on a real `opencode serve`: keys pressed with Pilot on a live Fleet.

Every wait polls the app's View (or the server) against a deadline; nothing sleeps blindly.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

from textual.pilot import Pilot
from textual.widgets import RadioSet

from tui.app import DashboardOptions, OcwatchApp, create_app
from tui.app.actions import FleetActions
from tui.app.screens.confirm import ConfirmScreen
from tui.app.screens.permission import PermissionScreen
from tui.app.screens.question import QuestionScreen
from tui.core.fleet import Fleet
from tui.core.view import SessionRow

from .driver import Driver
from .oc_server import OpenCodeServer
from .scripted_model import ScriptedModel

SIZE = (160, 48)
DEADLINE = 90.0


def dashboard(server: OpenCodeServer) -> OcwatchApp:
    fleet = Fleet([server.url])
    return create_app(
        fleet, DashboardOptions(server_urls=[server.url], actions=FleetActions(fleet))
    )


def row_of(app: OcwatchApp, sid: str) -> SessionRow | None:
    found = app.view.find(sid) if app.view is not None else []
    return found[0] if found else None


async def until(
    pilot: Pilot[None], condition: Callable[[], object], what: str, timeout: float = DEADLINE
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, f"timed out after {timeout}s waiting for {what}"
        await pilot.pause(0.1)


async def until_row(
    pilot: Pilot[None], app: OcwatchApp, sid: str, test: Callable[[SessionRow], bool], what: str
) -> SessionRow:
    await until(pilot, lambda: (r := row_of(app, sid)) is not None and test(r), what)
    row = row_of(app, sid)
    assert row is not None
    return row


async def press_on(pilot: Pilot[None], app: OcwatchApp, row: SessionRow, *keys: str) -> None:
    """Put the cursor on the row (as a user would with the arrows) and press keys."""
    await until(pilot, lambda: app.main_screen.table.select_key(row.key), "the row on screen")
    await pilot.press(*keys)
    await pilot.pause()


def asking(kind: str) -> Callable[[SessionRow], bool]:
    return lambda r: r.state == "input" and any(p.kind == kind for p in r.pending)


def idle(reason: str) -> Callable[[SessionRow], bool]:
    return lambda r: r.state == "idle" and r.reason == reason and r.settled


def errors(app: OcwatchApp) -> list[str]:
    return [n.message for n in app._notifications if n.severity == "error"]


async def test_permission_approved_from_the_dashboard_completes(
    oc: Driver, oc_server: OpenCodeServer
) -> None:
    sid = oc.run("permission", title="dashboard: allow once")["id"]
    app = dashboard(oc_server)
    async with app.run_test(size=SIZE) as pilot:
        row = await until_row(pilot, app, sid, asking("permission"), "the permission")
        await press_on(pilot, app, row, "r")
        assert isinstance(app.screen, PermissionScreen)
        await pilot.press("o")
        await until_row(pilot, app, sid, idle("completed"), "completed after once")
        assert errors(app) == []
    last = await asyncio.to_thread(oc.last_assistant, sid)
    assert last is not None and last["info"]["time"].get("completed")


async def test_rejected_permissions_end_as_the_server_decides(
    oc: Driver, oc_server: OpenCodeServer
) -> None:
    plain = oc.run("permission", title="dashboard: reject")["id"]
    told = oc.run("permission", title="dashboard: reject with a message")["id"]
    app = dashboard(oc_server)
    async with app.run_test(size=SIZE) as pilot:
        row = await until_row(pilot, app, plain, asking("permission"), "the first permission")
        await press_on(pilot, app, row, "r", "r", "enter")  # reject: shown, then confirmed
        row = await until_row(pilot, app, told, asking("permission"), "the second permission")
        await press_on(pilot, app, row, "r")
        assert isinstance(app.screen, PermissionScreen)
        await pilot.press("m", *"use rsync", "enter")
        # No message: the refused tool ends the run. A message: the agent goes on with it.
        ended = await until_row(pilot, app, plain, idle("aborted"), "aborted after reject")
        assert "refused tool bash" in ended.evidence[0]
        await until_row(pilot, app, told, idle("completed"), "completed after the feedback")
        assert errors(app) == []


async def test_question_answered_from_the_dashboard_completes(
    oc: Driver, oc_server: OpenCodeServer
) -> None:
    sid = oc.run("question", title="dashboard: answer")["id"]
    req = await asyncio.to_thread(oc.wait_question, sid)
    first = req["questions"][0]["options"][0]["label"]
    app = dashboard(oc_server)
    async with app.run_test(size=SIZE) as pilot:
        row = await until_row(pilot, app, sid, asking("question"), "the question")
        await press_on(pilot, app, row, "r")
        assert isinstance(app.screen, QuestionScreen)
        assert isinstance(app.focused, RadioSet)
        await pilot.press("space", "ctrl+s")  # the first option
        await until_row(pilot, app, sid, idle("completed"), "completed after the answer")
        assert errors(app) == []
    messages = await asyncio.to_thread(oc.messages, sid)
    tools = [p for m in messages for p in m["parts"] if p.get("tool") == "question"]
    assert tools and first in str(tools[-1]["state"].get("output", ""))


async def test_abort_from_the_dashboard_ends_idle_aborted(
    oc: Driver, oc_server: OpenCodeServer, scripted_model: ScriptedModel
) -> None:
    key = f"dash-abort-{uuid.uuid4().hex[:8]}"
    sid = oc.run("hang", key, title="dashboard: abort")["id"]
    app = dashboard(oc_server)
    try:
        async with app.run_test(size=SIZE) as pilot:
            row = await until_row(pilot, app, sid, lambda r: r.state == "busy", "busy")
            await press_on(pilot, app, row, "a")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await until_row(pilot, app, sid, idle("aborted"), "aborted")
            assert errors(app) == []
            await press_on(pilot, app, row, "a")
            assert app.screen is app.main_screen  # idle now: nothing to abort
    finally:
        scripted_model.release(key)


async def test_a_request_answered_elsewhere_shows_the_server_error(
    oc: Driver, oc_server: OpenCodeServer
) -> None:
    sid = oc.run("permission", title="dashboard: answered elsewhere")["id"]
    app = dashboard(oc_server)
    async with app.run_test(size=SIZE) as pilot:
        row = await until_row(pilot, app, sid, asking("permission"), "the permission")
        await press_on(pilot, app, row, "r")
        screen = app.screen
        assert isinstance(screen, PermissionScreen)
        await asyncio.to_thread(oc.reply_permission, screen.pending.id, "once")
        await pilot.press("o")  # too late: the server says so, in one line
        await until(pilot, lambda: errors(app), "the error notification")
        [error] = errors(app)
        assert error.startswith(f"no open permission or question {screen.pending.id} on ")
        assert error.endswith("(already answered, or never asked)")
        await until_row(pilot, app, sid, idle("completed"), "completed (the other answer)")


async def test_while_attached_alerts_and_the_exporter_keep_counting(
    oc: Driver, oc_server: OpenCodeServer, tmp_path
) -> None:
    """Issue 41: `A` hands the terminal to OpenCode (a stand-in that runs until released)
    without stopping the dashboard: a session created and asking for a permission meanwhile
    on the real server reaches the View, is marked unread, alerts (its first sight is already
    asking: an off-terminal sink gets it while OpenCode has the terminal), and the exporter
    counts its request; the dashboard is back when OpenCode exits."""
    from tests.app.test_launch import Elsewhere, waiting_stand_in
    from tui.app.launch import DEFAULT_ATTACH, Launcher
    from tui.export.deliver import Deliverer
    from tui.export.metrics import Metrics

    release = tmp_path / "release"
    called = waiting_stand_in(tmp_path / "bin", release)
    fleet = Fleet([oc_server.url])
    metrics = Metrics()
    launcher = Launcher(
        DEFAULT_ATTACH,
        auth_of=fleet.auth_of,
        env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)},
        attach_in="terminal",
    )
    here = oc.create_session(title="attached to")["id"]
    sink = Elsewhere()
    app = create_app(
        fleet,
        DashboardOptions(
            server_urls=[oc_server.url],
            actions=FleetActions(fleet),
            observers=[metrics.publish],
            launcher=launcher,
            deliverer=Deliverer([sink], lambda _text: None),
        ),
    )

    def pending() -> float:
        family = next(f for f in metrics.collect() if f.name == "ocwatch_pending_requests")
        return sum(s.value for s in family.samples if s.labels.get("kind") == "permission")

    async with app.run_test(size=SIZE) as pilot:
        row = await until_row(pilot, app, here, lambda r: r.state == "idle", "the session")
        await press_on(pilot, app, row, "A")
        await until(pilot, lambda: called.exists() and app.handed_over, "OpenCode running")
        before = pending()
        sid = oc.run("permission", title="asks while attached")["id"]
        asked = await until_row(pilot, app, sid, asking("permission"), "the permission")
        await until(pilot, lambda: pending() == before + 1, "the exporter's count")
        await until(pilot, lambda: asked.key in app.unread, "the unread mark")
        await until(
            pilot,
            lambda: ("input", sid) in [(p.kind, p.session_id) for p in sink.sent],
            "the alert",
        )
        assert app.handed_over
        release.touch()
        await until(pilot, lambda: not app.handed_over, "the dashboard back")
        oc.reply_permission(asked.pending[0].id, "reject")
