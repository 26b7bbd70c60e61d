"""The base of the permission and question dialogs: what is asked, by whom, and whether it is
still open (the request may be answered elsewhere while the dialog is up)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
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


def values_lines(
    values: Sequence[str], indent: str, style: str = "", *, tally: bool = False
) -> list[Part]:
    """Several such values: on one line, comma-separated, when each is one line; else one
    under the other (`tally`: each of several lines says how many, as `value_lines`)."""
    if all(len(literal_lines(v)) <= 1 for v in values):
        return [(", ".join(literal(v) for v in values), style)]
    parts: list[Part] = []
    for n, v in enumerate(values):
        if n:
            parts += ["\n", (indent, "$foreground-muted")]
        parts += value_lines(v, indent, style, tally=tally)
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


SCROLL_EXTRA = (("↑ ↓ pgup pgdn home end", "Scroll a request longer than the dialog"),)
"""The help's line for the scroll keys (`RequestDialog.BINDINGS`, one line for the six)."""
PAGE_EXTRA = (("pgup pgdn", "Scroll a request longer than the dialog"),)
"""The same where a focused list takes the arrows, home and end (the question dialog)."""


DRAFT = "request"
"""How the drafts of a request's dialog are keyed (`draft_key`): `request SERVER ID FIELD`."""


def draft_key(server: str, request_id: str, name: str) -> str:
    return f"{DRAFT} {server} {request_id} {name}"


def draft_request(key: str) -> str | None:
    """The request id a draft of a request's dialog is kept for (None: another draft)."""
    words = key.split(" ", 3)
    return words[2] if len(words) == 4 and words[0] == DRAFT else None


class DialogBody(VerticalScroll):
    """A dialog's scrolling body: tells its dialog when its size changes (what is below its
    view changes with it)."""

    def on_resize(self) -> None:
        screen = self.screen
        if isinstance(screen, RequestDialog):
            self.call_after_refresh(screen.say_more)


class GoneBanner(Static):
    """The line that says the request closed meanwhile: once laid out, its dialog fits its
    body to the room left (the lines it takes come from the body, not from the buttons)."""

    def on_resize(self) -> None:
        screen = self.screen
        if isinstance(screen, RequestDialog):
            self.call_after_refresh(screen.fit_body)


