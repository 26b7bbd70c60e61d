"""Options given where they do nothing are a usage error (exit 2, saying which), never dropped
in silence: a recording names its servers and its settings, `prompt`'s --timeout and --json
are --wait's, and a command on one server takes one --server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.cli.main import main

URL, OTHER = "http://127.0.0.1:1", "http://127.0.0.1:2"


@pytest.mark.parametrize("command", ["status", "watch"])
@pytest.mark.parametrize(
    ("given", "flag"),
    [
        (["--servers-file", "inv.json"], "--servers-file"),
        (["--discover", "local"], "--discover"),
        (["--grace", "30"], "--grace"),
        (["--server", URL], "--server"),
    ],
    ids=["servers-file", "discover", "grace", "server"],
)
def test_replay_refuses_what_the_recording_decides(
    command: str,
    given: list[str],
    flag: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    recording = tmp_path / "run.ndjson"
    recording.write_text("")  # (never opened: refused before)
    assert main([command, "--replay", str(recording), *given]) == 2
    assert f"{flag} does not go with --replay FILE" in capsys.readouterr().err


@pytest.mark.parametrize("given", [["--timeout", "5"], ["--json"]], ids=["timeout", "json"])
def test_prompt_refuses_the_options_of_wait_without_wait(
    given: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prompt", "ses_1", "hello", "--server", URL, *given]) == 2
    assert f"{given[0]} goes with --wait" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["abort", "ses_1"],
        ["reply", "per_1", "once"],
        ["answer", "que_1", "--reject"],
        ["prompt", "ses_1", "hello"],
    ],
    ids=["abort", "reply", "answer", "prompt"],
)
@pytest.mark.parametrize("where", ["after", "before"])
def test_a_command_on_one_server_refuses_a_second(
    argv: list[str], where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # (given on both sides, the one after the command wins, as every option's)
    if where == "after":
        full = [*argv, "--server", URL, "--server", OTHER]
    else:
        full = ["--server", URL, "--server", OTHER, *argv]
    assert main(full) == 2
    assert f"`ocwatch {argv[0]}` acts on one server" in capsys.readouterr().err
