"""Sending a prompt from the row (`p`, issue 41 item 3): a multi-line input, sent only on
confirm (ctrl+s), never by a stray key; cancelled with esc; off in read-only mode and in a
replay (whose `p` pauses)."""

from __future__ import annotations

from textual.widgets import TextArea

from tui.app.screens.prompt import PromptScreen

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
