"""The base of the permission and question dialogs: what is asked, by whom, and whether it is
still open (the request may be answered elsewhere while the dialog is up)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.app.format import literal, literal_lines
from tui.core.view import Pending, SessionRow, View

from ..dashboard import Dashboard

Key = tuple[str, str]
R = TypeVar("R")
Part = str | tuple[str, str]


def label(name: str, width: int = 12) -> tuple[str, str]:
    """A field name, padded, muted."""
    return (f"{name:<{width - 1}} ", "$foreground-muted")


def value_lines(text: str, indent: str, style: str = "", *, tally: bool = False) -> list[Part]:
    """A value a person decides on (a command, a pattern, a question), every line of it shown
    (controls still neutralised: fmt.literal_lines), the lines after the first under it at
    `indent`; `tally`: a value of several lines says how many under its label (`30 lines`),
    so that one that scrolls out of the dialog is not read as its first screen."""
    lines = literal_lines(text) or [""]
    parts: list[Part] = [(lines[0], style)]
    for n, line in enumerate(lines[1:]):
        # (the indent a span of its own: run into unstyled text, a line's leading spaces are
        # dropped when the dialog wraps it)
        said = f"{len(lines):,} lines" if tally and n == 0 else ""
        if said and len(said) < len(indent):
            parts += ["\n", (said.ljust(len(indent)), "$warning"), (line, style)]
        else:
            parts += ["\n", (indent, "$foreground-muted"), (line, style)]
    return parts


def values_lines(values: Sequence[str], indent: str, style: str = "") -> list[Part]:
    """Several such values: on one line, comma-separated, when each is one line; else one
    under the other."""
    if all(len(literal_lines(v)) <= 1 for v in values):
        return [(", ".join(literal(v) for v in values), style)]
    parts: list[Part] = []
    for n, v in enumerate(values):
        if n:
            parts += ["\n", (indent, "$foreground-muted")]
        parts += value_lines(v, indent, style)
    return parts


BLOCK_LINES = 12
"""Lines of a multi-line value (a diff) shown; the rest is counted."""


def block(text: str, indent: str) -> list[Part]:
    """A multi-line value (a diff): each line indented and ended, `+`/`-` lines coloured, at most
    BLOCK_LINES of them (the rest counted)."""
    lines = text.rstrip("\n").split("\n")
    parts: list[Part] = []
    for line in lines[:BLOCK_LINES]:
        style = (
            "$text-success"
            if line.startswith("+")
            else "$text-error"
            if line.startswith("-")
            else ""
        )
        parts += [indent, (literal(line), style), "\n"]
    if len(lines) > BLOCK_LINES:
        parts += [indent, (f"… {len(lines) - BLOCK_LINES} more lines", "$foreground-muted"), "\n"]
    return parts


def multiline(value: Any) -> bool:
    """Whether a metadata value is a block of text (a diff) rather than a one-line value."""
    return isinstance(value, str) and "\n" in value.strip("\n")


def asked_by(row: SessionRow, pending: Pending) -> Content:
    """`Title  ses_…` and, when a sub-agent asks, which one."""
    parts: list[Part] = [
        (literal(row.title) or row.id, "bold"),
        ("  " + literal(row.id), "$foreground-muted"),
    ]
    if pending.session_id and pending.session_id != row.id:
        parts += ["\n", ("asked by sub-agent ", "$foreground-muted"), literal(pending.session_id)]
    return Content.assemble(*parts)


def still_open(view: View | None, pending: Pending) -> bool:
    """Whether some row of the View still lists this request."""
    if view is None:
        return True
    return any(p.id == pending.id for r in view.rows.values() for p in r.pending)


class RequestDialog(ModalScreen[R]):
    """A dialog about one open request of one row; warns when the request closes meanwhile."""

    def __init__(
        self, row: SessionRow, pending: Pending, dashboard: Dashboard | None = None
    ) -> None:
        """`dashboard`: whose Views say whether the request is still open (None: none to
        watch)."""
        super().__init__()
        self.dashboard = dashboard
        self.row = row
        self.pending = pending
        self.session_key: Key = row.key
        """The session this dialog is about (the user is looking at it)."""

    def gone_banner(self) -> Static:
        banner = Static(
            Content.styled(
                "This request is no longer open (answered elsewhere, or the run ended). "
                "Sending now will fail; esc closes.",
                "$state-error bold",
            ),
            classes="dialog-gone",
        )
        banner.display = False
        return banner

    def on_mount(self) -> None:
        if self.dashboard is not None:
            self.dashboard.view_changed.subscribe(self, self._on_view)
            self._on_view(self.dashboard.view)

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit_body)

    def fit_body(self) -> None:
        """Give the scrolling body what the screen leaves after the fixed parts (the message box,
        the buttons), so a long request (a big diff) scrolls and the buttons stay in view."""
        dialog = self.query_one(".dialog")
        body = self.query_one(".dialog-body")
        chrome = dialog.styles.gutter.height + sum(
            child.outer_size.height + child.styles.margin.height
            for child in dialog.children
            if child is not body and child.display
        )
        room = int(self.size.height * 0.95) - chrome
        body.styles.max_height = max(3, room)

    def _on_view(self, view: View | None) -> None:
        self.query_one(".dialog-gone", Static).display = not still_open(view, self.pending)
