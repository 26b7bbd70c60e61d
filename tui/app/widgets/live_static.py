"""A Static that is shown again on every refresh of the View, but repaints only on change."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


class LiveStatic(Static):
    """`show_content()` repaints only when the content (text or styles) changed, and asks for
    a new layout of the screen only when the length of one of its lines changed (so may its
    wrapping, hence its height): a layout re-renders every widget, the 2,000-row table
    included, up to twenty times a second under a stream."""

    _shown: tuple[str, tuple[object, ...]] | None = None
    _widths: tuple[int, ...] = ()

    def show_content(self, content: Content) -> None:
        key = (content.plain, tuple(content.spans))
        if key == self._shown:
            return
        widths = tuple(len(line) for line in content.plain.split("\n"))
        relayout = self._shown is None or widths != self._widths
        self._shown, self._widths = key, widths
        self.update(content, layout=relayout)
