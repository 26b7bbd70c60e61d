"""The conversation view (`m`): the newest messages first, then all; following new ones."""

from __future__ import annotations

from textual.widgets import Static

from tui.app.screens.conversation import ConversationScreen
from tui.app.screens.detail import DetailScreen
from tui.core.client import Unreachable
from tui.core.conversation import FIRST_PAGE

from . import views
from .conftest import make_app
from .fake_peek import ChatPeek, chat
from .test_actions import BUSY, open_on, until


async def conversation(pilot, app) -> ConversationScreen:  # type: ignore[no-untyped-def]
    """`m` on the busy row: its conversation, on top."""
    await open_on(pilot, app, BUSY, "m")
    screen = app.screen
    assert isinstance(screen, ConversationScreen)
    return screen


def body(app) -> str:  # type: ignore[no-untyped-def]
    return app.screen.body.text


def title(app) -> str:  # type: ignore[no-untyped-def]
    return str(app.screen.query_one("#conversation-title", Static).render())


async def test_m_opens_the_conversation_newest_first_then_all() -> None:
    peek = ChatPeek(chat(500))
    app, _ = make_app(peek=peek)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await conversation(pilot, app)
        assert screen.key == BUSY
        await until(pilot, lambda: "500 messages" in title(app))
        assert peek.reads == [FIRST_PAGE, None]  # the newest page painted first, then all
        text = body(app)
        assert "Prompt 0" in text and "Reply 499" in text and "line two" in text
        assert "✓ bash: make step-3  2s" in text
        assert screen.body.scroll_y == screen.body.max_scroll_y > 0  # at the end
        await pilot.press("g")
        await pilot.pause()
        assert screen.body.scroll_y == 0
        await pilot.press("escape")
        assert app.screen is app.main_screen


async def test_new_messages_follow_live_and_a_reader_scrolled_up_stays_put() -> None:
    messages = chat(100)
    peek = ChatPeek(messages)
    app, source = make_app(peek=peek)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await conversation(pilot, app)
        await until(pilot, lambda: "100 messages" in title(app))
        # the session goes on: a new reply, and the last one streamed further
        messages.append(chat(1, start=101, text="Fresh")[0])
        messages[99] = chat(1, start=99, text="Streamed further")[0]
        screen._read_at = 0.0  # (no need to wait FOLLOW_GAP)
        source.set(views.with_row(source.current(), BUSY, updated=views.clock() - 1))
        app.pull()
        await until(pilot, lambda: "Fresh 101" in body(app))
        assert "Streamed further 99" in body(app) and "Reply 99" not in body(app)
        await pilot.pause(0.1)
        assert screen.body.scroll_y == screen.body.max_scroll_y  # followed to the end
        await pilot.press("g")
        messages.append(chat(1, start=103, text="Later")[0])
        screen._read_at = 0.0
        source.set(views.with_row(source.current(), BUSY, updated=views.clock()))
        app.pull()
        await until(pilot, lambda: "Later 103" in body(app))
        await pilot.pause(0.1)
        assert screen.body.scroll_y == 0  # the reader scrolled up: left where they are


async def test_from_the_detail_view_and_a_server_error_is_said() -> None:
    peek = ChatPeek(chat(3))
    peek.fail = Unreachable("http://127.0.0.1:4096: cannot connect")
    app, _ = make_app(peek=peek)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, app, BUSY, "enter")
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("m")
        await until(pilot, lambda: "cannot connect" in body(app))
        assert isinstance(app.screen, ConversationScreen)


async def test_without_a_live_server_it_says_where_messages_come_from() -> None:
    """A replay has no server to read the conversation from: said, and the title does not
    promise "reading the rest …" for ever (found by a review)."""
    app, _ = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, app, BUSY, "m")
        await until(pilot, lambda: "read from a live server" in body(app))
        title = str(app.screen.query_one("#conversation-title", Static).render())
        assert "not read: no live server" in title and "reading the rest" not in title, title
        assert "No message yet" not in body(app)  # (none read is not none sent)


async def test_markup_and_escapes_in_messages_are_shown_literally() -> None:
    messages = chat(2)
    messages[1]["parts"] = [{"type": "text", "text": "[bold red]x[/] \x1b[31mred\x1b[0m"}]
    app, _ = make_app(peek=ChatPeek(messages))
    async with app.run_test(size=(100, 30)) as pilot:
        await open_on(pilot, app, BUSY, "m")
        await until(pilot, lambda: "[bold red]x[/]" in body(app))
        assert "␛[31mred" in body(app) and "\x1b" not in body(app)


async def test_a_resize_keeps_the_message_the_reader_was_at() -> None:
    app, _ = make_app(peek=ChatPeek(chat(300)))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await conversation(pilot, app)
        await until(pilot, lambda: screen.loaded_all and screen.body.complete)
        log = screen.body
        log.scroll_to(y=120, animate=False, immediate=True)
        await pilot.pause()
        top = log._keys[log.block_at(int(log.scroll_y))]
        await pilot.resize_terminal(70, 30)  # every message is laid out again, newest first
        await pilot.pause()
        assert log._keys[log.block_at(int(log.scroll_y))] == top
        await until(pilot, lambda: log.complete)
        assert log._keys[log.block_at(int(log.scroll_y))] == top


async def test_more_new_messages_than_a_follow_reads_reads_them_all() -> None:
    messages = chat(20)
    peek = ChatPeek(messages)
    app, source = make_app(peek=peek)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await conversation(pilot, app)
        await until(pilot, lambda: "20 messages" in title(app))
        messages.extend(chat(30, start=20, text="Burst"))  # more than one follow's page
        screen._read_at = 0.0
        source.set(views.with_row(source.current(), BUSY, updated=views.clock() - 1))
        app.pull()
        await until(pilot, lambda: "50 messages" in title(app))
        assert "Burst 21" in body(app) and "Burst 49" in body(app)
        assert peek.reads[-2:] == [10, None]  # the page did not reach back: all were read


async def test_a_failed_read_is_tried_again() -> None:
    peek = ChatPeek(chat(4))
    peek.fail = Unreachable("http://127.0.0.1:4096: cannot connect")
    app, _ = make_app(peek=peek)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await conversation(pilot, app)
        await until(pilot, lambda: "cannot connect" in body(app))
        peek.fail = None
        screen._read_at = 0.0  # (instead of waiting RETRY_AFTER)
        app.pull()
        await until(pilot, lambda: "Reply 3" in body(app) and "cannot connect" not in body(app))
