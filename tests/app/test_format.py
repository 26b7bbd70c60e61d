"""Glyphs, durations and literal text."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.text import Text

from tui.app import format as fmt

from . import views


def test_literal_keeps_markup_as_characters_and_shows_escapes() -> None:
    shown = fmt.literal(views.MARKUP_TITLE)
    assert "[bold red]x[/]" in shown
    assert "\x1b" not in shown and "␛[31m" in shown
    assert Text(shown).plain == shown  # nothing is parsed or dropped


@given(st.text())
def test_literal_never_lets_a_control_character_through(text: str) -> None:
    shown = fmt.literal(text)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in shown)
    assert "\u202e" not in shown  # bidi override


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (None, "–"),
        (-3, "0s"),
        (0, "0s"),
        (59, "59s"),
        (60, "1m00s"),
        (125, "2m05s"),
        (3600, "1h00m"),
        (3720, "1h02m"),
        (86400 + 4 * 3600, "1d04h"),
    ],
)
def test_duration(seconds: float | None, expected: str) -> None:
    assert fmt.duration(seconds) == expected


@pytest.mark.parametrize(
    ("ago", "expected"),
    [
        (None, "–"),
        (0, "now"),
        (4.9, "now"),
        (5, "5s ago"),
        (59, "59s ago"),
        (60, "1m ago"),
        (7200, "2h ago"),
        (3 * 86400, "3d ago"),
        (-3, "now"),
    ],
)
def test_age_reads_now_while_a_session_streams(ago: float | None, expected: str) -> None:
    now = 1000.0
    assert fmt.age(None if ago is None else now - ago, now) == expected


def test_money_tokens_folder() -> None:
    assert fmt.money(None) == "–" and fmt.money(0) == "$0"
    assert fmt.money(0.0125) == "$0.013" and fmt.money(12.345) == "$12.35"
    assert fmt.tokens(950) == "950" and fmt.tokens(12_300) == "12.3k"
    assert fmt.tokens(4_100_000) == "4.1M"
    assert fmt.short_folder("/home/dev/src/shop/") == "shop"
    assert fmt.short_folder("") == "–"


@given(st.text(), st.integers(min_value=1, max_value=40))
def test_truncate_fits(text: str, width: int) -> None:
    assert cell_len(fmt.truncate(fmt.literal(text), width)) <= width


def test_every_state_has_glyph_and_word() -> None:
    seen = set()
    for row in views.ROWS:
        label = fmt.state_label(row)
        glyph, word = label.split(" ", 1)
        assert word == row.state and glyph
        seen.add(label)
    # Idle rows differ by glyph, not only by colour.
    assert {"✓ idle", "⊘ idle", "✗ idle", "○ idle"} <= seen


def test_attention_rank_orders_input_then_stale() -> None:
    by_id = {r.id: r for r in views.ROWS}
    ranked = sorted(views.ROWS, key=fmt.attention_rank)
    assert [r.state for r in ranked[:2]] == ["input", "input"]
    assert ranked[2] is by_id["ses_stale"]
    assert fmt.attention_rank(replace(by_id["ses_error"])) < fmt.attention_rank(by_id["ses_done"])


def test_what_a_waiting_row_waits_for_follows_its_title() -> None:
    """The reason column names the kind; the title cell says what is asked, as room allows: a
    command or a question keeps its start, a path its end (the file's name)."""
    asks = views.row("ses_perm", "t", "input", pending=(views.EDIT,))
    assert fmt.asked_text(asks) == "edit: /home/dev/src/blog/api/v1.py"
    assert fmt.asked_text(views.row("q", "t", "input", pending=(views.QUESTION,))) == (
        "Which database?"
    )
    assert fmt.asked_text(views.row("b", "t", "busy")) == ""
    assert fmt.truncate_ask("edit: /home/dev/src/blog/api/v1.py", 17) == "edit: …/api/v1.py"
    assert fmt.truncate_ask("bash: rm -rf build/ --all", 14) == "bash: rm -rf …"
    assert cell_len(fmt.truncate_ask("question: 日本語のパス/ファイル", 12)) <= 12


def test_the_header_splits_idle_by_reason_and_drops_the_split_when_narrow() -> None:
    from tui.app.widgets.summary import counts_line

    view = views.every_state()
    wide = counts_line(view).plain
    idle = [r for r in view.rows.values() if r.state == "idle"]
    done = sum(r.reason == "completed" for r in idle)
    assert f"idle {len(idle)} (✓ {done}" in wide and "○ idle" not in wide
    assert wide.endswith(f"{len(view.rows)} total")
    narrow = counts_line(view, width=len(wide) - 1).plain
    assert "(" not in narrow and narrow.endswith("total") and len(narrow) < len(wide)
    tiny = counts_line(view, width=40).plain
    assert "total" not in tiny
    assert tiny.startswith("● 4  ↻ 1  ? 2  idle 5") and len(tiny) <= 40  # glyphs, no words


async def test_narrow_tables_say_which_columns_they_leave_out_and_never_cut_one() -> None:
    """80 and 100 columns: the title's header names what is hidden and the key that shows it
    (160, the details pane beside the table: that they are in it); 60: the folder goes too,
    and every value of the last column is whole."""
    from tui.app.widgets.cells import COLUMNS
    from tui.app.widgets.session_table import SessionTable

    from .conftest import make_app
    from .test_actions import until

    app, _ = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        table = app.main_screen.query_one(SessionTable)
        header = table.columns["title"].label.plain
        assert header.endswith("+activity cost tokens: d details")
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        header = table.columns["title"].label.plain
        assert header.endswith(": d details") and "+3" in header
        await pilot.resize_terminal(160, 48)  # the details pane beside the table: there
        await until(pilot, lambda: app.main_screen.pane.display)
        await until(pilot, lambda: "in the pane" in table.columns["title"].label.plain)
        await pilot.press("d")  # the pane gone: the room it took shows every column
        await until(pilot, lambda: not app.main_screen.pane.display)
        await until(pilot, lambda: table.columns["title"].label.plain == "title")
        await pilot.resize_terminal(125, 40)  # (no pane under PANE_AT): the key that shows it
        await until(
            pilot, lambda: table.columns["title"].label.plain.endswith("+tokens: d details")
        )
        await pilot.resize_terminal(60, 15)
        await pilot.pause()
        keys = list(table.columns)
        assert "folder" not in keys and keys[-1] == "in_state"
        spec = {c.key: c for c in COLUMNS}
        used = sum(c.render_width for c in table.columns.values())
        assert used <= table.size.width, (used, table.size.width)
        assert table.columns["in_state"].width == (spec["in_state"].width)


def test_the_active_filter_is_what_needs_you_or_runs() -> None:
    from tests.app import views
    from tui.app.format import matches_state

    rows = views.every_state().rows.values()
    active = {r.id for r in rows if matches_state(r, "active")}
    assert active == {
        r.id for r in rows if r.stale or r.state in ("input", "busy", "retry", "unknown")
    }
    assert active and all(r.state != "idle" for r in rows if r.id in active)
    assert any(r.state == "idle" for r in rows)


def test_a_waiting_rows_title_and_request_get_the_room_first() -> None:
    """Optional columns (activity, cost, tokens) come only while the title keeps TITLE_ROOM
    cells; the stale flag has no column of its own (it is in `reason`); what is asked gets
    the larger share of the title's cell."""
    from tui.app.widgets.cells import TITLE_ROOM, CellRenderer
    from tui.app.widgets.session_table import columns_for, hidden_hint

    def keys(width: int) -> list[str]:
        return [c.key for c in columns_for(width)[0]]

    base = ["state", "reason", "title", "folder", "in_state"]
    assert keys(80) == keys(100) == base
    assert keys(120) == [*base, "activity", "cost"] and columns_for(120)[1] >= TITLE_ROOM
    assert keys(200) == [*base, "activity", "cost", "tokens"]
    for width in range(70, 260):
        shown, title = columns_for(width)
        used = sum(c.size(width >= 110) + 2 for c in shown if c.width) + title + 2 + 1
        assert used == width or title == 16, width  # every cell used, none past the edge
        if len(shown) > len(base):
            assert title >= TITLE_ROOM, width
    assert hidden_hint(keys(120), 40) == "  +tokens: d details"
    assert hidden_hint(keys(80), 20) == "  +3: d details"
    assert hidden_hint(keys(120), 40, pane=True) == "  +tokens: in the pane"
    assert hidden_hint(keys(200), 40) == ""

    from rich.style import Style

    from tui.app.tree import TreeLine

    cells = CellRenderer(lambda spec: Style())
    cells.title_width = columns_for(120)[1]
    asking = next(r for r in views.every_state().rows.values() if r.state == "input")
    row = replace(
        asking,
        title="Release the new storefront to production",
        pending=(replace(asking.pending[0], summary="git push origin main --force-with-lease"),),
    )
    line = TreeLine(row.key, 0, True, False, True, 0, False)
    text = cells.title(row, line, True).plain
    title, _, asked = text.strip().partition("\u00a0\u00a0")
    assert len(asked) > len(title) >= 12, text
