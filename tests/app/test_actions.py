"""Acting from the dashboard (abort, reply, answer) with a fake `Actions`, driven by keys."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from textual import events
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Input, RadioSet, SelectionList, Static

from tui.app import OcwatchApp
from tui.app.screens.confirm import ConfirmScreen
from tui.app.screens.detail import DetailScreen
from tui.app.screens.permission import PermissionScreen, permission_fields
from tui.app.screens.question import QuestionScreen
from tui.core.actions import ActionError
from tui.core.view import Pending

from . import views
from .conftest import make_app
from .fake_actions import FakeActions

A = views.A
PERM = (A, "ses_perm")
QUESTION = (A, "ses_question")
BUSY = (A, "ses_busy")


async def until(pilot: Pilot[None], condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Until `condition` holds; the deadline is generous, for a loaded machine (the tests wait
    on what they assert, never on a fixed pause)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "timed out"
        await pilot.pause(0.02)


async def pulled(pilot: Pilot[None], app: OcwatchApp, view: object) -> None:
    """Until the app has pulled `view` from its source and is idle again: whatever showing it
    does is done, so an assertion that nothing came of it (no alert, no row redrawn) proves
    it, however late a loaded machine runs the pull."""
    await until(pilot, lambda: app.view is view)
    await pilot.pause()


async def settle(pilot: Pilot[None], app: OcwatchApp) -> None:
    """Until every action worker finished (a pending one counts) and the app pulled the change
    the action marked."""
    await pilot.pause()
    await until(
        pilot,
        lambda: (
            not any(w.group == "actions" and not w.is_finished for w in app.workers)
            and not app._dirty
        ),
    )
    await pilot.pause()


def notes(app: OcwatchApp, severity: str | None = None) -> list[str]:
    return [n.message for n in app._notifications if severity in (None, n.severity)]


def state_cell(app: OcwatchApp, key: tuple[str, str]) -> str:
    return app.main_screen.table.get_cell(f"{key[0]}\x1f{key[1]}", "state").plain


async def open_on(pilot: Pilot[None], app: OcwatchApp, key: tuple[str, str], press: str) -> None:
    await pilot.pause()
    assert app.main_screen.table.select_key(key)
    await pilot.press(press)
    await pilot.pause()


# -- abort -----------------------------------------------------------------------------------


async def test_abort_asks_first_and_no_is_the_default() -> None:
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        for refuse in ("n", "escape", "enter"):  # enter presses the focused button: No
            await open_on(pilot, app, BUSY, "a")
            assert isinstance(app.screen, ConfirmScreen)
            assert "Refactor the payment module" in str(
                app.screen.query_one("#confirm-body", Static).render()
            )
            await pilot.press(refuse)
            await settle(pilot, app)
            assert app.screen is app.main_screen and fake.calls == [], refuse
        await open_on(pilot, app, BUSY, "a")
        await pilot.press("y")
        await settle(pilot, app)
        assert fake.calls == [("abort", A, "ses_busy")]
        assert state_cell(app, BUSY) == "● busy"  # until the server says otherwise
        assert "Abort: accepted by the server." in notes(app)


async def test_abort_says_the_running_sub_agents_stop_with_the_run() -> None:
    """The server stops a run's sub-agents with it: the dialog says so, counting the running
    ones (ses_child1 busy, ses_child2 done); a run with none says nothing of them."""
    app, _ = make_app(actions=FakeActions())
    async with app.run_test(size=(120, 40)) as pilot:
        for key, said in [((A, "ses_parent"), "running sub-agent (1) stops"), (BUSY, None)]:
            await open_on(pilot, app, key, "a")
            body = str(app.screen.query_one("#confirm-body", Static).render())
            assert (said in body) if said else ("sub-agent" not in body), body
            await pilot.press("escape")
            await pilot.pause()


async def test_abort_of_an_idle_session_says_why_not() -> None:
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, (A, "ses_done"), "a")
        assert app.screen is app.main_screen
        assert any("no run to abort" in n for n in notes(app))
        await open_on(pilot, app, (A, "ses_stale"), "a")  # stale busy: still abortable
        assert isinstance(app.screen, ConfirmScreen)


# -- permission ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keys", "reply"), [(("o",), "once"), (("a", "enter"), "always"), (("r", "enter"), "reject")]
)
async def test_permission_keys(keys: tuple[str, ...], reply: str) -> None:
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, PERM, "r")
        screen = app.screen
        assert isinstance(screen, PermissionScreen)
        shown = str(screen.query_one("#permission-fields", Static).render())
        for text in ("bash", "rm -rf build/", "rm -rf build/*", "rm *", "Remove build output"):
            assert text in shown
        await pilot.press(*keys)
        await settle(pilot, app)
        assert fake.calls == [("reply", A, "per_7Hq2", reply, None)]
        assert app.screen is app.main_screen


@pytest.mark.parametrize(
    "keys",
    [("r",), ("a",), ("a", "a"), ("r", "r"), ("a", "r"), ("r", "a", "r"), ("a", "escape", "a")],
)
async def test_no_repeated_or_neighbouring_key_from_the_table_answers(keys: tuple[str, ...]):
    """`r` opens the dialog (the table's Respond), `a` is the table's Abort: pressed again, or
    one after the other, they only show what always / reject would do; nothing is sent until
    enter on Confirm. esc goes back to the dialog, a second esc closes it."""
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, PERM, "r")
        screen = app.screen
        assert isinstance(screen, PermissionScreen)
        await pilot.press(*keys)
        await pilot.pause()
        assert fake.calls == [] and app.screen is screen
        note = str(screen.query_one("#permission-confirm", Static).render())
        if screen.armed == "always":
            assert "Allow always" in note and "rm *" in note and "enter confirms" in note
        elif screen.armed == "reject":
            assert "the run stops" in note and "enter confirms" in note
        await pilot.press("escape")
        await pilot.pause()
        assert screen.armed is None and app.screen is screen  # back to the dialog
        await pilot.press("escape")
        await settle(pilot, app)
        assert fake.calls == [] and app.screen is app.main_screen


TABLE_KEYS = ("r", "a", "A", "m", "enter", "space")


@pytest.mark.parametrize("key", [PERM, QUESTION, BUSY], ids=["permission", "question", "busy"])
async def test_no_two_table_keys_in_a_row_answer_or_abort(key: tuple[str, str]) -> None:
    """Any two keys of the table pressed one after the other, on a row waiting for a
    permission, a question or a busy one (`r r`, `r a`, `r enter`, `a a`, `r A`, ...), send
    nothing: a broad answer needs enter on Confirm, abort needs y, allow once needs o, which
    is no table key."""
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for first in ("r", "a", "A", "enter"):  # the keys that open something
            for second in TABLE_KEYS:
                while app.screen is not app.main_screen:
                    app.pop_screen()
                assert app.main_screen.table.select_key(key)
                await pilot.press(first, second)
                assert fake.calls == [], (key, first, second)
        await settle(pilot, app)
        assert fake.calls == []


async def test_a_click_on_always_only_shows_it_and_confirm_sends_it() -> None:
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, PERM, "r")
        await pilot.click("#always")  # a click arms too: it shows, it does not send
        await pilot.pause()
        assert fake.calls == []
        await pilot.click("#confirm")
        await settle(pilot, app)
        assert fake.calls == [("reply", A, "per_7Hq2", "always", None)]


async def test_permission_reject_with_a_message() -> None:
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, PERM, "r")
        box = app.screen.query_one("#permission-message", Input)
        assert not box.display  # no text field in view until asked for
        await pilot.press("m")
        await pilot.pause()
        assert box.display and box.has_focus
        await pilot.press(*"do not overwrite, use rsync", "enter")  # o/a/r/m here are text
        await settle(pilot, app)
        assert fake.calls == [("reply", A, "per_7Hq2", "reject", "do not overwrite, use rsync")]


async def test_a_message_typed_in_one_burst_after_m_is_the_message() -> None:
    """`m` and the message after it read at once (a paste, a fast typist over ssh): every key
    after `m` lands in the field, none is an answer key (`o` would allow)."""
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, PERM, "r")
        screen = app.screen
        for c in "mno, use rsync":
            app.post_message(events.Key("space" if c == " " else c, c))  # queued together
        await pilot.pause()
        box = screen.query_one("#permission-message", Input)
        assert (app.screen, box.value, fake.calls) == (screen, "no, use rsync", [])


async def test_typing_in_the_permission_dialog_never_allows() -> None:
    """No stray key allows anything: enter and space on the dialog as it opens cancel; with the
    message field open the letter keys are text, Once and Always cannot be pressed, and tab
    goes from the field to Reject."""
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, PERM, "r")
        await pilot.press("space")  # nothing
        await pilot.pause()
        assert fake.calls == [] and isinstance(app.screen, PermissionScreen)
        await pilot.press("enter")  # the focus starts on Cancel
        await settle(pilot, app)
        assert fake.calls == [] and app.screen is app.main_screen
        await open_on(pilot, app, PERM, "r")
        screen = app.screen
        await pilot.press("m", *"no")
        await pilot.click("#cancel")  # a button click does what it says
        await settle(pilot, app)
        assert fake.calls == [] and app.screen is app.main_screen
        await open_on(pilot, app, PERM, "r")
        screen = app.screen
        await pilot.press("m")  # the message written is kept (a draft)
        await pilot.pause()
        assert screen.query_one("#permission-message", Input).value == "no"
        await pilot.press("ctrl+u", *"try again")
        assert screen.query_one("#once", Button).disabled
        await pilot.click("#once")  # disabled while a message is written
        await pilot.click("#always")
        await pilot.press("tab")
        assert screen.focused is screen.query_one("#reject", Button)
        await pilot.press("o", "a", "m")  # not keys while the field is open
        await pilot.pause()
        assert fake.calls == [] and app.screen is screen
        await pilot.press("escape")  # esc closes the field first, then the dialog
        await pilot.pause()
        assert app.screen is screen and not screen.query_one("#permission-message").display
        assert not screen.query_one("#once", Button).disabled
        await pilot.press("escape")
        await settle(pilot, app)
        assert fake.calls == [] and app.screen is app.main_screen
        await open_on(pilot, app, PERM, "r")
        await pilot.press("m", "ctrl+u", *"use rsync")
        await pilot.click("#reject")  # Reject takes the message along
        await settle(pilot, app)
        assert fake.calls == [("reply", A, "per_7Hq2", "reject", "use rsync")]


async def test_a_message_closed_with_esc_is_kept_for_its_request() -> None:
    """esc closes the message field and then the dialog, and the message written stays: `m`
    shows it again, in this dialog and in the next one opened on the same request (it goes
    only with enter in the field, or Reject while the field is open). Sent, it is gone."""
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, PERM, "r")
        screen = app.screen
        box = screen.query_one("#permission-message", Input)
        await pilot.press("m", *"use rsync, not cp")
        await pilot.press("escape")
        await until(pilot, lambda: not box.display)
        assert any("m shows it again" in n for n in notes(app))
        await pilot.press("m")
        await until(pilot, lambda: box.display)
        assert box.value == "use rsync, not cp"
        await pilot.press("escape", "escape")
        await until(pilot, lambda: app.screen is app.main_screen)
        assert fake.calls == []
        await open_on(pilot, app, PERM, "r")
        box = app.screen.query_one("#permission-message", Input)
        assert not box.display  # (hidden until asked for, as ever)
        await pilot.press("m")
        await until(pilot, lambda: box.display)
        assert box.value == "use rsync, not cp"
        await pilot.press("enter")
        await settle(pilot, app)
        assert fake.calls == [("reply", A, "per_7Hq2", "reject", "use rsync, not cp")]
        assert app.responder.drafts == {}


async def test_a_message_kept_goes_when_its_request_closes() -> None:
    fake = FakeActions()
    app, source = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, PERM, "r")
        await pilot.press("m", *"use rsync", "escape", "escape")
        await until(pilot, lambda: app.screen is app.main_screen)
        assert list(app.responder.drafts.values()) == ["use rsync"]
        source.set(views.with_row(source.current(), PERM, state="busy", pending=()))
        await until(pilot, lambda: app.responder.drafts == {})
        assert fake.calls == []


async def test_a_typed_answer_closed_with_esc_is_not_put_back() -> None:
    """A typed answer replaces the choice: one put back in a dialog opened again (out of view
    at 80x24) would be sent in place of the option the user then chose."""
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, app, QUESTION, "r")
        await pilot.press("tab", *"SQLite maybe", "escape")
        await until(pilot, lambda: app.screen is app.main_screen)
        await open_on(pilot, app, QUESTION, "r")
        assert app.screen.query_one("#typed-1", Input).value == ""
        await pilot.press("enter", "ctrl+s")  # the focused list's first option, submitted
        await settle(pilot, app)
        assert fake.calls == [("answer", A, "que_3Kx9", [["PostgreSQL"]], False)]


async def test_a_reject_message_the_server_refuses_is_kept() -> None:
    fake = FakeActions()
    fake.fail = ActionError("the server said 500")
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, PERM, "r")
        await pilot.press("m", *"use rsync", "enter")
        await settle(pilot, app)
        assert notes(app, "error") == ["the server said 500"]
        await open_on(pilot, app, PERM, "r")
        box = app.screen.query_one("#permission-message", Input)
        await pilot.press("m")
        await until(pilot, lambda: box.display)
        assert box.value == "use rsync"


async def test_permission_cancel_sends_nothing() -> None:
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, PERM, "r")
        await pilot.press("escape")
        await settle(pilot, app)
        assert fake.calls == [] and app.screen is app.main_screen


def dialog_scroll(screen: Screen[object]) -> tuple[Widget, Callable[[], str]]:
    """A dialog's scrolled body, and what the line under it says (empty while it is hidden)."""
    body = screen.query_one(".dialog-body")
    sign = screen.query_one(".dialog-more", Static)

    def said() -> str:
        return str(sign.render()) if sign.display else ""

    return body, said


async def test_a_long_request_scrolls_from_the_keyboard_and_says_what_is_below() -> None:
    """Issue 41 item 1: at 80x24 a command of 30 lines does not fit; with the focus where the
    dialog puts it (Cancel), the arrow and page keys scroll it down to its patterns and always
    rows and back, the line under it counts what is below, then says the end is in view; a
    short request has no such line. Scrolling answers nothing."""
    command = "\n".join(f"echo step {i}" for i in range(1, 30)) + "\nrm -rf ~/projects"
    fake = FakeActions()
    app, _ = make_app(views.sneaky_permission(command), actions=fake)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, app, PERM, "r")
        screen = app.screen
        assert isinstance(screen, PermissionScreen)
        body, said = dialog_scroll(screen)
        await until(
            pilot, lambda: said() == f"▼ {body.max_scroll_y} more lines below · ↓ or pgdn scrolls"
        )
        assert isinstance(app.focused, Button) and app.focused.id == "cancel"
        lines = permission_fields(screen.pending).plain.split("\n")
        always = 2 + next(n for n, line in enumerate(lines) if line.startswith("always"))
        assert always >= body.scrollable_content_region.height  # out of view at first
        await pilot.press("down")
        await until(pilot, lambda: body.scroll_y == 1)
        await pilot.press("pagedown")
        await until(pilot, lambda: body.scroll_y > 1)
        await until(
            pilot, lambda: said().startswith(f"▼ {int(body.max_scroll_y - body.scroll_y)} ")
        )
        await pilot.press("end")
        await until(pilot, lambda: body.scroll_y == body.max_scroll_y > 0)
        await until(pilot, lambda: said() == "▲ the end of the request · ↑ or pgup scrolls back")
        top = int(body.scroll_y)
        assert top <= always < top + body.scrollable_content_region.height  # always in view
        await pilot.press("up")
        await until(pilot, lambda: body.scroll_y == top - 1)
        await pilot.press("home")
        await until(pilot, lambda: body.scroll_y == 0)
        assert fake.calls == [] and app.screen is screen
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.main_screen)
    app, _ = make_app(actions=FakeActions())
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, app, PERM, "r")
        screen = app.screen
        assert isinstance(screen, PermissionScreen)
        await pilot.pause()
        assert screen.query_one(".dialog-body").max_scroll_y == 0
        assert not screen.query_one(".dialog-more").display  # nothing out of view, nothing said


