"""Sending a prompt from the row (`p`, issue 41 item 3): a multi-line input, sent only on
confirm (ctrl+s), never by a stray key; cancelled with esc; off in read-only mode and in a
replay (whose `p` pauses)."""

from __future__ import annotations

from textual.widgets import TextArea

from tui.app.screens.prompt import PromptScreen
from tui.core.actions import ActionError

from .conftest import make_app
from .fake_actions import FakeActions
from .test_actions import BUSY, notes, open_on, settle, until


async def test_p_writes_a_prompt_of_several_lines_and_sends_it_on_confirm() -> None:
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(100, 30)) as pilot:
        await open_on(pilot, app, BUSY, "p")
        assert isinstance(app.screen, PromptScreen)
        assert isinstance(app.focused, TextArea)
        await pilot.press(*"Update the changelog.", "enter", *"Then run the tests.")
        assert fake.calls == []  # enter is a new line, not a send
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert fake.calls == [
            ("prompt", BUSY[0], BUSY[1], "Update the changelog.\nThen run the tests.")
        ]
        assert any("Prompt (2 lines): accepted" in n for n in notes(app))


async def test_an_empty_prompt_is_said_and_esc_sends_nothing() -> None:
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, app, BUSY, "p")
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, PromptScreen)  # still open, saying why
        await pilot.press(*"never mind", "escape")
        await until(pilot, lambda: not isinstance(app.screen, PromptScreen))
        await settle(pilot, app)
        assert fake.calls == []


async def test_read_only_offers_no_prompt() -> None:
    fake = FakeActions()
    app, _ = make_app(actions=fake, read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await open_on(pilot, app, BUSY, "p")
        assert not isinstance(app.screen, PromptScreen)
        assert fake.calls == []


async def test_N_creates_a_session_in_a_folder_with_a_first_prompt_and_selects_it() -> None:
    """N opens on the selected row's server and folder; the folder can be changed; enter in
    the folder goes to the prompt (it creates nothing); ctrl+s creates, then the new session
    is selected as soon as the table shows it."""
    from dataclasses import replace

    from textual.widgets import Input

    from tui.app.screens.prompt import NewSessionScreen

    from . import views

    fake = FakeActions()
    app, source = make_app(actions=fake)
    async with app.run_test(size=(100, 30)) as pilot:
        row = source.current().rows[BUSY]
        await open_on(pilot, app, BUSY, "N")
        assert isinstance(app.screen, NewSessionScreen)
        folder = app.screen.query_one("#new-folder", Input)
        assert folder.value == row.directory
        assert isinstance(app.focused, TextArea)
        folder.value = ""
        folder.focus()
        await pilot.press(*"/srv/shop", "enter")
        assert isinstance(app.focused, TextArea) and fake.calls == []
        await pilot.press(*"Add a dark mode.", "enter", *"Keep it small.")
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert fake.calls == [
            ("new_session", BUSY[0], "/srv/shop", "Add a dark mode.\nKeep it small.")
        ]
        assert any("New session ses_new in /srv/shop" in n for n in notes(app))
        made = replace(row, id="ses_new", title="Add a dark mode.", directory="/srv/shop")
        view = source.current()
        source.set(views.View(view.generated_at, view.servers, {**view.rows, made.key: made}))
        await until(pilot, lambda: app.main_screen.table.cursor_key == made.key)


async def test_a_new_session_needs_an_absolute_folder_and_is_off_in_read_only() -> None:
    from textual.widgets import Input

    from tui.app.app import READ_ONLY
    from tui.app.screens.prompt import NewSessionScreen

    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, app, BUSY, "N")
        app.screen.query_one("#new-folder", Input).value = "shop"
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, NewSessionScreen) and fake.calls == []
        note = str(app.screen.query_one("#prompt-note").render())
        assert "absolute path" in note
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, NewSessionScreen))
    app, _ = make_app(actions=fake, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, app, BUSY, "N")
        await until(pilot, lambda: READ_ONLY in notes(app))
        assert not isinstance(app.screen, NewSessionScreen) and fake.calls == []


async def test_a_prompt_typed_and_sent_in_one_burst_is_sent_whole() -> None:
    """Keys read together (a fast typist, a terminal's paste, tmux send-keys): ctrl+s right
    after the text sends all of it. As a priority binding ctrl+s ran before the text box had
    taken the keys before it: the prompt went empty (or cut short). Likewise the new-session
    dialog's prompt."""
    from tui.app.screens.prompt import NewSessionScreen

    await _typed_and_sent_at_once("p", PromptScreen)
    await _typed_and_sent_at_once("N", NewSessionScreen)


async def _typed_and_sent_at_once(key: str, dialog: type) -> None:
    from textual import events

    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(100, 30)) as pilot:
        await open_on(pilot, app, BUSY, key)
        assert isinstance(app.screen, dialog) and isinstance(app.focused, TextArea)
        for char in "check it":  # posted at once: none waits for the one before
            app.post_message(events.Key("space" if char == " " else char, char))
        app.post_message(events.Key("ctrl+s", None))
        await until(pilot, lambda: fake.calls != [])
        assert fake.calls[0][-1] == "check it"


async def test_a_prompt_closed_unsent_is_kept_as_a_draft_until_sent() -> None:
    """esc threw away a prompt of several lines without a word (a UX review): it is kept,
    said, and there when `p` opens the dialog on that session again; sent, it is gone."""
    fake = FakeActions()
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, app, BUSY, "p")
        await pilot.press(*"Update the changelog.", "enter", *"Then")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, PromptScreen))
        assert any("Draft kept" in n for n in notes(app))
        await open_on(pilot, app, BUSY, "p")
        assert isinstance(app.screen, PromptScreen)
        area = app.screen.query_one("#prompt-text", TextArea)
        assert area.text == "Update the changelog.\nThen"
        await pilot.press(*" run the tests.")  # (the cursor at its end)
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert fake.calls == [
            ("prompt", BUSY[0], BUSY[1], "Update the changelog.\nThen run the tests.")
        ]
        await open_on(pilot, app, BUSY, "p")
        assert app.screen.query_one("#prompt-text", TextArea).text == ""


async def test_a_prompt_the_server_refuses_stays_a_draft() -> None:
    """Sent and refused (a server error): what was written is not lost; `p` shows it again.
    Accepted the next time, it is gone."""
    fake = FakeActions()
    fake.fail = ActionError("the server said 500")
    app, _ = make_app(actions=fake)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, app, BUSY, "p")
        await pilot.press(*"Update the changelog.", "ctrl+s")
        await settle(pilot, app)
        assert notes(app, "error") == ["the server said 500"]
        fake.fail = None
        await open_on(pilot, app, BUSY, "p")
        area = app.screen.query_one("#prompt-text", TextArea)
        assert area.text == "Update the changelog."
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert app.responder.drafts == {}
