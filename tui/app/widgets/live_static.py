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

    def show_content(self, content: Content) -> None:
        key = (content.plain, tuple(content.spans))
        before = self._shown
        if key == before:
            return
        self._shown = key
        relayout = before is None or _line_lengths(before[0]) != _line_lengths(key[0])
        if relayout:  # (Static keeps its height for the width it had: measure it again)
            self.clear_cached_dimensions()
        self.update(content, layout=relayout)


def _line_lengths(text: str) -> list[int]:
    return [len(line) for line in text.split("\n")]