# -- question --------------------------------------------------------------------------------


async def test_question_single_choice() -> None:
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, QUESTION, "r")
        assert isinstance(app.screen, QuestionScreen)
        assert isinstance(app.focused, RadioSet)
        await pilot.press("ctrl+s")  # nothing chosen yet: the dialog stays and says so
        await pilot.pause()
        assert isinstance(app.screen, QuestionScreen) and fake.calls == []
        assert any("Question 1 has no answer" in n for n in notes(app, "warning"))
        await pilot.press("down", "space", "ctrl+s")
        await settle(pilot, app)
        assert fake.calls == [("answer", A, "que_3Kx9", [["SQLite"]], False)]


async def test_question_typed_answer_replaces_the_choice() -> None:
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, QUESTION, "r")
        await pilot.press("space", "tab")  # choose PostgreSQL, then go to the typed answer
        assert isinstance(app.focused, Input)
        await pilot.press(*"MariaDB", "enter")
        await settle(pilot, app)
        assert fake.calls == [("answer", A, "que_3Kx9", [["MariaDB"]], False)]


async def test_a_typed_answer_and_ctrl_s_read_at_once_send_the_whole_answer() -> None:
    """A typed answer followed at once by ctrl+s (keys read together: a paste, a fast
    typist) is submitted whole: as a priority binding ctrl+s ran before the field had taken
    the keys before it, and the choice went without the typed answer."""
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, QUESTION, "r")
        await pilot.press("space", "tab")  # choose PostgreSQL, then go to the typed answer
        assert isinstance(app.focused, Input)
        for char in "MariaDB":  # posted at once: none waits for the one before
            app.post_message(events.Key(char, char))
        app.post_message(events.Key("ctrl+s", None))
        await until(pilot, lambda: fake.calls != [])
        assert fake.calls == [("answer", A, "que_3Kx9", [["MariaDB"]], False)]


