"""The dashboard's "no server" screen with local discovery on (issue 44 item 1): it says what
discovery looked at, a line per place, and a run that finds nothing keeps looking."""

from __future__ import annotations

from tui.app.screens.main import empty_message
from tui.core.view import View

from . import views

LOOKED = [
    "/proc: 70 processes of this user, none OpenCode",
    "~/.local/state/opencode/service.json: absent",
    "http://127.0.0.1:4096: nothing listens there",
]


def test_nothing_found_says_where_it_looked() -> None:
    said = empty_message(View(0.0, (), {}), [], 0, looked=LOOKED)
    assert said is not None
    text = said.plain
    assert text.startswith("No OpenCode server found on this machine.")
    for line in LOOKED:
        assert f"  {line}\n" in text
    assert "opencode --port 0" in text and "keeps looking" in text


def test_before_the_first_look_it_says_it_is_looking() -> None:
    said = empty_message(View(0.0, (), {}), [], 0, looked=[])
    assert said is not None and said.plain.startswith("Looking for OpenCode servers")
    off = empty_message(View(0.0, (), {}), [], 0)  # discovery off: as before
    assert off is not None and off.plain.startswith("Connecting to")


def test_unreachable_servers_and_what_discovery_looked_at() -> None:
    said = empty_message(views.unreachable(), [], 0, looked=LOOKED)
    assert said is not None
    text = said.plain
    assert text.startswith("No OpenCode server is reachable.")
    assert "Local discovery looked at:\n" in text and f"  {LOOKED[0]}\n" in text
    before = empty_message(views.unreachable(), [], 0)
    assert before is not None and "Local discovery" not in before.plain


def test_what_it_looked_at_is_shown_literally() -> None:
    said = empty_message(View(0.0, (), {}), [], 0, looked=["/proc: \x1b[31mred"])
    assert said is not None and "\x1b" not in said.plain
