"""The prompt dialog (`p`): write a prompt of any number of lines, then send it on confirm; the
new-session dialog (`N`): a project folder and a first prompt.

enter writes a new line (a prompt is often several); ctrl+s sends; esc cancels. Nothing is
sent until ctrl+s (or the Send button): a stray key from the table cannot send anything.
"""

from __future__ import annotations

from typing import NamedTuple, TypeVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static, TextArea

from tui.app.format import literal
from tui.core.view import SessionRow

Key = tuple[str, str]
T = TypeVar("T")


class Writing(ModalScreen[T | None]):
    """A dialog where something is written and sent only on ctrl+s or its button (a stray
    key sends nothing); esc or Cancel dismisses it with None. Subclasses compose their fields
    then `ending()`, and say what is wrong with `note()`."""

    VERB = "Send"

    def __init__(self, drafts: dict[str, str] | None, draft_key: str) -> None:
        """`drafts`: what was written in such dialogs and not sent, by `draft_key` (kept
        across dialogs by their opener; None: none kept)."""
        super().__init__()
        self.drafts = drafts
        self.draft_key = draft_key

    def draft(self) -> str:
        """What was written here last time and not sent ("": nothing)."""
        return (self.drafts or {}).get(self.draft_key, "")

    def _keep_draft(self) -> None:
        """Closed unsent: what was written is kept for the next time, and said (esc threw a
        prompt of several lines away without a word)."""
        if self.drafts is None:
            return
        area = self.query_one_optional("#prompt-text", TextArea)
        if area is not None and area.text.strip():
            self.drafts[self.draft_key] = area.text
            self.app.notify("Draft kept: it is there when this dialog opens again.", timeout=3)
        else:
            self.drafts.pop(self.draft_key, None)

    def sent(self, result: T) -> None:
        """Close with what is sent: what was written stays a draft until the server accepts
        it (`Responder` drops it then; a send that fails loses nothing)."""
        area = self.query_one_optional("#prompt-text", TextArea)
        if self.drafts is not None and area is not None and area.text.strip():
            self.drafts[self.draft_key] = area.text
        self.dismiss(result)

    def text_area(self) -> TextArea:
        """The text to write in, holding the draft kept from last time (its cursor at its end,
        once mounted: `on_mount`)."""
        return TextArea(self.draft(), id="prompt-text", soft_wrap=True, show_line_numbers=False)

    def ending(self) -> ComposeResult:
        """The note line and the two buttons, under the fields."""
        yield Static("", id="prompt-note", classes="dialog-note")
        with Horizontal(classes="dialog-buttons"):
            yield Button(f"{self.VERB} (ctrl+s)", variant="primary", id="send")
            yield Button("Cancel (esc)", variant="default", id="cancel")

    def note(self, text: str) -> None:
        self.query_one("#prompt-note", Static).update(Content.styled(text, "$warning"))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "send":
            self.action_send()
        else:
            self.action_cancel()

    def action_send(self) -> None:
        raise NotImplementedError

    def action_cancel(self) -> None:
        self._keep_draft()
        self.dismiss(None)


class PromptScreen(Writing[str]):
    """A multi-line prompt for a session; dismissed with its text (None: cancelled)."""

    BINDINGS = [
        # not a priority binding: ctrl+s is taken after the keys typed before it reached the
        # text (as a priority binding it ran as the app read it, and a prompt typed and sent
        # in one burst, a paste then ctrl+s, went empty or cut short)
        Binding("ctrl+s", "send", "Send"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, row: SessionRow, drafts: dict[str, str] | None = None) -> None:
        super().__init__(drafts, f"prompt {row.server} {row.id}")
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
            yield self.text_area()
            yield from self.ending()

    def on_mount(self) -> None:
        area = self.query_one("#prompt-text", TextArea)
        area.move_cursor(area.document.end)
        area.focus()

    def action_send(self) -> None:
        """Send what is written (an empty prompt is said, not sent)."""
        text = self.query_one("#prompt-text", TextArea).text
        if not text.strip():
            self.note("Write the prompt first: an empty one is not sent.")
            return
        self.sent(text)


class NewSession(NamedTuple):
    """What the new-session dialog was confirmed with."""

    folder: str
    text: str  # the first prompt ("": none, the session waits idle)


class NewSessionScreen(Writing[NewSession]):
    """A new session: its project folder (the selected row's, to start from) and a first
    prompt of any number of lines; dismissed with both (None: cancelled)."""

    VERB = "Create"

    BINDINGS = [
        Binding("ctrl+s", "send", "Create"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, server: str, folder: str, drafts: dict[str, str] | None = None) -> None:
        super().__init__(drafts, f"new {server}")
        self.server = server
        self.folder = folder

    def compose(self) -> ComposeResult:
        with Vertical(id="new-session", classes="dialog") as box:
            box.border_title = "New session"
            box.border_subtitle = "tab next field · ctrl+s create · esc cancel"
            yield Static(
                Content.assemble(("on ", "$foreground-muted"), (literal(self.server), "bold")),
                classes="dialog-who",
            )
            yield Static(Content.styled("project folder (absolute)", "$foreground-muted"))
            yield Input(self.folder, id="new-folder", placeholder="/path/to/project")
            yield Static(
                Content.styled("first prompt (optional; enter new line)", "$foreground-muted")
            )
            yield self.text_area()
            yield from self.ending()

    def on_mount(self) -> None:
        area = self.query_one("#prompt-text", TextArea)
        area.move_cursor(area.document.end)
        (area if self.folder else self.query_one("#new-folder")).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()  # enter in the folder goes to the prompt, it creates nothing
        self.query_one("#prompt-text", TextArea).focus()

    def action_send(self) -> None:
        """Create it (a folder that is not an absolute path is said, not sent)."""
        folder = self.query_one("#new-folder", Input).value.strip()
        if not folder.startswith("/"):
            self.note(
                "The project folder must be an absolute path (/…): the server runs the agent there."
            )
            self.query_one("#new-folder", Input).focus()
            return
        self.sent(NewSession(folder, self.query_one("#prompt-text", TextArea).text))
