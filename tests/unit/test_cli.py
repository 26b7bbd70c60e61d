"""CLI contract: wait's exit-code mapping, status output, argument handling, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata

import pytest

from tests.builders import SERVER, T0, assistant, busy, permission, session, snap, user
from tui.cli.main import main
from tui.cli.output import render_table
from tui.cli.wait import exit_code_for, report
from tui.core.derive import derive_server
from tui.core.settings import Settings
from tui.core.text import literal
from tui.core.view import ServerInfo, View

S = Settings(grace=3.0)


def one(snapshot, sid="s1", now=T0):
    return derive_server(snapshot, (), now, S)[(SERVER, sid)]


def done(**kw):
    return assistant("m1", "s1", created=T0 - 20, completed=T0 - 10, **kw)


@pytest.mark.parametrize(
    ("snapshot", "code"),
    [
        (snap([session("s1")], messages={"s1": done(finish="stop")}), 0),
        (snap([session("s1")], messages={"s1": done(error="APIError")}), 1),
        (snap([session("s1")], messages={"s1": done(error="MessageAbortedError")}), 3),
        (snap([session("s1")], status={"s1": busy()}, permissions=[permission("p", "s1")]), 4),
        (snap([session("s1")], messages={"s1": assistant("m1", "s1", created=T0 - 100)}), 5),
        (snap([session("s1")], messages={"s1": user("m1", "s1", created=T0 - 100)}), 5),
        (snap([session("s1")], status={"s1": busy()}, messages={"s1": done(finish="stop")}), 0),
    ],
)
def test_exit_codes_of_settled_rows(snapshot, code):
    assert exit_code_for(one(snapshot)) == code


@pytest.mark.parametrize(
    "snapshot",
    [
        snap(
            [session("s1")],
            status={"s1": busy()},
            messages={"s1": assistant("m1", "s1", created=T0 - 5)},
        ),
        # a prompt just sent: never 0 before its reply has completed
        snap([session("s1")], messages={"s1": user("m1", "s1", created=T0 - 1)}),
        # the previous run completed, the new prompt is being processed
        snap(
            [session("s1")],
            status={"s1": busy()},
            messages={"s1": user("m2", "s1", created=T0 - 1)},
        ),
        # a completed step that asked for tools: the run goes on
        snap([session("s1")], status={"s1": busy()}, messages={"s1": done(finish="tool-calls")}),
    ],
)
def test_wait_keeps_waiting_while_unsettled(snapshot):
    assert exit_code_for(one(snapshot)) is None


def test_literal_makes_escapes_visible():
    assert literal("[bold]x[/] \x1b[31mred\x1b[0m\nnext", escapes=True) == (
        "[bold]x[/] \\x1b[31mred\\x1b[0m next"
    )


def test_status_table_shows_tree_state_reason_and_literal_titles():
    s = snap(
        [session("p", title="parent \x1b[2J"), session("c", parent="p", title="child")],
        status={"p": busy(), "c": busy()},
        permissions=[permission("per_1", "c")],
    )
    rows = derive_server(s, (), T0, S)
    view = View(T0, (ServerInfo(SERVER, "1.0", True),), rows)
    out = render_table(view, T0)
    assert "\x1b" not in out and "parent \\x1b[2J" in out
    lines = out.splitlines()
    assert lines[2].startswith("input") and "└ child" in lines[3]
    assert "permission bash: git push" in out


def test_status_table_columns_line_up_with_wide_characters():
    """A title of CJK or emoji was padded by characters, not columns: the row's FOLDER sat
    off by its wide characters (found by a review). Columns count terminal cells; a long wide
    title is clipped to its column's width in cells."""
    titles = ["plain title", "修复登录页面的错误", "ship it 🚀🚀🚀", "長" * 60, "e\u0301clair"]
    s = snap([session(f"s{i}", title=t, directory=f"/w/p{i}") for i, t in enumerate(titles)])
    view = View(T0, (ServerInfo(SERVER, "1.0", True),), derive_server(s, (), T0, S))
    lines = render_table(view, T0).splitlines()[1:]
    starts = {
        sum(
            2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1
            for c in line[: line.index("w/p")]
        )
        for line in lines[1:]
    }
    assert len(starts) == 1, lines  # every FOLDER cell starts in the same column
    wide = next(line for line in lines if "長" in line)
    assert "長" * 19 + "…" in wide and "長" * 20 not in wide  # 40 columns


def test_status_json_against_unreachable_server_is_clean(capsys):
    code = main(["status", "--json", "--server", "http://127.0.0.1:9"])
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert code == 2
    assert data["servers"][0]["reachable"] is False
    assert data["sessions"] == []
    assert "cannot connect" in err and "Traceback" not in err


def test_wait_unreachable_is_exit_2(capsys):
    assert main(["wait", "ses_x", "--server", "http://127.0.0.1:9", "--timeout", "5"]) == 2
    assert "cannot connect" in capsys.readouterr().err


def test_usage_errors_exit_2():
    for argv in (
        ["wait"],
        ["reply", "per_1", "maybe"],
        ["answer", "que_1"],
        ["wait", "s", "--timeout", "-1"],
    ):
        with pytest.raises(SystemExit) as ei:
            code = main(argv)
            raise SystemExit(code)
        assert ei.value.code == 2, argv


def test_password_never_comes_from_argv():
    with pytest.raises(SystemExit) as ei:
        main(["status", "--password", "x"])
    assert ei.value.code == 2


def test_console_script_runs_without_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "tui.cli.main", "status", "--server", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "cannot connect" in proc.stderr


