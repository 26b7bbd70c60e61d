"""ocwatch's CLI against a real `opencode serve` 1.18.33 holding sessions in every state."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from tests.cli_env import cli_env
from tui.cli import wait as wait_module
from tui.cli.wait import wait_for
from tui.core.settings import Settings

from .driver import AllStates, Driver
from .fault_proxy import FaultProxy
from .oc_server import OpenCodeServer
from .scripted_model import ScriptedModel, marker


def ocwatch(
    *args: str,
    password: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    env = cli_env(password)
    return subprocess.run(
        [sys.executable, "-m", "tui.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def status_json(url: str, password: str | None = None) -> dict[str, Any]:
    proc = ocwatch("status", "--json", "--server", url, password=password)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_status_json_classifies_every_session(
    oc_server: OpenCodeServer, all_states: AllStates, oc: Driver
):
    all_states.still_retrying(oc)
    data = status_json(oc_server.url)
    assert data["servers"] == [
        {
            "url": oc_server.url,
            "name": oc_server.url,
            "protocol": "v1",
            "version": "1.18.33",
            "reachable": True,
            "error": None,
            "stream": "none",
            "malformed": 0,
            "malformed_examples": [],
        }
    ]
    rows = {r["id"]: r for r in data["sessions"]}
    st = all_states

    def check(sid: str, state: str, reason: str | None = None, stale: bool = False) -> dict:
        r = rows[sid]
        assert (r["state"], r["reason"], r["stale"]) == (state, reason, stale), r
        return r

    check(st.completed, "idle", "completed")
    err = check(st.failed, "idle", "error")
    assert err["error"].startswith("APIError")
    check(st.aborted, "idle", "aborted")
    perm = check(st.permission, "input")
    assert [(p["kind"], p["id"]) for p in perm["pending"]] == [
        ("permission", st.permission_request["id"])
    ]
    assert "bash" in perm["pending"][0]["summary"]
    q = check(st.question, "input")
    assert [(p["kind"], p["id"]) for p in q["pending"]] == [("question", st.question_request["id"])]
    # between two attempts the server reads busy for a moment (retry -> busy -> retry)
    for _ in range(20):
        if rows[st.retry]["state"] == "retry":
            break
        rows[st.retry] = next(
            r for r in status_json(oc_server.url)["sessions"] if r["id"] == st.retry
        )
    check(st.retry, "retry")
    check(st.busy, "busy")
    parent = check(st.parent, "busy")
    child = check(st.child, "busy")
    assert child["parent_id"] == st.parent and st.child in parent["children"]
    assert any("sub-agent busy" in e for e in parent["evidence"])
    second = check(st.second_folder, "busy")
    assert second["directory"] == st.directory2
    check(st.fresh, "idle", None)
    for r in (rows[s] for s in st.ids().values()):
        assert r["evidence"] and r["settled"]
        assert r["server"] == oc_server.url and r["since"] and r["updated"]


def test_status_table_is_readable(oc_server: OpenCodeServer, all_states: AllStates, oc: Driver):
    all_states.still_retrying(oc)
    proc = ocwatch("status", "--server", oc_server.url)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for sid, word in (
        (all_states.completed, "idle (completed)"),
        (all_states.failed, "idle (error)"),
        (all_states.permission, "input"),
        (all_states.busy, "busy"),
    ):
        line = next(line for line in out.splitlines() if sid in line)
        assert line.startswith(word), line
    for _ in range(20):  # retry -> busy -> retry between attempts: read until it shows retry
        line = next(line for line in out.splitlines() if all_states.retry in line)
        if line.startswith("retry"):
            break
        out = ocwatch("status", "--server", oc_server.url).stdout
    assert line.startswith("retry"), line


@pytest.mark.parametrize(
    ("which", "code"),
    [
        ("completed", 0),
        ("failed", 1),
        ("aborted", 3),
        ("permission", 4),
        ("question", 4),
        ("fresh", 5),
    ],
)
def test_wait_exit_codes_for_settled_sessions(
    oc_server: OpenCodeServer, all_states: AllStates, which: str, code: int
):
    proc = ocwatch(
        "wait", getattr(all_states, which), "--server", oc_server.url, "--timeout", "60", "--json"
    )
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    out = json.loads(proc.stdout)
    assert out["exit_code"] == code and out["session"]["id"] == getattr(all_states, which)


def test_wait_times_out_on_a_busy_session(oc_server: OpenCodeServer, all_states: AllStates):
    t = time.monotonic()
    proc = ocwatch("wait", all_states.busy, "--server", oc_server.url, "--timeout", "2")
    assert proc.returncode == 124, proc.stderr
    assert "timed out" in proc.stderr
    assert time.monotonic() - t < 30


def test_wait_timeout_zero_still_checks_once(oc_server: OpenCodeServer, all_states: AllStates):
    proc = ocwatch("wait", all_states.completed, "--server", oc_server.url, "--timeout", "0")
    assert proc.returncode == 0, proc.stderr
    proc = ocwatch("wait", all_states.busy, "--server", oc_server.url, "--timeout", "0")
    assert proc.returncode == 124 and "timed out after 0s" in proc.stderr


def test_output_into_a_pipe_closed_early_keeps_the_exit_code(
    oc_server: OpenCodeServer, all_states: AllStates
):
    """`ocwatch status | head -1`: no traceback, and the command's own exit code. The pipe's
    reader is gone before ocwatch writes, so every write fails (a few KB would otherwise fit in
    the pipe's buffer and never fail)."""
    env = cli_env()
    for args, code in (
        (["status"], 0),
        (["status", "--json"], 0),
        (["wait", all_states.failed, "--json"], 1),
    ):
        read, write = os.pipe()
        os.close(read)
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "tui.cli.main", *args, "--server", oc_server.url],
                stdout=write,
                stderr=subprocess.PIPE,
                env=env,
                timeout=60,
                text=True,
            )
        finally:
            os.close(write)
        assert proc.returncode == code, proc.stderr
        assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


