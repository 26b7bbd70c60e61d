"""What users see: SVG snapshots of every screen (regenerate with `--snapshot-update`, then look
at them before committing: `rsvg-convert x.svg -o x.png`)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.pilot import Pilot

from tui.app.screens.detail import DetailScreen
from tui.core.view import View

from . import views
from .conftest import make_app
from .fake_actions import FakeActions
from .fake_peek import ChatPeek, FakePeek, chat
from .test_actions import pulled, until

WIDE = (160, 48)
NARROW = (80, 24)


def test_main_every_state_wide(snap_compare) -> None:
    app, _ = make_app()
    assert snap_compare(app, terminal_size=WIDE)


def test_main_narrow_80x24(snap_compare) -> None:
    app, _ = make_app()
    assert snap_compare(app, terminal_size=NARROW)


@pytest.mark.parametrize("size", [NARROW, (120, 30)], ids=["80x24", "120x30"])
def test_an_outage_keeps_the_rows_dimmed_in_their_places(snap_compare, size) -> None:
    """Server A down for 2m05s: its rows read unknown (unreachable), dimmed, each saying what
    it last was, in the order they had; the server bar says how long it has been down."""
    view = views.down(views.every_state(), views.A, views.NOW - 125)
    app, _ = make_app(view)
    assert snap_compare(app, terminal_size=size)


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x48"])
def test_a_fleet_of_five_servers(snap_compare, size) -> None:
    """Five servers: one header line of counts, the sessions grouped by server."""
    view = views.fleet()
    app, _ = make_app(view, server_urls=[s.url for s in view.servers])
    assert snap_compare(app, terminal_size=size)


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x48"])
def test_grouped_by_folder(snap_compare, size) -> None:
    """f: a line per folder, its sessions counted by state, the most urgent group first."""
    app, _ = make_app()
    assert snap_compare(app, terminal_size=size, press=["f"])


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x48"])
def test_a_first_snapshot_shown_while_it_loads(snap_compare, size: tuple[int, int]) -> None:
    """Rows whose last message is not read yet say `loading` and sort last; the counts line
    and the server bar say how many are still loading."""
    app, _ = make_app(views.partly_loaded(), server_urls=[views.A])
    assert snap_compare(app, terminal_size=size)


async def _doing_shown(pilot: Pilot, key: tuple[str, str]) -> None:
    """Select `key` and wait until what it is doing is on screen."""
    app = pilot.app
    await pilot.pause()
    assert app.main_screen.table.select_key(key)  # type: ignore[attr-defined]
    await until(pilot, lambda: app.inspector.activity(key) is not None)  # type: ignore[attr-defined]
    await pilot.pause()


@pytest.mark.parametrize("size", [WIDE, (200, 50)], ids=["160x48", "200x50"])
def test_details_pane_beside_the_table(snap_compare, size: tuple[int, int]) -> None:
    """From 140 columns: the cursor's session and what it is doing, beside the table."""
    app, _ = make_app(peek=FakePeek())
    assert snap_compare(
        app, terminal_size=size, run_before=lambda pilot: _doing_shown(pilot, (views.A, "ses_busy"))
    )


def test_detail_doing_80x24(snap_compare) -> None:
    """Narrow: the detail view's Doing section says the same."""
    app, _ = make_app(peek=FakePeek())

    async def open_detail(pilot: Pilot) -> None:  # (no pane at 80 columns: the view reads it)
        key = (views.A, "ses_busy")
        await pilot.pause()
        assert app.main_screen.table.select_key(key)
        await pilot.press("d")
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, DetailScreen) and app.inspector.activity(key) is not None
            ),
        )
        await pilot.pause()

    assert snap_compare(app, terminal_size=NARROW, run_before=open_detail)


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x48"])
def test_conversation(snap_compare, size: tuple[int, int]) -> None:
    """The conversation view at the end of a 40-message session: prompts, replies, tool
    calls on one line each, and a running reply."""
    messages = chat(40)
    messages[-1]["info"]["time"].pop("completed")  # type: ignore[index, union-attr]
    messages[-1]["parts"].append(  # type: ignore[union-attr]
        {
            "type": "tool",
            "tool": "edit",
            "state": {
                "status": "running",
                "input": {"filePath": "/home/dev/src/shop/src/app.py"},
                "time": {"start": int(views.clock() * 1000) - 75_000},
            },
        }
    )
    app, _ = make_app(peek=ChatPeek(messages))

    async def open_conversation(pilot: Pilot) -> None:
        await pilot.pause()
        assert app.main_screen.table.select_key((views.A, "ses_busy"))
        await pilot.press("m")

        def at_the_end() -> bool:  # all read, and the view scrolled to its end
            screen = app.screen
            if not getattr(screen, "loaded_all", False):
                return False
            body = screen.body  # type: ignore[attr-defined]
            return bool(body.max_scroll_y > 0 and body.scroll_y == body.max_scroll_y)

        await until(pilot, at_the_end)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=open_conversation)


