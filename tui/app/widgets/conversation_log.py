"""A scrollable column of blocks (one per message) that renders only the lines on screen.

Each block is a `Content` rendered once to strips at the widget's width and kept until its key
changes (a message streamed further, a running tool's time) or the width does: a 500-message
conversation is laid out once, a live update re-renders the one message that changed, and a
frame draws only the visible lines (the line API of `ScrollView`, as Textual's own `Log`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Hashable, Sequence

from textual.content import Content
from textual.strip import Strip
from textual.visual import Visual

from .strip_view import StripView

BATCH = 40
"""Blocks rendered per layout step (about 40 ms of work)."""


Block = tuple[Hashable, "Content | Callable[[], Content]"]
"""A block's key and its content, or what makes it (called only when the key is new)."""


class BlockLog(StripView, can_focus=True):
    """Blocks of styled text, one after the other, drawn line by line."""

    DEFAULT_CSS = """
    BlockLog {
        background: $surface;
        padding: 0 1;
        scrollbar-gutter: stable;  /* the width never changes when the scrollbar comes */
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self._blocks: list[Block] = []
        self._rendered: dict[Hashable, list[Strip]] = {}
        self._starts: list[int] = []
        self._keys: list[Hashable] = []
        self._width = 0
        self._pending = False

    def set_blocks(self, blocks: Sequence[Block]) -> None:
        """Show these blocks (key, content): a key seen before keeps its rendered lines (and
        its content is not even made)."""
        self._blocks = list(blocks)
        self._layout()

    @staticmethod
    def _content(block: Block) -> Content:
        made = block[1]
        return made() if callable(made) else made

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
                self._rendered[block[0]] = Visual.to_strips(
                    self, self._content(block), width, None, style
                )
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
        self.show_lines(lines, width)
        if anchor is None:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)
        elif anchor[0] in keys:
            y = starts[keys.index(anchor[0])] + anchor[1]
            self.scroll_to(y=min(y, self.max_scroll_y), animate=False, immediate=True)
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