def test_wait_reads_the_sessions_it_waits_for_not_the_whole_server(
    oc_server: OpenCodeServer, all_states: AllStates
):
    """`ocwatch wait` reads the sessions it waits for and their sub-agents: not every
    session's last message (a wait on a server of 1,000 sessions asked for 1,000), and what it
    says of them is what `status` says, which reads them all."""
    whole = {r["id"]: r for r in status_json(oc_server.url)["sessions"]}
    assert len(whole) >= 10
    with FaultProxy(oc_server.url) as proxy:

        def waited(sid: str) -> tuple[int, dict[str, Any], set[str]]:
            proxy.asked.clear()
            proc = ocwatch("wait", sid, "--server", proxy.url, "--timeout", "0", "--json")
            read = {p.split("/")[2] for p in proxy.asked if p.endswith("/message")}
            return proc.returncode, json.loads(proc.stdout)["session"], read

        code, row, read = waited(all_states.completed)
        assert (code, read) == (0, {all_states.completed})
        assert (row["state"], row["reason"]) == ("idle", "completed")
        # a parent whose sub-agent runs: read with it, busy, as status says (--timeout 0: one
        # look, so 124)
        code, row, read = waited(all_states.parent)
        assert (code, read) == (124, {all_states.parent, all_states.child})
        said = whole[all_states.parent]
        assert (row["state"], row["reason"], row["stale"], row["children"]) == (
            said["state"],
            said["reason"],
            said["stale"],
            said["children"],
        )
        assert row["children"] == [all_states.child] and row["state"] == "busy"


def test_a_prompt_sent_through_another_folder_is_read_in_the_sessions_own(
    oc_server: OpenCodeServer, oc: Driver
):
    """A session of one project prompted through the other's folder (`?directory=`): the
    server lists its status and its permission in the session's own folder, which is all
    `wait` asks (the folders of the sessions it waits for): it says what `status` says."""
    sid = oc.create_session(directory=str(oc_server.project), title="prompted elsewhere")["id"]
    text = f"Please do the permission thing {marker('permission', None)}"
    oc.post(
        f"/session/{sid}/prompt_async",
        {"parts": [{"type": "text", "text": text}]},
        directory=str(oc_server.project2),
    )
    asked: dict[str, Any] = {}
    try:
        asked = oc.wait_permission(sid)  # (listed in its own folder, or this times out)
        proc = ocwatch("wait", sid, "--server", oc_server.url, "--timeout", "0", "--json")
        assert proc.returncode == 4, proc.stderr
        row = json.loads(proc.stdout)["session"]
        said = {r["id"]: r for r in status_json(oc_server.url)["sessions"]}[sid]
        assert row["state"] == said["state"] == "input"
        assert [p["id"] for p in row["pending"]] == [p["id"] for p in said["pending"]]
        assert [p["id"] for p in row["pending"]] == [asked["id"]]
    finally:
        if asked:
            oc.reply_permission(asked["id"], "reject", directory=str(oc_server.project))
        oc.wait_absent(sid)


