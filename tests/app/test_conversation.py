"""The conversation view (`m`): the newest messages first, then all; following new ones."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.content import Content
from textual.widgets import Static

from tui.app.screens.conversation import TOOLS_OFF, ConversationScreen
from tui.app.screens.detail import DetailScreen
from tui.app.widgets.conversation_log import BATCH, BlockLog
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
        # at the end, every message laid out (in batches, newest first, each batch holding the
        # reader on their message: a g before the last batch stays on the top one laid out)
        await until(
            pilot,
            lambda: screen.body.complete and screen.body.scroll_y == screen.body.max_scroll_y > 0,
        )
        await pilot.press("g")
        await until(pilot, lambda: screen.body.scroll_y == 0)
        await pilot.press("escape")
        assert app.screen is app.main_screen


async def test_new_messages_follow_live_and_a_reader_scrolled_up_stays_put() -> None:
    messages = chat(100)
    peek = ChatPeek(messages)
    app, source = make_app(peek=peek)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await conversation(pilot, app)
        # every message laid out (in batches, newest first) before the height is taken
        await until(pilot, lambda: "100 messages" in title(app) and screen.body.complete)
        height = screen.body.max_scroll_y
        # the session goes on: a new reply, and the last one streamed further
        messages.append(chat(1, start=101, text="Fresh")[0])
        messages[99] = chat(1, start=99, text="Streamed further")[0]
        screen._read_at = 0.0  # (no need to wait FOLLOW_GAP)
        source.set(views.with_row(source.current(), BUSY, updated=views.clock() - 1))
        app.pull()
        await until(pilot, lambda: "Fresh 101" in body(app))
        assert "Streamed further 99" in body(app) and "Reply 99" not in body(app)
        await until(  # the new reply laid out (all of it: see above), and followed to the end
            pilot,
            lambda: (
                screen.body.complete and height < screen.body.max_scroll_y == screen.body.scroll_y
            ),
        )
        await pilot.press("g")
        await until(pilot, lambda: screen.body.scroll_y == 0)
        messages.append(chat(1, start=103, text="Later")[0])
        screen._read_at = 0.0
        source.set(views.with_row(source.current(), BUSY, updated=views.clock()))
        app.pull()
        await until(pilot, lambda: "Later 103" in body(app))
        await pilot.pause(0.1)  # (time for a scroll that should not come: late, it passes)
        assert screen.body.scroll_y == 0  # the reader scrolled up: left where they are


class LogApp(App[None]):
    def compose(self) -> ComposeResult:
        yield BlockLog()


async def test_a_log_laid_out_in_batches_stays_at_its_end() -> None:
    """The first batch overflows the view before its scrollbar comes (Textual refuses a scroll
    until the next layout of the screen): the log still ends at its end, not on the block at
    the top of the view when the second batch came."""
    app = LogApp()
    async with app.run_test(size=(40, 10)) as pilot:
        log = app.query_one(BlockLog)
        log.set_blocks([(i, Content(f"block {i}")) for i in range(3 * BATCH)])
        await until(pilot, lambda: log.complete)
        await pilot.pause()
        assert log.scroll_y == log.max_scroll_y == 3 * BATCH - log.size.height


async def test_the_scrollbar_of_a_log_that_first_overflows_shows_where_the_view_is() -> None:
    """One batch overflows the view and puts it at its end before the scrollbar comes: the
    scrollbar, once there, says the end (Textual moves it with the view only while shown)."""
    app = LogApp()
    async with app.run_test(size=(40, 10)) as pilot:
        log = app.query_one(BlockLog)
        log.set_blocks([(i, Content(f"block {i}")) for i in range(BATCH // 2)])
        await until(pilot, lambda: log.complete and log.show_vertical_scrollbar)
        await pilot.pause()
        assert log.scroll_y == log.max_scroll_y > 0
        assert log.vertical_scrollbar.position == log.scroll_y


async def test_g_pressed_before_a_paint_is_laid_out_stays_at_the_top() -> None:
    """A repaint at the end (the dashboard's tick), then g before the next refresh: the view
    stays at the top (the paint's scroll to the end came after g: seen under load, the reader
    taken back to the end and kept there)."""
    app, _ = make_app(peek=ChatPeek(chat(40)))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await conversation(pilot, app)
        await until(
            pilot,
            lambda: (
                screen.loaded_all
                and screen.body.complete
                and screen.body.scroll_y == screen.body.max_scroll_y > 0
            ),
        )
        screen._paint()  # at the end: it asks to stay there once laid out (after a refresh)
        screen.action_top()
        for _ in range(3):  # the refreshes that run what waited for them
            screen.body.refresh()
            await pilot.pause()
        assert screen.body.scroll_y == 0


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


def footer(app) -> str:  # type: ignore[no-untyped-def]
    return " ".join(str(key.render()) for key in app.screen.query("FooterKey"))


async def test_without_a_live_server_the_tool_keys_are_not_offered_and_say_why() -> None:
    """No conversation read (a replay): tab, enter and e, which act on tool calls, are left out
    of the footer and, pressed, say why instead of doing nothing (issue 41 item 8); tab does
    not wander off to move the focus. With a live server the footer offers them."""
    app, _ = make_app()
    notes: list[str] = []
    app.notify = lambda message, **kw: notes.append(message)  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, app, BUSY, "m")
        await until(pilot, lambda: "read from a live server" in body(app))
        await pilot.pause()
        shown = footer(app)
        assert "Back" in shown, shown
        assert not any(k in shown for k in ("Expand", "Next tool", "All tools")), shown
        focused = app.focused
        for press in ("tab", "enter", "e", "shift+tab", "space"):
            before = len(notes)
            await pilot.press(press)
            await until(pilot, lambda b=before: len(notes) > b)
            assert notes[before:] == [TOOLS_OFF], press
            assert app.focused is focused, press
    live, _ = make_app(peek=ChatPeek(chat(3)))
    async with live.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, live, BUSY, "m")
        await until(pilot, lambda: "3 messages" in title(live))
        await pilot.pause()
        shown = footer(live)
        assert all(k in shown for k in ("Expand", "Next tool", "All tools")), shown


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


# -- tool calls: expanded, folded; runs that ended ---------------------------------------------

COMMAND = "echo one\nprintf 'two'\necho three"
HOSTILE = "[bold]x[/] \x1b[31mred\x1b[0m \x07bell"


def with_calls(
    *parts: dict[str, object], completed: bool = True, n: int = 4
) -> list[dict[str, object]]:
    """A chat of `n` messages (n even) whose last reply made these tool calls."""
    messages = chat(n)
    last = messages[-1]
    last["parts"] = [{"type": "text", "text": "Working."}, *parts]  # type: ignore[index]
    if not completed:
        last["info"]["time"].pop("completed")  # type: ignore[index, union-attr]
    return messages


def bash_part(output: str = HOSTILE, status: str = "completed") -> dict[str, object]:
    state: dict[str, object] = {
        "status": status,
        "input": {"command": COMMAND, "description": "Three steps"},
        "time": {"start": int(views.clock() * 1000) - 5_000},
    }
    if status == "completed":
        state["output"] = output
        state["time"] = {
            "start": int(views.clock() * 1000) - 5_000,
            "end": int(views.clock() * 1000),
        }
    return {"type": "tool", "tool": "bash", "callID": "call_1", "state": state}


async def test_a_tool_call_expands_to_its_command_and_output_and_folds_again() -> None:
    app, _ = make_app(peek=ChatPeek(with_calls(bash_part())))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await conversation(pilot, app)
        await until(pilot, lambda: "▸ ✓ bash: echo one (+2 lines)" in body(app))
        assert "$ echo one" not in body(app)  # folded: one line
        await pilot.press("tab")  # the call is selected (the cursor is drawn on it)
        assert screen.cursor is not None and screen.body.cursor is not None
        await pilot.press("enter")
        await until(pilot, lambda: "$ echo one" in body(app))
        text = body(app)
        assert "▾ ✓ bash" in text
        assert "  printf 'two'\n" in text and "  echo three\n" in text  # its line breaks kept
        assert "description: Three steps" in text
        # the output, literally: markup is text, the escape and the bell are shown as pictures
        assert "[bold]x[/] ␛[31mred␛[0m ␇bell" in text
        assert "\x1b" not in text and "\x07" not in text
        await pilot.press("enter")  # a second press folds it
        await until(pilot, lambda: "$ echo one" not in body(app))
        assert "▸ ✓ bash" in body(app)


async def test_a_click_on_a_tool_call_expands_it_and_a_second_folds_it() -> None:
    app, _ = make_app(peek=ChatPeek(with_calls(bash_part())))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await conversation(pilot, app)
        await until(pilot, lambda: "▸ ✓ bash" in body(app) and screen.body.complete)
        log = screen.body

        async def click_head() -> None:
            (spot,) = screen.calls
            span = log.span(spot.head)
            assert span is not None
            await pilot.click(BlockLog, offset=(6, span[0] - int(log.scroll_y)))
            await pilot.pause()

        await click_head()
        await until(pilot, lambda: "$ echo one" in body(app))
        await click_head()
        await until(pilot, lambda: "$ echo one" not in body(app))


async def test_e_expands_every_tool_call_and_folds_them_all() -> None:
    edit = {
        "type": "tool",
        "tool": "edit",
        "state": {
            "status": "completed",
            "input": {"filePath": "/p/a.py", "oldString": "x = 1", "newString": "x = 2"},
            "output": "Edit applied successfully.",
            "metadata": {
                "diff": "Index: /p/a.py\n=====\n--- /p/a.py\n+++ /p/a.py\n"
                "@@ -1 +1 @@\n-x = 1\n+x = 2\n"
            },
        },
    }
    app, _ = make_app(peek=ChatPeek(with_calls(bash_part(), edit)))
    async with app.run_test(size=(100, 40)) as pilot:
        await conversation(pilot, app)
        await until(pilot, lambda: "▸ ✓ edit" in body(app))
        await pilot.press("e")
        await until(pilot, lambda: "$ echo one" in body(app) and "+x = 2" in body(app))
        text = body(app)
        assert "-x = 1" in text and "@@ -1 +1 @@" in text and "Index:" not in text
        assert "oldString" not in text  # the diff says it
        await pilot.press("e")
        await until(pilot, lambda: "$ echo one" not in body(app) and "+x = 2" not in body(app))


async def test_a_long_output_is_bounded_and_says_how_much_is_left_out() -> None:
    output = "\n".join(f"row {i}" for i in range(1, 1001))
    app, _ = make_app(peek=ChatPeek(with_calls(bash_part(output))))
    async with app.run_test(size=(100, 30)) as pilot:
        await conversation(pilot, app)
        await pilot.press("enter")  # (nothing selected: the call in view)
        await until(pilot, lambda: "(… 800 more lines)" in body(app))
        assert "row 200\n" in body(app) and "row 201" not in body(app)


async def test_a_reply_whose_run_ended_says_interrupted_not_writing() -> None:
    """The session's row says whether its run goes on: busy, the unfinished reply is being
    written and its call runs; idle, both were interrupted (a crash, a restart)."""
    app, source = make_app(peek=ChatPeek(with_calls(bash_part(status="running"), completed=False)))
    async with app.run_test(size=(100, 30)) as pilot:
        await conversation(pilot, app)
        await until(pilot, lambda: "writing …" in body(app))
        assert "… bash: echo one (+2 lines)  running 5s" in body(app)
        source.set(views.with_row(source.current(), BUSY, state="unknown", reason="interrupted"))
        app.pull()
        await until(pilot, lambda: "writing …" not in body(app))
        text = body(app)
        assert "· interrupted" in text and "◌ bash: echo one (+2 lines)  interrupted" in text
        assert "running" not in text
        assert "◌ interrupted: the run ended before this reply was finished" in text


async def test_a_rejected_tool_call_says_so_and_why() -> None:
    rejected = {
        "type": "tool",
        "tool": "bash",
        "state": {
            "status": "error",
            "input": {"command": "rm -rf build"},
            "error": "The user rejected permission to use this specific tool call with the "
            "following feedback: Use make clean instead, please.",
        },
    }
    app, _ = make_app(peek=ChatPeek(with_calls(rejected)))
    async with app.run_test(size=(100, 30)) as pilot:
        await conversation(pilot, app)
        await until(pilot, lambda: "⊘ bash: rm -rf build  rejected: Use make clean" in body(app))
        await pilot.press("enter")
        await until(
            pilot, lambda: "rejected by the user: Use make clean instead, please." in body(app)
        )


async def test_the_help_lists_the_tool_call_keys() -> None:
    app, _ = make_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        groups = dict(app.help_groups())
        keys = dict(groups["Conversation"])
        assert "Expand the selected tool call" in keys["enter, space"]
        assert keys["e"] == "Expand every tool call, or fold them all"
        assert keys["tab"] == "Select the next tool call"


async def test_expand_all_shows_the_selected_call_with_its_details() -> None:
    """The selected call stays in view when `e` expands everything, its details under it
    (not its line alone at the bottom of the view)."""
    app, _ = make_app(peek=ChatPeek(with_calls(bash_part(), n=30)))
    async with app.run_test(size=(100, 24)) as pilot:
        screen = await conversation(pilot, app)
        await until(pilot, lambda: screen.loaded_all and screen.body.complete)
        await pilot.press("tab")  # at the end: the newest call, the bash one
        spot = screen.calls[-1]
        assert screen.cursor == spot.call
        await pilot.press("g")  # the reader scrolls to the top; the cursor stays
        await pilot.press("e")
        await until(pilot, lambda: "$ echo one" in body(app))
        await pilot.pause()
        log = screen.body
        spot = next(s for s in screen.calls if s.call == spot.call)  # (its blocks, expanded)
        head, more = log.span(spot.head), log.span(spot.details)  # type: ignore[arg-type]
        assert head is not None and more is not None
        top, height = int(log.scroll_y), log.scrollable_content_region.height
        assert top <= head[0] and more[0] + more[1] <= top + height


async def test_a_scroll_to_the_end_due_after_the_view_closed_does_nothing() -> None:
    """A paint at the end asks to follow the end once laid out (after the next refresh); the
    view closed in between (escape pressed at once): the dashboard crashed (NoMatches, seen in
    the demo), as the log was no longer there to scroll."""
    app, _ = make_app(peek=ChatPeek(chat(5)))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await conversation(pilot, app)
        await until(pilot, lambda: "5 messages" in title(app))
        await pilot.press("escape")
        assert app.screen is app.main_screen
        screen._to_end(0.0)  # (what the refresh then calls)
        await pilot.pause()
        assert app.is_running
