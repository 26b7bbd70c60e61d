"""OpenCode V2 (2.0.15), read as truthfully as V1: every kind of run passes through exactly its
lifecycle in every View and in `ocwatch watch --json`; `status --json` and `wait` say what the
run did; a restart, a cut stream and a finished run still listed as active are read right.

ocwatch's own actions answer, reject, dismiss and interrupt (`ocwatch reply`, `answer`,
`abort`, as a user runs them), and the server is seen to apply each.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_env import cli_env
from tui.core.settings import Auth

from .conftest import start_v2
from .driver import Driver, wait_until
from .driver_v2 import V2Driver
from .fault_proxy import FaultProxy, response
from .oc_server import OpenCodeServer
from .scripted_model import ScriptedModel
from .test_lifecycles import (
    ABORTED,
    BUSY,
    DONE,
    FAILED,
    IDLE,
    INPUT,
    RETRY,
    State,
    Watcher,
    WatchProcess,
    check,
    seen_beside,
)

UNKNOWN_CUT: State = ("unknown", "interrupted", False)


def auth_of(server: OpenCodeServer) -> Auth:
    assert server.password is not None
    return Auth("opencode", server.password)


def ocwatch(*args: str, password: str | None, timeout: float = 60) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "tui.cli.main", *args],
        capture_output=True,
        text=True,
        env=cli_env(password),
        timeout=timeout,
    )
    return proc.returncode, proc.stdout, proc.stderr


def status_json(url: str, password: str | None) -> dict[str, Any]:
    code, out, err = ocwatch("status", "--json", "--server", url, password=password)
    assert code == 0, err
    return json.loads(out)


def row(status: dict[str, Any], sid: str) -> dict[str, Any]:
    (got,) = [s for s in status["sessions"] if s["id"] == sid]
    return got


@pytest.fixture(scope="module")
def followers2(oc2_server: OpenCodeServer) -> Iterator[tuple[Watcher, WatchProcess]]:
    watcher = Watcher(oc2_server.url, auth_of(oc2_server)).start()
    proc = watcher.beside = WatchProcess(oc2_server.url, oc2_server.password)
    with V2Driver(oc2_server.url, auth=oc2_server.auth, directory=str(oc2_server.project)) as d:
        sentinel = d.create("v2 lifecycle sentinel")
        wait_until(
            lambda: proc.of(sentinel) or proc.proc.poll() is not None,
            60,
            what="watch following the V2 server",
        )
    yield watcher, proc
    watcher.stop()
    code, err = proc.stop()
    assert code == 0, err


def fresh(oc2: V2Driver, watcher: Watcher, title: str, directory: str | None = None) -> str:
    sid = oc2.create(title, directory)
    watcher.wait_last(sid, IDLE)
    seen_beside(watcher, sid)
    return sid


def test_the_server_is_probed_as_v2(oc2_server: OpenCodeServer, oc2: V2Driver) -> None:
    got = status_json(oc2_server.url, oc2_server.password)
    (server,) = got["servers"]
    assert server["protocol"] == "v2" and server["version"] == "2.0.15"
    assert server["reachable"] and server["error"] is None
    code, out, err = ocwatch("status", "--server", oc2_server.url, password=oc2_server.password)
    assert code == 0, err
    assert "OpenCode V2  version 2.0.15  reachable" in out


def test_completed_then_a_second_prompt(oc2: V2Driver, followers2, oc2_server) -> None:
    watcher, proc = followers2
    sid = fresh(oc2, watcher, "v2 completed")
    oc2.prompt(sid, "text", "first v2 run")
    watcher.wait_last(sid, DONE)
    oc2.prompt(sid, "text", "second v2 run")
    wait_until(
        lambda: watcher.lifecycle(sid)["emitted"] == [IDLE, BUSY, DONE, BUSY, DONE],
        60,
        what="the second run's completion",
    )
    check(watcher, proc, sid, [IDLE, BUSY, DONE, BUSY, DONE])
    got = row(status_json(oc2_server.url, oc2_server.password), sid)
    assert (got["state"], got["reason"]) == ("idle", "completed")
    assert any("idle (succeeded)" in e for e in got["evidence"]), got["evidence"]
    assert got["directory"] == str(oc2_server.project) and got["cost"]


def test_error(oc2: V2Driver, followers2, oc2_server) -> None:
    watcher, proc = followers2
    sid = fresh(oc2, watcher, "v2 error")
    oc2.prompt(sid, "fail")
    watcher.wait_last(sid, FAILED)
    check(watcher, proc, sid, [IDLE, BUSY, FAILED])
    got = row(status_json(oc2_server.url, oc2_server.password), sid)
    assert got["error"] and "scripted bad request" in got["error"]


def act(server: OpenCodeServer, *args: str) -> tuple[int, str, str]:
    """One of ocwatch's actions on the V2 server, as a user runs it."""
    return ocwatch(*args, "--server", server.url, password=server.password)


