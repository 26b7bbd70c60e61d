"""The dashboard driven like a user would: keys, mouse, live updates (Pilot)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import pytest
from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.css.query import NoMatches
from textual.widgets import Input, OptionList, Static

from tui.app import OcwatchApp
from tui.app.app import LOADING_PULL_INTERVAL, PULL_INTERVAL, PULL_SHARE, URGENT_PULL_INTERVAL
from tui.app.screens.detail import DetailScreen, pending_section
from tui.app.screens.help import HelpScreen
from tui.app.screens.servers import ServerPanel, ServersScreen
from tui.app.widgets.server_bar import ServerBar
from tui.app.widgets.session_table import SessionTable
from tui.core.view import View

from . import views
from .conftest import make_app
from .test_actions import BUSY, pulled, until

A = views.A


def table(app: OcwatchApp) -> SessionTable:
    return app.main_screen.table


def shown(app: OcwatchApp) -> list[str]:
    """Session ids in display order (as the table holds them)."""
    t = table(app)
    return [key.split("\x1f")[1] for key in t.row_keys]


async def test_rows_match_lines_and_titles_are_literal() -> None:
    app, _ = make_app()
    app.show_pane = False  # the whole width for the table: every title whole
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        t = table(app)
        assert shown(app) == [ln.key[1] for ln in t.lines]
        assert len(shown(app)) == len(views.ROWS)
        cell = t.get_cell(f"{A}\x1fses_markup", "title")
        assert isinstance(cell, Text)
        assert "[bold red]x[/]" in cell.plain and "␛[31m" in cell.plain
        assert "\x1b" not in cell.plain
        assert all(not span.style or "red" not in str(span.style) for span in cell.spans)


async def test_text_filter() -> None:
    app, _ = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"schema")
        await pilot.pause()
        assert shown(app) == ["ses_parent", "ses_child2"]  # the parent as context
        status = app.main_screen.query_one("#filter-status", Static)
        assert status.display and "1 of 13 shown" in str(status.render())
        await pilot.press("enter")
        assert isinstance(app.focused, SessionTable)
        assert shown(app) == ["ses_parent", "ses_child2"]
        await pilot.press("escape")
        await pilot.pause()
        assert len(shown(app)) == len(views.ROWS)
        # Folder and id match too.
        table(app).set_filters(text="BLOG")
        await pilot.pause()
        assert set(shown(app)) == {r.id for r in views.ROWS if r.directory == views.BLOG}
        table(app).set_filters(text="ses_lost")
        await pilot.pause()
        assert shown(app) == ["ses_lost"]


async def test_what_is_typed_after_slash_in_one_burst_is_filter_text() -> None:
    """`/` and the text after it arrive in one read (a paste, a fast typist over ssh): every
    key after `/` is filter text, never a key of the table (`r` `o` would answer a permission)."""
    app, _ = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        main = app.screen
        for key, char in [("slash", "/"), *((c, c) for c in "schema")]:
            app.post_message(events.Key(key, char))  # queued together, as the driver does
        await pilot.pause()
        box = main.query_one("#filter", Input)
        assert (app.screen, app.focused, box.value) == (main, box, "schema")
        assert shown(app) == ["ses_parent", "ses_child2"]
        await pilot.press("slash")  # in the box, `/` is text (a folder: /p/blog)
        assert box.value == "schema/"


async def test_state_filter_keys() -> None:
    app, _ = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        expected = {
            "2": {r.id for r in views.ROWS if r.state == "busy"},
            "3": {"ses_retry"},
            "4": {"ses_perm", "ses_question"},
            "5": {r.id for r in views.ROWS if r.state == "idle"},
            "6": {"ses_lost"},
            "7": {"ses_stale"},
        }
        rows = views.every_state().rows
        for key, ids in expected.items():
            await pilot.press(key)
            await pilot.pause()
            t = table(app)
            matched = {ln.key[1] for ln in t.lines if not ln.context}
            assert matched == ids, key
            context = {ln.key[1] for ln in t.lines if ln.context}
            assert all(rows[(A, c)].children for c in context)  # only parents as context
        await pilot.press("1")
        await pilot.pause()
        assert len(shown(app)) == len(views.ROWS)
        await pilot.press("4", "escape")  # esc with no text clears the state filter too
        await pilot.pause()
        assert len(shown(app)) == len(views.ROWS)
        table(app).set_filters(state="unknown", text="nothing matches this")
        await pilot.pause()
        empty = app.main_screen.query_one("#empty", Static)
        assert empty.display and "No session matches" in str(empty.render())


async def test_sort_by_key_and_header_click() -> None:
    app, _ = make_app()
    app.show_pane = False  # the whole width for the table: its wide columns
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        t = table(app)
        rows = views.every_state().rows
        assert shown(app)[:3] == ["ses_perm", "ses_question", "ses_stale"]
        await pilot.press("s")  # state -> reason
        assert t.sort_column == "reason"
        t.set_sort("title")
        await pilot.pause()
        roots = [rows[ln.key].title.casefold() for ln in t.lines if ln.depth == 0]
        assert roots == sorted(roots)
        await pilot.press("S")
        await pilot.pause()
        roots = [rows[ln.key].title.casefold() for ln in t.lines if ln.depth == 0]
        assert roots == sorted(roots, reverse=True) and t.sort_reverse
        assert "▼" in t.columns["title"].label.plain
        # Click the "cost" header: most expensive root first.
        col = list(t.columns).index("cost")
        x = sum(c.render_width for c in list(t.columns.values())[:col]) + 2
        await pilot.click(SessionTable, offset=(x, 0))
        await pilot.pause()
        assert t.sort_column == "cost"
        costs = [rows[ln.key].cost or 0 for ln in t.lines if ln.depth == 0]
        assert costs == sorted(costs, reverse=True)
        assert shown(app) == [ln.key[1] for ln in t.lines]


async def test_fold_and_unfold() -> None:
    app, _ = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        t = table(app)
        assert t.select_key((A, "ses_child1"))
        await pilot.press("space")  # on a child: folds its parent, cursor goes to the parent
        await pilot.pause()
        assert "ses_child1" not in shown(app) and t.cursor_key == (A, "ses_parent")
        assert "(+2)" in t.get_cell(f"{A}\x1fses_parent", "title").plain
        await pilot.press("space")
        await pilot.pause()
        assert "ses_child1" in shown(app)
        await pilot.press("c")
        await pilot.pause()
        assert "ses_child2" not in shown(app)
        await pilot.press("e")
        await pilot.pause()
        assert "ses_child2" in shown(app)


async def test_detail_navigation() -> None:
    app, _ = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        t = table(app)
        t.select_key((A, "ses_parent"))
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DetailScreen) and screen.key == (A, "ses_parent")
        children = screen.query_one("#detail-children", OptionList)
        assert children.display and children.option_count == 2
        children.focus()
        children.highlighted = 1
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen) and app.screen.key == (A, "ses_child2")
        await pilot.press("p")  # to the parent
        await pilot.pause()
        assert app.screen.key == (A, "ses_parent")
        await pilot.press("escape", "escape", "escape")
        await pilot.pause()
        assert app.screen is app.main_screen
        assert t.cursor_key == (A, "ses_parent")
        # Mouse: click a row to select it, click again to open it.
        await pilot.click(SessionTable, offset=(5, 2))
        await pilot.click(SessionTable, offset=(5, 2))
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)


def test_detail_shows_a_diff_line_by_line() -> None:
    row = views.sub_agent_edit().rows[(A, "ses_parent")]
    content = pending_section(row)
    assert content is not None
    lines = content.plain.splitlines()
    assert "    --- api/v1.py" in lines and "    +++ api/v1.py" in lines
    assert "    -    ROUTE_0 = '/v1/r0'" in lines and "    +    ROUTE_0 = '/v2/r0'" in lines
    assert "    … 30 more lines" in lines  # 42 lines, 12 shown
    assert lines.index("    --- api/v1.py") > next(  # after the one-line fields
        i for i, ln in enumerate(lines) if ln.strip().startswith("filepath")
    )


async def test_detail_shows_pending_evidence_and_error() -> None:
    app, _ = make_app()
    async with app.run_test(size=(120, 60)) as pilot:
        await pilot.pause()

        async def open_text(session: str) -> str:
            app.open_details((A, session))
            await pilot.pause()
            body = " ".join(str(w.render()) for w in app.screen.query(Static) if w.display)
            await pilot.press("escape")
            await pilot.pause()
            return body

        perm = await open_text("ses_perm")
        assert "rm -rf build/" in perm and "bash" in perm and "rm -rf build/*" in perm
        question = await open_text("ses_question")
        assert "Which database should the service use?" in question
        assert "PostgreSQL" in question and "SQLite" in question
        stale = await open_text("ses_stale")
        assert all(line in stale for line in views.STALE_EVIDENCE) and "STALE" in stale
        assert "11:57:33" in stale  # the timeline, with times
        error = await open_text("ses_error")
        assert "model 'fake-large' not found" in error
        lost = await open_text("ses_lost")
        assert "never completed" in lost and "interrupted" in lost


async def test_static_source_update_is_in_place_and_cursor_stays() -> None:
    app, source = make_app()
    app.show_pane = False  # the whole width for the table: its wide columns
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        t = table(app)
        key = (A, "ses_busy")
        t.select_key(key)
        row_keys = set(t.row_keys)
        calls: list[str] = []
        for name in ("add_row", "remove_row", "clear"):
            original = getattr(t, name)

            def spy(
                *args: object, _name: str = name, _original: object = original, **kwargs: object
            ) -> object:
                calls.append(_name)
                return _original(*args, **kwargs)  # type: ignore[operator]

            setattr(t, name, spy)
        # Another row changes state and moves up (idle -> input sorts first): the cursor stays.
        view = views.with_row(
            source.current(),
            (A, "ses_done"),
            state="input",
            reason=None,
            pending=(views.PERMISSION,),
        )
        view = views.with_row(view, key, cost=9.99, tokens=999_999)
        source.set(view)
        await pulled(pilot, app, view)
        assert calls == []  # no row added, removed or the table cleared
        assert set(t.row_keys) == row_keys
        assert t.cursor_key == key
        assert t.get_cell(f"{A}\x1fses_busy", "cost").plain == "$9.99"
        assert shown(app)[0] == "ses_done" or shown(app).index("ses_done") < 3
        # A new row is added with its key; a vanished one removed; nothing else.
        rows = dict(view.rows)
        rows.pop((A, "ses_abort"))
        new = replace(view.rows[key], id="ses_new", title="A brand new session")
        rows[new.key] = new
        view = View(generated_at=view.generated_at, servers=view.servers, rows=rows)
        source.set(view)
        await pulled(pilot, app, view)
        assert sorted(calls) == ["add_row", "remove_row"]
        assert t.cursor_key == key
        assert "ses_new" in shown(app) and "ses_abort" not in shown(app)


async def test_a_row_of_a_server_that_cannot_be_read_says_unreachable_in_its_reason() -> None:
    """`unknown` with an empty reason said nothing of why; the reason column says
    `unreachable` (the last known state is in the evidence), and the row's reason comes back
    with the server."""
    app, source = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        t = table(app)
        view = source.current()
        key = next(k for k, r in view.rows.items() if r.reason == "completed")
        cell = f"{key[0]}\x1f{key[1]}"
        assert t.get_cell(cell, "reason").plain == "completed"
        down = views.with_row(
            view, key, state="unknown", reason=None, settled=False, settling="unreachable"
        )
        source.set(down)
        await until(pilot, lambda: t.get_cell(cell, "reason").plain == "unreachable")
        source.set(view)
        await until(pilot, lambda: t.get_cell(cell, "reason").plain == "completed")


async def test_an_outage_keeps_each_rows_place_and_says_what_it_was() -> None:
    """Server A goes down: its rows read unknown, dimmed, each saying what it last was, in
    the order they had; the server bar says how long it has been down, not "last event now";
    the detail view says the last known state and how long ago."""
    app, source = make_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        t = table(app)
        view = source.current()
        before = shown(app)
        source.set(views.down(view, views.A, views.NOW - 125))
        await until(pilot, lambda: t.get_cell(_cell(BUSY), "reason").plain == "unreachable")
        assert shown(app) == before  # (sorted by state: each row kept its place)
        for key, row in source.current().rows.items():
            if key[0] == views.A:
                assert row.last_known is not None
                title = t.get_cell(_cell(key), "title")
                said = f"was {row.last_known.said()}"
                assert said in title.plain or said[:12] in title.plain, title.plain
                assert all(span.style.dim for span in title.spans[1:]), title.spans  # [0]: tree
        bar = str(app.main_screen.query_one("#servers").render())
        assert "down 2m05s" in bar and "last event" not in bar.split("down")[0][-40:]
        t.select_key(BUSY)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen))
        said = " ".join(str(w.render()) for w in app.screen.query(Static))
        assert "last known busy, 2m05s ago" in " ".join(said.split())


def _cell(key: tuple[str, str]) -> str:
    return f"{key[0]}\x1f{key[1]}"


async def test_home_and_end_go_to_the_first_and_last_row() -> None:
    app, source = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        t = table(app)
        await pilot.press("end")
        assert t.cursor_row == t.row_count - 1
        await pilot.press("home")
        assert t.cursor_row == 0
        await pilot.press("ctrl+end")
        assert t.cursor_row == t.row_count - 1
        source.set(views.unreachable())  # no rows: the keys do nothing
        await until(pilot, lambda: t.row_count == 0)
        await pilot.press("end", "home")
        assert t.row_count == 0 and t.cursor_row == 0


def counted_pulls(app: OcwatchApp) -> list[int]:
    """Count `app`'s pulls from now on: the list's one item is how many it made."""
    made = [0]
    pull = app.pull

    def counting() -> None:
        made[0] += 1
        pull()

    app.pull = counting  # type: ignore[method-assign]
    return made


async def test_notify_is_coalesced() -> None:
    app, source = make_app()
    async with app.run_test() as pilot:
        await pilot.pause()
        pulls = counted_pulls(app)
        for _ in range(5000):
            app.mark_dirty()
        await until(pilot, lambda: pulls[0] >= 1)
        await pilot.pause(0.3)  # (and no more than a few after it: 5,000 marks coalesced)
        assert pulls[0] <= 5


async def test_unreachable_server_says_what_to_do() -> None:
    app, _ = make_app(views.unreachable(), server_urls=[views.A])
    async with app.run_test() as pilot:
        await pilot.pause()
        empty = str(app.main_screen.query_one("#empty", Static).render())
        assert "No OpenCode server is reachable" in empty
        assert "opencode serve --port 4096" in empty and "ocwatch demo" in empty
        assert "Connection refused" in empty


async def test_a_first_snapshot_under_way_says_how_far_it_has_loaded() -> None:
    app, source = make_app(views.loading(), server_urls=[views.A])
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        empty = str(app.main_screen.query_one("#empty", Static).render())
        assert empty == f"Loading the sessions of {views.A}: 812/2,005 …"
        bar = str(app.main_screen.query_one(ServerBar).render())
        assert "connecting" in bar and "loading sessions 812/2,005" in bar
        source.set(views.loading(2004))
        # (while a first snapshot loads, pulls are LOADING_PULL_INTERVAL apart: the change shows
        # when that timer runs, late on a loaded machine)
        await until(
            pilot,
            lambda: "2,004/2,005" in str(app.main_screen.query_one("#empty", Static).render()),
        )
        assert "2,004/2,005" in str(app.main_screen.query_one("#empty", Static).render())


def servers_text(app: OcwatchApp) -> list[dict[str, str]]:
    """Each server panel of the servers view: its health line and shown fields, as text."""
    out = []
    for panel in app.screen.query(ServerPanel):
        fields = {"line": str(panel.query_one(".server-line", Static).render())}
        for row in panel.query("Horizontal"):
            if row.display:
                name = str(row.query_one(".field-name", Static).render())
                fields[name] = str(row.query_one(".field-value", Static).render())
        out.append(fields)
    return out


async def test_the_servers_view_shows_connection_snapshot_and_drift() -> None:
    app, source = make_app(views.with_drift())
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await pilot.pause()
        assert isinstance(app.screen, ServersScreen)
        b, a = servers_text(app)  # (the unreachable one first: it needs attention)
        assert a["line"].startswith("● connected") and "drift 3" in a["line"]
        assert a["sessions"] == "13: busy 4, retry 1, input 2, idle 5, unknown 1, stale 1"
        assert a["events skipped"] == "2 malformed · 5 of unknown types"
        assert a["drift"].splitlines() == [
            "3 times the events had derived a state the next snapshot did not show",
            "• ses_busy: events said busy, snapshot says idle/completed",
            "• ses_lost: events said busy, snapshot says unknown/interrupted",
            "• ses_␛[31mred: events said idle, snapshot says busy",
        ]  # shown literally
        assert "error" not in a
        assert b["snapshot"] == "none yet" and b["drift"] == "–"
        assert b["sessions"] == "– (not read yet)"  # not "0": nothing was read
        assert b["error"] == "ConnectError: [Errno 111] Connection refused"
        source.set(views.every_state())  # it follows the View
        await until(
            pilot,
            lambda: servers_text(app)[1]["drift"] == "none: every snapshot agreed with the events",
        )
        source.set(views.unreachable())  # servers come and go
        await until(
            pilot,
            lambda: [t["line"][:13] for t in servers_text(app)] == ["✗ unreachable"],
        )
        (only,) = servers_text(app)
        assert only["line"].startswith("✗ unreachable")
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main_screen
        await pilot.click(ServerBar)  # a click on the servers opens it too
        await pilot.pause()
        assert isinstance(app.screen, ServersScreen)
        await pilot.press("i")
        await pilot.pause()
        assert app.screen is app.main_screen


async def test_the_servers_view_keeps_one_panel_per_server_through_quick_changes() -> None:
    """Two spellings of one server before the first View, then the View: the panels change
    twice before any of them has mounted."""
    app, _ = make_app(views.unreachable(), server_urls=[views.A, views.A + "/", views.B])
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("i")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ServersScreen)
        for view in (None, views.every_state(), None, views.unreachable()):
            app.view = view
            screen.show_view()  # no pause in between

        def lines() -> list[str] | None:
            try:
                return [p["line"].split()[2] for p in servers_text(app)]
            except NoMatches:  # (its panels are still being composed)
                return None

        await until(pilot, lambda: lines() == ["127.0.0.1:4096"])
        assert len(screen.query(ServerPanel)) == 1


async def test_help_lists_every_binding_and_palette_has_commands() -> None:
    app, _ = make_app()
    async with app.run_test(size=(120, 60)) as pilot:
        await pilot.pause()
        groups = app.help_groups()
        described = [d for _, rows in groups for _, d in rows]
        assert all(described)
        for screen_cls in (OcwatchApp, SessionTable, DetailScreen, HelpScreen):
            for b in screen_cls.BINDINGS:
                assert b.description, b  # type: ignore[union-attr]
        assert "Show only stale" in described and "Filter" in described
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text", Static).render())
        assert "Show only input" in text and "Reverse sort" in text and "ctrl+p" in text
        await pilot.press("escape")
        assert app.screen is app.main_screen
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Show only stale sessions" in titles and "Theme: ocwatch-contrast" in titles
        assert "Sort by cost" in titles
        assert "Keys" not in titles and "Help" in titles  # one help: the screen esc closes
        await pilot.press("t")
        assert app.theme != "ocwatch-dark"


async def test_help_wraps_each_text_under_itself_on_a_small_terminal() -> None:
    """At 80x24 a long description wraps; its next line starts under the description, not
    under the key."""
    app, _ = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await until(pilot, lambda: bool(app.screen.query("#help-text")))
        text = app.screen.query_one("#help-text", Static)

        def laid_out() -> bool:  # (wrapped to its final width: a first render may be wider)
            width = text.content_region.width
            return 0 < width < 80 and all(
                cell_len(line) <= width for line in str(text.render()).splitlines()
            )

        await until(pilot, laid_out)
        lines = str(text.render()).splitlines()
        at = next(i for i, line in enumerate(lines) if "The conversation:" in line)
        column = lines[at].index("The conversation:")
        assert lines[at + 1][:column].strip() == "" and lines[at + 1][column:].strip(), lines
        assert all(cell_len(line) <= text.content_region.width for line in lines)


async def test_quit() -> None:
    app, _ = make_app()
    async with app.run_test() as pilot:
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_scroll_position_survives_updates() -> None:
    many = {r.key: r for r in views.ROWS}
    for i in range(60):
        extra = views.row(
            f"ses_x{i:02d}",
            f"Extra session {i:02d}",
            "idle",
            reason="completed",
            since=-5000 - i,
            updated=-5000 - i,
        )
        many[extra.key] = extra
    start = View(views.NOW, views.SERVERS, many)
    app, source = make_app(start)
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause()
        t = table(app)
        t.select_key((A, "ses_x30"))
        await pilot.pause()
        t.scroll_to(y=5, animate=False, immediate=True)  # the cursor row is out of view now
        await pilot.pause()
        assert t.scroll_y == 5
        # A new session sorts to the top: every row moves down one line.
        new = views.row("ses_a_top", "Needs you now", "input", pending=(views.PERMISSION,))
        source.set(View(views.NOW, views.SERVERS, {**many, new.key: new}))
        await until(pilot, lambda: shown(app)[0] == "ses_a_top")
        assert t.cursor_key == (A, "ses_x30")
        assert t.scroll_y == 5


async def test_ops_keys_j_k_g_G_and_n_for_the_next_row_waiting_for_input() -> None:
    app, _ = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        t = table(app)
        await pilot.press("G")
        assert t.cursor_row == t.row_count - 1
        await pilot.press("g", "j", "j")
        assert t.cursor_row == 2
        await pilot.press("k")
        assert t.cursor_row == 1
        waiting = [
            i
            for i, ln in enumerate(t.lines)
            if t._view is not None and t._view.rows[ln.key].state == "input"
        ]
        assert len(waiting) >= 2
        await pilot.press("n")  # from the row after the first waiting one: the next, wrapping
        assert t.cursor_row == next((i for i in waiting if i > 1), waiting[0])
        for _ in waiting:
            await pilot.press("n")
        assert t.cursor_row in waiting


async def test_n_says_sessions_waiting_that_a_filter_hides() -> None:
    """`n` said "No session is waiting for input." while the header counted some, hidden by a
    state filter (a UX review): it says how many wait, and how to show them."""
    app, _ = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        t = table(app)
        assert t._view is not None
        asking = sum(r.state == "input" for r in t._view.rows.values())
        assert asking
        t.set_filters(text="no such session at all")
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert f"{asking} waiting for input, hidden by the filter: esc clears it." in said


async def test_the_filter_takes_a_regular_expression_and_plain_text() -> None:
    app, _ = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table(app).set_filters(text="^fix|^pick")
        await pilot.pause()
        assert set(shown(app)) == {
            r.id for r in views.ROWS if r.title.lower().startswith(("fix", "pick"))
        }
        table(app).set_filters(text="[bold red]")  # not what the regex means: the text itself
        await pilot.pause()
        assert shown(app) == ["ses_markup"]
        table(app).set_filters(text="(unclosed")  # not a regex: plain text, no match, no error
        await pilot.pause()
        assert shown(app) == []


async def test_the_filter_status_says_how_the_text_was_read() -> None:
    """A text in no row is read as a regular expression, and the status says so (`q?` matches
    every row: it is no mystery); a text that is neither says that, rather than an empty table
    with no reason."""
    app, _ = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        status = app.main_screen.query_one("#filter-status", Static)
        for text, said in [
            ("schema", None),
            ("q?", "as a regular expression"),
            ("((", "not a regular expression"),
        ]:
            table(app).set_filters(text=text)
            await pilot.pause()
            line = str(status.render())
            assert repr(text) in line
            for other in ("as a regular expression", "not a regular expression"):
                assert (other in line) == (other == said), (text, line)


async def test_numbers_sort_highest_first_on_the_first_press() -> None:
    app, _ = make_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        t = table(app)
        for column, value in (
            ("in_state", lambda r: -r.since),
            ("cost", lambda r: r.cost or 0),
            ("tokens", lambda r: r.tokens or 0),
        ):
            t.set_sort(column)
            await pilot.pause()
            roots = [r for r in views.ROWS if r.parent_id is None]
            firsts = shown(app)[0]
            assert value(next(r for r in roots if r.id == firsts)) == max(map(value, roots))


async def test_a_screenshot_without_a_downloads_folder_goes_to_the_state_folder(
    tmp_path, monkeypatch
) -> None:
    import platformdirs

    monkeypatch.setattr(platformdirs, "user_downloads_path", lambda: tmp_path / "no-downloads")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    app, _ = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.action_screenshot()
        folder = tmp_path / "state" / "ocwatch" / "screenshots"
        # (the file can be there before its content is written: wait for all of it)
        await until(
            pilot,
            lambda: (
                folder.is_dir()
                and any(p.read_text().rstrip().endswith("</svg>") for p in folder.glob("*.svg"))
            ),
        )
        (shot,) = folder.glob("*.svg")
        assert shot.read_text().startswith("<svg")
        assert not (tmp_path / "no-downloads").exists()


async def test_the_no_match_hint_names_keys_that_work_where_the_keys_go() -> None:
    app, _ = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        empty = app.main_screen.query_one("#empty", Static)
        await pilot.press("slash", *"nothing matches this")
        await pilot.pause()
        said = str(empty.render())
        assert "esc clears the text" in said and "Press 1" not in said  # 1 would type
        await pilot.press("enter")
        await pilot.pause()
        await pilot.pause()
        assert "esc clears it" in str(empty.render())
        table(app).set_filters(state="unknown")
        await pilot.pause()
        assert "Press 1 to show every state" in str(empty.render())


async def test_an_urgent_change_is_pulled_at_once_not_at_the_next_slot() -> None:
    """A change that can settle a row (ServerMonitor's urgent notify) is drawn at once: 20 ms
    after a pull it does not wait out PULL_INTERVAL (50 ms) as any other change does."""
    app, _ = make_app()
    async with app.run_test() as pilot:
        await pilot.pause()
        app.pull()
        app._pulled_at -= 0.02  # that pull was 20 ms ago
        before = app._pulled_at
        app.mark_urgent()
        await pilot.pause()
        assert app._pulled_at > before and not app._dirty


async def test_a_flood_is_pulled_once_a_spacing_whatever_urgent_pulls_come_between() -> None:
    """A change pulled for an urgent one leaves no second pull scheduled: a flood of changes
    with urgent ones among them is pulled at most once a spacing, plus once for each urgent
    change. (Each urgent pull made while a pull was scheduled had added a pull for good: a
    flood with a few runs ending was pulled 25 times a second, not 20.)"""
    app, _ = make_app()
    async with app.run_test() as pilot:
        await pilot.pause()
        pulls = counted_pulls(app)
        urgent = 0
        began = time.monotonic()
        for i in range(150):
            app.mark_dirty()
            if i % 6 == 0:
                app.mark_urgent()
                urgent += 1
            await asyncio.sleep(0.004)
        await until(pilot, lambda: not app._dirty)
        elapsed = time.monotonic() - began
        assert pulls[0] <= elapsed / PULL_INTERVAL + 1 + urgent, (pulls[0], elapsed, urgent)


async def test_a_costly_pull_spaces_the_next_by_its_share() -> None:
    """After a pull that took t s, a change that cannot settle a row waits t / PULL_SHARE,
    within PULL_INTERVAL and LOADING_PULL_INTERVAL; an urgent one does not."""
    app, _ = make_app()
    async with app.run_test() as pilot:
        await pilot.pause()
        app.pull()
        assert 0 <= app._pull_took < 1
        app._pull_took = 0.02
        assert app._spacing() == pytest.approx(0.02 / PULL_SHARE)
        app._pull_took = 0.0001
        assert app._spacing() == PULL_INTERVAL
        app._pull_took = 5.0
        assert app._spacing() == LOADING_PULL_INTERVAL
        # a pull that took 30 ms: the next change waits 200 ms (a lower bound: a slow
        # machine only makes it later)
        app._pull_took = 0.03
        app._pulled_at = before = time.monotonic()
        app.mark_dirty()
        await until(pilot, lambda: app._pulled_at > before)
        assert app._pulled_at - before >= 0.03 / PULL_SHARE - 0.005
        # an urgent change after a costly pull is scheduled URGENT_PULL_INTERVAL after it (or
        # at once, if the machine took longer than that to get here)
        waits: list[float] = []
        set_timer = app.set_timer

        def timed(delay: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
            if callback == app._pull_urgent:
                waits.append(delay)
            return set_timer(delay, callback, *args, **kwargs)

        app.set_timer = timed  # type: ignore[method-assign]
        app._pull_took = 5.0
        app._pulled_at = before = time.monotonic()
        app.mark_urgent()
        await until(pilot, lambda: app._pulled_at > before)
        assert all(wait <= URGENT_PULL_INTERVAL for wait in waits), waits


def test_the_servers_view_says_how_often_a_light_resync_comes() -> None:
    from tui.app.screens.servers import server_fields
    from tui.core.view import ServerInfo

    light = ServerInfo(url="http://a", reachable=True, vouched=True, resync_every=97.5)
    assert (
        "light resyncs every 1m37s: the stream vouches"
        in server_fields(light, [], 0)["requests"].plain
    )
    full = ServerInfo(url="http://a", reachable=True, vouched=False, resync_every=30.0)
    assert "light" not in server_fields(full, [], 0)["requests"].plain


async def test_idle_sessions_older_than_fold_idle_after_fold_away_and_o_shows_them() -> None:
    """Idle rows not updated for 12 hours leave the table (counted in the line above it);
    `o` shows them and folds them again; a filter looks at every row; 0 turns ageing off."""
    view = source_view = views.every_state()
    old = [k for k, r in view.rows.items() if r.state == "idle" and r.parent_id is None][:2]
    for key in old:
        view = views.with_row(view, key, updated=views.NOW - 13 * 3600)
    app, _ = make_app(view)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        status = app.main_screen.query_one("#filter-status", Static)
        await until(pilot, lambda: len(shown(app)) == len(view.rows) - 2)
        assert not {k[1] for k in old} & set(shown(app))
        assert "2 idle for over 12h folded" in str(status.render())
        await pilot.press("o")
        await until(pilot, lambda: len(shown(app)) == len(view.rows))
        assert not status.display
        await pilot.press("o")
        await until(pilot, lambda: len(shown(app)) == len(view.rows) - 2)
        await pilot.press("5")  # idle: a filter looks at every row, the old ones too
        await until(pilot, lambda: {k[1] for k in old} <= set(shown(app)))
    app, _ = make_app(view, fold_idle_after=0)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: len(shown(app)) == len(source_view.rows))


def test_a_table_of_only_old_idle_rows_says_so_and_how_to_see_them() -> None:
    from tui.app.screens.main import empty_message

    said = empty_message(views.every_state(), [], 0, folded=12)
    assert said is not None and "o shows the 12 folded away" in said.plain
    said = empty_message(views.every_state(), [], 0, state_filter="busy", folded=12)
    assert said is not None and "No session matches" in said.plain


async def test_f_groups_by_folder_then_server_and_a_group_folds() -> None:
    """f: a line per folder with its sessions under it (counted by state), then per server,
    then none; enter on a group's line folds it, c folds every group; an action on a group's
    line says no session is selected."""
    from tui.app.tree import is_group

    app, source = make_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        t = table(app)
        folders = {r.directory for r in source.current().rows.values()}
        await pilot.press("f")
        await until(pilot, lambda: any(is_group(ln.key) for ln in t.lines))
        heads = [ln for ln in t.lines if is_group(ln.key)]
        assert len(heads) == len(folders) and t.lines[0] is heads[0]
        title = t.get_cell(_cell(heads[0].key), "title").plain
        assert title.startswith("▾ ") and "? " in title  # the most urgent group first
        assert t.select_key(heads[0].key)
        await pilot.press("enter")
        await until(pilot, lambda: t.lines[0].hidden > 0 and not t.lines[0].expanded)
        assert "folded" in t.get_cell(_cell(heads[0].key), "title").plain
        await pilot.press("a")  # no session under the cursor: said, nothing done
        await until(
            pilot, lambda: "No session selected." in [n.message for n in app._notifications]
        )
        await pilot.press("f")
        await until(pilot, lambda: t.grouping == "server")
        servers = {r.server for r in source.current().rows.values()}
        await until(pilot, lambda: sum(is_group(ln.key) for ln in t.lines) == len(servers))
        await pilot.press("c")
        await until(pilot, lambda: all(is_group(ln.key) for ln in t.lines))
        await pilot.press("f")
        await until(pilot, lambda: not any(is_group(ln.key) for ln in t.lines))


async def test_a_view_the_table_has_not_laid_out_yet_is_not_said_to_match_nothing(
    monkeypatch,
) -> None:
    """Issue 42: a large first View waits for the table's size before it is laid out; the
    screen said "No session matches the filter" (with no filter set) meanwhile."""
    empty = View(generated_at=views.NOW, servers=views.SERVERS, rows={})
    app, source = make_app(empty)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        t = table(app)
        monkeypatch.setattr(t, "_sync", lambda *args, **kwargs: None)  # not laid out yet
        source.set(views.every_state())
        await until(pilot, lambda: t.behind)
        await pilot.pause()
        said = app.main_screen.query_one("#empty", Static)
        assert not said.display or "No session matches" not in str(said.render())