def test_wait_unknown_session_and_unreachable_server(oc_server: OpenCodeServer):
    proc = ocwatch("wait", "ses_doesnotexist", "--server", oc_server.url, "--timeout", "30")
    assert proc.returncode == 2 and "unknown session" in proc.stderr
    proc = ocwatch("wait", "ses_x", "--server", "http://127.0.0.1:9", "--timeout", "30")
    assert proc.returncode == 2 and "cannot connect" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_wait_follows_a_live_run_and_never_returns_before_completion(oc: Driver):
    sid = oc.run("slow", "3", title="live wait")["id"]
    oc.wait_status(sid, "busy")
    proc = ocwatch("wait", sid, "--server", oc.base_url, "--timeout", "90", "--json")
    returned = time.time()
    assert proc.returncode == 0, proc.stderr
    last = oc.last_assistant(sid)
    assert last is not None and last["info"]["time"].get("completed")
    assert returned * 1000 >= last["info"]["time"]["completed"]
    assert json.loads(proc.stdout)["session"]["reason"] == "completed"


def test_wait_sees_a_live_failure_and_an_abort(oc: Driver, scripted_model: ScriptedModel):
    failing = oc.run("fail", title="live fail")["id"]
    proc = ocwatch("wait", failing, "--server", oc.base_url, "--timeout", "90")
    assert proc.returncode == 1, proc.stderr
    hanging = oc.run("hang", "live-abort", title="live abort")["id"]
    oc.wait_status(hanging, "busy")
    oc.wait_assistant(hanging)
    waiter = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tui.cli.main",
            "wait",
            hanging,
            "--server",
            oc.base_url,
            "--timeout",
            "90",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        proc = ocwatch("abort", hanging, "--server", oc.base_url)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == f"aborted {hanging}"
        out, err = waiter.communicate(timeout=90)
    finally:
        if waiter.poll() is None:
            waiter.kill()
        scripted_model.release("live-abort")
    assert waiter.returncode == 3, (out, err)
    # aborting again: the server accepts it, but nothing was running, and ocwatch says so
    proc = ocwatch("abort", hanging, "--server", oc.base_url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        f"{hanging} was not running (the server reports it idle): nothing to abort"
    )


def test_wrong_or_missing_password_is_one_clear_line(
    oc_server_auth: OpenCodeServer, oc_password: str
):
    for pw in (None, "not-the-password"):
        proc = ocwatch("status", "--server", oc_server_auth.url, password=pw)
        assert proc.returncode == 2
        assert "authentication failed" in proc.stderr and "Traceback" not in proc.stderr
        assert "not-the-password" not in proc.stderr + proc.stdout
    data = status_json(oc_server_auth.url, password=oc_password)
    assert data["servers"][0]["reachable"] is True
    proc = ocwatch("status", "--json", "--server", oc_server_auth.url, password=oc_password)
    assert oc_password not in proc.stdout + proc.stderr


def test_server_restart_mid_run_reads_interrupted_and_wait_survives_it(
    private_server: OpenCodeServer,
    scripted_model: ScriptedModel,
    monkeypatch: pytest.MonkeyPatch,
):
    srv = private_server
    # the restart, not the patience: a loaded machine's server took longer than wait's 15 s to
    # listen again, and wait gave up before it did
    monkeypatch.setattr(wait_module, "UNREACHABLE_PATIENCE", 120.0)
    with Driver(srv.url, default_directory=str(srv.project)) as d:
        sid = d.run("hang", "restart-me", title="cut off by a restart")["id"]
        d.wait_status(sid, "busy")
        d.wait_assistant(sid)
    port = int(srv.url.rsplit(":", 1)[1])
    ready = threading.Event()
    result: dict[str, Any] = {}

    def waiter() -> None:  # `ocwatch wait`, in a thread so the test knows when it follows
        result["got"] = asyncio.run(
            wait_for(sid, srv.url, auth=None, settings=Settings(), timeout=120, on_ready=ready.set)
        )

    thread = threading.Thread(target=waiter, daemon=True)
    thread.start()
    assert ready.wait(60), "the waiter never took its first snapshot"
    srv.kill()
    scripted_model.release("restart-me")
    srv.start(port=port)
    thread.join(120)
    code, row, message = result["got"]
    assert code == 5, message
    assert (row.state, row.reason) == ("unknown", "interrupted")
    assert any("never completed" in e for e in row.evidence)
    data = status_json(srv.url)
    again = next(r for r in data["sessions"] if r["id"] == sid)
    assert (again["state"], again["reason"]) == ("unknown", "interrupted")


