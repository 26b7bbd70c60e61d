"""The dashboard on a V2 (2.0.15) server: its rows, details and servers view, from the answers
the real server gave (tests/fakes_v2.py over tests/fixtures/v2), through the live Fleet."""

from __future__ import annotations

from typing import Any

import pytest

from tests.app.fake_actions import FakeActions
from tests.app.test_actions import until
from tests.app.test_pilot import servers_text
from tests.fakes_v2 import FakeV2, last_frame_time, load
from tui.app import DashboardOptions, create_app
from tui.app.inspect import FleetPeek
from tui.app.screens.question import QuestionScreen
from tui.app.screens.servers import ServersScreen
from tui.app.widgets.session_table import row_key_str
from tui.core.fleet import Fleet
from tui.core.settings import Auth

URL = "http://127.0.0.1:4096"
NOW = last_frame_time() + 90  # a fixed clock: every age on screen is the same at every run

#: each fixture's session as the fake shows it ("waiting" when the fixture has that moment)
SHOWN = {
    "completed": "completed",
    "failed": "error",
    "interrupted": "busy",
    "retry": "retry",
    "permission_once": "input",
    "permission_reject": "input",
    "question_answered": "input",
    "question_dismissed": "input",
    "question_interrupted": "input",
}


def v2_app(api: FakeV2, live_details: bool = False, actions: Any = None) -> Any:
    """The dashboard on `api` (`live_details`: the details pane reads the selected session
    from the server; off for the screenshots, whose pane would then depend on when it lands)."""
    fleet = Fleet([URL], auth=Auth("opencode", "pw"), transport=api.transport(), clock=lambda: NOW)
    peek = FleetPeek(fleet) if live_details else None
    return create_app(
        fleet, DashboardOptions(server_urls=[URL], clock=lambda: NOW, peek=peek, actions=actions)
    )


def cells(app: Any, sid: str) -> str:
    table = app.main_screen.table
    return " ".join(c.plain for c in table.get_row(row_key_str((URL, sid))))


async def loaded(pilot: Any, app: Any) -> None:
    """Until every session is a row and the stream is connected."""

    def ready() -> bool:
        try:
            rows = app.main_screen.table.row_count
            bar = str(app.main_screen.query_one("ServerBar").render())
        except Exception:  # (not composed yet)
            return False
        return rows == len(SHOWN) and "connected" in bar

    await until(pilot, ready)


async def test_a_v2_server_reads_as_the_real_one_did_and_says_v2() -> None:
    api = FakeV2()
    app = v2_app(api, live_details=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await loaded(pilot, app)
        for name, word in SHOWN.items():
            sid = load(name)["session_id"]
            assert word in cells(app, sid), (name, cells(app, sid))
        bar = str(app.main_screen.query_one("ServerBar").render())
        assert "v2.0.15" in bar and "OpenCode V2" in bar
        # the details pane reads the V2 transcript of the selected session
        asking = (URL, load("permission_once")["session_id"])
        assert app.main_screen.table.select_key(asking)
        await until(pilot, lambda: "I will run a command." in app.main_screen.pane.text)
        assert "shell: echo rec-once" in app.main_screen.pane.text
        # the stream opens on V2's route (V1's is tried at most once, before the probe answers)
        assert api.hits.get("/api/event", 0) == 1 and api.hits.get("/global/event", 0) <= 1
        await pilot.press("i")
        await until(
            pilot, lambda: isinstance(app.screen, ServersScreen) and bool(servers_text(app))
        )
        (panel,) = servers_text(app)
        assert panel["url"] == f"{URL} · OpenCode V2 2.0.15"
        assert panel["sessions"].startswith(f"{len(SHOWN)}:")


@pytest.mark.parametrize("size", [(80, 24), (140, 36)])
def test_a_v2_server_on_screen(snap_compare, size: tuple[int, int]) -> None:
    app = v2_app(FakeV2())

    async def ready(pilot: Any) -> None:
        await loaded(pilot, app)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=ready)


@pytest.mark.parametrize("size", [(80, 24), (140, 36)])
def test_a_v2_form_in_its_dialog_on_screen(snap_compare, size: tuple[int, int]) -> None:
    """Issue 39: a V2 form (a question tool's) in the answer dialog, its field's options."""
    app = v2_app(FakeV2(), actions=FakeActions())

    async def opened(pilot: Any) -> None:
        await loaded(pilot, app)
        assert app.main_screen.table.select_key((URL, load("question_answered")["session_id"]))
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, QuestionScreen))
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=opened)


@pytest.mark.parametrize("size", [(80, 24), (140, 36)])
def test_a_v2_sessions_details_on_screen(snap_compare, size: tuple[int, int]) -> None:
    """Issue 39: the details view of a V2 session waiting for a permission, read from its
    transcript (the model, the agent, the tool call, the tokens)."""
    app = v2_app(FakeV2(), live_details=True)

    async def opened(pilot: Any) -> None:
        await loaded(pilot, app)
        assert app.main_screen.table.select_key((URL, load("permission_once")["session_id"]))
        await pilot.press("enter")
        await until(pilot, lambda: "I will run a command." in _screen_text(app))
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=opened)


def _screen_text(app: Any) -> str:
    from textual.widgets import Static

    return " ".join(str(w.render()) for w in app.screen.query(Static))


async def test_a_v2_conversation_shows_where_runs_ended_and_the_retry_waited_on() -> None:
    """Issue 39: the conversation (`m`) of V2 sessions reads their typed transcripts: a run's
    `idle` entry says where it ended and how; an unfinished reply waiting on a retry says its
    attempt and error."""
    from tui.app.screens.conversation import ConversationScreen

    app = v2_app(FakeV2(), live_details=True)
    async with app.run_test(size=(140, 36)) as pilot:
        await loaded(pilot, app)
        for name, want in (
            ("completed", "── idle (succeeded)"),
            ("retry", "↻ retry attempt 2: scripted overload, try again later"),
        ):
            assert app.main_screen.table.select_key((URL, load(name)["session_id"]))
            await pilot.press("m")
            await until(pilot, lambda: isinstance(app.screen, ConversationScreen))
            await until(pilot, lambda w=want: w in app.screen.body.text)
            await pilot.press("escape")
            await until(pilot, lambda: app.screen is app.main_screen)