def test_interrupted(
    oc2: V2Driver, scripted_model: ScriptedModel, followers2, oc2_server: OpenCodeServer
) -> None:
    watcher, proc = followers2
    sid = fresh(oc2, watcher, "v2 interrupted")
    oc2.prompt(sid, "hang", "v2-interrupt")
    watcher.wait_last(sid, BUSY)
    code, out, err = act(oc2_server, "abort", sid)
    assert (code, out.strip()) == (0, f"aborted {sid}"), err
    assert oc2.wait_outcome(sid, "interrupted")
    watcher.wait_last(sid, ABORTED)
    scripted_model.release("v2-interrupt")
    check(watcher, proc, sid, [IDLE, BUSY, ABORTED])
    code, out, _ = act(oc2_server, "abort", sid)  # idle now: said, nothing done
    assert code == 0 and "was not running" in out


def test_retry_then_interrupted(oc2: V2Driver, followers2, oc2_server) -> None:
    watcher, proc = followers2
    sid = fresh(oc2, watcher, "v2 retry")
    oc2.prompt(sid, "unavailable", text="v2 retry")
    oc2.wait_retry(sid)
    watcher.wait_last(sid, RETRY)
    got = row(status_json(oc2_server.url, oc2_server.password), sid)
    assert got["state"] == "retry" and got["retry"]["attempt"] >= 1, got
    assert "scripted overload" in got["retry"]["message"]
    assert act(oc2_server, "abort", sid)[0] == 0
    watcher.wait_last(sid, ABORTED)
    check(watcher, proc, sid, [IDLE, BUSY, RETRY, ABORTED])


@pytest.mark.parametrize(
    ("decision", "want"),
    [
        ("once", [IDLE, BUSY, INPUT, BUSY, DONE]),
        ("always", [IDLE, BUSY, INPUT, BUSY, DONE]),
        # 2.0.15 ends this run with `interrupted {reason: "shutdown"}`: the user's reject
        # just before says it was the user
        ("reject", [IDLE, BUSY, INPUT, ABORTED]),
    ],
)
def test_permission(
    oc2: V2Driver, followers2, oc2_server, decision: str, want: list[State]
) -> None:
    watcher, proc = followers2
    sid = fresh(oc2, watcher, f"v2 permission {decision}")
    # ("always" saves a rule for the command's name: another name, not to grant the others)
    oc2.prompt(sid, "permission", f"{'printf' if decision == 'always' else 'echo'} v2-{decision}")
    req = oc2.wait_permission(sid)
    watcher.wait_last(sid, INPUT)
    got = row(status_json(oc2_server.url, oc2_server.password), sid)
    assert got["state"] == "input"
    (pending,) = got["pending"]
    assert pending["kind"] == "permission" and pending["id"] == req["id"]
    assert f" v2-{decision}" in pending["summary"]
    code, _, _ = ocwatch(
        "wait", sid, "--server", oc2_server.url, "--timeout", "0", password=oc2_server.password
    )
    assert code == 4
    code, out, err = act(oc2_server, "reply", req["id"], decision)
    assert (code, out.strip()) == (0, f"replied {decision} to {req['id']}"), err
    assert not any(p["id"] == req["id"] for p in oc2.permissions())  # applied by the server
    watcher.wait_last(sid, want[-1])
    check(watcher, proc, sid, want)
    code, _, _ = ocwatch(
        "wait", sid, "--server", oc2_server.url, "--timeout", "30", password=oc2_server.password
    )
    assert code == (0 if want[-1] == DONE else 3)


