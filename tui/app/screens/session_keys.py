"""The keys that take the user somewhere from a session, shared by the screens that show one
(the table, the detail view, the conversation)."""

from __future__ import annotations

from textual.binding import Binding

ATTACH = Binding(
    "A",
    "app.attach",
    "Attach",
    tooltip="Attach OpenCode's TUI to the session (quit it to come back)",
)
WEB = Binding("w", "app.web", "Open in the web UI (and copy its address)", show=False)


def messages(*, show: bool) -> Binding:
    """`m`: the session's conversation (`show`: in the footer)."""
    return Binding(
        "m",
        "app.conversation",
        "Messages",
        tooltip="The conversation: prompts, replies, tool calls, errors (live)",
        show=show,
    )
