"""Record real runs of every kind on a real `opencode serve`, then replay the file: the final
View and every session's transitions equal what the live monitors said (`status --json` live at
the end against `status --json --replay`, `watch --json` live against `watch --json --replay`),
and a recording made with a password holds no trace of it."""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.cli_env import cli_env

from .driver import Driver, interrupt, wait_until
from .driver_v2 import V2Driver
from .oc_server import OpenCodeServer
from .scripted_model import ScriptedModel
from .test_lifecycles import WatchProcess, _flaky_then_slow


def ocwatch(*args: str, password: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=cli_env(password),
    )


class Recording:
    """`ocwatch record FILE` running, its stderr read as it comes (it says when it follows)."""

    def __init__(self, path: Path, url: str, password: str | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tui.cli.main", "record", str(path), "-s", url],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(password),
        )
        self.said: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.said.append(line)

    def following(self) -> None:
        """Until the recorder says its first snapshot is in the file and its stream is live:
        from then on every session the test makes is in the recording from its first event
        (the recorder is a monitor of its own: started first, it may still connect last)."""
        wait_until(
            lambda: any("ocwatch record: following" in x for x in self.said),
            60,
            what=f"the recorder following the server (it said {self.said})",
        )

    def stop(self) -> tuple[int, str]:
        code = interrupt(self.proc, 20)
        self._reader.join(10)
        return code, "".join(self.said)


