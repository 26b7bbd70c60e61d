"""The keys that take the user somewhere from a session, shared by the screens that show one
(the table, the detail view, the conversation)."""

from __future__ import annotations

from textual.binding import Binding

ACTIONS = frozenset({"respond", "abort", "attach", "prompt", "new_session"})
"""The actions on a session that read-only mode and a replay turn off."""


def action(
    key: str, name: str, description: str, *, show: bool = True, tooltip: str = ""
) -> list[Binding]:
    """A key for an action on a session (respond, abort, prompt, attach), and behind it the
    same key saying why it is off: read-only or a replay hides the action from the footer
    (`OcwatchApp.check_action`), and the key, pressed, says so instead of doing nothing."""
    assert name in ACTIONS, name
    return [
        Binding(key, f"app.{name}", description, show=show, tooltip=tooltip),
        Binding(key, f"app.off('{name}')", description, show=False),
    ]


ATTACH = action(
    "A",
    "attach",
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