@pytest.mark.parametrize(
    ("answer", "want"),
    [
        ("answer", [IDLE, BUSY, INPUT, BUSY, DONE]),
        ("dismiss", [IDLE, BUSY, INPUT, ABORTED]),
        # the run aborted while its form is open: the server cancels the form and fails its
        # call ("Tool execution interrupted") before the run; never busy between
        ("abort", [IDLE, BUSY, INPUT, ABORTED]),
    ],
)
def test_question(oc2: V2Driver, followers2, oc2_server, answer: str, want: list[State]) -> None:
    watcher, proc = followers2
    sid = fresh(oc2, watcher, f"v2 question {answer}")
    oc2.prompt(sid, "question", text=f"v2 question {answer}")
    form = oc2.wait_form(sid)
    watcher.wait_last(sid, INPUT)
    got = row(status_json(oc2_server.url, oc2_server.password), sid)
    (pending,) = got["pending"]
    assert pending["kind"] == "question" and pending["id"] == form["id"]
    assert "Which colour should I use?" in pending["summary"]
    if answer == "abort":
        code, out, err = act(oc2_server, "abort", sid)
    else:
        how = ("--option", "Red") if answer == "answer" else ("--reject",)
        code, out, err = act(oc2_server, "answer", form["id"], *how)
    assert code == 0, err
    watcher.wait_last(sid, want[-1])
    assert not any(f["id"] == form["id"] for f in oc2.forms())  # applied by the server
    check(watcher, proc, sid, want)
    if answer == "answer":  # the model was told the option's value
        said = json.dumps(oc2.messages(sid, 10))
        assert '\\"Which colour should I use?\\"=\\"Red\\"' in said, said[:2000]


def test_a_sub_agent_asking_rolls_up_to_its_parent(oc2: V2Driver, followers2, oc2_server):
    watcher, proc = followers2
    sid = fresh(oc2, watcher, "v2 sub-agent")
    oc2.prompt(sid, "task", "permission")
    child = wait_until(lambda: (oc2.children(sid) or [None])[0], what="the sub-agent session")
    req = oc2.wait_permission(child)
    watcher.wait_last(sid, INPUT)
    watcher.wait_last(child, INPUT)
    got = status_json(oc2_server.url, oc2_server.password)
    parent, kid = row(got, sid), row(got, child)
    assert kid["parent_id"] == sid and child in parent["children"]
    assert parent["state"] == "input" and parent["pending"][0]["id"] == req["id"]
    assert any(f"sub-agent {child}" in e for e in parent["evidence"])
    oc2.reply_permission(child, req["id"], "once")
    watcher.wait_last(sid, DONE)
    watcher.wait_last(child, DONE)
    assert watcher.lifecycle(sid)["settled"] == [IDLE, BUSY, INPUT, BUSY, DONE]


def test_two_folders(oc2: V2Driver, followers2, oc2_server):
    watcher, proc = followers2
    beta = str(oc2_server.project2)
    sid = fresh(oc2, watcher, "v2 in beta", beta)
    oc2.prompt(sid, "permission", "echo v2-beta")
    req = oc2.wait_permission(sid, beta)
    watcher.wait_last(sid, INPUT)  # asked in the second folder: read there
    oc2.reply_permission(sid, req["id"], "once")
    watcher.wait_last(sid, DONE)
    check(watcher, proc, sid, [IDLE, BUSY, INPUT, BUSY, DONE])
    got = row(status_json(oc2_server.url, oc2_server.password), sid)
    assert got["directory"] == beta and got["reason"] == "completed"