def states(status: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {
        r["id"]: (
            r["state"],
            r["reason"],
            r["stale"],
            tuple(p["id"] for p in r["pending"]),
            r["parent_id"],
            r["title"],
        )
        for r in status["sessions"]
    }


FRESH = ("idle", None, False)


def lifecycles(lines: list[dict[str, Any]], sids: set[str]) -> dict[str, list[Any]]:
    """Each session's transitions, (from, to). A session the server creates and prompts at
    once (a sub-agent's) may be first seen idle or already busy, by sampling: its first sight
    idle, when followed by busy, is dropped."""
    out: dict[str, list[Any]] = {}
    for x in lines:
        if x["session_id"] in sids:
            out.setdefault(x["session_id"], []).append(
                (x["from"] and tuple(x["from"].values()), x["to"] and tuple(x["to"].values()))
            )
    for sid, seq in out.items():
        if len(seq) > 1 and seq[0] == (None, FRESH) and seq[1][0] == FRESH:
            out[sid] = [(None, seq[1][1]), *seq[2:]]
    return out


def test_real_runs_of_every_kind_replay_as_the_live_monitors_saw_them(
    private_server: OpenCodeServer, scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    url = private_server.url
    path = tmp_path / "real.ndjson.gz"
    recorder = Recording(path, url)
    live = WatchProcess(url)
    _flaky_then_slow(scripted_model)
    try:
        recorder.following()
        with Driver(url, default_directory=str(private_server.project)) as d:
            sentinel = d.create_session(title="recording sentinel")["id"]
            wait_until(lambda: live.of(sentinel), 60, what="watch following the server")
            sids: dict[str, str] = {}

            def settled(
                sid: str, state: str, reason: str | None = None, timeout: float = 90
            ) -> None:
                wait_until(
                    lambda: any(
                        x["to"] and x["to"]["state"] == state and x["to"]["reason"] == reason
                        for x in live.of(sid)
                    ),
                    timeout,
                    what=f"{sid} {state} {reason} (got {live.of(sid)})",
                )

            def run(kind: str, scenario: str, arg: str | None = None, text: str = "") -> str:
                """A session seen idle by the live watch first, then prompted (so that both
                monitors see it idle before it runs: first sight is a matter of sampling)."""
                sid = sids[kind] = d.create_session(title=f"rec {kind}")["id"]
                wait_until(lambda: live.of(sid), 30, what=f"watch seeing {kind}")
                d.prompt(sid, text or f"Please do the {scenario} thing", scenario, arg)
                return sid

            run("completed", "text")
            run("failed", "fail")
            run("permission", "permission", "echo rec-once")
            req = d.wait_permission(sids["permission"])
            settled(sids["permission"], "input")
            d.reply_permission(req["id"], "once", directory=d.dir_of(sids["permission"]))
            run("question", "question")
            qreq = d.wait_question(sids["question"])
            settled(sids["question"], "input")
            d.reply_question(qreq["id"], [["Blue"]], directory=d.dir_of(sids["question"]))
            run("aborted", "hang", "rec-abort")
            settled(sids["aborted"], "busy")
            d.abort(sids["aborted"])
            settled(sids["aborted"], "idle", "aborted")
            scripted_model.release("rec-abort")
            run("retry", "flakyslow", text="recording retry")
            run("parent", "task", "slow/1")
            sids["child"] = d.wait_child(sids["parent"])["id"]
            for kind in ("completed", "permission", "question", "retry", "parent", "child"):
                settled(sids[kind], "idle", "completed")
            settled(sids["failed"], "idle", "error")
            time.sleep(4)  # past the grace period: nothing is settling any more
            live_status = ocwatch("status", "--json", "-s", url)
            assert live_status.returncode == 0, live_status.stderr
    finally:
        code, err = live.stop()
        rec_code, rec_err = recorder.stop()
    assert code == 0, err
    assert rec_code == 0, rec_err
    assert "records," in rec_err

    replayed = ocwatch("status", "--json", "--replay", str(path))
    assert replayed.returncode == 0, replayed.stderr
    want = states(json.loads(live_status.stdout))
    got = states(json.loads(replayed.stdout))
    ours = set(sids.values()) | {sentinel}
    assert {k: got.get(k) for k in ours} == {k: want[k] for k in ours}
    assert got == want  # nothing else either

    watched = ocwatch("watch", "--json", "--replay", str(path))
    assert watched.returncode == 0, watched.stderr
    replay_lines = [json.loads(x) for x in watched.stdout.splitlines()]
    assert lifecycles(replay_lines, ours) == lifecycles(live.lines, ours)
    done = ("idle", "completed", False)
    seen = [  # (the recorder followed before the session was made: it saw it idle first)
        (x["from"] and x["from"]["state"], x["to"]["state"])
        for x in replay_lines
        if x["session_id"] == sids["permission"]
    ]
    assert seen == [
        (None, "idle"),
        ("idle", "busy"),
        ("busy", "input"),
        ("input", "busy"),
        ("busy", "idle"),
    ]
    assert lifecycles(replay_lines, {sids["permission"]})[sids["permission"]] == [
        (None, ("busy", None, False)),
        (("busy", None, False), ("input", None, False)),
        (("input", None, False), ("busy", None, False)),
        (("busy", None, False), done),
    ]


def test_a_recording_made_with_a_password_holds_no_trace_of_it(
    oc_server_auth: OpenCodeServer, oc_password: str, oc_auth: Driver, tmp_path: Path
) -> None:
    path = tmp_path / "locked.ndjson"
    recorder = Recording(path, oc_server_auth.url, password=oc_password)
    try:
        wait_until(
            lambda: path.exists() and b'"begin":false' in path.read_bytes(),
            60,
            what="the recorder's first snapshot",
        )
        sid = oc_auth.run("text", title="recorded with a password")["id"]
        oc_auth.wait_assistant_completed(sid)
        wait_until(
            lambda: sid.encode() in path.read_bytes() and b"session.idle" in path.read_bytes(),
            60,
            what="the run in the recording",
        )
    finally:
        code, err = recorder.stop()
    assert code == 0, err
    written = path.read_bytes()
    for trace in (
        oc_password,
        base64.b64encode(f"opencode:{oc_password}".encode()).decode(),
        base64.b64encode(oc_password.encode()).decode(),
    ):
        assert trace.encode() not in written
    replayed = ocwatch("status", "--json", "--replay", str(path))
    assert replayed.returncode == 0, replayed.stderr
    row = next(r for r in json.loads(replayed.stdout)["sessions"] if r["id"] == sid)
    assert (row["state"], row["reason"]) == ("idle", "completed")


def test_a_report_of_a_failed_session_on_the_real_server(
    oc_server: OpenCodeServer, oc: Driver, tmp_path: Path
) -> None:
    sid = oc.run("fail", title="report me", text="the secret plan is Tuesday")["id"]
    oc.wait_assistant_completed(sid, finish=None)
    proc = ocwatch("report", sid, "-s", oc_server.url, "--for", "1")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["session"]["id"] == sid
    assert (got["session"]["state"], got["session"]["reason"]) == ("idle", "error")
    assert got["server"]["version"] == "1.18.33"
    assert any(m["info"].get("error", {}).get("name") == "APIError" for m in got["messages"])
    assert "the secret plan is Tuesday" in proc.stdout
    hidden = ocwatch("report", sid, "-s", oc_server.url, "--for", "1", "--redact")
    assert hidden.returncode == 0, hidden.stderr
    assert "the secret plan is Tuesday" not in hidden.stdout
    assert json.loads(hidden.stdout)["session"]["state"] == "idle"
    capture = tmp_path / "capture.ndjson.gz"
    wrote = ocwatch("report", sid, "-s", oc_server.url, "--for", "1", "-o", str(capture))
    assert wrote.returncode == 0, wrote.stderr
    replayed = ocwatch("status", "--json", "--replay", str(capture))
    row = next(r for r in json.loads(replayed.stdout)["sessions"] if r["id"] == sid)
    assert (row["state"], row["reason"]) == ("idle", "error")
    missing = ocwatch("report", "ses_nope", "-s", oc_server.url, "--for", "0")
    assert missing.returncode == 2 and "ses_nope is on none" in missing.stderr


def test_a_v2_server_records_and_replays_as_the_live_monitors_saw_it(
    oc2: V2Driver, oc2_server: OpenCodeServer, scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    """Issue 39: a recording of a V2 (2.0.15) server says the protocol its snapshots were read
    by, holds no trace of its password, and replays exactly (`status --replay` and `watch
    --replay` against what a live `status` and `watch` said), through ocwatch's own actions."""
    url, password = oc2_server.url, oc2_server.password
    assert password is not None
    path = tmp_path / "v2.ndjson.gz"
    recorder = Recording(path, url, password)
    live = WatchProcess(url, password)
    try:
        recorder.following()
        sentinel = oc2.create("v2 recording sentinel")
        wait_until(lambda: live.of(sentinel), 60, what="watch following the V2 server")

        def fresh(title: str, scenario: str, arg: str | None = None) -> str:
            sid = oc2.create(title)
            wait_until(lambda: live.of(sid), 30, what=f"watch seeing {title}")
            oc2.prompt(sid, scenario, arg)
            return sid

        def settled(sid: str, state: str, reason: str | None = None) -> None:
            wait_until(
                lambda: any(
                    x["to"] and (x["to"]["state"], x["to"]["reason"]) == (state, reason)
                    for x in live.of(sid)
                ),
                90,
                what=f"{sid} {state} {reason}",
            )

        done = fresh("rec v2 completed", "text")
        failed = fresh("rec v2 failed", "fail")
        asked = fresh("rec v2 permission", "permission", "echo rec-v2")
        req = oc2.wait_permission(asked)
        settled(asked, "input")
        act = ocwatch("reply", req["id"], "once", "-s", url, password=password)
        assert act.returncode == 0, act.stderr
        aborted = fresh("rec v2 aborted", "hang", "rec-v2-abort")
        settled(aborted, "busy")
        act = ocwatch("abort", aborted, "-s", url, password=password)
        assert act.returncode == 0, act.stderr
        settled(aborted, "idle", "aborted")
        scripted_model.release("rec-v2-abort")
        for sid in (done, asked):
            settled(sid, "idle", "completed")
        settled(failed, "idle", "error")
        ours = {sentinel, done, failed, asked, aborted}
        wait_until(  # past the grace period: nothing is settling any more
            lambda: all(
                x["settled"]
                for x in json.loads(
                    ocwatch("status", "--json", "-s", url, password=password).stdout
                )["sessions"]
                if x["id"] in ours
            ),
            30,
            what="every row settled",
        )
        live_status = ocwatch("status", "--json", "-s", url, password=password)
        assert live_status.returncode == 0, live_status.stderr
    finally:
        code, err = live.stop()
        rec_code, rec_err = recorder.stop()
    assert code == 0, err
    assert rec_code == 0, rec_err
    raw = gzip.decompress(path.read_bytes()).decode()
    assert password not in raw
    assert '"protocol":"v2"' in raw  # each installed snapshot says what it was read by
    replayed = ocwatch("status", "--json", "--replay", str(path))
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["servers"][0]["protocol"] == "v2"
    want = states(json.loads(live_status.stdout))
    got = states(json.loads(replayed.stdout))
    assert {k: got.get(k) for k in ours} == {k: want[k] for k in ours}
    watched = ocwatch("watch", "--json", "--replay", str(path))
    assert watched.returncode == 0, watched.stderr
    replay_lines = [json.loads(x) for x in watched.stdout.splitlines()]
    assert lifecycles(replay_lines, ours) == lifecycles(live.lines, ours)
