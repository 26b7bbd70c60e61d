"""The permission dialog: what the agent wants to run, and once / always / reject."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Button, Input, Static

from tui.app.format import literal
from tui.core.view import Pending

from .dialog import (
    DialogBody,
    Part,
    RequestDialog,
    asked_by,
    block,
    label,
    multiline,
    value_lines,
    values_lines,
)

#: where a field's value starts (label's width): a value's next lines are indented under it
INDENT = " " * 12


@dataclass(frozen=True)
class PermissionReply:
    """The user's reply: `once`, `always` or `reject`, and a message (sent with reject)."""

    reply: str
    message: str | None = None


def _block(name: str, text: str) -> list[Part]:
    """A multi-line value (a diff) under its name, indented, at most BLOCK_LINES lines."""
    return ["\n", label(name), "\n", *block(text, "  ")]


def permission_fields(pending: Pending) -> Content:
    """Tool, command, other metadata, patterns and the `always` patterns (tolerant of missing
    fields). Only a real command is shown as one; a diff is shown as a block."""
    req = pending.permission
    metadata: Mapping[str, Any] = req.metadata if req is not None else {}
    parts: list[Part] = [
        label("tool"),
        (literal((req.permission if req is not None else "") or "?"), "bold"),
    ]
    command = metadata.get("command") or metadata.get("cmd")
    if command:  # every line of it: what will run, as it will run
        parts += [
            "\n",
            label("command"),
            *value_lines(str(command), INDENT, "bold", tally=True),
        ]
    blocks: list[Part] = []
    for key, value in metadata.items():
        if (
            key in ("command", "cmd")
            or isinstance(value, (dict, list, tuple))
            or value in (None, "")
        ):
            continue
        if multiline(value):
            blocks += _block(literal(key), value)
        else:
            parts += ["\n", label(literal(key)), literal(str(value))]
    patterns = req.patterns if req is not None else ()
    if patterns:
        parts += ["\n", label("patterns"), *values_lines(patterns, INDENT, tally=True)]
    always = req.always if req is not None else ()
    if always:
        parts += [
            "\n",
            label("always"),
            *values_lines(always, INDENT, tally=True),
            ("  (what “always” allows from now on)", "$foreground-muted"),
        ]
    return Content.assemble(*parts, *blocks).rstrip()


def consequence(reply: str, pending: Pending) -> Content:
    """What a broad answer does, said before it is confirmed, then the keys."""
    req = pending.permission
    parts: list[Part]
    if reply == "always":
        parts = [("Allow always: ", "bold"), "the agent runs this now and, from now on, "]
        if req is not None and req.always:
            parts += [
                "whatever matches ",
                (", ".join(literal(p) for p in req.always), "bold"),
                ", without asking again.",
            ]
        else:
            parts += ["the same, without asking again."]
    else:
        parts = [
            ("Reject: ", "bold"),
            "the tool is refused and the run stops. (",
            ("m", "bold"),
            " rejects with a message instead: the run goes on.)",
        ]
    parts.append(("\nenter confirms · esc goes back", "$foreground-muted"))
    return Content.assemble(*parts)