#: A test run and a fix, in the shape a real 1.18.33 server stores them
PYTEST_OUTPUT = """\
....F.
=================================== FAILURES ===================================
____________________________ test_total_with_coupon ____________________________

    def test_total_with_coupon():
        cart = Cart([Item("shoe", 100)], coupon=Coupon(10))
>       assert cart.total() == 90
E       assert 100 == 90

tests/test_cart.py:14: AssertionError
1 failed, 5 passed in 0.12s
"""
CART_DIFF = """\
Index: /home/dev/src/shop/src/cart.py
===================================================================
--- /home/dev/src/shop/src/cart.py
+++ /home/dev/src/shop/src/cart.py
@@ -10,5 +10,8 @@
     coupon: Coupon | None = None
     def total(self) -> int:
-        return sum(i.price for i in self.items)
+        gross = sum(i.price for i in self.items)
+        if self.coupon:
+            gross -= gross * self.coupon.percent // 100
+        return gross
"""
TOOL_PARTS = {
    "bash": {
        "type": "tool",
        "tool": "bash",
        "callID": "call_1",
        "state": {
            "status": "completed",
            "input": {
                "command": "cd tests\npytest -q test_cart.py",
                "description": "Run the cart tests",
            },
            "output": PYTEST_OUTPUT,
            "metadata": {"output": PYTEST_OUTPUT, "exit": 1},
        },
    },
    "edit": {
        "type": "tool",
        "tool": "edit",
        "callID": "call_2",
        "state": {
            "status": "completed",
            "input": {
                "filePath": "/home/dev/src/shop/src/cart.py",
                "oldString": "        return sum(i.price for i in self.items)",
                "newString": "        gross = ...",
            },
            "output": "Edit applied successfully.",
            "title": "src/cart.py",
            "metadata": {"diff": CART_DIFF, "filediff": {"additions": 4, "deletions": 1}},
        },
    },
}


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x48"])
@pytest.mark.parametrize("tool", ["bash", "edit"])
def test_conversation_tool_call_expanded(snap_compare, tool: str, size: tuple[int, int]) -> None:
    """A tool call expanded (enter): a command with its lines and its output, or an edit's
    diff, under a gutter, the call's line drawn as the cursor."""
    messages = chat(6)
    t = int(views.clock() * 1000) - 60_000
    part = {**TOOL_PARTS[tool]}
    part["state"] = {**part["state"], "time": {"start": t, "end": t + 2_300}}  # type: ignore[dict-item]
    messages[-1]["parts"] = [{"type": "text", "text": "Let me check."}, part]
    app, _ = make_app(peek=ChatPeek(messages))

    async def expand(pilot: Pilot) -> None:
        await pilot.pause()
        assert app.main_screen.table.select_key((views.A, "ses_busy"))
        await pilot.press("m")
        await until(
            pilot,
            lambda: getattr(app.screen, "loaded_all", False) and bool(app.screen.calls),  # type: ignore[attr-defined]
        )
        await pilot.press("enter")
        await until(pilot, lambda: bool(app.screen.toggled))  # type: ignore[attr-defined]
        await pilot.pause()  # (ends with the reveal the expanding asked for after its layout)

    assert snap_compare(app, terminal_size=size, run_before=expand)


def test_main_tiny_60x15(snap_compare) -> None:
    """60 columns: no folder either, the header says what is left out, no value cut."""
    app, _ = make_app()
    assert snap_compare(app, terminal_size=(60, 15))


@pytest.mark.parametrize("theme", ["ocwatch-dark", "ocwatch-light", "ocwatch-contrast"])
def test_main_each_theme(snap_compare, theme: str) -> None:
    app, _ = make_app(theme=theme)
    assert snap_compare(app, terminal_size=(120, 30))


@pytest.mark.parametrize(
    "session", ["ses_stale", "ses_perm", "ses_question", "ses_error", "ses_lost"]
)
def test_detail(snap_compare, session: str) -> None:
    app, _ = make_app()

    async def open_detail(pilot: Pilot) -> None:
        app.push_screen(DetailScreen(app.dashboard, (views.A, session)))
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 36), run_before=open_detail)


def test_detail_narrow_input(snap_compare) -> None:
    app, _ = make_app()

    async def open_detail(pilot: Pilot) -> None:
        app.push_screen(DetailScreen(app.dashboard, (views.A, "ses_perm")))
        await pilot.pause()

    assert snap_compare(app, terminal_size=NARROW, run_before=open_detail)


@pytest.mark.parametrize("size", [NARROW, WIDE])
def test_servers_view_with_drift(snap_compare, size: tuple[int, int]) -> None:
    app, _ = make_app(views.with_drift())
    assert snap_compare(app, terminal_size=size, press=["i"])


def test_no_server_reachable(snap_compare) -> None:
    app, _ = make_app(views.unreachable(), server_urls=[views.A])
    assert snap_compare(app, terminal_size=NARROW)


def test_filtered_input_only_with_filter_box(snap_compare) -> None:
    app, _ = make_app()
    assert snap_compare(app, terminal_size=(120, 30), press=["4", "slash", "d", "a"])


def test_help(snap_compare) -> None:
    app, _ = make_app()
    assert snap_compare(app, terminal_size=(100, 50), press=["question_mark"])


