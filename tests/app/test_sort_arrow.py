"""The sort arrow in the table's header points the way the column's values go down the table
(issue 41 item 10): ▲ ascending (the smallest value shown first: a to z, the shortest time in
state, the newest activity, the least cost), ▼ descending; reversing flips both."""

from __future__ import annotations

from typing import Any

import pytest

from tui.app.widgets.session_table import SessionTable
from tui.core.view import SessionRow

from . import views
from .conftest import make_app

NOW = views.NOW


def shown_value(row: SessionRow, column: str) -> Any:
    """What the column shows of a row, as a value (None: it shows none)."""
    return {
        "title": row.title.casefold(),
        "folder": row.directory.casefold(),
        "in_state": None if row.since is None else NOW - row.since,  # a duration
        "activity": None if row.updated is None else NOW - row.updated,  # an age
        "cost": row.cost,
        "tokens": row.tokens,
    }[column]


def arrow(table: SessionTable, column: str) -> str:
    label = table.columns[column].label.plain  # type: ignore[index]
    marks = [c for c in label if c in "▲▼"]
    assert len(marks) == 1, label
    return marks[0]


@pytest.mark.parametrize("column", ["title", "folder", "in_state", "activity", "cost", "tokens"])
async def test_the_arrow_says_which_way_the_values_go(column: str) -> None:
    app, _ = make_app()
    app.show_pane = False  # the whole width: every column
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        table = app.main_screen.table
        rows = views.every_state().rows
        seen = set()
        for reverse in (False, True):
            table.set_sort(column, reverse=reverse)
            await pilot.pause()
            values = [shown_value(rows[ln.key], column) for ln in table.lines if ln.depth == 0]
            values = [v for v in values if v is not None]
            assert len(set(values)) > 1, values  # the order says something
            up = arrow(table, column)
            assert values == sorted(values, reverse=up == "▼"), (column, reverse, up, values)
            seen.add(up)
            others = [k for k in table.columns if k != column]
            assert not any(c in table.columns[k].label.plain for k in others for c in "▲▼")
        assert seen == {"▲", "▼"}  # reversed, the arrow turns


@pytest.mark.parametrize("column", ["state", "reason"])
async def test_an_order_of_kinds_is_up_in_its_own_order_and_down_reversed(column: str) -> None:
    """State (the most urgent first) and reason (by its word) have no smaller or larger: their
    own order is ▲, reversed ▼."""
    app, _ = make_app()
    app.show_pane = False
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        table = app.main_screen.table
        table.set_sort(column, reverse=False)
        await pilot.pause()
        forward = [ln.key for ln in table.lines if ln.depth == 0]
        assert arrow(table, column) == "▲"
        table.set_sort(column, reverse=True)
        await pilot.pause()
        assert arrow(table, column) == "▼"
        assert [ln.key for ln in table.lines if ln.depth == 0] != forward