async def test_questions_longer_than_the_dialog_say_what_is_below_and_tab_reaches_it() -> None:
    """Issue 41 item 1, the question dialog at 80x24: two questions do not fit; the line under
    them counts what is below and names tab or pgdn (the arrows move in a list of choices);
    tab to the next question brings it into view, pgdn scrolls to the end, which is said."""
    app, _ = make_app(views.several_questions(), actions=FakeActions())
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, app, QUESTION, "r")
        screen = app.screen
        assert isinstance(screen, QuestionScreen)
        body, said = dialog_scroll(screen)
        await until(
            pilot, lambda: said() == f"▼ {body.max_scroll_y} more lines below · tab or pgdn scrolls"
        )
        await pilot.press("tab", "tab")  # the typed answer, then the second question's choices
        await until(pilot, lambda: body.scroll_y > 0)
        await pilot.press("pagedown")
        await until(pilot, lambda: body.scroll_y == body.max_scroll_y)
        await until(
            pilot, lambda: said() == "▲ the end of the request · shift+tab or pgup scrolls back"
        )


async def test_question_reject_asks_first() -> None:
    """ctrl+r (next to ctrl+s) stops the run: it asks first, and Back (the default) keeps the
    question open with nothing sent."""
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, QUESTION, "r")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "its run stops" in str(app.screen.query_one("#confirm-body", Static).render())
        await pilot.press("enter")  # (the focus is on Back)
        await until(pilot, lambda: isinstance(app.screen, QuestionScreen))
        assert fake.calls == []
        await pilot.press("ctrl+r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot, app)
        assert fake.calls == [("answer", A, "que_3Kx9", None, True)]
        assert app.screen is app.main_screen


async def test_question_multiple_choice_and_several_questions() -> None:
    fake = FakeActions()
    app, _ = make_app(views.several_questions(), actions=fake)
    async with app.run_test(size=(120, 48)) as pilot:
        await open_on(pilot, app, QUESTION, "r")
        screen = app.screen
        assert isinstance(screen, QuestionScreen)
        assert isinstance(app.focused, SelectionList)
        assert len(screen.query(Input)) == 2  # the third question takes no typed answer
        await pilot.press("space", "down", "down", "space")  # lint and tests
        await pilot.press("tab", *"docs")  # typed, added to the choices
        await pilot.press("tab", "down", "space")  # Q2: release
        await pilot.press("ctrl+s")  # Q3 unanswered
        await pilot.pause()
        assert isinstance(app.screen, QuestionScreen) and fake.calls == []
        assert any("Question 3" in n for n in notes(app, "warning"))
        assert app.focused is screen.query_one("#choices-3")
        await pilot.press("space", "ctrl+s")
        await settle(pilot, app)
        assert fake.calls == [
            (
                "answer",
                A,
                views.SEVERAL.id,
                [["lint", "tests", "docs"], ["release"], ["yes"]],
                False,
            )
        ]


# -- what the server says ----------------------------------------------------------------------


async def test_failure_shows_the_server_error_and_changes_nothing() -> None:
    fake = FakeActions()
    fake.fail = ActionError("permission per_7Hq2 is no longer open (already answered?)")
    app, source = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        before = source.current()
        await open_on(pilot, app, PERM, "r")
        await pilot.press("o")
        await settle(pilot, app)
        assert notes(app, "error") == ["permission per_7Hq2 is no longer open (already answered?)"]
        assert state_cell(app, PERM) == "? input"
        assert app.view is before and app.view.rows[PERM].pending
        # Nothing was recorded as answered: the dialog opens again.
        await open_on(pilot, app, PERM, "r")
        assert isinstance(app.screen, PermissionScreen)


async def test_the_row_changes_only_when_the_source_does() -> None:
    fake = FakeActions()
    app, source = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, PERM, "r")
        await pilot.press("o")
        await settle(pilot, app)
        assert fake.calls and state_cell(app, PERM) == "? input"
        await open_on(pilot, app, PERM, "r")  # answered, not confirmed: no second dialog
        assert app.screen is app.main_screen
        assert any("Already answered" in n for n in notes(app))
        source.set(views.with_row(source.current(), PERM, state="busy", pending=()))
        await until(pilot, lambda: state_cell(app, PERM) == "● busy")
        assert app.responder.sent == set()


