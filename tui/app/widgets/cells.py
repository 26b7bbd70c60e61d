"""Table cells of a session row: per-column render inputs and Rich Text, never markup."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text

from tui.core.view import SessionRow
from tui.core.words import indent

from .. import format as fmt
from ..tree import GROUP, TreeLine


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """A table column: key (also its sort name), header and width (0: takes what is left).
    `optional`: shown only while the title keeps TITLE_ROOM cells beside it (in COLUMNS'
    order), so that a waiting row's title and what it asks get the room first."""

    key: str
    label: str
    width: int
    optional: bool = False
    right: bool = False
    narrow_width: int | None = None

    def size(self, wide: bool) -> int:
        return self.width if wide or self.narrow_width is None else self.narrow_width


COLUMNS = (
    ColumnSpec("state", "state", 9),
    ColumnSpec("reason", "reason", 11),  # a stale row's flag goes here (its reason is none)
    ColumnSpec("title", "title", 0),
    ColumnSpec("folder", "folder", 12, narrow_width=10),
    ColumnSpec("in_state", "in state", 10),  # room for the header's sort arrow
    ColumnSpec("activity", "activity", 10, optional=True),
    ColumnSpec("cost", "cost", 7, optional=True, right=True),
    ColumnSpec("tokens", "tokens", 8, optional=True, right=True),
)
ALL_COLUMNS = [c.key for c in COLUMNS]
"""Column keys in the order of `CellRenderer.inputs()`."""
FOLDER = COLUMNS[ALL_COLUMNS.index("folder")]
TITLE_ROOM = 44
"""Cells the title (with what a waiting row asks) keeps before an optional column is shown."""
MIN_TITLE = 16
UNREAD_MARK = "• "
"""Before the title of a row that changed while the user looked elsewhere."""


class CellText(Text):
    """A table cell. Its column has a set width, so it opts out of Rich's measuring: DataTable
    measures every cell of every row it takes in (much of the time of taking in a large
    table), for widths only auto-width columns use."""

    __rich_measure__ = None  # type: ignore[assignment]


