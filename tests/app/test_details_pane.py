"""The details pane beside the table (wide terminals, `d`) and the detail view's Doing section,
with a fake Peek: what is shown, and that only the selected session is read."""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Static

from tui.app.inspect import Look
from tui.app.screens.detail import DetailScreen
from tui.app.widgets.activity import activity_content
from tui.core.activity import Activity
from tui.core.client import Unreachable

from . import views
from .conftest import make_app
from .fake_actions import FakeActions
from .fake_peek import FakePeek
from .test_actions import BUSY, PERM, QUESTION, open_on, until


def pane_text(app) -> str:  # type: ignore[no-untyped-def]
    return app.main_screen.pane.text


async def test_the_pane_follows_the_cursor_and_reads_only_where_it_stops() -> None:
    peek = FakePeek()
    app, _ = make_app(peek=peek)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        table = app.main_screen.table
        assert app.main_screen.pane.display
        assert table.select_key(BUSY)
        await until(pilot, lambda: "Reply of ses_busy." in pane_text(app))
        text = pane_text(app)
        for shown in (
            "Refactor the payment module",
            "bash: npm test · 2m10s",
            "1/3 done · now: Fix it",
            "Second line [bold]literal[/]",
            "in 1.2k · out 300 · reasoning 50",
            "9.0k read · 100 written",
            "≈ 11% of 100.0k",
            "fake/fake · agent build",
            "12",
        ):
            assert shown in text, shown
        looks = len(peek.looks)
        app.inspector.settle = 3.0  # (150 ms in use: a loaded machine may press far slower)
        for _ in range(6):  # running the cursor down: each row is passed within the pause
            await pilot.press("j")
        await until(pilot, lambda: len(peek.looks) > looks)
        await pilot.pause(0.3)  # (a second look would come now; a late machine only passes)
        assert len(peek.looks) == looks + 1  # one look, where the cursor stopped
        key = table.cursor_key
        assert key is not None and peek.looks[-1] == key[1]
        await until(pilot, lambda: f"Reply of {key[1]}." in pane_text(app))


async def test_d_hides_and_shows_the_pane_and_narrow_terminals_open_the_detail_view() -> None:
    app, _ = make_app(peek=FakePeek())
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        pane = app.main_screen.pane
        assert pane.display
        await pilot.press("d")
        await pilot.pause()
        assert not pane.display and app.main_screen.table.size.width == 160
        await pilot.press("d")
        await pilot.pause()
        assert pane.display
    app, _ = make_app(peek=FakePeek())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert not app.main_screen.pane.display  # no room beside the table
        await open_on(pilot, app, PERM, "d")
        assert isinstance(app.screen, DetailScreen) and app.screen.key == PERM


async def test_the_detail_view_shows_what_it_is_doing() -> None:
    peek = FakePeek()
    app, _ = make_app(peek=peek)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_on(pilot, app, BUSY, "enter")
        screen = app.screen
        assert isinstance(screen, DetailScreen)

        def doing() -> str:
            return str(screen.query_one("#detail-activity", Static).render())

        await until(pilot, lambda: "Reply of ses_busy." in doing())
        assert "bash: npm test · 2m10s" in doing()
        assert peek.looks == ["ses_busy"]


def test_a_running_session_shows_no_earlier_runs_reply_as_its_own() -> None:
    """Prompted again: until the new run writes, its reply is "nothing written yet", not the
    last run's; an idle session shows its last reply, said to be an earlier run's when the
    last run wrote none (aborted before a word)."""
    busy = next(r for r in views.ROWS if r.id == "ses_busy")
    idle = next(r for r in views.ROWS if r.state == "idle" and r.reason == "completed")
    now = views.clock()
    earlier = Activity("s", now, "All done.", now - 60, reply_before_prompt=True)
    assert "nothing written yet" in activity_content(busy, Look(earlier), now).plain
    assert "All done." not in activity_content(busy, Look(earlier), now).plain
    ended = activity_content(idle, Look(earlier), now).plain
    assert "All done." in ended and "an earlier run's: the last run wrote none" in ended
    this_run = replace(earlier, reply_before_prompt=False)
    assert "All done." in activity_content(busy, Look(this_run), now).plain
    assert "earlier run" not in activity_content(idle, Look(this_run), now).plain
    unknown = next(r for r in views.ROWS if r.state == "unknown")  # (it may still be running)
    assert "earlier run" not in activity_content(unknown, Look(earlier), now).plain


