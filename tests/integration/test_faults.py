"""Faults between ocwatch and a real `opencode serve`, injected by tests/integration/fault_proxy.py:
ocwatch shows the fault, never a wrong settled state, and converges to the server's truth."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_env import cli_env
from tests.procstat import rss_mb
from tui.core.settings import Settings

from . import fault_proxy as fp
from .driver import Driver, wait_until
from .fault_proxy import FaultProxy
from .oc_server import OpenCodeServer
from .test_lifecycles import BUSY, DONE, IDLE, Watcher


@pytest.fixture
def proxy(oc_server: OpenCodeServer) -> Iterator[FaultProxy]:
    with FaultProxy(oc_server.url) as p:
        yield p


def status_json(url: str, env: dict[str, str] | None = None) -> tuple[int, dict, str]:
    code, data, err, _ = status_json_rss(url, env)
    return code, data, err


# A child's ru_maxrss on Linux starts from the high-water mark of the memory it was started
# from: exec records it, and a Popen child (vforked) shares this pytest process's. After a few
# hundred tests that alone read 500 MB. So `status` is started from a small launcher, whose
# fork is small, and the launcher reports the child's own exit code (negative: a signal) and
# peak.
_LAUNCH = """
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execv(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def status_json_rss(url: str, env: dict[str, str] | None = None) -> tuple[int, dict, str, float]:
    """`ocwatch status --json` as a user runs it: (exit code, JSON, stderr, its own peak RSS in
    MB, from wait4 on that one process, started from a launcher of a few MB)."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryDirectory() as tmp,
    ):
        peak = Path(tmp) / "maxrss"
        cmd = [sys.executable, "-m", "tui.cli.main", "status", "--json", "--server", url]
        proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCH, str(peak), *cmd],
            stdout=out,
            stderr=err,
            env=env or cli_env(),
            start_new_session=True,  # (a timeout ends the launcher and `status` alike)
        )
        try:
            proc.wait(120)
        except BaseException as exc:  # a timeout, or pytest interrupted: end both
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if isinstance(exc, subprocess.TimeoutExpired):
                raise AssertionError("status did not end") from None
            raise
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
        code, kb = map(int, peak.read_text().split())
    assert "Traceback" not in stderr, stderr
    data = json.loads(stdout) if stdout.strip() else {}
    return code, data, stderr, kb / 1024


def test_lost_status_events_give_no_false_state(oc: Driver, proxy: FaultProxy):
    """Every `session.status` and `session.idle` swallowed: the run still reads idle -> busy ->
    idle completed (snapshots ask the server), never unknown or stale."""
    watcher = Watcher(proxy.url).start()
    try:
        sid = oc.create_session(title="fault: no status events")["id"]
        watcher.wait_last(sid, IDLE)
        proxy.swallow = {"session.status", "session.idle"}
        oc.prompt(sid, "x", "slow", "6")
        watcher.wait_last(sid, DONE, timeout=90)
        assert proxy.swallowed > 0
        got = watcher.lifecycle(sid)
        assert got["emitted"] in ([IDLE, BUSY, DONE], [IDLE, DONE]), got
        assert got["shown"] == got["emitted"], got
    finally:
        watcher.stop()


def test_streams_cut_mid_frame_and_a_stalled_stream_converge(oc: Driver, proxy: FaultProxy):
    # a stall read after 2 s of silence, not the default 15 (the server's heartbeat is 10 s:
    # the live part sees stalls too, which ask for snapshots and change no state)
    quick = Settings(stall_after=2.0, heartbeat_timeout=4.0)
    watcher = Watcher(proxy.url, settings=quick).start()
    try:
        sid = oc.create_session(title="fault: cut streams")["id"]
        watcher.wait_last(sid, IDLE)
        oc.prompt(sid, "x", "slow", "3")
        for _ in range(3):
            proxy.cut_streams()
            wait_until(lambda: True, 0.5)
        watcher.wait_last(sid, DONE, timeout=90)
        got = watcher.lifecycle(sid)
        assert got["shown"] == got["emitted"] and got["emitted"][-1] == DONE, got
        assert all(st in (IDLE, BUSY, DONE) for st in got["emitted"]), got
        # the stream goes silent (no heartbeats): ocwatch says so, the rows stay right
        proxy.stall = True
        second = oc.run("text", title="fault: while stalled")["id"]
        oc.wait_completed_idle(second)
        watcher.wait_last(second, DONE, timeout=90)  # the resync after the stall finds it
    finally:
        proxy.stall = False
        watcher.stop()


@pytest.mark.parametrize("status", [500, 502, 401])
def test_a_failing_route_is_an_error_never_a_wrong_answer(proxy: FaultProxy, status: int):
    proxy.fail["/session/status"] = status
    code, data, err = status_json(proxy.url)
    assert code == 2 and ("HTTP" in err or "authentication" in err), err
    assert data == {} or not data["servers"][0]["reachable"]
    proxy.fail.clear()
    code, data, err = status_json(proxy.url)
    assert code == 0 and data["servers"][0]["reachable"], err


def test_bad_answers_are_errors_never_a_wrong_answer(oc: Driver, proxy: FaultProxy):
    """A session waits for a permission; each bad answer on the route that says so (or on the
    session list) makes `status` fail with a message naming it — never `busy`, never "no
    sessions", never exit 0 — and ocwatch reads the truth again once the route is well."""
    sid = oc.run("permission", "echo fault-bad-answers")["id"]
    oc.wait_permission(sid)
    cases = [
        ("/permission", fp.redirect(302, "/login"), "redirected (HTTP 302) to '/login'"),
        ("/question", fp.redirect(307, "https://sso.example/"), "redirected (HTTP 307)"),
        ("/experimental/session", fp.redirect(302, "/login"), "redirected (HTTP 302)"),
        ("/session/status", fp.html(), "got HTML"),
        ("/question", fp.empty(), "no body"),
        ("/permission", fp.truncated_json(), "unparseable"),
        ("/session/status", fp.gzip_bomb(1024), "larger than 64 MiB"),  # 1 MB, 1 GiB inflated
    ]
    for path, answer, said in cases:
        proxy.answer = {path: answer}
        code, data, err, peak_mb = status_json_rss(proxy.url)
        assert code == 2, (path, said, code, err)
        assert said.lower() in err.lower(), (path, said, err)
        assert not any(r["state"] == "busy" and r["id"] == sid for r in data.get("sessions", []))
        assert peak_mb < 400, (path, said, f"{peak_mb:.0f} MB: the answer was inflated")
    proxy.answer = {}
    code, data, err = status_json(proxy.url)
    row = next(r for r in data["sessions"] if r["id"] == sid)
    assert code == 0 and row["state"] == "input", (code, row, err)
    oc.abort(sid)


def test_a_trickling_server_cannot_hold_status(proxy: FaultProxy, tmp_path: Path):
    """One byte every 2 s on the status route: `status` gives up at its deadline (set to 5 s in
    the config), says so and exits 2."""
    (tmp_path / "ocwatch").mkdir()
    (tmp_path / "ocwatch" / "config.toml").write_text("request_deadline = 5\n")
    env = {**cli_env(), "XDG_CONFIG_HOME": str(tmp_path)}
    proxy.trickle["/session/status"] = 2.0
    start = time.monotonic()
    code, _, err = status_json(proxy.url, env)
    took = time.monotonic() - start
    assert code == 2 and "within 5s" in err, err
    assert took < 30, took


def test_a_hostile_stream_is_counted_and_survived(oc: Driver, proxy: FaultProxy):
    """Garbled, truncated and unknown frames, and one 20 MiB line, injected into the live stream
    around a real run: the frames are counted as skipped, the huge line ends that connection with
    a clear error (not 20 MiB of memory), and the run still reads idle -> busy -> completed."""
    watcher = Watcher(proxy.url).start()
    try:
        sid = oc.create_session(title="fault: hostile stream")["id"]
        watcher.wait_last(sid, IDLE)
        oc.prompt(sid, "x", "slow", "4")
        wait_until(lambda: watcher.last(sid) == BUSY, 30, what="busy")
        proxy.inject(fp.GARBLED + fp.TRUNCATED)
        # not JSON, not UTF-8, a sessionID of the wrong type, the frame cut short: skipped;
        # the unknown type: counted as unknown
        wait_until(lambda: watcher.server().skipped_events >= 4, 30, what="skipped frames")
        assert watcher.server().unknown_events >= 1
        proxy.inject(fp.huge_line(20))
        wait_until(
            lambda: "larger than 16 MiB" in (watcher.server().stream_drop or (0, ""))[1],
            30,
            what="the cap's error",
        )
        watcher.wait_last(sid, DONE, timeout=90)
        got = watcher.lifecycle(sid)
        assert got["emitted"] == [IDLE, BUSY, DONE] and got["shown"] == got["emitted"], got
        wait_until(lambda: watcher.server().stream == "connected", 60, what="a new stream")
        assert rss_mb() < 250  # the watcher runs in this process
    finally:
        watcher.stop()
