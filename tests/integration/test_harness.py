"""Smoke tests of the integration harness: each session state really exists on a real server.

Assertions are on the raw HTTP API of `opencode serve`, never on ocwatch code.
"""

from __future__ import annotations

import json
import os

import httpx
import pytest

from .driver import AllStates, Driver, EventRecorder
from .oc_server import PLUGIN, OpenCodeServer
from .scripted_model import ScriptedModel

pytestmark = pytest.mark.integration


def _last_assistant_info(oc: Driver, sid: str) -> dict:
    m = oc.last_assistant(sid)
    assert m is not None, f"no assistant message in {sid}"
    return m["info"]


def test_server_is_healthy_and_isolated(oc: Driver, oc_server: OpenCodeServer) -> None:
    health = oc.health()
    assert health["healthy"] is True
    assert isinstance(health["version"], str)
    assert oc_server.url.startswith("http://127.0.0.1:")
    env = oc_server.env()
    assert env["HOME"].startswith(str(oc_server.root))
    assert env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    projects = {p["worktree"] for p in oc.get_global("/project")}
    assert str(oc_server.project) in projects


def test_a_server_takes_the_seeded_plugin_and_downloads_nothing(
    oc: Driver, oc_server: OpenCodeServer
) -> None:
    """The plugin SDK each V1 server installs on its first project is laid in from one seed
    (oc_server.seed_plugin): the server loads a project and installs nothing (it would
    download 31 MB into its HOME and spend ~9 s of a core)."""
    config = oc_server.config_path.parent
    assert (config / "node_modules").is_symlink(), "no seed was laid: is npm on PATH?"
    oc.create_session()  # (a project loaded: where the server would install)
    assert (config / "node_modules").is_symlink(), "the server replaced the seed's link"
    sdk = json.loads((config / "node_modules" / PLUGIN / "package.json").read_text())
    assert sdk["version"] == oc.health()["version"]
    assert not (oc_server.root / "home" / ".npm").exists()
    assert json.loads((config / "package.json").read_text()) == {
        "dependencies": {PLUGIN: oc.health()["version"]}
    }


def test_completed(all_states: AllStates, oc: Driver) -> None:
    sid = all_states.completed
    assert sid not in oc.status_map(all_states.directory)
    info = _last_assistant_info(oc, sid)
    assert info["time"].get("completed")
    assert info["finish"] == "stop"
    assert "error" not in info


def test_failed(all_states: AllStates, oc: Driver) -> None:
    sid = all_states.failed
    assert sid not in oc.status_map(all_states.directory)
    info = _last_assistant_info(oc, sid)
    assert info["error"]["name"] == "APIError"
    assert info["error"]["data"]["isRetryable"] is False
    assert info["time"].get("completed")


def test_aborted(all_states: AllStates, oc: Driver) -> None:
    sid = all_states.aborted
    assert sid not in oc.status_map(all_states.directory)
    info = _last_assistant_info(oc, sid)
    assert info["error"]["name"] == "MessageAbortedError"


def test_permission_open(all_states: AllStates, oc: Driver) -> None:
    sid = all_states.permission
    assert oc.status_map(all_states.directory)[sid] == {"type": "busy"}
    perms = [p for p in oc.permissions(all_states.directory) if p["sessionID"] == sid]
    assert len(perms) == 1
    assert perms[0]["permission"] == "bash"
    assert perms[0]["id"] == all_states.permission_request["id"]
    assert perms[0]["tool"]["callID"]


def test_question_open(all_states: AllStates, oc: Driver) -> None:
    sid = all_states.question
    assert oc.status_map(all_states.directory)[sid] == {"type": "busy"}
    qs = [q for q in oc.questions(all_states.directory) if q["sessionID"] == sid]
    assert len(qs) == 1
    assert qs[0]["questions"][0]["options"][0]["label"] == "Red"


def test_retry(all_states: AllStates, oc: Driver) -> None:
    # retry -> busy -> retry between attempts: wait for a retry reading. The server gives up
    # on a 503 after a minute or two; the session's tests may run later than that
    st = oc.wait_status(all_states.still_retrying(oc), "retry")
    assert st["type"] == "retry"
    assert st["attempt"] >= 1
    assert "overload" in st["message"]
    assert st["next"] > 0


def test_long_busy(all_states: AllStates, oc: Driver) -> None:
    assert oc.status_map(all_states.directory)[all_states.busy] == {"type": "busy"}
    info = _last_assistant_info(oc, all_states.busy)
    assert not info["time"].get("completed")


def test_parent_with_running_subagent(all_states: AllStates, oc: Driver) -> None:
    child = oc.session(all_states.child)
    assert child["parentID"] == all_states.parent
    assert [c["id"] for c in oc.children(all_states.parent)] == [all_states.child]
    status = oc.status_map(all_states.directory)
    assert status[all_states.parent] == {"type": "busy"}
    assert status[all_states.child] == {"type": "busy"}
    parts = oc.last_assistant(all_states.parent)["parts"]  # type: ignore[index]
    task = [p for p in parts if p["type"] == "tool" and p["tool"] == "task"]
    assert task and task[0]["state"]["status"] == "running"
    # roots=true hides the child
    roots = {s["id"] for s in oc.get_global("/session", roots="true")}
    assert all_states.parent in roots and all_states.child not in roots