class PermissionScreen(RequestDialog[PermissionReply | None]):
    """Once (`o`); always (`a`) and reject (`r`) each need a second step (enter on Confirm),
    so no repeated or neighbouring keystroke from the table answers (`r` opens this dialog,
    `a` aborts there): `r r` or `r a` only shows what the answer would do. Reject with a
    message (`m`); esc goes back, then cancels.

    The message field stays hidden until asked for (`m`): a text field in view invites typing,
    and with the focus on the buttons the first `o` of a message would allow the tool. Once the
    field is open, every key types into it; enter rejects with the message, esc closes the
    field again."""

    BINDINGS = [
        Binding("o", "reply('once')", "Allow once"),
        Binding("a", "arm('always')", "Allow always… (then enter)"),
        Binding("r", "arm('reject')", "Reject… (then enter; the run stops)"),
        # priority: run as the key is read, so that the keys read with it reach the field
        Binding("m", "write_message", "Reject with a message (the run goes on)", priority=True),
        Binding("escape", "cancel", "Go back (or cancel)"),
    ]

    armed: str | None = None
    """The broad answer shown and waiting for its confirmation (`always`, `reject`), if any."""

    def compose(self) -> ComposeResult:
        with Vertical(id="permission", classes="dialog") as box:
            box.border_title = "Permission asked"
            box.border_subtitle = "o once · a always… · r reject… · m message · esc cancel"
            yield self.gone_banner()
            with DialogBody(classes="dialog-body"):
                yield Static(asked_by(self.row, self.pending), classes="dialog-who")
                yield Static(permission_fields(self.pending), id="permission-fields")
            yield self.more_sign()
            yield Static(
                Content.assemble(
                    ("Message", "bold"),
                    (
                        "  the server hands it to the agent as feedback and the run goes on. "
                        "enter rejects with it; esc closes this field.",
                        "$foreground-muted",
                    ),
                ),
                classes="dialog-note message",
            )
            yield Input(
                placeholder="e.g. use rsync instead", id="permission-message", classes="message"
            )
            yield Static("", id="permission-confirm", classes="dialog-note confirm")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Once (o)", variant="success", id="once", classes="answer")
                yield Button("Always… (a)", variant="primary", id="always", classes="answer")
                yield Button("Reject… (r)", variant="error", id="reject", classes="answer")
                yield Button("Message… (m)", variant="error", id="message", classes="answer")
                yield Button("Cancel (esc)", id="cancel", classes="answer")
                yield Button("Confirm (enter)", variant="warning", id="confirm", classes="confirm")
                yield Button("Back (esc)", id="back", classes="confirm")

    def on_mount(self) -> None:
        for part in self.query(".message, .confirm"):
            part.display = False
        self.message_box.value = self.draft("message")  # (shown on m)
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
        return not (typing and action in ("reply", "arm", "write_message"))

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
            self._close()
        elif event.button.id == "back":
            self.action_cancel()
        elif event.button.id == "message":
            self.action_write_message()
        elif event.button.id == "once":
            self.action_reply("once")
        elif event.button.id == "confirm" and self.armed is not None:
            self.action_reply(self.armed)
        elif event.button.id == "reject" and self.message_box.display:
            self.action_reply("reject")  # with the message written: that is the second step
        elif event.button.id in ("always", "reject"):
            self.action_arm(event.button.id)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.message:
            self.action_reply("reject")
        else:
            self.notify(
                "Type the message the agent gets with the rejection, or esc to close the field.",
                severity="warning",
                timeout=4,
            )

    def action_write_message(self) -> None:
        """Open the message field (a rejection with feedback: the run goes on)."""
        self._disarm()
        self._message_open(True)
        self.set_focus(self.message_box)  # at once: the keys typed after `m` are the message

    def action_arm(self, reply: str) -> None:
        """Show what `always` or `reject` does and move the focus to Confirm: the answer goes
        only with enter there (or a click), a different key from the one that armed it."""
        self.armed = reply
        self.query_one("#permission-confirm", Static).update(consequence(reply, self.pending))
        confirm = self.query_one("#confirm", Button)
        confirm.label = "Allow always (enter)" if reply == "always" else "Reject (enter)"
        confirm.variant = "primary" if reply == "always" else "error"
        for part in self.query(".answer"):
            part.display = False
        for part in self.query(".confirm"):
            part.display = True
        confirm.focus()
        self.call_after_refresh(self.fit_body)

    def _disarm(self) -> None:
        self.armed = None
        for part in self.query(".confirm"):
            part.display = False
        for part in self.query(".answer"):
            part.display = True

    def action_reply(self, reply: str) -> None:
        """Send the reply (the message goes only with reject: kept until the server accepts
        it, so that a send that fails loses nothing)."""
        message = self.message if reply == "reject" else None
        if message:
            self.keep_drafts({"message": self.message_box.value})
        self.dismiss(PermissionReply(reply, message))

    def _close(self) -> None:
        """Close without replying; a message written is kept for this request's next dialog."""
        box = self.message_box
        if self.keep_drafts({"message": box.value}) and box.display:  # (else said on its esc)
            self.app.notify("Message kept: m shows it again in this request's dialog.", timeout=3)
        self.dismiss(None)

    def action_cancel(self) -> None:
        """Go back from a broad answer shown for confirmation, or close the message field if
        it is open, else close without replying."""
        if self.armed is not None:
            self._disarm()
            self.query_one("#cancel", Button).focus()
            self.call_after_refresh(self.fit_body)
            return
        box = self.message_box
        if box.display:
            self._message_open(False)  # (what is written stays: m shows it again)
            self.query_one("#cancel", Button).focus()
            if box.value.strip():
                self.notify("Message kept: m shows it again.", timeout=3)
            return
        self._close()