# -- acting on a session (issue: act on what needs you) ------------------------------------------
def test_reply_once_lets_the_run_complete(oc: Driver):
    sid = oc.run("permission", title="reply once")["id"]
    req = oc.wait_permission(sid)
    proc = ocwatch("reply", req["id"], "once", "--server", oc.base_url)
    assert proc.returncode == 0, proc.stderr
    proc = ocwatch("wait", sid, "--server", oc.base_url, "--timeout", "90")
    assert proc.returncode == 0, proc.stderr
    again = ocwatch("reply", req["id"], "once", "--server", oc.base_url)
    assert again.returncode == 2 and "already answered" in again.stderr


def test_reply_reject_ends_the_run_aborted(oc: Driver):
    sid = oc.run("permission", title="reply reject")["id"]
    req = oc.wait_permission(sid)
    proc = ocwatch("reply", req["id"], "reject", "--server", oc.base_url)
    assert proc.returncode == 0, proc.stderr
    proc = ocwatch("wait", sid, "--server", oc.base_url, "--timeout", "90", "--json")
    assert proc.returncode == 3, proc.stderr
    row = json.loads(proc.stdout)["session"]
    assert row["reason"] == "aborted" and "refused tool bash" in row["evidence"][0]


def test_reject_with_a_message_lets_the_agent_go_on(oc: Driver):
    # the server hands the message to the model as feedback and the run continues
    sid = oc.run("permission", title="reply reject with feedback")["id"]
    req = oc.wait_permission(sid)
    proc = ocwatch("reply", req["id"], "reject", "--message", "use rsync", "--server", oc.base_url)
    assert proc.returncode == 0, proc.stderr
    assert ocwatch("wait", sid, "--server", oc.base_url, "--timeout", "90").returncode == 0


def test_answer_a_question_with_an_option_and_reject_another(oc: Driver):
    sid = oc.run("question", title="answer")["id"]
    req = oc.wait_question(sid)
    label = req["questions"][0]["options"][0]["label"]
    bad = ocwatch("answer", req["id"], "--option", "No such option", "--server", oc.base_url)
    assert bad.returncode == 2 and "no option" in bad.stderr
    proc = ocwatch("answer", req["id"], "--option", label, "--server", oc.base_url)
    assert proc.returncode == 0, proc.stderr
    assert ocwatch("wait", sid, "--server", oc.base_url, "--timeout", "90").returncode == 0
    sid2 = oc.run("question", title="reject")["id"]
    req2 = oc.wait_question(sid2)
    assert ocwatch("answer", req2["id"], "--reject", "--server", oc.base_url).returncode == 0
    assert ocwatch("wait", sid2, "--server", oc.base_url, "--timeout", "90").returncode == 3


def test_reply_in_the_second_folder(oc: Driver, oc_server: OpenCodeServer):
    sid = oc.run("permission", directory=str(oc_server.project2), title="folder two")["id"]
    req = oc.wait_permission(sid)
    assert ocwatch("reply", req["id"], "always", "--server", oc.base_url).returncode == 0
    assert ocwatch("wait", sid, "--server", oc.base_url, "--timeout", "90").returncode == 0