async def test_a_pane_that_no_longer_fits_goes_though_a_dialog_is_on_top() -> None:
    """Shrunk with a dialog open, the screen behind it is drawn at the new size: a pane too
    wide for it would leave its text at the edge. It goes at once, and comes back with the
    width, the dialog closed."""
    app, _ = make_app(peek=FakePeek(), actions=FakeActions())
    async with app.run_test(size=(200, 50)) as pilot:
        await open_on(pilot, app, QUESTION, "r")
        pane = app.main_screen.pane
        assert app.screen is not app.main_screen and pane.display
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not pane.display
        await pilot.press("escape")
        await pilot.resize_terminal(200, 50)
        await until(pilot, lambda: pane.display)


async def test_a_failed_look_is_said_and_not_retried_at_once() -> None:
    peek = FakePeek()
    peek.fail = Unreachable("http://127.0.0.1:4096: cannot connect")
    app, _ = make_app(peek=peek)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.main_screen.table.select_key(BUSY)
        await until(
            pilot,
            lambda: (
                "Cannot read what it is doing" in pane_text(app)
                and "Refactor the payment module" in pane_text(app)
            ),
        )
        assert "cannot connect" in pane_text(app) and peek.looks[-1] == "ses_busy"
        looks = len(peek.looks)
        for _ in range(10):  # the 1 s tick and redraws do not hammer the server
            app.pull()
            await pilot.pause(0.05)  # (time for a look that should not come: late, it passes)
        assert len(peek.looks) == looks


async def test_a_failed_look_is_tried_again_after_a_while() -> None:
    from tui.app import DashboardOptions, create_app
    from tui.app.inspect import RETRY_AFTER
    from tui.core.source import StaticSource

    from . import views

    now = [views.NOW]
    peek = FakePeek()
    peek.clock = lambda: now[0]
    peek.fail = Unreachable("http://127.0.0.1:4096: cannot connect")
    app = create_app(
        StaticSource(views.every_state()),
        DashboardOptions(clock=lambda: now[0], server_urls=[views.A], peek=peek),
    )
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.main_screen.table.select_key(BUSY)
        await until(
            pilot,
            lambda: (
                "Cannot read what it is doing" in pane_text(app)
                and "Refactor the payment module" in pane_text(app)
            ),
        )
        looks = len(peek.looks)
        now[0] += RETRY_AFTER - 1
        app.pull()
        await pilot.pause(0.3)  # (time for a look that should not come: late, it passes)
        assert len(peek.looks) == looks  # not yet
        peek.fail = None
        now[0] += 1
        app.pull()
        await until(pilot, lambda: "Reply of ses_busy." in pane_text(app))
        assert len(peek.looks) == looks + 1


async def test_without_a_live_server_the_pane_says_where_activity_comes_from() -> None:
    app, _ = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.main_screen.table.select_key(BUSY)
        await pilot.pause()
        assert "read from a live server" in pane_text(app)


async def test_a_stalled_server_does_not_hold_the_pane_of_another_servers_sessions() -> None:
    from dataclasses import replace

    from tui.core.view import View

    from . import views

    base = views.every_state()
    other = replace(base.rows[BUSY], server=views.B, id="ses_on_b", title="On the other server")
    view = View(base.generated_at, base.servers, {**base.rows, other.key: other})
    peek = FakePeek()
    peek.stalled.add(views.A)
    app, _ = make_app(view, peek=peek)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await until(pilot, lambda: bool(peek.looks))  # the first row's look hangs on A
        assert app.main_screen.table.select_key(other.key)
        await until(pilot, lambda: "Reply of ses_on_b." in pane_text(app))