async def test_the_asking_sub_agent_and_a_request_answered_elsewhere() -> None:
    fake = FakeActions()
    child_asks = Pending(
        "permission",
        "per_child",
        "ses_child1",
        "permission bash: ls",
        views.permission_request(
            "per_child",
            "ses_child1",
            permission="bash",
            patterns=["ls"],
            always=["ls *"],
            metadata={"command": "ls"},
        ),
    )
    view = views.with_row(
        views.every_state(), (A, "ses_parent"), state="input", pending=(child_asks,)
    )
    app, source = make_app(view, actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, (A, "ses_parent"), "r")
        screen = app.screen
        assert isinstance(screen, PermissionScreen)
        assert "asked by sub-agent ses_child1" in str(
            screen.query_one(".dialog-who", Static).render()
        )
        gone = screen.query_one(".dialog-gone", Static)
        assert not gone.display
        source.set(views.with_row(view, (A, "ses_parent"), state="busy", pending=()))
        await until(pilot, lambda: gone.display)
        await pilot.press("a", "enter")
        await settle(pilot, app)
        assert fake.calls == [("reply", A, "per_child", "always", None)]


@pytest.mark.parametrize(
    ("key", "view"),
    [
        (PERM, lambda: views.sneaky_permission("\n".join(f"echo {i}" for i in range(30)))),
        (QUESTION, views.several_questions),
    ],
    ids=["permission", "question"],
)
async def test_the_buttons_stay_in_view_when_the_request_closes_meanwhile(
    key: tuple[str, str], view: Callable[[], views.View]
) -> None:
    """At 80x24 the dialog fills the screen; the banner that says the request closed
    meanwhile takes lines of its own, and the body gives them up (it scrolls), so the buttons
    (esc's Cancel among them) stay on the screen."""
    app, source = make_app(view(), actions=FakeActions())
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, app, key, "r")
        screen = app.screen
        buttons = list(screen.query(Button))
        height = screen.size.height

        def in_view() -> bool:
            return all(b.region.y >= 0 and b.region.bottom <= height for b in buttons)

        await until(pilot, in_view)
        source.set(views.with_row(source.current(), key, state="busy", pending=()))
        gone = screen.query_one(".dialog-gone", Static)
        await until(pilot, lambda: gone.display and gone.region.height > 0)
        await until(pilot, in_view)


