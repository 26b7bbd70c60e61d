"""The permission dialog: what the agent wants to run, and once / always / reject."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Input, Static

from tui.core.models import PermissionRequest
from tui.core.view import Pending

from .dialog import Part, RequestDialog, asked_by, block, label, literal, multiline


@dataclass(frozen=True)
class PermissionReply:
    """The user's reply: `once`, `always` or `reject`, and a message (sent with reject)."""

    reply: str
    message: str | None = None


def _items(value: Any) -> list[str]:
    if value in (None, "", [], ()):
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [literal(v) for v in value]
    return [literal(value)]


def _block(name: str, text: str) -> list[Part]:
    """A multi-line value (a diff) under its name, indented, at most BLOCK_LINES lines."""
    return ["\n", label(name), "\n", *block(text, "  ")]


def permission_fields(pending: Pending) -> Content:
    """Tool, command, other metadata, patterns and the `always` patterns (tolerant of missing
    fields). Only a real command is shown as one; a diff is shown as a block."""
    req = pending.request if isinstance(pending.request, PermissionRequest) else None
    metadata: Mapping[str, Any] = req.metadata if req is not None else {}
    parts: list[Part] = [label("tool"),
                         (literal((req.permission if req is not None else "") or "?"), "bold")]
    command = metadata.get("command") or metadata.get("cmd")
    if command:
        parts += ["\n", label("command"), (literal(command), "bold")]
    blocks: list[Part] = []
    for key, value in metadata.items():
        if key in ("command", "cmd") or isinstance(value, (dict, list, tuple)) or value in (
                None, ""):
            continue
        if multiline(value):
            blocks += _block(literal(key), value)
        else:
            parts += ["\n", label(literal(key)), literal(value)]
    patterns = _items(list(req.patterns) if req is not None else None)
    if patterns:
        parts += ["\n", label("patterns"), ", ".join(literal(p) for p in patterns)]
    always = _items(list(req.always) if req is not None else None)
    if always:
        parts += ["\n", label("always"), ", ".join(literal(p) for p in always),
                  ("  (what “always” allows from now on)", "$foreground-muted")]
    return Content.assemble(*parts, *blocks).rstrip()


class PermissionScreen(RequestDialog[PermissionReply | None]):
    """Once (`o`), always (`a`), reject (`r`), reject with a message (`m`); esc cancels.

    The message field stays hidden until asked for (`m`): a text field in view invites typing,
    and with the focus on the buttons the first `o` or `a` of a message would allow the tool.
    Once the field is open, every key types into it; enter rejects with the message, esc closes
    the field again."""

    BINDINGS = [
        Binding("o", "reply('once')", "Allow once"),
        Binding("a", "reply('always')", "Allow always"),
        Binding("r", "reply('reject')", "Reject (the run stops)"),
        Binding("m", "write_message", "Reject with a message (the run goes on)"),
        Binding("escape", "cancel", "Cancel (or close the message field)"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="permission", classes="dialog") as box:
            box.border_title = "Permission asked"
            box.border_subtitle = "o once · a always · r reject · m message · esc cancel"
            yield self.gone_banner()
            with VerticalScroll(classes="dialog-body"):
                yield Static(asked_by(self.row, self.pending), classes="dialog-who")
                yield Static(permission_fields(self.pending), id="permission-fields")
            yield Static(Content.assemble(
                ("Message", "bold"),
                ("  the server hands it to the agent as feedback and the run goes on. "
                 "enter rejects with it; esc closes this field.", "$foreground-muted"),
            ), classes="dialog-note message")
            yield Input(placeholder="e.g. use rsync instead", id="permission-message",
                        classes="message")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Once (o)", variant="success", id="once")
                yield Button("Always (a)", variant="primary", id="always")
                yield Button("Reject (r)", variant="error", id="reject")
                yield Button("Message… (m)", variant="error", id="message")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        for part in self.query(".message"):
            part.display = False
        # a stray enter or space must not allow anything: the focus starts on Cancel
        self.query_one("#cancel", Button).focus()

    def _message_open(self, open_: bool) -> None:
        """Show or hide the message field. While it is open, writing a message means rejecting:
        Once, Always and Message are disabled (tab goes from the field to Reject)."""
        for part in self.query(".message"):
            part.display = open_
        for name in ("once", "always", "message"):
            self.query_one(f"#{name}", Button).disabled = open_
        self.call_after_refresh(self.fit_body)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While the message field is open, letters are text, never o/a/r/m (the buttons still
        work)."""
        typing = self.is_mounted and self.message_box.display
        return not (typing and action in ("reply", "write_message"))

    @property
    def message_box(self) -> Input:
        return self.query_one("#permission-message", Input)

    @property
    def message(self) -> str | None:
        box = self.message_box
        return box.value.strip() or None if box.display else None

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.disabled:
            return
        if event.button.id == "cancel":
            self.dismiss(None)
        elif event.button.id == "message":
            self.action_write_message()
        elif event.button.id in ("once", "always", "reject"):
            self.action_reply(event.button.id)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.message:
            self.action_reply("reject")
        else:
            self.notify("Type the message the agent gets with the rejection, or esc to close "
                        "the field.", severity="warning", timeout=4)

    def action_write_message(self) -> None:
        """Open the message field (a rejection with feedback: the run goes on)."""
        self._message_open(True)
        self.message_box.focus()

    def action_reply(self, reply: str) -> None:
        """Send the reply (the message goes only with reject)."""
        self.dismiss(PermissionReply(reply, self.message if reply == "reject" else None))

    def action_cancel(self) -> None:
        """Close the message field if it is open, else close without replying."""
        box = self.message_box
        if box.display:
            box.value = ""
            self._message_open(False)
            self.query_one("#cancel", Button).focus()
            return
        self.dismiss(None)
