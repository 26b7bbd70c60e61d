"""The README and the CLI agree: its exit-code table lists exactly the ExitCode members (the same
numbers, each row saying its member's meaning), its worst-first order is ExitCode's, and every
flag it shows for `ocwatch status|wait|watch|prompt` is one the parser takes (the examples that
can run are parsed whole)."""

from __future__ import annotations

import argparse
import io
import re
import shlex
from pathlib import Path

import pytest

from tui.cli.main import build_parser
from tui.cli.output import say
from tui.core.exitcodes import ExitCode, worst

README = Path(__file__).resolve().parents[2] / "README.md"
COMMANDS = ("status", "wait", "watch", "prompt")

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
_CODE_SPAN = re.compile(r"`([^`\n]*)`")
_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*(.+?)\s*\|\s*$", re.M)
_COMMAND = re.compile(r"\bocwatch (" + "|".join(COMMANDS) + r")\b(.*)")
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
#: where a command of the README ends: a comment, `;`, a pipe to another program, the `)` of
#: a `$(...)` or `#(...)`
_END = re.compile(r"\s#|;|\s\|\s(?!-)|\)(?=['\"]|\s*$|\s*\|)")


def exit_code_table(readme: str) -> list[tuple[int, str]]:
    """The rows of the README's "exit codes" table: (code, meaning)."""
    start = readme.index("exit codes\n")
    section = readme[start : readme.index("\n#", start)]
    return [(int(code), meaning) for code, meaning in _ROW.findall(section)]


def worst_first(readme: str) -> list[int]:
    """The order the README gives for `wait --all`, worst first."""
    found = re.search(r"worst first:\s*(\d+(?:,\s*\d+)*)", readme)
    assert found, "the README no longer says the worst-first order"
    return [int(n) for n in found.group(1).split(",")]


def command_lines(readme: str, spans: bool = True) -> list[tuple[str, str]]:
    """Every `ocwatch status|wait|watch|prompt ...` the README shows as code (in a fenced block,
    or with `spans` in a code span too): (command, the rest of it, up to the command's end)."""
    code = [line for block in _FENCE.findall(readme) for line in block.splitlines()]
    if spans:
        code += _CODE_SPAN.findall(_FENCE.sub("", readme))
    out = []
    for line in code:
        for m in _COMMAND.finditer(line):
            rest = m.group(2)
            cut = _END.search(rest)
            out.append((m.group(1), rest[: cut.start()] if cut else rest))
    return out


def subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def test_the_readme_exit_code_table_is_exit_code():
    readme = README.read_text(encoding="utf-8")
    table = exit_code_table(readme)
    assert [code for code, _ in table] == sorted(set(ExitCode)), table
    meaning = dict(table)
    for member in ExitCode:  # each row says what its member is (aliases: their canonical one)
        assert member.name.lower() in meaning[member.value].lower(), (member, meaning)


def test_the_readme_worst_first_order_is_exit_codes_order():
    order = worst_first(README.read_text(encoding="utf-8"))
    assert order == [m.value for m in ExitCode]
    assert worst(reversed(order)) == order[0] and worst(order[1:]) == order[1]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_flag_the_readme_shows_is_one_the_parser_takes(command):
    parser = build_parser()
    takes = set(subparser(parser, command)._option_string_actions)
    shown = {
        flag
        for cmd, rest in command_lines(README.read_text(encoding="utf-8"))
        if cmd == command
        for flag in _FLAG.findall(re.sub(r"'[^']*'", "", rest))
    }
    assert shown, f"the README shows no flag of ocwatch {command}"
    assert shown <= takes, f"ocwatch {command}: the parser does not take {sorted(shown - takes)}"


def test_the_readme_examples_that_can_run_parse():
    """The command lines of its code blocks that are examples (no synopsis brackets or
    placeholders) parse whole: arguments, values and flags together."""
    parser = build_parser()
    examples = [
        (cmd, rest)
        for cmd, rest in command_lines(README.read_text(encoding="utf-8"), spans=False)
        if not re.search(r"[\[\]()]|\.\.\.|[A-Z]{2,}_|\bTEXT\b|\|", rest)
    ]
    assert len(examples) >= 5, examples
    for cmd, rest in examples:
        try:
            parser.parse_args([cmd, *shlex.split(rest)])
        except SystemExit:  # argparse said why on stderr
            pytest.fail(f"the README's `ocwatch {cmd}{rest}` does not parse")


def test_a_diagnostic_line_is_one_literal_line_with_the_commands_prefix():
    err = io.StringIO()
    say("wait", "s1: boom \x1b[2J\nnext [bold]", err)
    say("", "server down", err)
    assert err.getvalue() == "ocwatch wait: s1: boom \\x1b[2J next [bold]\nocwatch: server down\n"
