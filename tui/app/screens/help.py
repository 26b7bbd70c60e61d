"""The help screen: every key (read from the bindings themselves) and the glyph legend."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from .. import format as fmt
from .session_keys import ACTIONS

NAVIGATION = (
    ("↑ ↓ pgup pgdn", "Move the cursor"),
    ("click", "Select a row; click it again for its details"),
    ("click a header", "Sort by that column; again to reverse"),
    ("click a server", "Open the servers view (i)"),
    ("wheel", "Scroll"),
    ("tab", "Move between the table, the filter box and the sub-agents list"),
)
DETAIL_EXTRA = (("tab, enter", "Open a sub-agent from the Sub-agents list"),)


def _legend_line(look: fmt.Look, style: str = "") -> tuple[str, str, str]:
    return (f"{look.glyph} {look.word}", style or f"${look.variable}", look.meaning)


#: What each glyph means: the presentation table's states and reasons, in the order a user
#: meets them, then the stale flag and the unread mark.
LEGEND = (
    *(_legend_line(fmt.STATE_LOOK[s]) for s in ("busy", "retry", "input")),
    *(_legend_line(fmt.REASON_LOOK[r]) for r in ("completed", "aborted", "error")),
    *(_legend_line(fmt.STATE_LOOK[s]) for s in ("idle", "unknown")),
    _legend_line(fmt.STALE_LOOK, f"${fmt.STALE_LOOK.variable} bold reverse"),
    ("• title", "$accent bold", "unread: the row changed while you looked elsewhere"),
)


def binding_rows(
    bindings: Iterable[BindingType], off: str | None = None, actions: frozenset[str] = ACTIONS
) -> list[tuple[str, str]]:
    """(keys, description) for each Binding with a description (its tooltip when it has one:
    the longer text the footer has no room for); `off`: why `actions` (by default the actions
    on a session) are off, said beside each of them (their `off` stand-ins are not listed)."""
    rows = []
    for b in bindings:
        if isinstance(b, Binding) and b.description and not b.system:
            if b.action.startswith("app.off("):
                continue
            keys = ", ".join(_key(k) for k in b.key.split(","))
            said = b.tooltip or b.description
            if off and b.action.removeprefix("app.") in actions:
                said = f"{said} ({off})"
            rows.append((keys, said))
    return rows


def _key(key: str) -> str:
    return {
        "slash": "/",
        "question_mark": "?",
        "space": "space",
        "escape": "esc",
        "ctrl+p": "ctrl+p",
        "ctrl+q": "ctrl+q",
    }.get(key, key)


def help_content(groups: Iterable[tuple[str, list[tuple[str, str]]]], columns: int = 0) -> Content:
    """The keys, group by group, then the legend; a text longer than the `columns` left
    beside its key is wrapped under itself (0: not wrapped)."""
    parts: list[str | tuple[str, str]] = []
    groups = list(groups)
    width = min(24, max((len(k) + 2 for _t, rows in groups for k, _d in rows), default=16))
    for title, rows in groups:
        parts += [(title, "bold $primary"), "\n"]
        for keys, description in rows:
            lead = f"  {keys:<{width}}"
            parts += [(lead, "bold"), _hanging(description, columns, len(lead)), "\n"]
        parts.append("\n")
    parts += [("What the states mean", "bold $primary"), "\n"]
    for label, style, meaning in LEGEND:
        lead = " " * (12 - len(label))
        parts += [
            "  ",
            (label, style),
            lead,
            _hanging(meaning, columns, 2 + len(label) + len(lead)),
        ]
        parts.append("\n")
    return Content.assemble(*parts).rstrip()


def _hanging(text: str, columns: int, indent: int) -> str:
    """`text` wrapped to the `columns - indent` beside its lead, the lines after the first
    indented under the first (as it is, with no room to speak of or no need). By characters,
    as textwrap counts: the help's texts are ours, one cell a character."""
    room = columns - indent
    if columns <= 0 or room < 20 or len(text) <= room:
        return text
    return ("\n" + " " * indent).join(textwrap.wrap(text, room, break_on_hyphens=False))


class HelpScreen(ModalScreen[None]):
    """Every key binding, grouped by screen, and what each glyph means."""

    BINDINGS = [
        Binding("escape,question_mark,q", "close", "Close help"),
    ]

    def __init__(self, groups: list[tuple[str, list[tuple[str, str]]]]) -> None:
        super().__init__()
        self.groups = groups

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body") as body:
            body.border_title = "ocwatch keys"
            body.border_subtitle = "esc closes"
            yield Static(help_content(self.groups), id="help-text")

    def on_resize(self) -> None:
        """Wrap the texts to the width there is, each under itself (the Static's own wrap
        would start its next line under the key)."""
        text = self.query_one("#help-text", Static)

        def fit() -> None:
            text.update(help_content(self.groups, text.content_region.width))

        self.call_after_refresh(fit)

    def action_close(self) -> None:
        """Close the help screen."""
        self.dismiss()