async def test_without_actions_the_dashboard_says_so() -> None:
    app, _ = make_app()  # a StaticSource: no server to act on
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, PERM, "r")
        assert app.screen is app.main_screen
        await open_on(pilot, app, BUSY, "a")
        assert app.screen is app.main_screen
        assert (
            notes(app, "warning").count(
                "Actions need a live server: this dashboard shows fixed Views."
            )
            == 2
        )


async def test_nothing_to_respond_to() -> None:
    app, _ = make_app(actions=FakeActions())
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, BUSY, "r")
        assert app.screen is app.main_screen
        assert any("not waiting for you" in n for n in notes(app))


async def test_from_the_detail_view_and_the_palette() -> None:
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.open_details(QUESTION)
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        pending = " ".join(str(w.render()) for w in app.screen.query(Static))
        assert "r here, or" in pending
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, QuestionScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        titles = {c.title: c for c in app.get_system_commands(app.screen)}
        assert "Respond to the selected session" in titles
        titles["Respond to the selected session"].callback()
        await pilot.pause()
        assert isinstance(app.screen, QuestionScreen)
        assert app.screen.row.key == QUESTION
        await pilot.press("escape", "escape")
        await pilot.pause()
        app.main_screen.table.select_key(BUSY)
        titles = {c.title: c for c in app.get_system_commands(app.screen)}
        titles["Abort the selected session"].callback()
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)


