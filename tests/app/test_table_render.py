"""The session table paints what a table rendered from scratch would, after in-place updates.

The table (RowTable) keeps its rendered cells and lines across updates, drops them for the cells
replaced, re-stamps the rows that moved, and keeps every row but the cursor's and the mouse's
across cursor moves. Had it kept too much, a stale cell, or a row index that sends a mouse
click to the wrong session (it lives in the segments' style meta), would stay on screen. Each
step compares every painted line (text and style, meta included) with a paint after every
cache is dropped (`forget_rendering`).
"""

from __future__ import annotations

from rich.segment import Segment

from tui.app import format as fmt
from tui.app.widgets.session_table import SessionTable
from tui.core.view import SessionRow, View

from . import views
from .conftest import make_app

A = views.A


def paint(t: SessionTable) -> list[list[Segment]]:
    return [list(t.render_line(y)) for y in range(t.size.height)]


def paint_from_scratch(t: SessionTable) -> list[list[Segment]]:
    """The same table painted with every render cache dropped."""
    t.forget_rendering()
    return paint(t)


def many() -> View:
    rows = {r.key: r for r in views.ROWS}
    for i in range(40):
        extra = views.row(
            f"ses_x{i:02d}",
            f"Extra session {i:02d}",
            "idle",
            reason="completed",
            since=-5000 - i,
            updated=-5000 - i,
        )
        rows[extra.key] = extra
    return View(views.NOW, views.SERVERS, rows)


async def test_in_place_updates_paint_like_a_full_render() -> None:
    start = many()
    app, source = make_app(start)
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause()
        t = app.main_screen.table
        t.select_key((A, "ses_done"))
        await pilot.pause()
        baseline = paint(t)
        assert baseline == paint_from_scratch(t)
        steps = [
            # one cell changes, nothing moves
            views.with_row(start, (A, "ses_busy"), cost=9.99, tokens=999_999),
            # a state change moves a row to the top: rows below shift (new mouse targets)
            views.with_row(
                start, (A, "ses_x05"), state="input", reason=None, pending=(views.PERMISSION,)
            ),
            # and back, with a cell change in the same refresh
            views.with_row(
                views.with_row(start, (A, "ses_x05"), cost=3.0),
                (A, "ses_perm"),
                title="Renamed while it moved",
            ),
        ]
        for view in steps:
            source.set(view)
            app.pull()  # (not a pause long enough for the app's own pull: a busy CI may not)
            await pilot.pause()
            assert paint(t) == paint_from_scratch(t)
        # the cursor moves down and back: only the rows it leaves and reaches look different
        for key in ("down", "down", "up"):
            await pilot.press(key)
            assert paint(t) == paint_from_scratch(t)
        await pilot.press("up")
        # an unread mark comes and goes on one title. It is set where the app keeps it: set on
        # the table alone, the next pull (the 1 s tick, which a loaded machine lets happen
        # within the pause) would show the app's marks again, without it.
        app.attention.unread.add((A, "ses_busy"))
        t.set_unread(app.unread)
        await pilot.pause()
        assert paint(t) == paint_from_scratch(t)
        assert any("• Refactor" in "".join(s.text for s in line) for line in paint(t))
        app.attention.unread.clear()
        t.set_unread(app.unread)
        await pilot.pause()
        assert not any("• " in "".join(s.text for s in line) for line in paint(t))
        # the cursor stayed on its session through every move
        assert t.cursor_key == (A, "ses_done")
        # scrolled down, an update below the fold paints right when it comes into view
        t.scroll_to(y=20, animate=False, immediate=True)
        await pilot.pause()
        below = t.row_keys[t.scroll_y + 3]
        server, _, sid = below.partition("\x1f")
        source.set(views.with_row(steps[-1], (server, sid), title="Seen after scrolling"))
        app.pull()
        await pilot.pause()
        assert paint(t) == paint_from_scratch(t)
        assert any("Seen after scrolling" in "".join(s.text for s in line) for line in paint(t))


def assert_shown_afresh(t: SessionTable, view: View, at: float) -> None:
    """After `show(view, at)`, every row's cells equal cells rendered afresh at `at`."""
    t.show(view, at)
    columns = [spec.key for spec in t._columns()]
    for line in t.lines:
        row = view.rows[line.key]
        want = [t.cells.cell(c, row, line, False).plain for c in columns]
        got = [cell.plain for cell in t.get_row(f"{line.key[0]}\x1f{line.key[1]}")]
        assert got == want, (at, line.key)


async def test_time_cells_are_right_each_second_though_rows_are_looked_at_less() -> None:
    """A refresh looks again only at rows whose time cells moved (CellRenderer.until): at every
    second across the `now` / `Ns ago` / `Nm ago` and `59s` / `1m00s` boundaries, each row's
    cells equal cells rendered afresh."""
    start = many()
    app, _source = make_app(start)
    async with app.run_test(size=(160, 24)) as pilot:
        await pilot.pause()
        base = float(int(views.NOW))
        for dt in [0, 1, 2, 4, 5, 6, 30, 59, 60, 61, 119, 120, 3599, 3600, 3601, 5000, 86_400]:
            assert_shown_afresh(app.main_screen.table, start, base + dt)
        await pilot.pause()


