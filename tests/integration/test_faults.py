"""Faults between ocwatch and a real `opencode serve`, injected by tests/integration/fault_proxy.py:
ocwatch shows the fault, never a wrong settled state, and converges to the server's truth."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.cli_env import cli_env

from .driver import Driver, wait_until
from .fault_proxy import FaultProxy
from .oc_server import OpenCodeServer
from .test_lifecycles import BUSY, DONE, IDLE, Watcher


@pytest.fixture
def proxy(oc_server: OpenCodeServer) -> Iterator[FaultProxy]:
    with FaultProxy(oc_server.url) as p:
        yield p


def status_json(url: str) -> tuple[int, dict, str]:
    env = cli_env()
    proc = subprocess.run([sys.executable, "-m", "tui.cli.main", "status", "--json", "--server",
                           url], capture_output=True, text=True, timeout=120, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


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
    watcher = Watcher(proxy.url).start()
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