async def test_every_new_binding_is_described_and_in_the_help() -> None:
    app, _ = make_app(actions=FakeActions())
    async with app.run_test(size=(120, 60)) as pilot:
        await pilot.pause()
        for cls in (PermissionScreen, QuestionScreen, ConfirmScreen):
            assert all(b.description for b in cls.BINDINGS)  # type: ignore[union-attr]
        rows = dict((title, dict(r)) for title, r in app.help_groups())
        assert rows["Sessions"]["r"] == "Respond" and rows["Sessions"]["a"] == "Abort"
        assert rows["Details"]["r"] == "Respond"
        assert rows["Permission dialog"]["o"] == "Allow once"
        assert rows["Question dialog"]["ctrl+s"] == "Submit"
        assert rows["Confirm dialog"]["y"] == "Yes"


def test_permission_fields_show_a_command_only_when_there_is_one() -> None:
    text = permission_fields(views.EDIT).plain
    assert "command" not in text and "filepath    /home/dev/src/blog/api/v1.py" in text
    assert "--- api/v1.py" in text and "… 30 more lines" in text
    bash = permission_fields(views.PERMISSION).plain
    assert "command     rm -rf build/" in bash and "always      rm *" in bash
    bare = permission_fields(Pending("permission", "per_x", "s", "?")).plain
    assert bare == "tool        ?"