def test_scripts_read_servers_and_grace_from_the_config_file(tmp_path, monkeypatch, capsys):
    cfg = tmp_path / "config.toml"
    cfg.write_text('servers = ["http://127.0.0.1:9"]\ngrace = "x"\n')
    monkeypatch.setenv("OCWATCH_CONFIG", str(cfg))
    assert main(["status", "--json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["servers"][0]["url"] == "http://127.0.0.1:9"
    assert "grace" in err  # the bad key is reported, the rest applies
    assert main(["status", "--json", "--server", "http://127.0.0.1:8"]) == 2  # the flag wins
    assert json.loads(capsys.readouterr().out)["servers"][0]["url"] == "http://127.0.0.1:8"


def test_status_on_a_terminal_shows_and_erases_how_far_loading_is():
    import io
    from types import SimpleNamespace

    from tui.cli.status import _progress_line

    a = SimpleNamespace(url="http://a:1", loading=(510, 3000))
    b = SimpleNamespace(url="http://b\x1b[2J:2", loading=None)
    out = io.StringIO()
    show = _progress_line(SimpleNamespace(servers=lambda: (a, b)), out)  # type: ignore[arg-type]
    show()
    assert out.getvalue() == "\r\x1b[Kocwatch: loading sessions of http://a:1 510/3,000"
    b.loading = (1, 2)
    show()
    assert out.getvalue().endswith(
        "\r\x1b[Kocwatch: loading sessions of http://a:1 510/3,000, http://b\\x1b[2J:2 1/2"
    )
    a.loading = b.loading = None
    show()
    assert out.getvalue().endswith("\r\x1b[K")
    many = [
        SimpleNamespace(url=f"http://server-{i}.example:4096", loading=(i, 3000)) for i in range(9)
    ]
    out = io.StringIO()  # not a terminal: 80 columns assumed; a wrapped line would not erase
    _progress_line(SimpleNamespace(servers=lambda: many), out)()  # type: ignore[arg-type]
    line = out.getvalue().removeprefix("\r\x1b[K")
    assert len(line) == 79 and line.endswith("…")


def test_status_table_of_an_unreachable_server_does_not_claim_no_sessions():
    down = View(
        generated_at=T0,
        servers=(ServerInfo(url="http://a:1", reachable=False, error="cannot connect"),),
        rows={},
    )
    assert render_table(down, T0) == "server http://a:1  version ?  UNREACHABLE"  # error: stderr
    up = View(generated_at=T0, servers=(ServerInfo(url="http://a:1", reachable=True),), rows={})
    assert render_table(up, T0).endswith("reachable\nno sessions")


def test_wait_says_the_last_state_when_it_times_out(capsys):
    row = derive_server(snap([session("s1")], status={"s1": busy()}), (), T0, Settings())[
        (SERVER, "s1")
    ]
    assert report(124, row, "timed out after 0s", as_json=False) == 124
    out, err = capsys.readouterr()
    assert out.startswith("s1: busy") and "timed out after 0s" in err


def test_version_comes_from_the_package_metadata(capsys):
    from importlib.metadata import version

    from tui.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"ocwatch {version('ocwatch')}"


def test_version_without_package_metadata_says_unknown(monkeypatch):
    """Run from a source tree that was never installed: a PEP 440 version that says so."""
    import importlib.metadata

    import tui

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    monkeypatch.setitem(vars(tui), "__version__", "cached")  # undone: as it was before
    monkeypatch.delitem(vars(tui), "__version__")  # read afresh, lazily
    assert tui.__version__ == "0+unknown"


def test_a_view_repr_is_short_whatever_its_rows():
    """asyncio.run() formats its finished task's repr (result included) twice as it returns on
    Python 3.11; a View's repr that listed 10,000 rows cost `status` ~80 ms."""
    from tui.core.view import View

    view = View(1.0, (), {("http://s", f"ses_{i}"): object() for i in range(10_000)})  # type: ignore[misc]
    assert repr(view) == "View(generated_at=1.0, servers=0, rows=10000)"


def test_an_option_before_the_command_means_what_it_means_after_or_is_refused(capsys) -> None:
    """Issue 40: `ocwatch --notify-cmd X --webhook Y metrics ...` delivered nothing (the
    command's defaults overwrote them). Before or after the command, the same; an option a
    command does not honour is refused (exit 2), not dropped."""
    import pytest

    from tui.cli.main import build_parser, main

    parser = build_parser()
    before = parser.parse_args(["--notify-cmd", "x", "--webhook", "http://h/t", "metrics"])
    after = parser.parse_args(["metrics", "--notify-cmd", "x", "--webhook", "http://h/t"])
    for args in (before, after):
        assert (args.notify_cmd, args.webhook) == ("x", "http://h/t")
    assert parser.parse_args(["metrics"]).notify_cmd is None
    for argv in (
        ["--bell", "status"],
        ["--theme", "ocwatch-light", "wait", "ses_1"],
        ["--webhook", "http://h/t", "watch"],
        ["--read-only", "metrics"],
    ):
        with pytest.raises(SystemExit) as ei:
            main(argv)
        assert ei.value.code == 2
        assert "has no effect on `ocwatch" in capsys.readouterr().err


def test_every_command_of_the_parser_has_a_handler_and_every_handler_a_command() -> None:
    """A new command is a parser in build_parser and a function in COMMANDS: one without the
    other is caught here, and DASHBOARD_OPTIONS names only commands that exist."""
    import argparse

    from tui.cli.main import COMMANDS, DASHBOARD_OPTIONS, build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(COMMANDS) == {None, *sub.choices}
    for flag, commands in DASHBOARD_OPTIONS.values():
        assert commands <= set(COMMANDS), flag