class RequestDialog(ModalScreen[R]):
    """A dialog about one open request of one row; warns when the request closes meanwhile.

    A request longer than the screen scrolls in the dialog's body: the arrow, page, home and
    end keys scroll it wherever the focus is (the focus starts on a button, which takes none
    of them; a focused list or text field keeps its own), and a line under the body says how
    many lines are below (`more_sign`), so what is out of view is never taken for absent."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(key, f"scroll_body('{key}')", "Scroll the request", show=False)
        for key in ("down", "up", "pagedown", "pageup", "home", "end")
    ]
    SCROLL_SAID: ClassVar[tuple[str, str]] = ("↓ or pgdn", "↑ or pgup")
    """The keys the line under the body names: to see what is below, to go back."""

    def __init__(
        self,
        row: SessionRow,
        pending: Pending,
        dashboard: Dashboard | None = None,
        drafts: dict[str, str] | None = None,
    ) -> None:
        """`dashboard`: whose Views say whether the request is still open (None: none to
        watch); `drafts`: what was written in such dialogs and not sent, by request and field
        (kept by the opener across dialogs, `draft_key`; None: none kept)."""
        super().__init__()
        self.dashboard = dashboard
        self.row = row
        self.pending = pending
        self.session_key: Key = row.key
        """The session this dialog is about (the user is looking at it)."""
        self.drafts = drafts

    def draft_key(self, name: str) -> str:
        """Where the text written in field `name` of this request's dialog is kept."""
        return draft_key(self.row.server, self.pending.id, name)

    def draft(self, name: str) -> str:
        """What was written in field `name` last time and not sent ("": nothing)."""
        return (self.drafts or {}).get(self.draft_key(name), "")

    def keep_drafts(self, written: dict[str, str]) -> bool:
        """What was written in each field is kept for this request's next dialog (a blank one
        forgotten): closed unanswered, or sent (until the server accepts it: `Responder`
        drops it then, and a send that fails keeps it); whether anything was kept."""
        if self.drafts is None:
            return False
        for name, text in written.items():
            if text.strip():
                self.drafts[self.draft_key(name)] = text
            else:
                self.drafts.pop(self.draft_key(name), None)
        return any(text.strip() for text in written.values())

    def gone_banner(self) -> Static:
        banner = GoneBanner(
            Content.styled(
                "This request is no longer open (answered elsewhere, or the run ended). "
                "Sending now will fail; esc closes.",
                "$state-error bold",
            ),
            classes="dialog-gone",
        )
        banner.display = False
        return banner

    def more_sign(self) -> Static:
        """The line under the body that says what is out of view (shown only when the body
        scrolls)."""
        sign = Static("", classes="dialog-more")
        sign.display = False
        return sign

    def on_mount(self) -> None:
        if self.dashboard is not None:
            self.dashboard.view_changed.subscribe(self, self._on_view)
            self._on_view(self.dashboard.view)
        body = self.query_one(".dialog-body")
        for name in ("scroll_y", "virtual_size"):
            self.watch(body, name, self.say_more, init=False)

    def action_scroll_body(self, key: str) -> None:
        body = self.query_one(".dialog-body", VerticalScroll)
        scroll = {
            "down": body.scroll_down,
            "up": body.scroll_up,
            "pagedown": body.scroll_page_down,
            "pageup": body.scroll_page_up,
            "home": body.scroll_home,
            "end": body.scroll_end,
        }[key]
        scroll(animate=False)

    def say_more(self) -> None:
        """How many of the body's lines are below its view, or that its end is in view.
        Once shown, the line stays while the body scrolls (hiding it would give the body its
        line back and could end the scrolling that showed it). Closed meanwhile (it runs after
        a refresh): nothing to say."""
        body = self.query_one_optional(".dialog-body", VerticalScroll)
        sign = self.query_one_optional(".dialog-more", Static)
        if body is None or sign is None:
            return
        if body.max_scroll_y <= 0:
            sign.display = False
            return
        below = int(body.max_scroll_y - body.scroll_y)
        if below > 0:
            lines = f"{below:,} more line{'s' if below != 1 else ''}"
            said = f"▼ {lines} below · {self.SCROLL_SAID[0]} scrolls"
            sign.update(Content.styled(said, "$warning bold"))
        else:
            said = f"▲ the end of the request · {self.SCROLL_SAID[1]} scrolls back"
            sign.update(Content.styled(said, "$foreground-muted"))
        if not sign.display:
            sign.display = True
            self.call_after_refresh(self.fit_body)

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit_body)

    def fit_body(self) -> None:
        """Give the scrolling body what the screen leaves after the fixed parts (the message box,
        the buttons), so a long request (a big diff) scrolls and the buttons stay in view.
        Closed meanwhile (it runs after a refresh): nothing to fit."""
        dialog = self.query_one_optional(".dialog")
        body = self.query_one_optional(".dialog-body")
        if dialog is None or body is None:
            return
        chrome = dialog.styles.gutter.height + sum(
            child.outer_size.height + child.styles.margin.height
            for child in dialog.children
            if child is not body and child.display
        )
        room = int(self.size.height * 0.95) - chrome
        body.styles.max_height = max(3, room)
        self.call_after_refresh(self.say_more)

    def _on_view(self, view: View | None) -> None:
        banner = self.query_one(".dialog-gone", Static)
        gone = not still_open(view, self.pending)
        if banner.display != gone:
            banner.display = gone
            if not gone:  # (shown, it fits the body once laid out: GoneBanner)
                self.call_after_refresh(self.fit_body)  # its lines back to the body