async def test_a_clock_that_steps_back_is_shown_right_at_once() -> None:
    """Rows are looked at again when their time cells move (CellRenderer.until); a clock set
    back (an NTP step) makes every row's times read again, not an hour later."""
    start = many()
    app, _source = make_app(start)
    async with app.run_test(size=(160, 24)) as pilot:
        await pilot.pause()
        base = float(int(views.NOW))
        for dt in (3600, 0):
            assert_shown_afresh(app.main_screen.table, start, base + dt)


async def test_the_mouse_hover_paints_like_a_full_render() -> None:
    """The row under the mouse (and the header, under it) is painted apart from the cached
    rows; moving the mouse, or hiding the hover with a key, repaints what it left."""
    app, _source = make_app(many())
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause()
        t = app.main_screen.table
        for offset in ((5, 4), (5, 6), (5, 0), (100, 3)):
            await pilot.hover(SessionTable, offset=offset)
            await pilot.pause()
            assert t.hover_row == offset[1] - 1
            assert paint(t) == paint_from_scratch(t)
        hovered = paint(t)
        await pilot.press("right")  # a key hides the hover (the cursor stays)
        await pilot.pause()
        unhovered = paint(t)
        assert unhovered == paint_from_scratch(t)
        assert hovered[3] != unhovered[3] and hovered[5:] == unhovered[5:]


def without(view: View, *keys: tuple[str, str], add: tuple[SessionRow, ...] = ()) -> View:
    rows = {k: r for k, r in view.rows.items() if k not in keys}
    rows.update({r.key: r for r in add})
    return View(view.generated_at, view.servers, rows)


async def test_rows_removed_and_added_paint_like_a_full_render() -> None:
    """Rows leaving move the rows below them up (their cells keep their rendering, with new
    mouse targets); with the cursor on the last row, a removal clamps it first, and it comes
    back to its session."""
    start = many()
    app, source = make_app(start)
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause()
        t = app.main_screen.table
        last = t.row_keys[-1]
        server, _, sid = last.partition("\x1f")
        t.select_key((server, sid))
        await pilot.pause()
        t.scroll_to(y=0, animate=False, immediate=True)  # the rows at the top in view
        await pilot.pause()
        paint(t)  # (cached as they are)
        new = views.row(
            "ses_x_new", "A new one", "idle", reason="completed", since=-10, updated=-10
        )
        for view in (
            without(start, (A, "ses_x00"), (A, "ses_busy")),
            without(start, (A, "ses_x01"), add=(new,)),
            start,
        ):
            source.set(view)
            app.pull()
            await pilot.pause()
            assert paint(t) == paint_from_scratch(t)  # (scrolled to the cursor: clamped)
            assert t.cursor_key == (server, sid)
            assert t.row_count == len(t.lines) == len(view.rows)
            t.scroll_to(y=0, animate=False, immediate=True)  # the rows that moved up
            await pilot.pause()
            assert paint(t) == paint_from_scratch(t)


async def test_a_table_fed_only_what_changed_shows_what_a_fresh_one_shows() -> None:
    """A refresh over the same sessions looks only at the rows the View changed (and those
    whose mark flipped, or whose time cells moved): after each of many random refreshes
    (row fields, a new parent, unread marks, the clock, a sort or a filter now and then) the
    order equals a layout from scratch and every row's cells equal cells rendered afresh."""
    import random
    from dataclasses import replace

    from tui.app.tree import layout
    from tui.app.widgets.session_table import row_key_str

    rnd = random.Random(7)
    view = many()
    keys = sorted(view.rows)
    app, _source = make_app(view)
    async with app.run_test(size=(160, 24)) as pilot:
        await pilot.pause()
        t = app.main_screen.table
        at = float(int(views.NOW))
        unread: frozenset[tuple[str, str]] = frozenset()
        for step in range(600):
            rows = dict(view.rows)
            for key in rnd.sample(keys, rnd.choice((0, 1, 1, 2, 5))):
                r = rows[key]
                change = rnd.choice(("state", "cost", "title", "updated", "parent", "stale"))
                if change == "state":
                    state = rnd.choice(("busy", "idle", "busy", "idle", "retry", "unknown"))
                    r = replace(r, state=state, reason="completed" if state == "idle" else None)
                elif change == "cost":
                    r = replace(r, cost=rnd.random() * 10, tokens=rnd.randrange(10**6))
                elif change == "title":
                    r = replace(r, title=f"Title {step}")
                elif change == "updated":
                    r = replace(r, updated=at - rnd.randrange(300))
                elif change == "parent":
                    parent = rnd.choice([None, *(k[1] for k in keys[:5] if k != key)])
                    r = replace(r, parent_id=parent)
                else:
                    r = replace(r, stale=not r.stale)
                rows[key] = r
            view = View(view.generated_at, view.servers, rows)
            if rnd.random() < 0.2:
                unread = frozenset(rnd.sample(keys, rnd.randrange(4)))
            at += rnd.choice((0,) * 12 + (1, 61))  # (mostly within a second: the fast path)
            if rnd.random() < 0.03:
                t.set_sort(rnd.choice(("state", "title", "cost")))
            if rnd.random() < 0.03:
                t.set_filters(text=rnd.choice(("", "Extra", "session 1")))
            t.show(view, at, unread=unread)
            match = None
            if t.filtering:
                _kind, text_match = fmt.text_match(t.text_filter, view.rows.values())
                match = text_match
            fresh = layout(
                view.rows,
                sort=t.sort_column,
                reverse=t.sort_reverse,
                collapsed=t.collapsed,
                match=match,
            )
            assert t.row_keys == [row_key_str(line.key) for line in fresh], step
            columns = [spec.key for spec in t._columns()]
            for line in fresh:
                row = view.rows[line.key]
                want = [t.cells.cell(c, row, line, False).plain for c in columns]
                got = [cell.plain for cell in t.get_row(row_key_str(line.key))]
                assert got == want, (step, line.key)


