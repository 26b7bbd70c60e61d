"""A table of one-line rows on Textual's Line API, owning its rows, columns and render caches.

It paints what Textual's DataTable paints with a row cursor, a one-line header, fixed-width
columns and no row labels: the same segments and styles. The style meta that mouse clicks and
hovers read names a row by its key (`key` / `column`; the header `row` HEADER), not by its
index as DataTable's does, so a row keeps its painted line wherever it moves. What it does
differently is what the session table needs under a stream of updates:

- rows are put in an explicit order (`set_order`), not sorted by their cells;
- replacing a cell (`update_cell`) renders that cell again, and repaints its row only;
- a row that moved keeps its painted line (a state change moves every row between its old and
  new place: they are repainted from their lines, not rendered again);
- a cell may be left to be made when it is first painted or read (None, asked of
  `cell_source`): rows out of view cost nothing until they are scrolled to;
- a cursor or hover move repaints the rows it leaves and reaches, not every row.

Only Textual's public API is used (ScrollView, `render_line`, component classes, reactives).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar

from rich.console import ConsoleOptions
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.coordinate import Coordinate
from textual.geometry import Region, Size, Spacing
from textual.message import Message
from textual.reactive import reactive
from textual.renderables.styled import Styled
from textual.scroll_view import ScrollView
from textual.strip import Strip

PAD = 1
"""Cells of padding on each side of every column."""
REPAINT_ALL = 8
"""Rows repainted one by one before a paint, beyond which the whole table is repainted."""
HEADER = -1
"""The row index of the header (as the `row` meta of its cells says)."""

Line = list[Segment]


@dataclass(slots=True)
class Column:
    """A column: its key, its header label and its width (without padding)."""

    key: str
    label: Text
    width: int

    @property
    def render_width(self) -> int:
        """The width it takes on screen, padding included."""
        return self.width + 2 * PAD


class RowTable(ScrollView, can_focus=True):
    """Rows of cells (Rich `Text`), one line each, under a header, with a row cursor."""

    ALLOW_SELECT = False

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("right", "cursor_right", "Scroll right", show=False),
        Binding("left", "cursor_left", "Scroll left", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home,ctrl+home", "first_row", "First row", show=False),
        Binding("end,ctrl+end", "last_row", "Last row", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "row-table--cursor",
        "row-table--hover",
        "row-table--header",
        "row-table--header-hover",
    }
    """
    | Class | Description |
    | :- | :- |
    | `row-table--cursor` | The row under the cursor. |
    | `row-table--hover` | The row under the mouse. |
    | `row-table--header` | The header. |
    | `row-table--header-hover` | The header under the mouse. |
    """

    # DataTable's look, for the parts a row table has.
    DEFAULT_CSS = """
    RowTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;

        &:focus {
            background-tint: $foreground 5%;
            & > .row-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .row-table--header {
                background-tint: $foreground 5%;
            }
        }
        & > .row-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .row-table--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .row-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .row-table--header-hover {
            background: $accent 30%;
        }
        & > .row-table--hover {
            background: $block-hover-background;
        }
    }
    """

    cursor_row: reactive[int] = reactive(0, repaint=False, always_update=True)
    """The index of the row under the cursor."""

    class _RowMessage(Message):
        """Something about one row: the table, the row's index and its key."""

        def __init__(self, table: RowTable, cursor_row: int, row_key: str) -> None:
            super().__init__()
            self.table = table
            self.cursor_row = cursor_row
            self.row_key = row_key

        @property
        def control(self) -> RowTable:
            return self.table

    class RowHighlighted(_RowMessage):
        """The cursor moved to another row."""

    class RowSelected(_RowMessage):
        """A row was chosen (enter, or a click on the cursor's row)."""

    class HeaderSelected(Message):
        """A column's header was clicked."""

        def __init__(self, table: RowTable, column_key: str, column_index: int) -> None:
            super().__init__()
            self.table = table
            self.column_key = column_key
            self.column_index = column_index

        @property
        def control(self) -> RowTable:
            return self.table

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.columns: dict[str, Column] = {}
        """The columns, in display order, by key."""
        self._table_width = 0
        self._data: dict[str, list[Text | None]] = {}  # row key -> cells, in column order
        self.cell_source: Callable[[str, str], Text] | None = None
        """Makes a cell left as None (row key, column key), when it is painted or read."""
        self._keys: list[str] = []  # row keys in display order (with removed ones until _ordered)
        self._index: dict[str, int] = {}
        self._holes = False  # rows were removed since _keys was last compacted
        self._size_stale = False
        self._click_column = 0  # the column of the last click (a click there again selects)
        self.hover_row = 0
        """The row under the mouse (HEADER for the header)."""
        self._show_hover = False  # hidden while the keyboard is used
        # Render caches: per row, its cells rendered with no cursor or hover on them, and its
        # assembled line; the cursor and hover rows apart.
        self._rendered: dict[str, list[Line | None]] = {}
        self._lines: dict[str, Strip] = {}
        self._special: dict[str, tuple[tuple[object, ...], Strip]] = {}
        self._header: tuple[bool, Strip] | None = None
        self._frame: tuple[object, ...] | None = None  # what every cached line was painted for
        self._cells_for: tuple[object, ...] | None = None  # what every cached cell was
        self._pass_look: tuple[Style, object] | None = None  # during a paint: its look
        self._options: ConsoleOptions | None = None
        self._row_refreshes = 0

    # -- the model ----------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        """The number of rows."""
        return len(self._data)

    @property
    def row_keys(self) -> list[str]:
        """Row keys in display order (do not modify)."""
        return self._ordered()

    def has_row(self, key: str) -> bool:
        """Whether a row has this key."""
        return key in self._data

    def get_row(self, key: str) -> list[Text]:
        """The cells of a row, in column order."""
        return [self._cell(key, i) for i in range(len(self.columns))]

    def get_cell(self, key: str, column: str) -> Text:
        """One cell, by row and column key."""
        return self._cell(key, self._column_index(column))

    def get_cell_at(self, coordinate: Coordinate) -> Text:
        """One cell, by row and column index."""
        return self._cell(self._ordered()[coordinate.row], coordinate.column)

    def _cell(self, key: str, i: int) -> Text:
        """A cell, made by `cell_source` now if it was left to be."""
        cells = self._data[key]
        cell = cells[i]
        if cell is None:
            if self.cell_source is None:
                raise LookupError(f"cell {i} of row {key!r} was left to a cell_source")
            cell = cells[i] = self.cell_source(key, list(self.columns)[i])
        return cell

    def get_row_index(self, key: str) -> int:
        """Where a row is shown (0: the first under the header)."""
        self._ordered()
        return self._index[key]

    def row_key_at(self, index: int) -> str | None:
        """The key of the row at an index, None if there is none."""
        keys = self._ordered()
        return keys[index] if 0 <= index < len(keys) else None

    def add_column(self, label: Text, *, key: str, width: int) -> str:
        """Add a column on the right (before any row is added)."""
        if key in self.columns:
            raise ValueError(f"column {key!r} exists")
        if self._data:
            raise ValueError("columns are added to an empty table")
        self.columns[key] = Column(key, label, width)
        self._table_width += width + 2 * PAD
        self._columns_changed()
        return key

    def set_label(self, key: str, label: Text) -> None:
        """Change a column's header label."""
        self.columns[key].label = label
        self._header = None
        self.refresh(Region(0, 0, max(self._table_width, self.size.width), 1))

    def add_row(self, *cells: Text | None, key: str) -> str:
        """Add a row at the bottom (a None cell is made by `cell_source` when needed)."""
        if key in self._data:
            raise ValueError(f"row {key!r} exists")
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self._data[key] = list(cells)
        keys = self._ordered()
        self._index[key] = len(keys)
        keys.append(key)
        self._reshaped()
        self._refresh_index(self._index[key])
        if len(self._data) == 1:  # a cursor has a row to be on now
            self._highlight(self.cursor_row)
        return key

    def remove_row(self, key: str) -> None:
        """Remove a row (the rows below it move up)."""
        del self._data[key]
        self._index.pop(key, None)
        self._rendered.pop(key, None)
        self._lines.pop(key, None)
        self._special.pop(key, None)
        self._holes = True
        self._reshaped()
        self.refresh()
        self.cursor_row = self.cursor_row  # (clamped to the rows left)

    def update_cell(self, key: str, column: str, cell: Text | None) -> None:
        """Replace one cell (None: made by `cell_source` when needed): only it is rendered
        again, only its row repainted."""
        i = self._column_index(column)
        self._data[key][i] = cell
        rendered = self._rendered.get(key)
        if rendered is not None:
            rendered[i] = None
        self._lines.pop(key, None)
        self._special.pop(key, None)
        self._refresh_index(self.get_row_index(key))

    def set_order(self, keys: Iterable[str]) -> None:
        """Show the rows in this order (every row key, once each). Rows that moved keep
        their rendered cells; the lines whose row changed are repainted."""
        order = list(keys)
        if len(order) != len(self._data) or any(k not in self._data for k in order):
            raise ValueError("set_order takes every row key once")
        if len(set(order)) != len(order):
            raise ValueError("set_order takes every row key once")
        self._reindex(order)
        self._settle_size()

    def _reindex(self, order: list[str]) -> None:
        """Take an order of every row: the rows whose index changed are repainted (from their
        lines: what they paint names them by key, wherever they are)."""
        old = self._index
        self._keys, self._holes = order, False
        self._index = index = {k: i for i, k in enumerate(order)}
        special = self._special
        for k, i in index.items():
            if old.get(k) != i:
                special.pop(k, None)
                self._refresh_index(i)

    def clear(self, columns: bool = False) -> None:
        """Remove every row (and every column too if asked); cursor and scroll go to the top."""
        self._data.clear()
        self._keys, self._index, self._holes = [], {}, False
        self._rendered.clear()
        self._lines.clear()
        self._special.clear()
        if columns:
            self.columns = {}
            self._table_width = 0
            self._columns_changed()
        self._reshaped()
        self.cursor_row = 0
        self.hover_row = 0
        self.refresh()
        self.scroll_x = self.scroll_y = 0
        self.scroll_target_x = self.scroll_target_y = 0

    def forget_rendering(self) -> None:
        """Drop every render cache (what a style change does): the next paint is from
        scratch."""
        self._rendered.clear()
        self._lines.clear()
        self._special.clear()
        self._header = None
        self._frame = self._cells_for = None
        self.refresh()

    def _column_index(self, column: str) -> int:
        for i, key in enumerate(self.columns):
            if key == column:
                return i
        raise KeyError(column)

    def _ordered(self) -> list[str]:
        if self._holes:  # rows were removed: the ones below them move up
            data = self._data
            self._reindex([k for k in self._keys if k in data])
        return self._keys

    def _columns_changed(self) -> None:
        self._rendered.clear()
        self._lines.clear()
        self._special.clear()
        self._header = None
        self._reshaped()
        self.refresh()

    def _reshaped(self) -> None:
        """The virtual size changed: set it soon (once for a batch of rows added)."""
        if not self._size_stale:
            self._size_stale = True
            if self.is_attached:
                self.call_next(self._settle_size)

    def _settle_size(self) -> None:
        if self._size_stale:
            self._size_stale = False
            size = Size(self._table_width, len(self._data) + 1)
            if size != self.virtual_size:
                self.virtual_size = size

    # -- cursor and mouse ---------------------------------------------------------------------

    def validate_cursor_row(self, row: int) -> int:
        return max(0, min(row, len(self._data) - 1))

    def watch_cursor_row(self, old: int, new: int) -> None:
        if old != new:
            self._refresh_index(old)
            self._highlight(new)
            self.scroll_cursor_into_view()

    def move_cursor(self, *, row: int, animate: bool = False, scroll: bool = True) -> None:
        """Move the cursor to a row (and scroll it into view unless asked not to)."""
        if scroll:
            self.scroll_cursor_into_view(animate=animate)
        self.cursor_row = row

    def place_cursor(self, row: int) -> None:
        """Put the cursor on a row without scrolling or telling anyone: for when rows moved
        under it and it follows the same row."""
        old = self.cursor_row
        self.set_reactive(RowTable.cursor_row, self.validate_cursor_row(row))
        self._refresh_index(old)
        self._refresh_index(self.cursor_row)

    def scroll_cursor_into_view(self, animate: bool = False) -> None:
        """Scroll so that the cursor's row is shown (under the header)."""
        self._settle_size()
        if not 0 <= self.cursor_row < len(self._data):
            return
        width = max(self.size.width, self._table_width)
        region = Region(int(self.scroll_x), self.cursor_row + 1, width, 1)
        self.scroll_to_region(region, animate=animate, spacing=Spacing(1, 0, 0, 0), force=True)

    def _highlight(self, row: int) -> None:
        self._refresh_index(row)
        key = self.row_key_at(row)
        if key is not None:
            self.post_message(self.RowHighlighted(self, row, key))

    def _set_hover(self, show: bool) -> None:
        if show != self._show_hover:
            self._show_hover = show
            self._refresh_index(self.hover_row)

    def _move_hover(self, row: int) -> None:
        if row != self.hover_row:
            self._refresh_index(self.hover_row)
            self.hover_row = row
            self._refresh_index(row)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        meta = event.style.meta
        if not meta:
            self._set_hover(False)
            return
        self._set_hover(True)
        row = self._row_of(meta)
        if row is not None:
            self._move_hover(row)

    def _row_of(self, meta: dict[str, object]) -> int | None:
        """The row index a painted cell's meta names (HEADER for the header), None if none."""
        if not isinstance(meta.get("column"), int):
            return None
        key = meta.get("key")
        if isinstance(key, str):
            self._ordered()
            return self._index.get(key)
        row = meta.get("row")
        return HEADER if row == HEADER else None

    def on_leave(self, _event: events.Leave) -> None:
        self._set_hover(False)

    async def on_click(self, event: events.Click) -> None:
        self._set_hover(True)
        meta = event.style.meta
        row = self._row_of(meta)
        if row is None:
            return
        column = meta["column"]
        if row == HEADER:
            keys = list(self.columns)
            if 0 <= column < len(keys):
                self.post_message(self.HeaderSelected(self, keys[column], column))
            return
        again = row == self.cursor_row and column == self._click_column
        self._click_column = column
        self.cursor_row = row
        if again:
            self._post_selected()
        self.scroll_cursor_into_view(animate=True)
        event.stop()

    def _post_selected(self) -> None:
        key = self.row_key_at(self.cursor_row)
        if key is not None:
            self.post_message(self.RowSelected(self, self.cursor_row, key))

    # -- actions ------------------------------------------------------------------------------

    def action_select_cursor(self) -> None:
        """Select the cursor's row."""
        self._set_hover(False)
        self._post_selected()

    def action_cursor_up(self) -> None:
        """Move the cursor up a row."""
        self._set_hover(False)
        self.cursor_row -= 1

    def action_cursor_down(self) -> None:
        """Move the cursor down a row."""
        self._set_hover(False)
        self.cursor_row += 1

    def action_cursor_left(self) -> None:
        """Scroll left (the cursor is a row)."""
        self._set_hover(False)
        self.action_scroll_left()

    def action_cursor_right(self) -> None:
        """Scroll right (the cursor is a row)."""
        self._set_hover(False)
        self.action_scroll_right()

    def action_first_row(self) -> None:
        """Move the cursor to the first row."""
        self._set_hover(False)
        if self._data:
            self.cursor_row = 0

    def action_last_row(self) -> None:
        """Move the cursor to the last row."""
        self._set_hover(False)
        if self._data:
            self.cursor_row = len(self._data) - 1

    def action_page_down(self) -> None:
        """Move the cursor a page down."""
        self._set_hover(False)
        height = self.scrollable_content_region.height - 1
        target = min(self.cursor_row + height, len(self._data) - 1)
        self.scroll_relative(y=height, animate=False, force=True)
        self.move_cursor(row=target, scroll=False)

    def action_page_up(self) -> None:
        """Move the cursor a page up."""
        self._set_hover(False)
        height = self.scrollable_content_region.height - 1
        target = max(self.cursor_row - height, 0)
        self.scroll_relative(y=-height, animate=False)
        self.move_cursor(row=target, scroll=False)

    # -- painting -----------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.forget_rendering()

    def on_resize(self, _event: events.Resize) -> None:
        self._frame = None
        self._settle_size()

    def _refresh_index(self, index: int) -> None:
        """Repaint the line of a row (or the header) if it is in view."""
        y = index + 1 - self.scroll_offset.y if index != HEADER else 0
        if index != HEADER and not 1 <= y < self.size.height:
            return
        self._row_refreshes += 1
        if self._row_refreshes > REPAINT_ALL:
            if self._row_refreshes == REPAINT_ALL + 1:
                self.refresh()
            return
        self.refresh(Region(0, y, max(self._table_width, self.size.width), 1))

    def render_lines(self, crop: Region) -> list[Strip]:
        self._row_refreshes = 0
        self._settle_size()
        # the widget's style once per paint, not once per line (it walks the ancestors)
        self._pass_look = (self.rich_style, self.get_pseudo_class_state())
        try:
            return super().render_lines(crop)
        finally:
            self._pass_look = None

    def render_line(self, y: int) -> Strip:
        look = self._pass_look or (self.rich_style, self.get_pseudo_class_state())
        base = look[0]
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        if look != self._cells_for:  # the cells' own rendering depends on these only
            self._cells_for = look
            self._rendered.clear()
        frame = (look, width, scroll_x, self._table_width)
        if frame != self._frame:
            self._frame = frame
            self._lines.clear()
            self._special.clear()
            self._header = None
            self._options = self.app.console_options.update(no_wrap=True)
        if y == 0:
            hover = self._show_hover and self.hover_row == HEADER
            if self._header is None or self._header[0] != hover:
                self._header = (hover, self._header_line(base, width, scroll_x, hover))
            return self._header[1]
        index = y - 1 + scroll_y
        keys = self._ordered()
        if index >= len(keys):
            return Strip.blank(width, base)
        key = keys[index]
        cursor = index == self.cursor_row
        hover = self._show_hover and index == self.hover_row
        if cursor or hover:
            special = self._special.get(key)
            if special is None or special[0] != (index, cursor, hover):
                line = self._row_line(key, base, width, scroll_x, cursor, hover)
                special = self._special[key] = ((index, cursor, hover), line)
            return special[1]
        strip = self._lines.get(key)
        if strip is None:
            strip = self._lines[key] = self._row_line(key, base, width, scroll_x, False, False)
        return strip

    def _cell_styles(self, header: bool, hover: bool, cursor: bool) -> tuple[Style, Style]:
        """The component style of a cell and its post style (the cursor's foreground wins
        over the cell's, its background does not), as DataTable combines them."""
        component = Style()
        if hover:
            component += self.get_component_rich_style("row-table--hover")
            if header:
                component += self.get_component_rich_style("row-table--header-hover")
        if cursor:
            component += self.get_component_rich_style("row-table--cursor")
        return component, Style.from_color(color=component.color) + Style.null()

    def _render_cell(
        self,
        cell: Text,
        key: str | None,
        column: int,
        width: int,
        base: Style,
        component: Style,
        post: Style,
    ) -> Line:
        options = self._options or self.app.console_options.update(no_wrap=True)
        pre = base + Style.from_meta(_meta(key, column)) + component
        lines = self.app.console.render_lines(
            Styled(Padding(cell, (0, PAD)), pre_style=pre, post_style=post),
            options.update_dimensions(width, 1),
        )
        return lines[0]

    def _assemble(
        self,
        cells: list[Line],
        key: str | None,
        row_style: Style,
        header: bool,
        hover: bool,
        cursor: bool,
        base: Style,
        width: int,
        scroll_x: int,
    ) -> Strip:
        extend, _ = self._cell_styles(header, hover, cursor)
        extend = row_style + extend + Style.from_meta({**_meta(key, 0), "out_of_bounds": True})
        segments = [segment for cell in cells for segment in cell]
        segments.append(Segment(" " * max(0, width - self._table_width), extend))
        strip = Strip(segments)
        if scroll_x:
            strip = strip.crop(scroll_x)
        return strip.adjust_cell_length(width, base).simplify()

    def _header_line(self, base: Style, width: int, scroll_x: int, hover: bool) -> Strip:
        style = self.get_component_styles("row-table--header").rich_style
        component, post = self._cell_styles(True, hover, False)
        cells = [
            self._render_cell(column.label, None, i, column.render_width, style, component, post)
            for i, column in enumerate(self.columns.values())
        ]
        return self._assemble(cells, None, style, True, hover, False, base, width, scroll_x)

    def _row_line(
        self,
        key: str,
        base: Style,
        width: int,
        scroll_x: int,
        cursor: bool,
        hover: bool,
    ) -> Strip:
        widths = [column.render_width for column in self.columns.values()]
        if cursor or hover:
            component, post = self._cell_styles(False, hover, cursor)
            cells = [
                self._render_cell(self._cell(key, i), key, i, w, base, component, post)
                for i, w in enumerate(widths)
            ]
        else:
            cells = self._plain_cells(key, base, widths)
        return self._assemble(cells, key, base, False, hover, cursor, base, width, scroll_x)

    def _plain_cells(self, key: str, base: Style, widths: list[int]) -> list[Line]:
        """A row's cells with no cursor or hover on them, from the cache: only the ones
        replaced are rendered again."""
        rendered = self._rendered.get(key)
        if rendered is None:
            rendered = self._rendered[key] = [None] * len(widths)
        plain, post = self._cell_styles(False, False, False)
        out: list[Line] = []
        for i, line in enumerate(rendered):
            if line is None:
                line = rendered[i] = self._render_cell(
                    self._cell(key, i), key, i, widths[i], base, plain, post
                )
            out.append(line)
        return out


def _meta(key: str | None, column: int) -> dict[str, object]:
    """The style meta of a painted cell: its row's key and its column (the header: `row`
    HEADER)."""
    return {"row": HEADER, "column": column} if key is None else {"key": key, "column": column}
