"""The counts line (sessions per state) and the active filter line."""

from __future__ import annotations

from textual.content import Content

from tui.core.view import View

from .. import format as fmt
from .live_static import LiveStatic

#: The counts, one per state and the stale flag: (name, glyph, style), from the presentation table.
COUNTED = (
    *((state, look.glyph, f"${look.variable}") for state, look in fmt.STATE_LOOK.items()),
    ("stale", fmt.STALE_LOOK.glyph, f"${fmt.STALE_LOOK.variable}"),
)
LOUD = ("input", "stale")  # counts that need someone: reversed when non-zero


def counts_line(view: View | None) -> Content:
    """`● busy 3  ↻ retry 0  ? input 2  ○ idle 5  ◌ unknown 1  ⚠ stale 1  12 total`."""
    counts = view.counts() if view is not None else {}
    parts: list[str | tuple[str, str]] = []
    for name, glyph, style in COUNTED:
        n = counts.get(name, 0)
        if not n:
            style = "$foreground-muted"
        elif name in LOUD:
            style = f"{style} bold reverse"
        parts += [(f"{glyph} {name} {n}", style), "  "]
    total = len(view.rows) if view is not None else 0
    parts.append((f"{total} total", "$foreground-muted"))
    return Content.assemble(*parts)


class Summary(LiveStatic):
    """Sessions per state, across every server."""

    DEFAULT_CSS = """
    Summary {
        height: auto;
        padding: 0 1;
    }
    """

    def show(self, view: View | None) -> None:
        self.show_content(counts_line(view))


class FilterStatus(LiveStatic):
    """What the table is filtered by, and how many rows remain; hidden when nothing is."""

    DEFAULT_CSS = """
    FilterStatus {
        height: auto;
        padding: 0 1;
        display: none;
    }
    """

    def show(self, state: str, text: str, shown: int, total: int) -> None:
        active = state != "all" or bool(text)
        self.display = active
        if not active:
            return
        parts: list[str | tuple[str, str]] = [("filter ", "$foreground-muted")]
        if state != "all":
            parts += [("state=", "$foreground-muted"), (state, "bold")]
        if text:
            parts += ["  " if state != "all" else "", ("text=", "$foreground-muted"),
                      (repr(fmt.literal(text)), "bold")]
        if text and state != "all":
            hint = "esc clears the text, 1 shows every state"
        elif text:
            hint = "esc clears"
        else:
            hint = "1 or esc shows every state"
        parts += [("  ", ""), (f"{shown} of {total} shown", ""),
                  (f"  ({hint})", "$foreground-muted")]
        self.show_content(Content.assemble(*parts))
