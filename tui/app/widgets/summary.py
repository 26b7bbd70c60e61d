"""The counts line (sessions per state) and the active filter line."""

from __future__ import annotations

from textual.content import Content

from tui.core.view import View, waiting_requests

from .. import format as fmt
from .live_static import LiveStatic

#: The counts, one per state and the stale flag: (name, glyph, style), from the presentation table.
COUNTED = (
    *((state, look.glyph, f"${look.variable}") for state, look in fmt.STATE_LOOK.items()),
    ("stale", fmt.STALE_LOOK.glyph, f"${fmt.STALE_LOOK.variable}"),
)
LOUD = ("input", "stale")  # counts that need someone: reversed when non-zero


def counts_line(view: View | None, width: int | None = None) -> Content:
    """`● busy 3  ↻ retry 0  ? input 2  idle 5 (✓ 3 ✗ 1 ○ 1)  ◌ unknown 1  ⚠ stale 1  12 total`:
    sessions per state, but `input` counts the requests waiting (a sub-agent's once, though its
    parent's row shows it too: `? input 1 (2 rows)`); the idle count split by reason, each with
    its own glyph (○ is idle with nothing run). In `width` cells: the split, then the rows in
    input, then the total, then the words are left out when the line would not fit
    (`● 3  ↻ 0  ? 2  idle 5  ◌ 1  ⚠ 1`: the legend says the glyphs)."""
    counts = view.counts() if view is not None else {}
    rows_waiting = counts.get("input", 0)
    if view is not None and rows_waiting:  # the requests, each once (not the rows showing it)
        counts["input"] = waiting_requests(view.rows.values())
    split = _idle_reasons(view) if view is not None and counts.get("idle") else []
    total = len(view.rows) if view is not None else 0
    # rows a first snapshot has not read the last message of yet: not (yet) unknown
    loading = (
        sum(r.settling == "loading" and r.state == "unknown" for r in view.rows.values())
        if view is not None and counts.get("unknown")
        else 0
    )
    if loading:
        counts = {**counts, "unknown": counts["unknown"] - loading}
    for line in (
        _counts_line(counts, split, total, loading=loading, rows_waiting=rows_waiting),
        _counts_line(counts, [], total, loading=loading, rows_waiting=rows_waiting),
        _counts_line(counts, [], total, loading=loading),
        _counts_line(counts, [], None, loading=loading),
        _counts_line(counts, [], None, words=False, loading=loading),
    ):
        if width is None or line.cell_length <= width:
            return line
    return line


def _counts_line(
    counts: dict[str, int],
    split: list[str | tuple[str, str]],
    total: int | None,
    words: bool = True,
    loading: int = 0,
    rows_waiting: int = 0,
) -> Content:
    """`rows_waiting`: the rows in input, said beside the requests when they differ (a
    sub-agent's request shows on its parent's row too), so that the rows add up to the total;
    0: not said."""
    parts: list[str | tuple[str, str]] = []
    for name, glyph, style in COUNTED:
        n = counts.get(name, 0)
        if not n:
            style = "$foreground-muted"
        elif name in LOUD:
            style = f"{style} bold reverse"
        if name == "idle" and n:  # (○ is idle with nothing run: the word says every idle)
            parts += [(f"idle {n}", style), *split, "  "]
            continue
        if name == "input" and words and rows_waiting and rows_waiting != n:
            rows = f"{rows_waiting} row{'s' if rows_waiting != 1 else ''}"
            parts += [(f"{glyph} {name} {n}", style), f" ({rows})", "  "]
            continue
        parts += [(f"{glyph} {name} {n}" if words else f"{glyph} {n}", style), "  "]
    if loading:
        parts += [(f"… loading {loading}" if words else f"… {loading}", "$foreground-muted"), "  "]
    if total is not None:
        parts.append((f"{total} total", "$foreground-muted"))
    return Content.assemble(*parts).rstrip()


def _idle_reasons(view: View) -> list[str | tuple[str, str]]:
    """` (✓ 3 ✗ 1 ○ 1)`: the idle rows by reason, in the legend's order and colours."""
    by: dict[str | None, int] = {}
    for row in view.rows.values():
        if row.state == "idle":
            by[row.reason] = by.get(row.reason, 0) + 1
    looks = [(reason, fmt.REASON_LOOK[reason]) for reason in ("completed", "aborted", "error")]
    parts: list[str | tuple[str, str]] = [" ("]
    for reason, look in [*looks, (None, fmt.STATE_LOOK["idle"])]:
        n = by.get(reason, 0)
        if n:
            parts += [(f"{look.glyph} {n}", f"${look.variable}"), " "]
    parts[-1] = ")"
    return parts


class Summary(LiveStatic):
    """Sessions per state, across every server."""

    DEFAULT_CSS = """
    Summary {
        height: auto;
        padding: 0 1;
    }
    """

    _view: View | None = None
    _counted: tuple[View | None, int] | None = None

    def show(self, view: View | None) -> None:
        """Count the View's rows by state (the same View at the same width: counted already;
        the pull of every second shows the View again)."""
        self._view = view
        width = self.content_size.width
        if (view, width) == self._counted and view is not None:
            return
        self._counted = (view, width)
        self.show_content(counts_line(view, width or None))

    def on_resize(self) -> None:
        self._counted = None
        self.show(self._view)
        # a layout asked for while the screen lays itself out is lost: ask again after it
        self.call_after_refresh(self.refresh, layout=True)


class FilterStatus(LiveStatic):
    """What the table is filtered by, and how many rows remain; hidden when nothing is."""

    DEFAULT_CSS = """
    FilterStatus {
        height: auto;
        padding: 0 1;
        display: none;
    }
    """

    def show(
        self,
        state: str,
        text: str,
        shown: int,
        total: int,
        kind: str = "text",
        *,
        folded: int = 0,
        fold_after: float = 0.0,
    ) -> None:
        """`kind`: how the text was read (format.text_match): said when not as text; `folded`:
        idle rows older than `fold_after` seconds the table leaves out (ageing)."""
        active = state != "all" or bool(text)
        self.display = active or bool(folded)
        if not active:
            if folded:
                self.show_content(
                    Content.assemble(
                        (f"{folded:,} idle for over {fmt.coarse(fold_after)} folded", ""),
                        ("  (o shows them)", "$foreground-muted"),
                    )
                )
            return
        parts: list[str | tuple[str, str]] = [("filter ", "$foreground-muted")]
        if state == "active":
            parts += [("needs you or runs", "bold")]
        elif state != "all":
            parts += [("state=", "$foreground-muted"), (state, "bold")]
        if text:
            parts += [
                "  " if state != "all" else "",
                ("text=", "$foreground-muted"),
                (repr(fmt.literal(text)), "bold"),
            ]
            if kind == "regex":
                parts += [(" as a regular expression", "$foreground-muted")]
            elif kind == "invalid":
                parts += [(" (in no row, and not a regular expression)", "$state-error")]
        if text and state != "all":
            hint = "esc clears the text, 1 shows every state"
        elif text:
            hint = "esc clears"
        else:
            hint = "1 or esc shows every state"
        parts += [
            ("  ", ""),
            (f"{shown} of {total} shown", ""),
            (f"  ({hint})", "$foreground-muted"),
        ]
        self.show_content(Content.assemble(*parts))
