"""A yes/no question before an action that cannot be undone (default: no)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

Key = tuple[str, str]


class ConfirmScreen(ModalScreen[bool]):
    """Ask before acting: `y` confirms; `n`, `esc` and enter on the focused No refuse."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
        Binding("left,right", "toggle_focus", "Switch button", show=False),
    ]

    def __init__(
        self,
        title: str,
        body: Content,
        *,
        yes: str = "Yes",
        no: str = "No",
        session_key: Key | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.yes_label = yes
        self.no_label = no
        self.session_key = session_key
        """The session this dialog is about (the user is looking at it)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm", classes="dialog") as box:
            box.border_title = self.title_text
            box.border_subtitle = "y yes · n / esc no"
            yield Static(self.body, id="confirm-body")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.yes_label} (y)", variant="error", id="yes")
                yield Button(f"{self.no_label} (n)", variant="default", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)

    def action_toggle_focus(self) -> None:
        """Move the focus to the other button."""
        target = "#yes" if self.focused is not None and self.focused.id == "no" else "#no"
        self.query_one(target, Button).focus()
