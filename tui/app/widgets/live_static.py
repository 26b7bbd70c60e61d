"""A Static that is shown again on every refresh of the View, but repaints only on change."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


class LiveStatic(Static):
    """`show_content()` repaints only when the content (text or styles) changed, and asks for
    a new layout of the screen only when its text changed length or line count: a layout
    re-renders every widget, the 2,000-row table included, ten times a second under a stream."""

    _shown: tuple[str, tuple[object, ...]] | None = None

    def show_content(self, content: Content) -> None:
        key = (content.plain, tuple(content.spans))
        before = self._shown
        if key == before:
            return
        self._shown = key
        relayout = before is None or len(before[0]) != len(key[0]) or (
            before[0].count("\n") != key[0].count("\n"))
        self.update(content, layout=relayout)
