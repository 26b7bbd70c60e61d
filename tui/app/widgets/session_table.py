"""The session table: View rows as a tree in a RowTable, updated in place by row key.

Each refresh (dolphie style, inside `batch_update()`): rows that left the display are removed,
rows the View reused unchanged are skipped, only the cells whose rendering changed are updated,
new rows are added with their key, then the rows are put in tree order. The cursor stays on the
same session and the scroll offset stays put. The table is cleared only when the columns change
(a resize): then the rows are rendered again at the new width.

The table (`RowTable`) owns its rows and its render caches, on Textual's public API: a replaced
cell is rendered again alone, a moved row keeps its rendered cells, and a cursor move repaints
the two rows it leaves and reaches. `tests/app/test_table_render.py` checks that what the table
paints equals what it paints with every cache dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.theme import Theme

from tui.core.gcpause import gc_paused
from tui.core.view import SessionRow, View

from .. import format as fmt
from ..tree import GROUPINGS, SORT_COLUMNS, Grouping, Key, Layouts, TreeLine, is_group, sort_arrow
from .cells import ALL_COLUMNS, COLUMNS, MIN_TITLE, TITLE_ROOM, CellRenderer, ColumnSpec
from .row_table import PAD, RowTable
from .server_bar import MANY

WIDE_AT = 110
"""Terminal columns from which stale, activity, cost and tokens get their own columns."""


@dataclass(slots=True)
class _Shown:
    """What the table shows for one row, and what it was rendered from."""

    inputs: tuple[object, ...] | None  # per-column render inputs (None: render every cell)
    # the View row, its line and whether more than one server is shown, as of the row's last
    # update: what a cell left to be made when painted (RowTable.cell_source) is made from
    row: SessionRow
    line: TreeLine
    multi: bool
    until: float = 0.0  # its time cells read the same before this clock second (0: compare
    # the inputs again)


def row_key_str(key: Key) -> str:
    """The DataTable row key for a session key (server, id)."""
    return f"{key[0]}\x1f{key[1]}"


DEFER_UNLAID = 500
"""Rows from which a table not laid out yet waits for its size before taking a View in (each
row is rendered again when the width turns out different)."""
TINY_BELOW = 70
"""Columns under which the folder column goes too (the rest would not fit whole)."""
FOLD_AFTER = 12 * 3600.0
"""Seconds after which an idle session folds away by default (config fold_idle_after)."""


def columns_for(width: int) -> tuple[list[ColumnSpec], int]:
    """The columns shown at a table `width`, and the title's width. Every column but the
    optional ones (under TINY_BELOW, not the folder either); then each optional column in
    turn while the title keeps TITLE_ROOM cells: the room goes to what a waiting row needs
    (its title and what it asks) before activity, cost and tokens."""
    wide, tiny = width >= WIDE_AT, width < TINY_BELOW
    shown = [c for c in COLUMNS if not c.optional and not (tiny and c.key == "folder")]
    title = width - sum(c.size(wide) + 2 * PAD for c in shown if c.width) - 2 * PAD - 1
    for spec in COLUMNS:  # (1: the vertical scrollbar)
        if spec.optional:
            if title - spec.size(wide) - 2 * PAD < TITLE_ROOM:
                break
            shown.append(spec)
            title -= spec.size(wide) + 2 * PAD
    return [c for c in COLUMNS if c in shown], max(MIN_TITLE, title)


def hidden_hint(shown: Iterable[str], room: int, pane: bool = False) -> str:
    """What the table leaves out, said in the title's header in `room` cells: the columns,
    and where they are: in the details pane beside the table (`pane`), else `d details`, the
    key that shows the details pane or view (not a key that adds the columns)."""
    hidden = [c.label for c in COLUMNS if c.key not in shown]
    if not hidden:
        return ""
    n, where = len(hidden), "in the pane" if pane else "d details"
    for hint in (
        f"  +{' '.join(hidden)}: {where}",
        f"  +{n} columns: {where}",
        f"  +{n}: {where}",
    ):
        if len(hint) <= room:
            return hint
    return ""


class SessionTable(RowTable):
    """Sessions of every server as a tree, with filters, sort and folding."""

    DEFAULT_CSS = """
    SessionTable {
        height: 1fr;
        scrollbar-size-vertical: 1;
    }
    """

    BINDINGS = [
        Binding("enter", "select_cursor", "Details"),
        Binding("home,ctrl+home,g", "first_row", "First row", show=False),
        Binding("end,ctrl+end,G", "last_row", "Last row", show=False),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("n", "next_input", "Next row waiting for input", show=False),
    ]

    class Changed(Message):
        """Sort, filter or folding changed (the screen refreshes its summary)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sort_column = "state"
        self.sort_reverse = False
        self.state_filter = "all"
        self.text_filter = ""
        self.grouping = "auto"
        """Sessions grouped by `folder` or `server` under a line each (GROUPINGS), or not;
        `auto`: by server from MANY servers (a fleet), else not."""
        self._group_of: Callable[[SessionRow], Key] | None = None
        self.fold_after = FOLD_AFTER
        """Seconds after which an idle session folds away (0: never; config fold_idle_after)."""
        self.show_old = False
        """The old idle sessions are shown (`o`)."""
        self.old_cutoff: float | None = None
        """While ageing folds rows: the clock second before which an idle row is old."""
        self.text_kind = "text"  # how the filter text was read (format.text_match)
        self.collapsed: set[Key] = set()
        self.lines: list[TreeLine] = []
        self._view: View | None = None
        self._now = 0.0
        self._wide: bool | None = None
        self._column_keys: tuple[str, ...] = ()
        self._shown: list[ColumnSpec] = []
        self._title_width = MIN_TITLE
        self.pane_shown = False  # the details pane beside the table (pane_beside)
        # row key -> what the table shows for it, and what that was rendered from
        self._cache: dict[str, _Shown] = {}
        self._synced_at = 0.0  # the clock second of the last sync
        self._synced_rows: dict[Key, SessionRow] | None = None  # the View's rows then
        self._wanted: dict[str, TreeLine] | None = None  # the lines shown then, by row key
        self._multi = False  # ... and whether they came from more than one server
        self._wanted_for: list[TreeLine] | None = None  # the lines `_wanted` was made of
        self._next_until = 0.0  # the soonest time a row's time cells move after it
        self._shown_for: tuple[object, ...] = ()
        self._layouts = Layouts()
        self._order: list[str] = []
        self._styles: dict[str, Style] = {}
        self.cells = CellRenderer(self._style)
        self.cell_source = self._make_cell

    # -- public API ---------------------------------------------------------------------------

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def show(self, view: View, now: float, unread: AbstractSet[Key] = frozenset()) -> None:
        """Display a new View at `now` (keyed, in-place update); `unread` rows get a mark."""
        self._view = view
        # Times are shown in whole seconds: quantise `now` so every row's time cells tick
        # together once a second, instead of some row ticking on almost every redraw (each
        # changed cell makes the table re-render its visible lines).
        self._now = self.cells.now = float(math.floor(now))
        flipped = self._mark_unread(unread)
        collapsed = {k for k in self.collapsed if k in view.rows or is_group(k)}
        changes = self._changes(view)
        if (
            not flipped
            and collapsed == self.collapsed
            and changes is not None
            and not changes
            and self._times_hold()
            and self._measure() == (self._wide, self._column_keys, self._title_width)
        ):
            return  # same rows, no time cell moved: nothing to look at (an idle table's pull)
        self.collapsed = collapsed
        self._sync(None if changes is None else [*changes, *flipped])

    def _changes(self, view: View) -> list[Key] | None:
        """The rows of `view` that are other objects than at the last sync (a View reuses the
        row of a session that did not change); None: the set of sessions changed, or no sync
        yet."""
        last = self._synced_rows
        rows = view.rows
        if last is None or len(rows) != len(last):
            return None
        get = last.get
        changed = [k for k, r in rows.items() if get(k) is not r]
        if any(k not in last for k in changed):
            return None  # as many came as went
        return changed

    def _times_hold(self) -> bool:
        """No row's time cell moved since the last sync (the soonest `until`), and the clock
        did not step back."""
        return self._synced_at <= self._now < self._next_until

    @property
    def cursor_key(self) -> Key | None:
        """The session under the cursor."""
        if self._view is None:
            return None
        row_key = self.row_key_at(self.cursor_row)
        if row_key is None:
            return None
        server, _, session = row_key.partition("\x1f")
        return (server, session)

    def select_key(self, key: Key) -> bool:
        """Put the cursor on a session if it is displayed."""
        k = row_key_str(key)
        if not self.has_row(k):
            return False
        self.move_cursor(row=self.get_row_index(k), animate=False)
        return True

    def set_unread(self, unread: AbstractSet[Key]) -> None:
        """Mark these rows as changed while the user looked elsewhere: only the rows whose mark
        flipped are looked at (the cursor reading a row clears its mark on every key press; a
        whole sync then would cost each key press a walk over every row)."""
        flipped = self._mark_unread(unread)
        view = self._view
        if not flipped or view is None:
            return
        if self._wanted is None:
            self._sync()
            return
        columns, shown = self._shown_columns()
        with self.app.batch_update():
            for key in flipped:
                k = row_key_str(key)
                line, row = self._wanted.get(k), view.rows.get(key)
                if line is not None and row is not None and k in self._cache:
                    self._update_row(k, line, row, self._multi, columns, shown)

    def set_sort(self, column: str, reverse: bool | None = None) -> None:
        """Sort siblings by a column; choosing the current column again flips the order."""
        if column not in SORT_COLUMNS:
            raise ValueError(f"unknown sort column {column!r}")
        if reverse is None:
            reverse = not self.sort_reverse if column == self.sort_column else False
        self.sort_column, self.sort_reverse = column, reverse
        self._relabel()
        self._sync()
        self.post_message(self.Changed())

    def cycle_sort(self) -> None:
        """Sort by the next visible column."""
        keys = [c.key for c in self._columns()]
        i = keys.index(self.sort_column) if self.sort_column in keys else -1
        self.set_sort(keys[(i + 1) % len(keys)], reverse=False)

    def set_filters(self, *, state: str | None = None, text: str | None = None) -> None:
        """Show only rows in one state (see `format.STATE_FILTERS`) and/or matching a text."""
        if state is not None:
            if state not in fmt.STATE_FILTERS:
                raise ValueError(f"unknown state filter {state!r}")
            self.state_filter = state
        if text is not None:
            self.text_filter = text
        self._sync()
        self.post_message(self.Changed())

    def toggle_fold(self) -> None:
        """Collapse or expand the row under the cursor (a child folds its parent)."""
        key = self.cursor_key
        if key is None or self._view is None:
            return
        line = next((ln for ln in self.lines if ln.key == key), None)
        if line is None:
            return
        if not line.has_children:
            row = self._view.rows.get(key)
            parent = (key[0], row.parent_id) if row and row.parent_id else None
            if (parent is None or parent not in self._view.rows) and row is not None:
                parent = self._group_of(row) if self._group_of is not None else None
            if parent is None:
                return
            key = parent
        if key in self.collapsed:
            self.collapsed.discard(key)
        else:
            self.collapsed.add(key)
        self._sync()
        self.select_key(key)
        self.post_message(self.Changed())

    def fold_all(self, collapse: bool) -> None:
        """Collapse every parent, or expand everything."""
        if self._view is None:
            return
        if collapse:
            parents = {(r.server, r.parent_id) for r in self._view.rows.values() if r.parent_id}
            self.collapsed = {k for k in parents if k in self._view.rows}
            self.collapsed |= {line.key for line in self.lines if is_group(line.key)}
        else:
            self.collapsed = set()
        self._sync()
        self.post_message(self.Changed())

    def grouped_by(self) -> str:
        """The grouping in effect: the chosen one, or for `auto` by server from MANY servers."""
        if self.grouping != "auto":
            return self.grouping
        view = self._view
        return "server" if view is not None and len(view.servers) >= MANY else "none"

    def cycle_grouping(self) -> str:
        """Group by folder, then by server, then not at all; the grouping now."""
        now = self.grouped_by()
        self.grouping = GROUPINGS[(GROUPINGS.index(now) + 1) % len(GROUPINGS)]
        self.collapsed = {k for k in self.collapsed if not is_group(k)}
        self._sync()
        self.post_message(self.Changed())
        return self.grouping

    def toggle_old(self) -> None:
        """Show the idle sessions ageing folded away, or fold them again."""
        self.show_old = not self.show_old
        self._sync()
        self.post_message(self.Changed())

    def folded_old(self) -> int:
        """How many rows ageing keeps out of the table (0 when it is off or shows them)."""
        view, cutoff = self._view, self.old_cutoff
        if view is None or cutoff is None:
            return 0
        present = {line.key for line in self.lines}
        return sum(
            1 for key, row in view.rows.items() if key not in present and fmt.is_old(row, cutoff)
        )

    @property
    def behind(self) -> bool:
        """The table has a View it has not laid out yet (a large first one waits for the
        table's size): its lines say nothing of that View yet."""
        view = self._view
        return view is not None and self._synced_rows is not view.rows

    @property
    def filtering(self) -> bool:
        """Whether a state or text filter is active."""
        return self.state_filter != "all" or bool(self.text_filter)

    def action_next_input(self) -> None:
        """Move the cursor to the next row waiting for input (after the cursor, wrapping)."""
        view = self._view
        if view is None:
            return
        waiting = [
            i
            for i, line in enumerate(self.lines)
            if (row := view.rows.get(line.key)) is not None and row.state == "input"
        ]
        if not waiting:
            # (sessions waiting but not shown are said, never "none": a UX review)
            hidden = sum(row.state == "input" for row in view.rows.values())
            if not hidden:
                self.notify("No session is waiting for input.", timeout=3)
            elif self.filtering:
                self.notify(
                    f"{hidden} waiting for input, hidden by the filter: esc clears it.", timeout=4
                )
            else:
                self.notify(f"{hidden} waiting for input, under a folded row.", timeout=4)
            return
        at = self.cursor_row
        self.move_cursor(row=next((i for i in waiting if i > at), waiting[0]))

    # -- events -------------------------------------------------------------------------------

    def on_row_table_header_selected(self, event: RowTable.HeaderSelected) -> None:
        event.stop()
        self.set_sort(event.column_key)

    def on_resize(self, _event: events.Resize) -> None:
        if self._view is not None:
            self._sync()

    def _theme_changed(self, _theme: Theme) -> None:
        self._styles.clear()
        # re-render every cell: no inputs match, no signature matches
        for shown in self._cache.values():
            shown.inputs, shown.until = None, 0.0
        if self._view is not None:
            self._sync()

    # -- layout and rendering -----------------------------------------------------------------

    def _columns(self) -> list[ColumnSpec]:
        return self._shown

    def _measure(self) -> tuple[bool, tuple[str, ...], int]:
        width = self.size.width or self.app.size.width
        shown, title = columns_for(width)
        return width >= WIDE_AT, tuple(c.key for c in shown), title

    def _ensure_columns(self) -> bool:
        """Set up the columns for the current width; True when they were (re)built."""
        wide, keys, title = self._measure()
        if (wide, keys, title) == (self._wide, self._column_keys, self._title_width):
            return False
        self._wide, self._column_keys, self._title_width = wide, keys, title
        self._shown = [c for c in COLUMNS if c.key in keys]
        self.cells.wide, self.cells.title_width = wide, title
        # The column set changed (a resize, not a data update): rebuild once, keep cursor/scroll.
        self.clear(columns=True)
        self._cache.clear()
        self._order = []
        for spec in self._columns():
            self.add_column(
                self._label(spec), key=spec.key, width=spec.size(wide) if spec.width else title
            )
        return True

    def _label(self, spec: ColumnSpec) -> Text:
        label = spec.label
        if spec.key == self.sort_column:
            label += " " + sort_arrow(spec.key, self.sort_reverse)
        text = Text(label, justify="right" if spec.right else "left", no_wrap=True)
        if spec.key == "title":
            text.append(
                hidden_hint(self._column_keys, self._title_width - len(label), self.pane_shown),
                self._style("$foreground-muted not bold"),
            )
        return text

    def pane_beside(self, shown: bool) -> None:
        """The details pane is (or is no longer) shown beside the table: where the hidden
        columns are, said in the title's header, changes with it."""
        if shown != self.pane_shown:
            self.pane_shown = shown
            self._relabel()

    def _relabel(self) -> None:
        for spec in self._columns():
            if spec.key in self.columns:
                self.set_label(spec.key, self._label(spec))

    def _style(self, spec: str) -> Style:
        """A Rich style from a Textual style spec with theme variables (`$state-busy bold`).

        Translucent colours (e.g. `$foreground-muted`) are blended over the table's background,
        as Textual does for its own widgets (a Rich style has no alpha)."""
        style = self._styles.get(spec)
        if style is None:
            parsed = self.app.stylesheet.parse_style(spec) if spec else None
            if parsed is not None and parsed.foreground is not None and parsed.foreground.a < 1:
                parsed = replace(parsed, foreground=self.styles.background + parsed.foreground)
            style = parsed.rich_style if parsed is not None else Style()
            self._styles[spec] = style
        return style

    def _sync(self, changes: list[Key] | None = None) -> None:
        """Bring the table up to the View; `changes`: only these rows can have changed since
        the last sync (None: look at every row)."""
        view = self._view
        if view is None or not self.size.width and len(view.rows) > DEFER_UNLAID:
            # not laid out yet: a large View waits for its first resize, to be taken in once,
            # at the table's real width (a small one is shown at once, at the app's)
            return
        # Rendering allocates many short-lived, acyclic objects; a collection started in the
        # middle of it would walk the app's whole heap for nothing (tui.core.gcpause).
        with gc_paused():
            self._sync_view(view, changes)

    def _sync_view(self, view: View, changes: list[Key] | None = None) -> None:
        """Bring the table up to `view`, in steps: the columns for this width; which rows are
        shown (`_match`) and their lines in tree order (`_lay_out`); the rows that left removed,
        the rows that may have changed updated (`_update_rows`), the order set; the cursor kept
        on its session; what the next sync compares with kept (`_remember`)."""
        cursor = self.cursor_key
        scroll = self.scroll_offset
        rebuilt = self._ensure_columns()
        match = self._match(view)
        multi = len({k[0] for k in view.rows}) > 1
        same_context = (multi,) == self._shown_for
        self._shown_for = (multi,)
        # Only `changes` need a look when nothing else can have moved: the same columns and
        # context, and no row's time cell moved since the last sync (at most once a second,
        # every row is looked at again).
        if changes is not None and (rebuilt or not same_context or not self._times_hold()):
            changes = None
        rows, changes = self._lay_out(view, match, changes)
        self.cells.server_names = {s.url: s.name for s in view.servers if s.name}
        self._tick()
        same_lines, wanted = self._wanted_lines()
        # Same row object, same line, and its time cells still read the same (CellRenderer.
        # until): the cells cannot have changed. So a refresh looks again only at the rows the
        # View changed and those whose `3s ago` / `2m05s` moved this second, not at every row.
        look_at: list[str] | None = None
        if changes is not None and same_lines:
            look_at = [row_key_str(key) for key in changes]
        with self.app.batch_update():
            gone = [] if look_at is not None else self._remove_gone(wanted)
            self._update_rows(
                wanted if look_at is None else look_at, wanted, rows, multi, same_context
            )
            if not same_lines or gone or rebuilt:
                self._put_in_order(list(wanted), moved=bool(gone))
            if rebuilt:
                self.scroll_to(scroll.x, scroll.y, animate=False, immediate=True)
            if cursor is not None:
                self._keep_cursor_on(cursor, scroll=rebuilt)
        self._remember(view, wanted, multi, look_at)

    def _tick(self) -> None:
        """The clock second of this sync; when the clock stepped back, every row's times are
        looked at again."""
        if self._now < self._synced_at:
            for was in self._cache.values():
                was.until = 0.0
        self._synced_at = self._now

    def _wanted_lines(self) -> tuple[bool, dict[str, TreeLine]]:
        """Whether `lines` are the last sync's (Layouts hands back its list while nothing a
        layout reads changed: the same rows wanted, in the same order), and the lines by row
        key."""
        if self.lines is self._wanted_for and self._wanted is not None:
            return True, self._wanted
        return False, {row_key_str(line.key): line for line in self.lines}

    def _remove_gone(self, wanted: Mapping[str, TreeLine]) -> list[str]:
        """Remove the rows no longer shown; returns their keys."""
        gone = [k for k in self.row_keys if k not in wanted]
        for k in gone:
            self._cache.pop(k, None)
            self.remove_row(k)
        return gone

    def _put_in_order(self, order: list[str], *, moved: bool) -> None:
        """Put the rows in `order` when it is not theirs already (`moved`: rows were removed)."""
        if order != self._order or moved:
            self.set_order(order)
            self._order = order

    def _match(self, view: View) -> Callable[[SessionRow], bool] | None:
        """Which rows are shown: the filters' (they look at every row, old ones too), else not
        the old idle ones while they fold away, else all (None)."""
        self.old_cutoff = None
        if self.filtering:
            state = self.state_filter
            self.text_kind, text_match = fmt.text_match(self.text_filter, view.rows.values())

            def match(row: SessionRow) -> bool:
                return fmt.matches_state(row, state) and text_match(row)

            return match
        if self.fold_after > 0 and not self.show_old:
            # the cutoff moves once a minute, so the layout is not redone every second
            cutoff = self.old_cutoff = (self._now // 60) * 60 - self.fold_after

            def young(row: SessionRow) -> bool:
                return not fmt.is_old(row, cutoff)

            return young
        return None

    def _lay_out(
        self,
        view: View,
        match: Callable[[SessionRow], bool] | None,
        changes: list[Key] | None,
    ) -> tuple[Mapping[Key, SessionRow], list[Key] | None]:
        """Set `lines`: the shown rows in tree order, under their group lines when grouped.
        Returns the rows the lines are of (the View's, and the group lines'), and the rows
        that can have changed (None: every one, as when grouped)."""
        rows: Mapping[Key, SessionRow] = view.rows
        group_of = None
        by = self.grouped_by()
        if by != "none":
            # group lines are made again for each View (their counts move with any row): every
            # line is looked at
            grouping = Grouping(by, view.rows, {s.url: s.name for s in view.servers})
            rows, group_of, changes = {**view.rows, **grouping.rows}, grouping.of, None
        self._group_of = group_of
        self.lines = self._layouts(
            rows,
            sort=self.sort_column,
            reverse=self.sort_reverse,
            collapsed=self.collapsed,
            match=match,
            match_key=(self.state_filter, self.text_filter, self.old_cutoff),
            changed=changes,
            group_of=group_of,
            group_key=by,
        )
        return rows, changes

    def _update_rows(
        self,
        keys: Iterable[str],
        wanted: Mapping[str, TreeLine],
        rows: Mapping[Key, SessionRow],
        multi: bool,
        same_context: bool,
    ) -> None:
        """Update the rows `keys` that are shown (`wanted`), but those whose cells cannot have
        changed: the same row object on the same line, its time cells still the same."""
        now = self._now
        columns, shown = self._shown_columns()
        for k in keys:
            line = wanted.get(k)
            if line is None:
                continue  # (a changed row not shown: filtered out, or folded away)
            row = rows[line.key]
            cached = self._cache.get(k)  # (a row of the table: they come and go together)
            if (
                same_context
                and cached is not None
                and cached.row is row
                and now < cached.until
                and (cached.line is line or cached.line == line)
            ):
                continue
            self._update_row(k, line, row, multi, columns, shown)

    def _remember(
        self, view: View, wanted: dict[str, TreeLine], multi: bool, look_at: list[str] | None
    ) -> None:
        """What the next sync compares with: the View's rows (show() and set_unread read them),
        the lines shown, and the soonest time a row's time cells move."""
        self._synced_rows = view.rows
        self._wanted, self._wanted_for, self._multi = wanted, self.lines, multi
        if look_at is None:
            self._next_until = min((c.until for c in self._cache.values()), default=math.inf)
        elif look_at:  # (the other rows keep theirs: the soonest can only come sooner)
            cache = self._cache
            self._next_until = min(
                [self._next_until, *(cache[k].until for k in look_at if k in cache)]
            )

    def _shown_columns(self) -> tuple[list[str], list[int]]:
        """The columns shown at this width, and their positions in `CellRenderer.inputs()`."""
        columns = [spec.key for spec in self._columns()]
        return columns, [ALL_COLUMNS.index(c) for c in columns]

    def _update_row(
        self,
        k: str,
        line: TreeLine,
        row: SessionRow,
        multi: bool,
        columns: list[str],
        shown: list[int],
    ) -> None:
        """Bring one row's cells up to date: added when new, else only the cells whose inputs
        changed replaced."""
        cached = self._cache.get(k)
        inputs = self.cells.inputs(row, line, multi)
        if cached is None:  # its cells are made when first painted (or read)
            self.add_row(*[None] * len(columns), key=k)
        else:
            old = cached.inputs
            changed = shown if old is None else [i for i in shown if old[i] != inputs[i]]
            if not changed:  # nothing shown has changed: the same cells, whichever row made them
                cached.row, cached.line, cached.multi, cached.inputs = row, line, multi, inputs
                cached.until = self.cells.until(row)
                return
            for i in changed:  # made again when painted: a row out of view costs nothing
                self.update_cell(k, columns[shown.index(i)], None)
        self._cache[k] = _Shown(inputs, row, line, multi, self.cells.until(row))

    def _make_cell(self, k: str, column: str) -> Text:
        """A cell left to be made when painted (RowTable.cell_source), from what its row's last
        update saw: what an update made at once would have made."""
        shown = self._cache[k]
        return self.cells.cell(column, shown.row, shown.line, shown.multi)

    def _mark_unread(self, unread: AbstractSet[Key]) -> frozenset[Key]:
        """Set the rows with an unread mark; the rows whose mark changed are compared again on
        the next refresh. Returns those rows (empty: no mark changed)."""
        marks = frozenset(unread)
        flipped = marks ^ self.cells.unread
        self.cells.unread = marks
        for key in flipped:
            cached = self._cache.get(row_key_str(key))
            if cached is not None:
                cached.until = 0.0
        return flipped

    def _keep_cursor_on(self, key: Key, *, scroll: bool) -> None:
        """Keep the cursor on the same session after rows moved. Unless asked to, do not
        scroll (the highlighted session is the same, nothing to post)."""
        k = row_key_str(key)
        if not self.has_row(k):
            return
        index = self.get_row_index(k)
        if index == self.cursor_row:
            return
        if scroll:
            self.move_cursor(row=index, animate=False)
        else:
            self.place_cursor(index)
