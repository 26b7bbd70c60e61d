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
        "completed": ("idle", "completed"), "failed": ("idle", "error"),
        "aborted": ("idle", "aborted"), "permission": ("input", None),
        "question": ("input", None), "retry": ("retry", None), "busy": ("busy", None),
        "parent": ("busy", None), "child": ("busy", None), "second_folder": ("busy", None),
        "fresh": ("idle", None),
    },
    "restart": {"interrupted-stream": ("unknown", "interrupted"),
                "interrupted-permission": ("unknown", "interrupted")},
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