def test_collapsed_and_sorted_by_cost(snap_compare) -> None:
    app, _ = make_app()

    async def fold(pilot: Pilot) -> None:
        await pilot.pause()  # the first View is shown
        table = app.main_screen.table
        table.set_sort("cost")
        table.fold_all(True)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 30), run_before=fold)


def press_on(session: str, *keys: str):
    """Put the cursor on a session, then press keys (opens a dialog)."""

    async def run(pilot: Pilot) -> None:
        await pilot.pause()
        pilot.app.main_screen.table.select_key((views.A, session))
        await pilot.press(*keys)
        await pilot.pause()

    return run


@pytest.mark.parametrize("size", [(100, 32), NARROW], ids=["100x32", "80x24"])
def test_permission_dialog(snap_compare, size: tuple[int, int]) -> None:
    app, _ = make_app(actions=FakeActions())
    assert snap_compare(app, terminal_size=size, run_before=press_on("ses_perm", "r"))


@pytest.mark.parametrize(
    ("keys", "size"),
    [(("r", "a"), NARROW), (("r", "r"), (100, 32))],
    ids=["always-80x24", "reject-100x32"],
)
def test_permission_dialog_shows_a_broad_answer_before_it_is_sent(snap_compare, keys, size):
    """`r a` / `r r` from the table: what always / reject would do, and Confirm focused."""
    app, _ = make_app(actions=FakeActions())
    assert snap_compare(app, terminal_size=size, run_before=press_on("ses_perm", *keys))


@pytest.mark.parametrize("size", [(100, 32), NARROW, WIDE], ids=["100x32", "80x24", "160x48"])
def test_a_command_of_two_lines_is_shown_as_two(snap_compare, size: tuple[int, int]) -> None:
    """Issue 41: `echo …⏎rm -rf ~/projects` is two lines in the dialog, never one `echo`; the
    table's cell says `(+1 line)`."""
    app, _ = make_app(views.sneaky_permission(), actions=FakeActions())
    assert snap_compare(app, terminal_size=size, run_before=press_on("ses_perm", "r"))


def test_a_long_command_scrolls_with_a_sign_of_more_at_80x24(snap_compare) -> None:
    """Issue 41: a command of 30 lines at 80x24: the dialog's body scrolls (its scrollbar
    says there is more, and the line under it how many lines are below) and the buttons stay
    in view; the patterns and always rows below the command are reached by scrolling, never
    cut off without a sign."""
    command = "\n".join(f"echo step {i}" for i in range(1, 30)) + "\nrm -rf ~/projects"
    app, _ = make_app(views.sneaky_permission(command), actions=FakeActions())
    assert snap_compare(app, terminal_size=NARROW, run_before=press_on("ses_perm", "r"))


def test_permission_dialog_long_diff_scrolls(snap_compare) -> None:
    """The diff scrolls; the buttons stay in view."""
    app, _ = make_app(views.sub_agent_edit(), actions=FakeActions())
    assert snap_compare(app, terminal_size=NARROW, run_before=press_on("ses_parent", "r"))


@pytest.mark.parametrize("size", [(100, 32), NARROW], ids=["100x32", "80x24"])
def test_question_dialog(snap_compare, size: tuple[int, int]) -> None:
    app, _ = make_app(actions=FakeActions())
    assert snap_compare(
        app, terminal_size=size, run_before=press_on("ses_question", "r", "down", "space")
    )


def test_question_dialog_several_questions(snap_compare) -> None:
    app, _ = make_app(views.several_questions(), actions=FakeActions())
    assert snap_compare(
        app,
        terminal_size=(100, 40),
        run_before=press_on(
            "ses_question", "r", "space", "down", "down", "space", "tab", "d", "o", "c", "s"
        ),
    )


def test_abort_confirmation(snap_compare) -> None:
    app, _ = make_app(actions=FakeActions())
    assert snap_compare(app, terminal_size=NARROW, run_before=press_on("ses_busy", "a"))


def test_unread_marks(snap_compare) -> None:
    app, source = make_app()

    async def change(pilot: Pilot) -> None:
        await pilot.pause()
        view = source.current()
        asks = replace(views.PERMISSION, id="per_done", session_id="ses_done")  # its own request
        view = views.with_row(
            view, (views.A, "ses_done"), state="input", reason=None, pending=(asks,)
        )
        view = views.with_row(view, (views.A, "ses_child1"), state="idle", reason="error")
        changed = View(view.generated_at + 1, view.servers, view.rows)
        source.set(changed)
        await pulled(pilot, app, changed)

    assert snap_compare(app, terminal_size=(120, 30), run_before=change)


@pytest.mark.parametrize("size", [WIDE, NARROW], ids=["wide", "80x24"])
def test_8_shows_what_needs_you_or_runs(snap_compare, size: tuple[int, int]) -> None:
    """Issue 41: one key shows the active rows (input, busy, retry, stale, unknown); idle
    ones are left out, counted."""
    app, _ = make_app()

    async def press(pilot: Pilot[None]) -> None:
        await pilot.pause()
        await pilot.press("8")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=press)
