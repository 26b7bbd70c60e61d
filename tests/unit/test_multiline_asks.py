"""Approvals show exactly what will run (issue 41, item 1): a permission for `echo cleaning build
cache⏎rm -rf ~/projects` read as one harmless `echo` everywhere a person decides on it, because
newlines became spaces. Commands, patterns and questions keep their lines where a person decides
(controls and escapes still neutralised); a one-line cell says how many lines it hides."""

from __future__ import annotations

import pytest

from tests.builders import SERVER, permission, question
from tui.app import format as fmt
from tui.app.screens.detail import pending_parts
from tui.app.screens.permission import permission_fields
from tui.app.screens.question import heading, questions_of
from tui.core.decide import pending_of
from tui.core.text import first_line, lines_of
from tui.core.view import SessionRow

SNEAKY = "echo cleaning build cache\nrm -rf ~/projects"


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        (SNEAKY, ["echo cleaning build cache", "rm -rf ~/projects"]),
        ("a\r\nb", ["a", "b"]),
        ("a\rb", ["a", "b"]),  # a lone CR would write over the line's start on a terminal
        ("a\u2028b\u2029c", ["a", "b", "c"]),
        ("one\n\n", ["one"]),
        ("", []),
    ],
)
def test_every_line_break_is_a_line(text: str, lines: list[str]) -> None:
    assert lines_of(text) == lines


def test_a_one_line_cell_says_how_many_lines_it_hides() -> None:
    assert first_line(SNEAKY) == "echo cleaning build cache (+1 line)"
    assert first_line("\n  a\nb\nc") == "a (+2 lines)"
    assert first_line("plain") == "plain"
    summary = pending_of(permission("per_1", "ses_1", SNEAKY)).summary
    assert summary == "permission bash: echo cleaning build cache (+1 line)"
    cut = fmt.truncate_ask(summary, 30)
    assert cut.endswith("… (+1 line)") and len(cut) <= 30  # the count survives the cut


def test_the_dialog_and_the_details_show_every_line() -> None:
    pending = pending_of(permission("per_1", "ses_1", SNEAKY + "\x1b[2J"))
    shown = permission_fields(pending).plain
    assert "echo cleaning build cache\n" in shown
    assert "rm -rf ~/projects␛[2J" in shown  # its own line, the escape neutralised
    assert "\x1b" not in shown
    row = SessionRow(
        SERVER,
        "ses_1",
        "t",
        "/p",
        None,
        "input",
        None,
        False,
        (),
        (pending,),
        None,
        None,
        None,
        None,
    )
    details = "".join(p if isinstance(p, str) else p[0] for p in pending_parts(pending, row))
    assert any(line.strip() == "rm -rf ~/projects␛[2J" for line in details.split("\n"))
    assert "(+1 line)" in details  # its summary line, one line, says so


def test_a_question_of_several_lines_is_asked_whole() -> None:
    asked = questions_of(pending_of(question("que_1", "ses_1", "Deploy?\nThis drops the prod DB.")))
    shown = heading(1, asked[0]).plain
    assert "Deploy?\n" in shown and "This drops the prod DB." in shown


def test_a_command_of_several_lines_says_how_many_under_its_label() -> None:
    """A command that scrolls out of the dialog is not read as its first screen: its label
    says how many lines it has; a one-line command says nothing more."""
    many = "\n".join(f"echo {i}" for i in range(29)) + "\nrm -rf ~"
    shown = permission_fields(pending_of(permission("per_1", "ses_1", many))).plain
    assert "command     echo 0\n30 lines    echo 1\n" in shown
    one = permission_fields(pending_of(permission("per_1", "ses_1", "ls"))).plain
    assert "lines" not in one


def test_a_pattern_of_several_lines_says_how_many_under_its_label() -> None:
    """V2 sends what will run only as the permission's patterns (no command in its metadata):
    a pattern of several lines says how many, as a command does."""
    from tui.core.models import PermissionRequest

    req = PermissionRequest.parse(
        {
            "id": "per_1",
            "sessionID": "ses_1",
            "permission": "shell",
            "patterns": [SNEAKY],
            "metadata": {},
            "always": ["echo *"],
        }
    )
    shown = permission_fields(pending_of(req)).plain
    assert "patterns    echo cleaning build cache\n2 lines     rm -rf ~/projects" in shown
    assert "always      echo *" in shown  # one line: nothing more said


def test_the_status_detail_keeps_the_count_when_it_cuts_the_line() -> None:
    """`ocwatch status`'s DETAIL column is cut at 60 cells: a command whose first line is long
    still says how many lines it hides (the cut took the count with it)."""
    from tui.cli.output import render_table
    from tui.core.view import ServerInfo, View

    command = "echo " + "x" * 80 + "\nrm -rf ~/projects"
    pending = pending_of(permission("per_1", "ses_1", command))
    row = SessionRow(
        SERVER, "ses_1", "t", "/p", None, "input", None, False, (), (pending,),
        None, None, None, None,
    )  # fmt: skip
    out = render_table(View(0.0, (ServerInfo(SERVER, "1.0", True),), {row.key: row}), 0.0)
    detail = out.splitlines()[-1].split("  ")[-1].strip()
    assert detail.startswith("permission bash: echo xxx") and detail.endswith("… (+1 line)")
    assert len(detail) == 60
    short = pending_of(permission("per_2", "ses_1", "ls\nrm -rf ~"))
    row = SessionRow(
        SERVER, "ses_1", "t", "/p", None, "input", None, False, (), (short,),
        None, None, None, None,
    )  # fmt: skip
    out = render_table(View(0.0, (ServerInfo(SERVER, "1.0", True),), {row.key: row}), 0.0)
    assert out.endswith("permission bash: ls (+1 line)")


def test_a_notification_keeps_the_count_when_it_cuts_the_line() -> None:
    """The terminal's notifications (OSC 9, 777, 99) and the desktop, webhook and command
    alerts are cut to a few hundred characters: a command whose first line is that long
    still says how many lines it hides."""
    from tui.core.alerts import Alert, osc9, osc99, osc777
    from tui.export.deliver import payload

    summary = pending_of(permission("per_1", "ses_1", "echo " + "x" * 500 + "\nrm -rf ~")).summary
    alert = Alert("input", (SERVER, "ses_1"), (), "t", summary, (summary,))
    for sequence in (osc9(alert), osc777(alert), osc99(alert)):
        assert "x… (+1 line)" in sequence
    sent = payload(alert, "n", None, 0.0)
    assert sent.text.endswith("x… (+1 line)") and len(sent.text) == 300
    assert sent.asked == (sent.text,)
    plain_one = Alert("error", (SERVER, "ses_1"), (), "t", "e" * 500)
    assert osc9(plain_one).endswith("e" * 10 + "\x07")  # nothing to keep: cut as before