def test_second_folder_session(all_states: AllStates, oc: Driver) -> None:
    sid = all_states.second_folder
    assert oc.session(sid)["directory"] == all_states.directory2
    assert oc.status_map(all_states.directory2)[sid] == {"type": "busy"}
    # per-directory: not visible when asking about the first folder, nor with no directory
    assert sid not in oc.status_map(all_states.directory)
    assert sid not in oc.get_global("/session/status")


def test_fresh_session(all_states: AllStates, oc: Driver) -> None:
    assert oc.messages(all_states.fresh) == []
    assert all_states.fresh not in oc.status_map(all_states.directory)


def test_requests_are_per_directory(all_states: AllStates, oc: Driver) -> None:
    assert not [
        p for p in oc.permissions(all_states.directory2) if p["sessionID"] == all_states.permission
    ]
    assert not [
        q for q in oc.questions(all_states.directory2) if q["sessionID"] == all_states.question
    ]


def test_permission_reply_completes_run(oc: Driver, events: EventRecorder) -> None:
    s = oc.run("permission")
    req = oc.wait_permission(s["id"])
    mark = events.mark()
    oc.reply_permission(req["id"], "once")
    events.wait_event("permission.replied", s["id"], since=mark)
    info = oc.wait_completed_idle(s["id"])["info"]
    assert info["finish"] == "stop"
    r = oc.request(
        "POST", f"/permission/{req['id']}/reply", json_body={"reply": "once"}, expect=None
    )
    assert r.status_code == 404
    assert r.json()["_tag"] == "PermissionNotFoundError"


def test_question_reply_completes_run(oc: Driver) -> None:
    s = oc.run("question")
    req = oc.wait_question(s["id"])
    oc.reply_question(req["id"], [["Blue"]])
    oc.wait_completed_idle(s["id"])


def test_flaky_then_recovers(oc: Driver) -> None:
    s = oc.run("flaky", "1")
    oc.wait_status(s["id"], "retry")
    oc.wait_completed_idle(s["id"], timeout=90)


def test_slow_stream(oc: Driver) -> None:
    s = oc.run("slow", "1")
    oc.wait_status(s["id"], "busy")
    oc.wait_completed_idle(s["id"])


def test_event_stream_first_frame(events: EventRecorder) -> None:
    first = events.snapshot()[0]
    assert first.type == "server.connected"
    assert events.headers.get("content-type", "").startswith("text/event-stream")
    assert all(f.type != "tui.toast.show" for f in events.snapshot())  # (its probes unrecorded)


def test_the_recorder_has_every_event_published_after_its_start(
    oc: Driver, oc_server: OpenCodeServer
) -> None:
    """The server subscribes a stream to its bus only after sending `server.connected`: a
    session made at once after that first frame often went unrecorded on a loaded machine (the
    sync-frames test then missed seq 0). The recorder's start waits until the stream carries a
    probe of its own; each try here makes a session at once after it."""
    for _ in range(5):
        with EventRecorder(oc_server.url, auth=oc_server.auth) as rec:
            sid = oc.create_session(title="right after the recorder")["id"]
            rec.wait_event("session.created", sid, timeout=10)


def test_scripted_model_sees_title_turn_and_tool_result(
    oc: Driver, scripted_model: ScriptedModel
) -> None:
    s = oc.run("question", text="Title probe")
    oc.reply_question(oc.wait_question(s["id"])["id"], [["Red"]])
    oc.wait_completed_idle(s["id"])
    mine = [r for r in scripted_model.requests if any("Title probe" in t for t in r.user_texts)]
    kinds = [r.kind for r in mine]
    assert "title" in kinds and "turn" in kinds and "after_tool" in kinds
    assert "question" in next(r for r in mine if r.kind == "turn").tool_names


# -- auth ---------------------------------------------------------------------------------------


def test_password_server_requires_basic_auth(
    oc_server_auth: OpenCodeServer, oc_auth: Driver, oc_password: str
) -> None:
    r = httpx.get(f"{oc_server_auth.url}/session", timeout=10)
    assert r.status_code == 401
    assert r.headers.get("www-authenticate", "").lower().startswith("basic")
    bad = httpx.get(f"{oc_server_auth.url}/session", auth=("opencode", "wrong"), timeout=10)
    assert bad.status_code == 401
    assert oc_auth.health()["healthy"] is True
    s = oc_auth.run("text")
    oc_auth.wait_completed_idle(s["id"])
    # the event stream needs auth too
    anon = EventRecorder(oc_server_auth.url)
    anon.start()
    assert anon.status_code == 401
    anon.stop()
    with EventRecorder(oc_server_auth.url, auth=("opencode", oc_password)) as rec:
        assert rec.status_code == 200
        assert rec.snapshot()[0].type == "server.connected"


# -- crash and restart ----------------------------------------------------------------------------


def test_kill_mid_run_and_restart(
    private_server: OpenCodeServer, scripted_model: ScriptedModel
) -> None:
    srv = private_server
    with Driver(srv.url, default_directory=str(srv.project)) as d:
        s = d.run("hang", "it-kill")
        d.wait_status(s["id"], "busy")
        d.wait_assistant(s["id"], lambda m: any(p["type"] == "text" for p in m["parts"]))
    srv.kill()
    scripted_model.release("it-kill")
    srv.start()
    with Driver(srv.url, default_directory=str(srv.project)) as d:
        assert s["id"] not in d.status_map()
        info = d.last_assistant(s["id"])["info"]  # type: ignore[index]
        assert not info["time"].get("completed")
        assert "error" not in info and "finish" not in info
    assert os.path.isdir(srv.data_dir)
