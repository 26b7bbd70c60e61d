"""Every option given before the command is taken after it too (issue 41 item 10: `ocwatch
--grace 30 status` worked, `ocwatch status --grace 30` was refused). Both positions give the
same value; given in neither, the default stays; given to a command that does not honour it,
both positions refuse it the same way (exit 2, one line), never drop it in silence."""

from __future__ import annotations

import argparse
import re

import pytest

from tui.cli.main import DASHBOARD_OPTIONS, build_parser, main

#: Each command with the arguments it cannot go without
COMMANDS = {
    "demo": [],
    "status": [],
    "servers": [],
    "wait": ["ses_1"],
    "metrics": [],
    "watch": [],
    "report": ["ses_1"],
    "replay": ["rec.ndjson"],
    "record": ["rec.ndjson"],
    "prompt": ["ses_1", "hello"],
    "abort": ["ses_1"],
    "reply": ["per_1", "once"],
    "answer": ["que_1", "--reject"],
}

#: A value for each option of the top level (its argparse name): the words given, the value read
GIVEN: dict[str, tuple[list[str], object]] = {
    "grace": (["--grace", "30"], 30.0),
    "verbose": (["--verbose"], True),
    "server": (["--server", "http://h:1"], "http://h:1"),
    "servers_file": (["--servers-file", "servers.json"], "servers.json"),
    "discover": (["--discover", "local"], "local"),
    "theme": (["--theme", "ocwatch-light"], "ocwatch-light"),
    "read_only": (["--read-only"], True),
    "metrics": (["--metrics", "127.0.0.1:9999"], "127.0.0.1:9999"),
    "bell": (["--bell"], True),
    "osc9": (["--osc9"], True),
    "notify": (["--notify"], True),
    "osc777": (["--osc777"], True),
    "osc99": (["--osc99"], True),
    "unfocused_only": (["--unfocused-only"], True),
    "notify_cmd": (["--notify-cmd", "x"], "x"),
    "webhook": (["--webhook", "http://h/t"], "http://h/t"),
    "webhook_format": (["--webhook-format", "json"], "json"),
}


def top_level_options() -> list[argparse.Action]:
    parser = build_parser()
    return [
        a
        for a in parser._actions
        if a.option_strings and a.dest not in ("help", "version") and a.nargs != argparse.PARSER
    ]


def test_every_top_level_option_has_a_value_here() -> None:
    """A new global option must be added to GIVEN (and so to the tests below)."""
    assert sorted(a.dest for a in top_level_options()) == sorted(GIVEN)
    assert sorted(build_parser()._subparsers._group_actions[0].choices) == sorted(COMMANDS)  # type: ignore[union-attr]


def honours(command: str, dest: str) -> bool:
    if dest in DASHBOARD_OPTIONS:
        return command in DASHBOARD_OPTIONS[dest][1]
    return True


def value(args: argparse.Namespace, dest: str) -> object:
    got = getattr(args, dest)
    return got[0] if isinstance(got, list) and len(got) == 1 else got  # (--server appends)


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("dest", sorted(GIVEN))
def test_an_option_reads_the_same_before_and_after_the_command(
    command: str, dest: str, capsys: pytest.CaptureFixture[str]
) -> None:
    words, want = GIVEN[dest]
    rest = COMMANDS[command]
    before = [*words, command, *rest]
    after = [command, *rest, *words]
    if honours(command, dest):
        parser = build_parser()
        assert value(parser.parse_args(before), dest) == want
        assert value(parser.parse_args(after), dest) == want
        default = parser.get_default(dest)
        assert getattr(parser.parse_args([command, *rest]), dest, None) == default
    else:
        for argv in (before, after):
            with pytest.raises(SystemExit) as ei:
                main(argv)
            assert ei.value.code == 2
            assert f"has no effect on `ocwatch {command}`" in capsys.readouterr().err


def test_given_on_both_sides_the_one_after_the_command_wins() -> None:
    args = build_parser().parse_args(["--grace", "5", "status", "--grace", "30", "-v"])
    assert (args.grace, args.verbose) == (30.0, True)
    args = build_parser().parse_args(["--grace", "5", "-v", "status"])
    assert (args.grace, args.verbose) == (5.0, True)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_s_help_shows_the_options_it_honours_only(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ei:
        main([command, "--help"])
    assert ei.value.code == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"usage: ocwatch {command}")
    for dest, (words, _) in GIVEN.items():
        flag = re.search(rf"(?<![-\w]){re.escape(words[0])}(?![-\w])", shown)
        assert bool(flag) is honours(command, dest), (command, words[0])


def test_version_after_a_command_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ei:
        main(["status", "--version"])
    assert ei.value.code == 0
    assert capsys.readouterr().out.startswith("ocwatch ")
