"""The prompt dialog (`p`): write a prompt of any number of lines, then send it on confirm.

enter writes a new line (a prompt is often several); ctrl+s sends; esc cancels. Nothing is
sent until ctrl+s (or the Send button): a stray key from the table cannot send anything.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea

from tui.app.format import literal
from tui.core.view import SessionRow

Key = tuple[str, str]


class PromptScreen(ModalScreen[str | None]):
    """A multi-line prompt for a session; dismissed with its text (None: cancelled)."""

    BINDINGS = [
        Binding("ctrl+s", "send", "Send", priority=True),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, row: SessionRow) -> None:
        super().__init__()
        self.row = row
        self.session_key: Key = row.key
        """The session this dialog is about (the user is looking at it)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt", classes="dialog") as box:
            box.border_title = "Send a prompt"
            box.border_subtitle = "enter new line · ctrl+s send · esc cancel"
            yield Static(
                Content.assemble(
                    (literal(self.row.title) or self.row.id, "bold"),
                    ("  " + literal(self.row.id), "$foreground-muted"),
                ),
                classes="dialog-who",
            )
            yield TextArea(id="prompt-text", soft_wrap=True, show_line_numbers=False)
            yield Static("", id="prompt-note", classes="dialog-note")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Send (ctrl+s)", variant="primary", id="send")
                yield Button("Cancel (esc)", variant="default", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#prompt-text", TextArea).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "send":
            self.action_send()
        else:
            self.dismiss(None)

    def action_send(self) -> None:
        """Send what is written (an empty prompt is said, not sent)."""
        text = self.query_one("#prompt-text", TextArea).text
        if not text.strip():
            self.query_one("#prompt-note", Static).update(
                Content.styled("Write the prompt first: an empty one is not sent.", "$warning")
            )
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)
