"""A scrollable column of blocks (a message, a tool call) that renders only the lines on screen.

Each block is a `Content` rendered once to strips at the widget's width and kept until its key
changes (a message streamed further, a running tool's time) or the width does: a 500-message
conversation is laid out once, a live update re-renders the one message that changed, and a
frame draws only the visible lines (the line API of `ScrollView`, as Textual's own `Log`).
One block can be the cursor (drawn highlighted, the whole width); a click says which block it
fell on (`BlockLog.Clicked`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.content import Content
from textual.message import Message
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import Visual

from .strip_view import StripView

BATCH = 40
"""Blocks rendered per layout step: a step stays short enough that keys and frames are served
between steps while a long conversation is laid out."""


@dataclass(frozen=True, slots=True)
class Indented:
    """Content laid out `gutter` cells in from the left, the gutter (e.g. `    │ `) drawn on
    each of its lines, wrapped lines included: a tool call's output stays under its call."""

    content: Content
    gutter: Content


Made = Content | Indented
Block = tuple[Hashable, "Made | Callable[[], Made]"]
"""A block's key and its content, or what makes it (called only when the key is new)."""


class BlockLog(StripView, can_focus=True):
    """Blocks of styled text, one after the other, drawn line by line."""

    COMPONENT_CLASSES = {"block-log--cursor"}
    DEFAULT_CSS = """
    BlockLog {
        background: $surface;
        padding: 0 1;
        scrollbar-gutter: stable;  /* the width never changes when the scrollbar comes */
    }
    BlockLog > .block-log--cursor {
        background: $block-cursor-blurred-background;
    }
    """

    class Clicked(Message):
        """The block `key` was clicked."""

        def __init__(self, key: Hashable) -> None:
            super().__init__()
            self.key = key

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self._blocks: list[Block] = []
        self._rendered: dict[Hashable, list[Strip]] = {}
        self._starts: list[int] = []
        self._keys: list[Hashable] = []
        self._width = 0
        self._pending = False
        self._cursor: Hashable | None = None
        self._cursor_lines = range(0)

    def set_blocks(self, blocks: Sequence[Block]) -> None:
        """Show these blocks (key, content): a key seen before keeps its rendered lines (and
        its content is not even made)."""
        self._blocks = list(blocks)
        self._layout()

    @staticmethod
    def _made(block: Block) -> Made:
        made = block[1]
        return made() if callable(made) else made

    @classmethod
    def _content(cls, block: Block) -> Content:
        made = cls._made(block)
        return made.content if isinstance(made, Indented) else made

    def _lay_out(self, made: Made, width: int, style: VisualStyle) -> list[Strip]:
        if not isinstance(made, Indented):
            return Visual.to_strips(self, made, width, None, style)
        indent = min(made.gutter.cell_length, max(0, width - 10))
        (gutter,) = Visual.to_strips(self, made.gutter, indent, 1, style)
        return [
            Strip.join([gutter, line])
            for line in Visual.to_strips(self, made.content, width - indent, None, style)
        ]

    @property
    def cursor(self) -> Hashable | None:
        """The key of the block drawn as the cursor (None: none)."""
        return self._cursor

    @cursor.setter
    def cursor(self, key: Hashable | None) -> None:
        self._cursor = key
        self._place_cursor()
        self.refresh()

    def _place_cursor(self) -> None:
        span = self.span(self._cursor) if self._cursor is not None else None
        self._cursor_lines = range(span[0], span[0] + span[1]) if span else range(0)

    def span(self, key: Hashable) -> tuple[int, int] | None:
        """Where the block `key` is laid out: its first line and how many (None: it is not)."""
        try:
            i = self._keys.index(key)
        except ValueError:
            return None
        end = self._starts[i + 1] if i + 1 < len(self._starts) else len(self._lines)
        return self._starts[i], end - self._starts[i]

    def key_at(self, y: int) -> Hashable | None:
        """The key of the block holding line `y` of the whole column (None: no block)."""
        if not self._keys or not 0 <= y < len(self._lines):
            return None
        return self._keys[self.block_at(y)]

    def reveal(self, first: Hashable, last: Hashable | None = None) -> None:
        """Scroll the least that shows block `first` (and down to block `last`, as much as
        fits with `first`'s first line still in view)."""
        span = self.span(first)
        if span is None:
            return
        top = span[0]
        end = top + span[1]
        if last is not None and (more := self.span(last)) is not None:
            end = max(end, more[0] + more[1])
        height = self.scrollable_content_region.height
        y = int(self.scroll_y)
        if top < y:
            y = top
        elif end > y + height:
            y = min(top, end - height)
        self.scroll_to(y=y, animate=False, immediate=True)

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        if self.scroll_offset.y + y in self._cursor_lines:
            back = self.get_component_rich_style("block-log--cursor").bgcolor
            return Strip(
                Segment.apply_style(strip, post_style=Style(bgcolor=back)), strip.cell_length
            )
        return strip

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        key = self.key_at(offset.y + int(self.scroll_y))
        if key is not None:
            self.post_message(self.Clicked(key))

    def _anchor(self) -> tuple[Hashable, int] | None:
        """What the top of the view shows: (the block's key, lines into it); None: the end
        (or nothing yet), where the view stays."""
        if not self._lines or self.scroll_y >= self.max_scroll_y:
            return None
        top = int(self.scroll_y)
        i = self.block_at(top)
        return self._keys[i], top - self._starts[i]

    def _layout(self) -> None:
        """Lay the blocks out at the current width, the newest first: at most BATCH blocks
        are rendered per call, the rest on the following ones (a long conversation never
        holds the screen), the view anchored to what it shows."""
        self._pending = False
        width = self.scrollable_content_region.width
        if width <= 0:
            return
        if width != self._width:
            self._rendered.clear()
            self._width = width
        anchor = self._anchor()
        style = self.visual_style
        budget = BATCH
        count = len(self._blocks)
        at = (
            next((i for i, (key, _) in enumerate(self._blocks) if key == anchor[0]), None)
            if anchor is not None
            else None
        )
        # what the reader looks at first: from the top of the view down, then up; at the end
        # (or new), from the newest back
        order = (
            [*range(at, count), *range(at - 1, -1, -1)]
            if at is not None
            else range(count - 1, -1, -1)
        )
        for i in order:
            if budget <= 0:
                break
            block = self._blocks[i]
            if block[0] not in self._rendered:
                self._rendered[block[0]] = self._lay_out(self._made(block), width, style)
                budget -= 1
        kept: dict[Hashable, list[Strip]] = {}
        lines: list[Strip] = []
        starts: list[int] = []
        keys: list[Hashable] = []
        waiting = False
        for key, _content in self._blocks:
            strips = self._rendered.get(key)
            if strips is None:
                waiting = True
                continue
            kept[key] = strips
            keys.append(key)
            starts.append(len(lines))
            lines.extend(strips)
        self._rendered = kept if not waiting else {**self._rendered, **kept}
        self._starts, self._keys = starts, keys
        self._place_cursor()
        self.show_lines(lines, width)
        # forced: when these lines are the first to overflow, the scrollbar comes only with the
        # next layout of the screen, and Textual refuses a scroll until then; the next batch
        # would take the top of the view for what the reader looks at, and stay there instead
        # of at the end
        if anchor is None:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
        elif anchor[0] in keys:
            y = starts[keys.index(anchor[0])] + anchor[1]
            self.scroll_to(y=min(y, self.max_scroll_y), animate=False, immediate=True, force=True)
        if self.max_scroll_y > 0 and not self.show_vertical_scrollbar:
            # (Textual moves a scrollbar with the view only while it is shown: the one to come
            # starts where the view is)
            self.vertical_scrollbar.position = self.scroll_y
        if waiting and not self._pending:
            self._pending = True
            self.set_timer(0.01, self._layout)  # after this frame: the next batch

    @property
    def complete(self) -> bool:
        """Every block is laid out."""
        return len(self._keys) == len(self._blocks)

    @property
    def text(self) -> str:
        """Every block's plain text (what a reader sees, without styles)."""
        return "\n".join(self._content(block).plain for block in self._blocks)

    @property
    def line_count(self) -> int:
        return len(self._lines)

    def block_at(self, y: int) -> int:
        """The index of the block holding line `y` (of the whole column)."""
        return max(0, bisect_right(self._starts, y) - 1)

    def on_resize(self) -> None:
        self._layout()
