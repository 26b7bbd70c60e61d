"""A scrolling view of prepared lines (strips), drawn with the line API of `ScrollView`."""

from __future__ import annotations

from rich.style import Style
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget


class StripView(ScrollView):
    """Shows `self._lines`, one strip per line, scrolled. Subclasses prepare the lines and
    call `show_lines()`."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self._lines: list[Strip] = []
        self._pass_style: Style | None = None

    def show_lines(self, lines: list[Strip], width: int) -> None:
        """Show these lines (rendered `width` cells wide) and repaint this widget only.

        A new virtual size asks Textual for a layout of the whole screen, which repaints
        every widget on it (a 2,000-row table included). It is needed only when the
        vertical scrollbar comes or goes; otherwise the size is set without one."""
        old, self._lines = self._lines, lines
        size = Size(width, len(lines))
        if size == self.virtual_size and len(old) == len(lines):
            # the same shape: repaint only the lines in view that changed (a pane on a
            # running session changes a time or two a second, not its forty lines)
            self._refresh_changed(old, lines)
            return
        overflows = size.height > self.scrollable_content_region.height
        if size != self.virtual_size and overflows == self.show_vertical_scrollbar:
            self.set_reactive(Widget.virtual_size, size)
            if overflows:
                self.vertical_scrollbar.window_virtual_size = size.height
        else:
            self.virtual_size = size
        self.refresh()

    def _refresh_changed(self, old: list[Strip], new: list[Strip]) -> None:
        top = self.scroll_offset.y
        region = self.scrollable_content_region
        changed = [y for y in range(top, min(len(new), top + region.height)) if old[y] != new[y]]
        if len(changed) > region.height // 2:
            self.refresh()
            return
        for y in changed:
            self.refresh_line(y)

    def render_lines(self, crop: Region) -> list[Strip]:
        # the widget's style once per paint, not once per line (it walks the ancestors)
        self._pass_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._pass_style = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        style = self._pass_style or self.rich_style
        if index >= len(self._lines):
            return Strip.blank(width, style)
        return self._lines[index].crop_extend(scroll_x, scroll_x + width, style)