def test_wait_all_and_any_over_several_sessions_and_servers(
    oc_server: OpenCodeServer, all_states: AllStates, private_server: OpenCodeServer
):
    """`--all` exits with the worst code (error over completed); `--any` returns with the first
    that settles even while another runs on; sessions are looked for on every server."""
    st = all_states
    proc = ocwatch(
        "wait",
        st.completed,
        st.failed,
        "--all",
        "--server",
        oc_server.url,
        "--timeout",
        "60",
        "--json",
    )
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert out["mode"] == "all" and out["exit_code"] == 1
    assert {(s["id"], s["exit_code"]) for s in out["sessions"]} == {
        (st.completed, 0),
        (st.failed, 1),
    }
    t = time.monotonic()
    proc = ocwatch(
        "wait",
        st.busy,
        st.aborted,
        "--any",
        "--server",
        oc_server.url,
        "--server",
        private_server.url,
        "--timeout",
        "60",
        "--json",
    )
    assert proc.returncode == 3, proc.stderr  # the aborted one, at once; busy still running
    assert time.monotonic() - t < 30
    out = json.loads(proc.stdout)
    codes = {s["id"]: s["exit_code"] for s in out["sessions"]}
    assert codes == {st.busy: None, st.aborted: 3}
    with Driver(private_server.url, default_directory=str(private_server.project)) as d:
        other = d.run("text", title="on the second server")["id"]
        d.wait_completed_idle(other)
    proc = ocwatch(
        "wait",
        st.completed,
        other,
        "--server",
        oc_server.url,
        "--server",
        private_server.url,
        "--timeout",
        "60",
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{other}: idle (completed)" in proc.stdout
    proc = ocwatch(
        "wait", st.completed, "ses_nowhere", "--server", oc_server.url, "--timeout", "60"
    )
    assert proc.returncode == 2 and "unknown session ses_nowhere" in proc.stderr


@pytest.mark.parametrize(
    ("scenario", "code", "reason"), [("text", 0, "completed"), ("fail", 1, "error")]
)
def test_prompt_and_wait_exits_with_the_runs_outcome(
    oc_server: OpenCodeServer, oc: Driver, scenario: str, code: int, reason: str
) -> None:
    """Issue 41: `ocwatch prompt SESSION_ID TEXT --wait` sends the prompt and exits as `wait`
    does when the run it started settles (never on the run before it); `-` reads stdin."""
    from .scripted_model import marker

    sid = oc.create_session(title=f"prompt {scenario}")["id"]
    first = ocwatch(
        "prompt",
        sid,
        f"first {marker('text')}",
        "--wait",
        "--json",
        "--timeout",
        "90",
        "--server",
        oc_server.url,
    )
    assert first.returncode == 0, first.stderr
    env = cli_env()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui.cli.main",
            "prompt",
            sid,
            "-",
            "--wait",
            "--json",
            "--timeout",
            "90",
            "--server",
            oc_server.url,
        ],
        input=f"then this {marker(scenario)}\nover two lines",
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == code, proc.stderr
    row = json.loads(proc.stdout)["session"]
    assert (row["state"], row["reason"]) == ("idle", reason)
    users = [m for m in oc.messages(sid) if m["info"]["role"] == "user"]
    assert len(users) == 2
    said = "".join(p.get("text", "") for p in users[-1]["parts"])
    assert "over two lines" in said  # sent whole, its lines kept
    empty = ocwatch("prompt", sid, "  ", "--server", oc_server.url)
    assert empty.returncode == 2 and "the prompt is empty" in empty.stderr
    unknown = ocwatch("prompt", "ses_nope", "x", "--server", oc_server.url)
    assert unknown.returncode == 2 and "unknown session ses_nope" in unknown.stderr


def test_prompt_to_a_new_session_in_a_folder(oc_server: OpenCodeServer, oc: Driver) -> None:
    """Issue 41: `ocwatch prompt --new FOLDER TEXT` starts a session in that project folder
    (its id printed first), and `--wait` follows its run."""
    from .scripted_model import marker

    folder = str(oc_server.project2)
    proc = ocwatch(
        "prompt",
        "--new",
        folder,
        f"fresh start {marker('text')}",
        "--wait",
        "--timeout",
        "90",
        "--server",
        oc_server.url,
    )
    assert proc.returncode == 0, proc.stderr
    sid = proc.stdout.splitlines()[0]
    assert sid.startswith("ses_")
    info = oc.session(sid)
    assert info["directory"] == folder and info["title"].startswith("fresh start")
    relative = ocwatch("prompt", "--new", "relative/dir", "x", "--server", oc_server.url)
    assert relative.returncode == 2 and "absolute path" in relative.stderr


def test_the_dashboards_new_session_runs_its_first_prompt(
    oc_server: OpenCodeServer, oc: Driver
) -> None:
    """Issue 41: `N` in the dashboard (Actions.new_session, core.start_session) makes a session
    in the folder, titled after the prompt, and sends the prompt: its run completes; a blank
    prompt makes a session that waits idle."""
    from tui.app.actions import ClientActions

    from .scripted_model import marker

    folder = str(oc_server.project2)
    acts = ClientActions(oc_server.auth)
    sid = asyncio.run(
        acts.new_session(oc_server.url, folder, f"from the dashboard {marker('text')}")
    )
    info = oc.session(sid)
    assert info["directory"] == folder and info["title"].startswith("from the dashboard")
    oc.wait_assistant_completed(sid)
    idle = asyncio.run(acts.new_session(oc_server.url, folder, "  "))
    assert oc.messages(idle) == []