def test_wait_exit_codes(oc2: V2Driver, oc2_server) -> None:
    done, failed = oc2.run("text"), oc2.run("fail")
    oc2.wait_outcome(done, "succeeded")
    oc2.wait_outcome(failed, "failed")
    for sid, want in ((done, 0), (failed, 1)):
        code, out, err = ocwatch(
            "wait",
            sid,
            "--server",
            oc2_server.url,
            "--timeout",
            "30",
            "--json",
            password=oc2_server.password,
        )
        assert code == want, (out, err)
        assert json.loads(out)["exit_code"] == want


def test_a_finished_run_still_listed_active_is_stale(
    oc2: V2Driver, oc2_server: OpenCodeServer
) -> None:
    """Not seen on 2.0.15: a proxy keeps a finished run in `/api/session/active` and swallows
    its end's events. The row reads busy, then stale with the evidence, never idle."""
    with FaultProxy(oc2_server.url) as fp:
        sid = oc2.create("v2 stale")
        body = json.dumps({"data": {sid: {"type": "running"}}}).encode()
        fp.answer["/api/session/active"] = response(
            "200 OK", body, "content-type: application/json"
        )
        fp.swallow.update({"session.execution.succeeded"})
        watcher = Watcher(fp.url, auth_of(oc2_server)).start()
        try:
            oc2.prompt(sid, "text", "v2 stale run")
            oc2.wait_outcome(sid, "succeeded")
            wait_until(
                lambda: watcher.last(sid) == ("busy", None, True),
                30,
                what=f"{sid} flagged stale (now {watcher.last(sid)})",
            )
            assert ("idle", "completed", False) not in watcher.lifecycle(sid)["shown"]
            with watcher._lock:
                evidence = watcher.evidence[sid]
            assert any(e.startswith("STALE: run ended") for e in evidence), evidence
        finally:
            watcher.stop()


def test_a_cut_stream_loses_no_run(oc2: V2Driver, oc2_server: OpenCodeServer) -> None:
    with FaultProxy(oc2_server.url) as fp:
        proc = WatchProcess(fp.url, oc2_server.password)
        try:
            sid = oc2.create("v2 cut stream")
            wait_until(lambda: proc.of(sid), 60, what="watch seeing the session")
            oc2.prompt(sid, "permission", "echo v2-cut")
            req = oc2.wait_permission(sid)
            wait_until(
                lambda: [x["to"]["state"] for x in proc.of(sid) if x["to"]][-1] == "input",
                30,
                what="watch printing input",
            )
            fp.cut_streams()
            oc2.reply_permission(sid, req["id"], "once")
            oc2.wait_outcome(sid, "succeeded")
            wait_until(
                lambda: [tuple(x["to"].values()) for x in proc.of(sid) if x["to"]][-1] == DONE,
                60,
                what=f"watch printing the run's end after the cut ({proc.of(sid)})",
            )
            states = [tuple(x["to"].values()) for x in proc.of(sid) if x["to"]]
            assert states[0] == IDLE and INPUT in states and states[-1] == DONE
            assert all(s in (IDLE, BUSY, INPUT, DONE) for s in states), states
        finally:
            code, err = proc.stop()
        assert code == 0, err


def test_killed_and_restarted_mid_run_reads_interrupted(
    opencode2_bin: str, scripted_model: ScriptedModel
) -> None:
    root = Path(tempfile.mkdtemp(prefix="ocwatch-it-v2-kill-"))
    srv = start_v2(opencode2_bin, root, scripted_model)
    try:
        with V2Driver(srv.url, auth=srv.auth, directory=str(srv.project)) as d:
            sid = d.run("hang", "v2-killed")
            d.wait_active(sid)
            wait_until(lambda: d.messages(sid, 2)[0].get("type") == "assistant", what="a step")
            before = status_json(srv.url, srv.password)
            assert row(before, sid)["state"] == "busy"
        port = int(srv.url.rsplit(":", 1)[1])
        srv.kill()
        srv.start(port=port)
        got = wait_until(
            lambda: (r := row(status_json(srv.url, srv.password), sid))["state"] == "unknown" and r,
            30,
            what="the cut run read as unknown",
        )
        assert got["reason"] == "interrupted", got
        assert any("never completed" in e for e in got["evidence"]), got["evidence"]
        code, _, _ = ocwatch(
            "wait", sid, "--server", srv.url, "--timeout", "20", password=srv.password
        )
        assert code == 5
    finally:
        scripted_model.release("v2-killed")
        srv.stop()


