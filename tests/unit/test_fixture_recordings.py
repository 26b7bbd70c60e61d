"""The fixtures are recordings that `ocwatch replay` opens: replayed whole through the same code a
user's replay runs (snapshots answered from the file, the recorded clock), every scenario's
sessions end in the state its run on the real server had."""

from __future__ import annotations

import pytest

from tests import recorded
from tui.record.replay import replay_to

FINAL = {  # recording: {role: (state, reason)} at its end
    "completed": {"main": ("idle", "completed")},
    "failed": {"main": ("idle", "error")},
    "aborted": {"main": ("idle", "aborted")},
    "aborted_stalled": {"main": ("idle", "aborted")},
    "aborted_before_request": {"main": ("idle", "aborted")},
    "permission_once": {"main": ("idle", "completed")},
    "permission_reject": {"main": ("idle", "aborted")},
    "question_replied": {"main": ("idle", "completed")},
    "question_rejected": {"main": ("idle", "aborted")},
    "retry": {"main": ("idle", "completed")},
    "subagent": {"main": ("idle", "completed"), "child": ("idle", "completed")},
    "subagent_permission": {"main": ("idle", "completed"), "child": ("idle", "completed")},
    "second_folder": {"main": ("idle", "completed")},
    "all_states": {
        "completed": ("idle", "completed"),
        "failed": ("idle", "error"),
        "aborted": ("idle", "aborted"),
        "permission": ("input", None),
        "question": ("input", None),
        "retry": ("retry", None),
        "busy": ("busy", None),
        "parent": ("busy", None),
        "child": ("busy", None),
        "second_folder": ("busy", None),
        "fresh": ("idle", None),
    },
    "restart": {
        "interrupted-stream": ("unknown", "interrupted"),
        "interrupted-permission": ("unknown", "interrupted"),
    },
}


def test_every_recording_is_checked_here() -> None:
    names = {n for n in recorded.manifest() if not n.startswith("_")}
    assert names == set(FINAL) | {"heartbeat"}


@pytest.mark.parametrize("name", sorted(FINAL))
async def test_a_fixture_replays_to_the_state_its_run_ended_in(name: str) -> None:
    replay, view = await replay_to(recorded.FIXTURES / f"{name}.ndjson")
    assert replay.ended == "stopped"
    got = {}
    for role in FINAL[name]:
        (row,) = view.find(recorded.session(name, role))
        got[role] = (row.state, row.reason)
        assert not row.stale, (role, row.evidence)
    assert got == FINAL[name]


async def test_the_heartbeat_recording_holds_a_connect_and_heartbeats() -> None:
    frames = recorded.frames("heartbeat")
    assert '"server.connected"' in frames[0]
    assert sum('"server.heartbeat"' in f for f in frames) >= 2
    replay, view = await replay_to(recorded.FIXTURES / "heartbeat.ndjson")
    (server,) = view.servers
    assert replay.ended == "stopped" and server.error is None


def test_no_fixture_carries_credentials() -> None:
    for path in recorded.FIXTURES.glob("*.ndjson"):
        text = path.read_text().lower()
        assert "authorization" not in text, path.name


def test_status_for_a_tmux_status_bar(capsys: pytest.CaptureFixture[str]) -> None:
    """`status --format tmux`: one line of counts (the rows that need someone first), tmux
    styles around them, the same exit code as `status`."""
    from tui.cli.main import main

    path = str(recorded.FIXTURES / "all_states.ndjson")
    assert main(["status", "--format", "tmux", "--replay", path]) == 0
    line = capsys.readouterr().out
    assert line == (
        "#[fg=yellow]? 2#[default] #[fg=magenta]↻ 1#[default] #[fg=cyan]● 4#[default]\n"
    )
    assert main(["status", "--json", "--format", "tmux", "--replay", path]) == 2
    assert "choose one" in capsys.readouterr().err
    assert main(["status", "--format", "json", "--replay", path]) == 0
    assert '"sessions"' in capsys.readouterr().out


def test_a_tmux_line_names_stale_unknown_and_servers_that_are_down() -> None:
    from tests.app.views import row
    from tui.cli.status import tmux_line
    from tui.core.view import ServerInfo, View

    rows = {
        r.key: r
        for r in (
            row("a", "t", "busy", stale=True),
            row("b", "t", "busy"),
            row("c", "t", "unknown", reason="interrupted"),
        )
    }
    view = View(0.0, (ServerInfo(url="http://x", reachable=False),), rows)
    assert tmux_line(view) == (
        "#[fg=red]⚠ 1#[default] #[fg=colour245]◌ 1#[default] "
        "#[fg=cyan]● 1#[default] #[fg=red,bold]✗ 1 down#[default]"
    )
    assert tmux_line(View(0.0, (), {})) == "○ idle"