async def test_a_row_changed_alone_ticks_its_times_from_the_next_second() -> None:
    """Rows whose times move rarely (hours old), then one row's times start now, in its place
    (no row moves): looked at alone, its time cells still move on the next second."""
    base = float(int(views.NOW))
    old = {
        r.key: views.row(r.id, r.title, "idle", reason="completed", since=-9000, updated=-9000)
        for r in views.ROWS
        if r.parent_id is None
    }
    view = View(views.NOW, views.SERVERS, old)
    app, source = make_app(view)
    async with app.run_test(size=(160, 24)) as pilot:
        await pilot.pause()
        t = app.main_screen.table
        assert_shown_afresh(t, view, base)
        key = next(iter(old))
        started = views.with_row(view, key, since=base, updated=base)
        source.set(started)  # (the app's own pulls show the same)
        assert_shown_afresh(t, started, base)
        for dt in (1, 2):
            assert_shown_afresh(t, started, base + dt)


async def test_rows_out_of_view_make_no_cells_until_they_are_painted() -> None:
    """A cell is made when its row is painted (or read), not when a View brings it: under a
    stream, the rows changed out of view cost nothing; scrolled to, they show what a fresh
    table shows."""
    from dataclasses import replace

    start = many()
    app, source = make_app(start)
    async with app.run_test(size=(120, 16)) as pilot:
        await pilot.pause()
        t = app.main_screen.table
        assert t.row_count > 3 * t.size.height
        made: list[str] = []
        make = t.cell_source
        assert make is not None

        def spy(key: str, column: str):  # type: ignore[no-untyped-def]
            made.append(key)
            return make(key, column)

        t.cell_source = spy
        changed = View(
            start.generated_at,
            start.servers,
            {k: replace(r, cost=(r.cost or 0.0) + 1.0) for k, r in start.rows.items()},
        )
        source.set(changed)
        await pilot.pause()
        in_view = set(t.row_keys[: t.size.height])
        assert made and set(made) <= in_view  # every row changed; those in view made anew
        made.clear()
        t.action_last_row()
        await pilot.pause()
        assert set(made) == set(t.row_keys[-(t.size.height - 1) :])
        assert paint(t) == paint_from_scratch(t)


async def test_rows_a_state_change_moves_keep_their_lines_and_a_click_finds_them() -> None:
    """A state change moves a row to the top and every row it passes down by one: they are
    repainted from the lines they had (what a line paints names its row by key, not by
    index), and a click or hover on a moved row reaches the session painted there."""
    start = many()
    app, source = make_app(start)
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause()
        t = app.main_screen.table
        index = t.get_row_index(t.row_keys[18])
        moved_key = t.row_keys[index]
        server, _, sid = moved_key.partition("\x1f")
        paint(t)
        made: list[str] = []
        row_line = t._row_line

        def spy(key: str, *rest):  # type: ignore[no-untyped-def]
            made.append(key)
            return row_line(key, *rest)

        t._row_line = spy  # type: ignore[method-assign]
        moved = views.with_row(
            start, (server, sid), state="input", reason=None, pending=(views.PERMISSION,)
        )
        source.set(moved)
        app.pull()
        await pilot.pause()
        painted = paint(t)
        assert t.get_row_index(moved_key) < index  # it moved up; the rows it passed, down
        passed = set(t.row_keys[t.get_row_index(moved_key) + 1 : index + 1])
        assert len(passed) > 5
        assert not passed & set(made)  # repainted from their lines, not made again
        assert painted == paint_from_scratch(t)
        # the mouse finds the session now painted where it points
        y = index + 1  # (the header is line 0)
        await pilot.hover(SessionTable, offset=(5, y))
        await pilot.pause()
        assert t.hover_row == index
        await pilot.click(SessionTable, offset=(5, y))
        await pilot.pause()
        assert t.cursor_row == index and t.row_key_at(index) in passed