def test_v1_and_v2_side_by_side(oc_server: OpenCodeServer, oc2_server: OpenCodeServer, oc2):
    """One `status --json` over a V1 and a V2 server (each with only its own password: the V1
    server of the suite has none)."""
    sid = oc2.run("text")
    oc2.wait_outcome(sid, "succeeded")
    config = Path(tempfile.mkdtemp(prefix="ocwatch-it-mixed-")) / "config.toml"  # $OCWATCH_CONFIG
    config.write_text(
        f'[[servers]]\nurl = "{oc_server.url}"\n\n'
        f'[[servers]]\nurl = "{oc2_server.url}"\npassword_env = "OCW_V2_PASSWORD"\n'
    )
    env = cli_env()
    env["OCW_V2_PASSWORD"] = oc2_server.password or ""
    env["OCWATCH_CONFIG"] = str(config)
    proc = subprocess.run(
        [sys.executable, "-m", "tui.cli.main", "status", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    protocols = {s["url"]: s["protocol"] for s in got["servers"]}
    assert protocols == {oc_server.url: "v1", oc2_server.url: "v2"}
    assert row(got, sid)["reason"] == "completed"
    # one `wait --all` across both: a run on each, the worst exit code of the two
    with Driver(oc_server.url, default_directory=str(oc_server.project)) as v1:
        one = v1.run("slow", "2", title="mixed wait v1")["id"]
    two = oc2.run("fail")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui.cli.main",
            "wait",
            "--all",
            "--json",
            one,
            two,
            "--timeout",
            "90",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr  # the V2 run failed: the worst of the two
    said = json.loads(proc.stdout)
    ended = {x["id"]: (x["exit_code"], x["session"]["reason"]) for x in said["sessions"]}
    assert ended == {one: (0, "completed"), two: (1, "error")}, proc.stdout


async def test_v1_and_v2_side_by_side_in_one_dashboard(
    oc_server: OpenCodeServer, oc2_server: OpenCodeServer, oc2: V2Driver
) -> None:
    import asyncio

    import httpx

    from tui.app import DashboardOptions, create_app
    from tui.app.widgets.session_table import row_key_str
    from tui.core.fleet import Fleet

    v1_sid = httpx.post(
        f"{oc_server.url}/session", json={"title": "side by side v1"}, timeout=30
    ).json()["id"]
    v2_sid = oc2.run("text")
    oc2.wait_outcome(v2_sid, "succeeded")
    fleet = Fleet([oc_server.url, oc2_server.url], auths={oc2_server.url: auth_of(oc2_server)})
    app = create_app(fleet, DashboardOptions(server_urls=[oc_server.url, oc2_server.url]))
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.main_screen.table
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60

        def row_of(url: str, sid: str) -> str | None:
            try:
                return " ".join(c.plain for c in table.get_row(row_key_str((url, sid))))
            except Exception:  # not on screen yet
                return None

        while not ((a := row_of(oc_server.url, v1_sid)) and (b := row_of(oc2_server.url, v2_sid))):
            assert loop.time() < deadline, "the two servers' sessions never both showed"
            await pilot.pause(0.1)
        assert "idle" in a and "idle" in b and "completed" in b
        infos = {s.url: s for s in app.view.servers}
        assert infos[oc_server.url].protocol == "v1" and infos[oc2_server.url].protocol == "v2"
        assert all(s.reachable for s in infos.values())


def test_stopped_and_restarted_mid_run_reads_interrupted(
    opencode2_bin: str, scripted_model: ScriptedModel
) -> None:
    """A V2 server stopped (SIGTERM) mid-run closes its steps as aborted, with no marker: the
    runs were cut by the server, not ended by anyone (unknown, interrupted; `wait` exits 5),
    the one waiting for a permission too."""
    import os
    import signal

    root = Path(tempfile.mkdtemp(prefix="ocwatch-it-v2-term-"))
    srv = start_v2(opencode2_bin, root, scripted_model)
    try:
        with V2Driver(srv.url, auth=srv.auth, directory=str(srv.project)) as d:
            hang = d.run("hang", "v2-stopped")
            asking = d.run("permission", "echo v2-stopped")
            d.wait_active(hang)
            wait_until(lambda: d.messages(hang, 2)[0].get("type") == "assistant", what="a step")
            d.wait_permission(asking)
        port = int(srv.url.rsplit(":", 1)[1])
        assert srv.proc is not None
        os.killpg(srv.proc.pid, signal.SIGTERM)
        srv.proc.wait(30)
        srv.proc = None
        srv.start(port=port)
        got = status_json(srv.url, srv.password)
        for sid in (hang, asking):
            r = row(got, sid)
            assert (r["state"], r["reason"]) == ("unknown", "interrupted"), r
            assert any("server stopped mid-run" in e for e in r["evidence"]), r["evidence"]
        code, _, _ = ocwatch(
            "wait", hang, "--server", srv.url, "--timeout", "20", password=srv.password
        )
        assert code == 5
    finally:
        scripted_model.release("v2-stopped")
        srv.stop()


def test_a_report_bundles_a_v2_sessions_transcript_and_raw_entries(
    oc2: V2Driver, oc2_server: OpenCodeServer
) -> None:
    """Issue 39: `report` on a V2 session waiting for a permission: its row, the protocol, the
    transcript's typed entries as the server gave them beside what ocwatch read of them, and
    the raw entries of the active list and the permission route."""
    sid = oc2.run("permission", "echo v2-report")
    req = oc2.wait_permission(sid)
    code, out, err = ocwatch(
        "report", sid, "--for", "1", "--server", oc2_server.url, password=oc2_server.password
    )
    assert code == 0, err
    got = json.loads(out)
    assert got["server"]["protocol"] == "v2"
    assert got["session"]["state"] == "input"
    kinds = [e.get("type") for e in got["transcript"]]
    assert kinds[0] == "user" and "assistant" in kinds, kinds
    assert got["messages"] and got["messages"][0]["info"]["role"] == "user"
    assert got["server_entries"]["status"]["entry"] == {"type": "running"}
    (perm,) = got["server_entries"]["permissions"]
    assert perm["entry"]["id"] == req["id"] and perm["entry"]["action"] == "shell"
    assert oc2_server.password and oc2_server.password not in out
    code, out, err = ocwatch(
        "report",
        sid,
        "--for",
        "1",
        "--redact",
        "--server",
        oc2_server.url,
        password=oc2_server.password,
    )
    assert code == 0, err
    assert "v2-report" not in out  # the command is text: redacted, in the raw entries too
    act = ocwatch(
        "reply", req["id"], "reject", "--server", oc2_server.url, password=oc2_server.password
    )
    assert act[0] == 0, act[2]


def test_prompt_on_v2_starts_a_run_and_waits_for_its_end(
    oc2: V2Driver, oc2_server: OpenCodeServer
) -> None:
    """Issue 41: `ocwatch prompt` on a V2 server (`POST /api/session/{id}/prompt`)."""
    from .scripted_model import marker

    sid = oc2.create("v2 prompt")
    code, out, err = act(
        oc2_server, "prompt", sid, f"go {marker('text')}", "--wait", "--json", "--timeout", "90"
    )
    assert code == 0, err
    assert json.loads(out)["session"]["reason"] == "completed"
    assert oc2.session(sid).get("outcome") == "succeeded"


def test_prompt_to_a_new_v2_session(oc2: V2Driver, oc2_server: OpenCodeServer) -> None:
    from .scripted_model import marker

    code, out, err = act(
        oc2_server,
        "prompt",
        "--new",
        str(oc2_server.project),
        f"new one {marker('text')}",
        "--wait",
        "--json",
        "--timeout",
        "90",
    )
    assert code == 0, err
    row = json.loads(out)["session"]
    assert row["reason"] == "completed" and oc2.session(row["id"]).get("outcome") == "succeeded"