class CellRenderer:
    """Renders the cells of a row. `style` turns a Textual style spec with theme variables
    (`$state-busy bold`) into a Rich style; `now`, `wide` and `title_width` follow the table."""

    def __init__(self, style: Callable[[str], Style]) -> None:
        self.style = style
        self.now = 0.0
        self.wide: bool | None = False
        self.title_width = MIN_TITLE
        self.unread: frozenset[tuple[str, str]] = frozenset()
        """Rows that changed while the user looked elsewhere (a mark before the title)."""
        self.server_names: dict[str, str] = {}
        """What the config calls each server (URL -> name): the folder column's server tag."""

    def inputs(self, row: SessionRow, line: TreeLine, multi: bool) -> tuple[object, ...]:
        """For every column of COLUMNS, what its cell is rendered from: equal inputs, equal
        cell. (Built for each row on every refresh, so kept to plain tuples.)"""
        since = row.since
        now, ctx = self.now, line.context or row.last_known is not None  # (dimmed)
        return (
            (row.state, row.reason, ctx),
            (
                row.state,
                row.reason,
                row.stale,
                row.retry_attempt,
                tuple(p.kind for p in row.pending) if row.pending else (),
                row.settling if row.settling in fmt.SAID_SETTLING else None,
                ctx,
            ),
            (
                row.title,
                row.id,
                row.state,
                row.stale,
                line,
                row.key in self.unread,
                fmt.asked_text(row),
            ),
            (row.directory, row.server if multi else "", ctx),
            (fmt.duration(None if since is None else now - since), ctx),
            (fmt.age(row.updated, now), ctx),
            (row.cost, ctx),
            (row.tokens, ctx),
        )

    def until(self, row: SessionRow) -> float:
        """Until when (a clock second) the row's time cells read as they do at `now`: before
        it, a refresh with the same row need not look at the row again."""
        now, out = self.now, math.inf
        if row.since is not None:
            out = row.since + fmt.duration_next(now - row.since)
        if row.updated is not None:
            out = min(out, row.updated + fmt.age_next(now - row.updated))
        return out

    def cell(self, column: str, row: SessionRow, line: TreeLine, multi: bool) -> Text:
        """Render one cell (styles from theme variables; text never parsed as markup)."""
        if row.server == GROUP:
            return self.group_cell(column, row, line)
        dim = "dim" if line.context or row.last_known is not None else ""
        state_var = fmt.state_variable(row)
        if column == "state":
            loud = " reverse" if row.state == "input" else ""
            return CellText(
                fmt.state_label(row),
                no_wrap=True,
                style=self.style(f"${state_var} bold{loud} {dim}".strip()),
            )
        if column == "reason" and row.stale:
            return CellText(
                f"{fmt.STALE_GLYPH} {fmt.STALE_WORD}",
                no_wrap=True,
                style=self.style("$state-stale bold reverse"),
            )
        if column == "reason":
            return CellText(
                fmt.reason_text(row),
                no_wrap=True,
                overflow="ellipsis",
                style=self.style(f"${state_var} {dim}".strip()),
            )
        if column == "title":
            return self.title(row, line, row.state == "input" or row.stale)
        if column == "folder":
            folder = fmt.short_folder(row.directory)
            if multi:
                folder = f"{self.server_names.get(row.server) or _server_tag(row.server)} {folder}"
            width = FOLDER.size(bool(self.wide))
            return CellText(
                fmt.truncate(fmt.literal(folder), width), no_wrap=True, style=self.style(dim)
            )
        now = self.now
        if column == "in_state":
            value = fmt.duration(None if row.since is None else now - row.since)
        elif column == "activity":
            value = fmt.age(row.updated, now)
        elif column == "cost":
            value = fmt.money(row.cost)
        elif column == "tokens":
            value = fmt.tokens(row.tokens)
        else:
            raise ValueError(f"unknown column {column!r}")
        right = column in ("cost", "tokens")
        return CellText(
            value, no_wrap=True, justify="right" if right else "left", style=self.style(dim)
        )

    def group_cell(self, column: str, row: SessionRow, line: TreeLine) -> Text:
        """A group's line (tree.Grouping): its name and how many of its sessions are in each
        state, the sums; the rest of the row empty."""
        if column == "title":  # (its state cell is empty: a group is in no state)
            text = CellText(no_wrap=True, overflow="ellipsis")
            text.append("▾ " if line.expanded else "▸ ", style=self.style("$foreground-muted"))
            text.append(fmt.literal(row.title) or "–", style=self.style("bold"))
            counts = dict(c.rsplit(" ", 1) for c in row.evidence)
            for state in ("input", "stale", "retry", "busy", "unknown", "idle"):
                if state in counts:
                    # (idle's glyph ○ is "nothing ran": every idle is counted, so the word, as
                    # the header's `idle N`)
                    if state == "stale":
                        glyph = fmt.STALE_GLYPH
                    elif state == "idle":
                        glyph = "idle"
                    else:
                        glyph = fmt.STATE_GLYPH[state]
                    text.append("\u00a0\u00a0")
                    text.append(f"{glyph} {counts[state]}", style=self.style(f"$state-{state}"))
            if line.hidden:
                text.append(f"  ({line.hidden} folded)", style=self.style("$foreground-muted"))
            return text
        if column == "activity":
            return CellText(fmt.age(row.updated, self.now), no_wrap=True)
        if column == "cost":
            return CellText(fmt.money(row.cost), no_wrap=True, justify="right")
        if column == "tokens":
            return CellText(fmt.tokens(row.tokens), no_wrap=True, justify="right")
        return CellText("")

    def title(self, row: SessionRow, line: TreeLine, loud: bool) -> Text:
        # Roots keep a two-cell gutter for the fold marker; children hang under their parent.
        prefix = indent(line.depth) + ("└ " if line.last else "├ ") if line.depth else ""
        if line.has_children:
            prefix += "▾ " if line.expanded else "▸ "
        elif not line.depth:
            prefix = "  "
        title = fmt.literal(row.title) or row.id
        suffix = f" (+{line.hidden})" if line.hidden else ""
        text = CellText(no_wrap=True, overflow="ellipsis")
        text.append(prefix, style=self.style("$foreground-muted"))
        mark = UNREAD_MARK if row.key in self.unread else ""
        if mark:
            text.append(mark, style=self.style("$accent bold"))
        room = self.title_width - cell_len(prefix) - len(mark) - len(suffix)
        asked = fmt.asked_text(row)
        if asked:  # what a waiting row waits for, after its title, as room allows
            asked = fmt.literal(asked)
            # what is asked gets the larger share: it is what the user decides on
            keep = min(cell_len(title), max(room - cell_len(asked) - 2, room * 2 // 5, 12))
            asked = fmt.truncate_ask(asked, room - keep - 2) if room - keep > 8 else ""
            room -= cell_len(asked) + 2 if asked else 0
        body = fmt.truncate(title, room)
        body_style = "bold" if loud else ""
        if line.context or row.last_known is not None:
            body_style += " dim"
        if not row.title:
            body_style += " italic"
        text.append(body, style=self.style(body_style.strip()))
        if suffix:
            text.append(suffix, style=self.style("$foreground-muted"))
        if asked:
            text.append("\u00a0\u00a0")  # (a plain space opening a span is lost in an SVG)
            said = f"${fmt.state_variable(row)}"
            text.append(asked, style=self.style(said + " dim" if row.last_known else said))
        return text


def _server_tag(url: str) -> str:
    label = fmt.server_label(url)
    host, sep, port = label.rpartition(":")
    return f":{port}" if sep and port.isdigit() else label