async def test_a_dialog_s_layout_due_after_it_closed_does_nothing() -> None:
    """A dialog fits its body and says what is below it after a refresh; closed in between
    (escape pressed at once), those found no body to fit: a crash (NoMatches), as the
    conversation view's follow of its end was seen to in the demo."""
    app, _ = make_app(actions=FakeActions())
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, PERM, "r")
        screen = app.screen
        assert isinstance(screen, PermissionScreen)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.main_screen)
        screen.fit_body()  # (what the refresh then calls)
        screen.say_more()
        await pilot.pause()
        assert app.is_running


async def test_a_typed_answer_pasted_over_several_lines_is_kept_whole() -> None:
    """Input keeps a paste's first line only: the other lines of a pasted answer were lost,
    and the answer sent without them (a UX review). They are joined into the one line, and
    that is said."""
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, QUESTION, "r")
        screen = app.screen
        assert isinstance(screen, QuestionScreen)
        typed = screen.query_one("#typed-1", Input)
        typed.focus()
        await pilot.press(*"Show")
        typed.post_message(events.Paste(" literally\n - line two\n\n - line three\n"))
        await until(pilot, lambda: typed.value == "Show literally - line two - line three")
        await until(pilot, lambda: any("3 lines as one" in n for n in notes(app)))
