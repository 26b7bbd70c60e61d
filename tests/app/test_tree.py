"""Tree order of rows: parents, sorting, folding, filtering."""

from __future__ import annotations

from dataclasses import replace

from tui.app.format import matches_state, reason_key, reason_text
from tui.app.tree import Layouts, layout
from tui.app.widgets.cells import COLUMNS

from . import views

P = (views.A, "ses_parent")
C1 = (views.A, "ses_child1")
C2 = (views.A, "ses_child2")


def keys(lines: list) -> list[str]:
    return [line.key[1] for line in lines]


def test_children_follow_their_parent() -> None:
    lines = layout(views.every_state().rows)
    order = keys(lines)
    i = order.index("ses_parent")
    assert order[i + 1 : i + 3] == ["ses_child1", "ses_child2"]
    assert [ln.depth for ln in lines[i : i + 3]] == [0, 1, 1]
    assert lines[i].has_children and lines[i + 2].last and not lines[i + 1].last
    assert len(lines) == len(views.ROWS)


def test_collapsed_parent_hides_and_counts_children() -> None:
    lines = layout(views.every_state().rows, collapsed={P})
    assert "ses_child1" not in keys(lines)
    parent = next(ln for ln in lines if ln.key == P)
    assert parent.hidden == 2 and not parent.expanded


def test_filter_keeps_ancestors_as_context() -> None:
    rows = views.every_state().rows
    lines = layout(rows, match=lambda r: r.id == "ses_child2")
    assert keys(lines) == ["ses_parent", "ses_child2"]
    assert [ln.context for ln in lines] == [True, False]


def test_state_filter_and_sort() -> None:
    rows = views.every_state().rows
    lines = layout(rows, match=lambda r: matches_state(r, "idle"))
    assert {rows[ln.key].state for ln in lines if not ln.context} == {"idle"}
    by_cost = layout(rows, sort="cost")
    roots = [rows[ln.key].cost or 0 for ln in by_cost if ln.depth == 0]
    assert roots == sorted(roots, reverse=True)
    reverse = layout(rows, sort="cost", reverse=True)
    assert [ln.key for ln in reverse if ln.depth == 0][0] != by_cost[0].key


def test_the_reason_column_sorts_by_what_it_shows() -> None:
    rows = views.every_state().rows
    by_reason = layout(rows, sort="reason")
    shown = [reason_text(rows[ln.key]) for ln in by_reason if ln.depth == 0]
    assert "permission" in shown and "attempt 3" in shown and "completed" in shown
    words = [w.split(" +")[0] for w in shown]
    assert words == sorted(words)
    stale = replace(views.ROWS[0], state="busy", stale=True, pending=())
    assert reason_key(stale) == ("STALE", 0)  # the narrow table shows the flag in this column
    assert reason_key(replace(views.ROWS[0], state="retry", retry_attempt=10)) > reason_key(
        replace(views.ROWS[0], state="retry", retry_attempt=9)
    )  # 10 after 9, not before


def test_every_header_has_room_for_its_sort_arrow() -> None:
    for spec in COLUMNS:
        for wide in (True, False):
            width = spec.size(wide)
            assert width == 0 or len(spec.label) + 2 <= width, (spec.key, wide)


def test_parent_cycle_and_orphans_do_not_hang_or_vanish() -> None:
    rows = dict(views.every_state().rows)
    rows[P] = replace(rows[P], parent_id="ses_child1")  # parent <-> child cycle
    rows[(views.A, "orphan")] = replace(rows[C2], id="orphan", parent_id="missing")
    lines = layout(rows)
    assert sorted(keys(lines)) == sorted(k[1] for k in rows)


def test_layouts_reuses_lines_only_while_nothing_it_reads_changed() -> None:
    rows = dict(views.every_state().rows)
    layouts = Layouts()
    first = layouts(rows)
    assert [ln.key for ln in first] == [ln.key for ln in layout(rows)]
    assert layouts(dict(rows)) is first  # the same rows again: the same lines
    # a change no layout reads (cost, under the state sort): still the same lines
    rows[C2] = replace(rows[C2], cost=123.0)
    assert layouts(rows) is first
    # each thing a layout reads: its sort value, its parent, the key set, the filter, the sort
    changes = [
        lambda r: r.__setitem__(C2, replace(r[C2], state="input")),
        lambda r: r.__setitem__(C2, replace(r[C2], parent_id=None)),
        lambda r: r.pop(C1),
    ]
    for change in changes:
        before = layouts(rows)
        change(rows)
        after = layouts(rows)
        assert after is not before
        assert after == layout(rows)
    assert layouts(rows, sort="cost") == layout(rows, sort="cost")
    idle = layouts(rows, match=lambda r: matches_state(r, "idle"), match_key="idle")
    assert idle == layout(rows, match=lambda r: matches_state(r, "idle"))
    assert layouts(rows) == layout(rows)


def test_grouping_hangs_each_root_under_its_folder_and_a_filter_keeps_only_groups_with_matches():
    from tui.app.tree import GROUP, Grouping, is_group

    rows = dict(views.every_state().rows)
    grouping = Grouping("folder", rows)
    assert all(is_group(k) and k[0] == GROUP for k in grouping.rows)
    folders = {r.directory for r in rows.values()}
    assert {g.directory for g in grouping.rows.values()} == folders
    merged = {**rows, **grouping.rows}
    lines = layout(merged, group_of=grouping.of)
    groups = [ln for ln in lines if is_group(ln.key)]
    assert len(groups) == len(folders) and all(ln.depth == 0 for ln in groups)
    assert all(ln.depth >= 1 for ln in lines if not is_group(ln.key))
    assert len(lines) == len(merged)
    for g in groups:  # every session of the group is under it, counted by state
        assert sum(int(c.rsplit(" ", 1)[1]) for c in merged[g.key].evidence) == sum(
            1 for r in rows.values() if grouping.of(r) == g.key
        )
    busy = layout(merged, group_of=grouping.of, match=lambda r: r.state == "busy")
    kept = {ln.key for ln in busy if is_group(ln.key)}
    assert kept == {grouping.of(r) for r in rows.values() if r.state == "busy"}
    assert not any(ln.context for ln in busy if is_group(ln.key))  # a heading, not context
    folded = layout(merged, group_of=grouping.of, collapsed=[groups[0].key])
    assert folded[0].hidden == sum(1 for r in rows.values() if grouping.of(r) == groups[0].key)


def test_a_chain_of_thousands_of_sub_sessions_is_laid_out_without_recursion() -> None:
    """Each session the parent of the next, 3,000 deep (a hostile server): the recursive walk
    overflowed Python's stack and the dashboard crashed (RecursionError). Laid out in order,
    each one level under the last; the titles' indentation stops at INDENT_MAX levels."""
    from rich.style import Style

    from tui.app.widgets.cells import CellRenderer
    from tui.core.words import INDENT_MAX, indent

    chain = [
        views.row(f"ses_{i:05d}", f"t{i}", "busy", parent_id=f"ses_{i - 1:05d}" if i else None)
        for i in range(3000)
    ]
    rows = {r.key: r for r in chain}
    lines = layout(rows)
    assert keys(lines) == [r.id for r in chain]
    assert [ln.depth for ln in lines] == list(range(3000))
    assert indent(INDENT_MAX) == "  " * INDENT_MAX
    assert indent(2999) == "  " * INDENT_MAX + "⋯2999 "
    deepest = CellRenderer(lambda spec: Style()).title(chain[-1], lines[-1], False).plain
    assert deepest.startswith("  " * INDENT_MAX + "⋯2999 └ ") and len(deepest) < 40