async def test_moving_the_cursor_with_the_pane_open_lays_nothing_out_again() -> None:
    """The pane repaints itself alone: a layout of the screen would paint the table again
    (10-30 ms at 2,000 rows), on every cursor move."""
    peek = FakePeek()
    app, _ = make_app(peek=peek)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        assert screen.table.select_key(BUSY)
        await until(pilot, lambda: "Reply of ses_busy." in pane_text(app))
        await pilot.pause()  # (ends with the layout the reply asked for, if any, done)
        layouts: list[object] = []
        screen.screen_layout_refresh_signal.subscribe(screen, layouts.append)
        texts = set()
        for key in ("j", "j", "k", "k"):
            await pilot.press(key)
            await pilot.pause()
            texts.add(pane_text(app))
        assert len(texts) > 1  # the pane showed other sessions
        assert layouts == []


async def test_a_pane_taller_than_the_screen_scrolls_and_comes_back_to_the_top() -> None:
    from tui.app.widgets.activity import DetailsPane

    peek = FakePeek()
    peek.reply = "\n".join(f"line {i} of a long reply" for i in range(80))
    app, _ = make_app(peek=peek)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        pane = screen.query_one(DetailsPane)
        assert screen.table.select_key(BUSY)
        await until(
            pilot,
            lambda: "line 79 of a long reply" in (text := pane_text(app)) and "ses_busy" in text,
        )
        await until(pilot, lambda: pane.show_vertical_scrollbar)
        # the lines are made at the width left beside the scrollbar: none is cut
        assert pane.virtual_size.width == pane.scrollable_content_region.width
        assert pane.max_scroll_y > 0
        pane.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        assert pane.scroll_y == pane.max_scroll_y > 0
        await pilot.press("j")  # another session: shown from its top
        await pilot.pause()
        assert pane.scroll_y == 0


async def test_a_running_session_on_a_quiet_live_stream_is_not_read_again_and_again() -> None:
    """Issue 42: the pane read a running session's messages and todos every 2 s whatever
    happened. While its server's stream is live and carries nothing, it is read once; output
    on the stream (streamed tokens) makes it read again after RUNNING_EVERY; a stream that is
    not live reads it every RUNNING_EVERY as before; a change of the row (its `updated`)
    reads it at once."""
    from tui.app import DashboardOptions, create_app
    from tui.app.inspect import RUNNING_EVERY
    from tui.core.source import StaticSource

    from . import views

    now = [views.NOW]
    peek = FakePeek()
    peek.clock = lambda: now[0]
    peek.output_at[views.A] = now[0] - 60  # live, and quiet for a minute
    source = StaticSource(views.every_state())
    app = create_app(
        source, DashboardOptions(clock=lambda: now[0], server_urls=[views.A], peek=peek)
    )
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.main_screen.table.select_key(BUSY)
        await until(pilot, lambda: "Reply of ses_busy." in pane_text(app))
        looks = len(peek.looks)
        for _ in range(5):  # ten quiet seconds: no look
            now[0] += RUNNING_EVERY
            app.pull()
            await pilot.pause(0.1)  # (time for a look that should not come: late, it passes)
        assert len(peek.looks) == looks
        peek.output_at[views.A] = now[0]  # tokens stream
        now[0] += RUNNING_EVERY
        app.pull()
        await until(pilot, lambda: len(peek.looks) == looks + 1)
        row = source.current().rows[BUSY]
        source.set(views.with_row(source.current(), BUSY, updated=(row.updated or 0) + 60))
        now[0] += 1
        app.pull()
        await until(pilot, lambda: len(peek.looks) == looks + 2)  # its row moved: read
        del peek.output_at[views.A]  # the stream is not live: read every RUNNING_EVERY
        now[0] += RUNNING_EVERY
        app.pull()
        await until(pilot, lambda: len(peek.looks) == looks + 3)
