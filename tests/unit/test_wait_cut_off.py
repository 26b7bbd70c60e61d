"""`wait` says a run was cut off (exit 5, interrupted) only once a snapshot begun after it
first read so says it too: an aborted run's status ends a moment before its message says it
was aborted, and a snapshot reading in between read it cut off (CI: `wait` exited 5 for a run
`ocwatch abort` had just ended)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.fakes import FakeAPI, wait_on_transport, wire_session
from tui.cli import wait
from tui.core.exitcodes import ExitCode
from tui.core.settings import Settings
from tui.core.targets import Servers

URL = "http://fake:4096"


def assistant(**more: Any) -> dict[str, Any]:
    info = {
        "id": "msg_2",
        "sessionID": "ses_1",
        "role": "assistant",
        "time": {"created": 1_000_000},
        **more,
    }
    return {"info": info, "parts": []}


class Aborting(FakeAPI):
    """The session's status is gone; its last message reads unfinished `unfinished` times,
    then aborted (as the server writes it a moment after the status ends)."""

    unfinished: int = 1

    def _get(self, path: str, request: httpx.Request) -> httpx.Response:
        if path == "/session/ses_1/message":
            read = self.hits["/session/{id}/message"]
            error = {"name": "MessageAbortedError", "data": {"message": "aborted"}}
            done = {"time": {"created": 1_000_000, "completed": 1_000_500}, "error": error}
            self.messages["ses_1"] = [assistant(**(done if read > self.unfinished else {}))]
        return super()._get(path, request)


def run_wait(api: FakeAPI, monkeypatch: pytest.MonkeyPatch, timeout: float | None) -> Any:
    wait_on_transport(monkeypatch, api.transport())
    servers = Servers((URL,), Settings())
    (out,) = asyncio.run(wait.wait_many(["ses_1"], servers, timeout=timeout))
    return out


@pytest.mark.parametrize("unfinished", [1, 1_000], ids=["aborted", "cut-off"])
def test_a_run_read_cut_off_is_read_again_before_wait_says_so(
    monkeypatch: pytest.MonkeyPatch, unfinished: int
) -> None:
    api = Aborting(sessions=[wire_session("ses_1")])
    api.unfinished = unfinished
    out = run_wait(api, monkeypatch, timeout=30)
    reads = api.hits["/session/{id}/message"]
    if unfinished == 1:  # the second read finds it aborted
        assert (out.code, out.row.reason, reads) == (ExitCode.ABORTED, "aborted", 2)
    else:  # read again and still cut off: said so
        assert (out.code, out.row.reason, reads) == (ExitCode.UNKNOWN, "interrupted", 2)


def test_with_timeout_0_the_one_look_is_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    api = Aborting(sessions=[wire_session("ses_1")])
    out = run_wait(api, monkeypatch, timeout=0)
    assert (out.code, out.row.reason) == (ExitCode.UNKNOWN, "interrupted")


class Failing(FakeAPI):
    """The session's status is gone (its run ended); its last message answers 500 `failing`
    times, then reads completed."""

    failing: int = 1

    def _get(self, path: str, request: httpx.Request) -> httpx.Response:
        if path == "/session/ses_1/message":
            if self.hits["/session/{id}/message"] <= self.failing:
                return httpx.Response(500, json={"name": "UnknownError"})
            done = {"time": {"created": 1_000_000, "completed": 1_000_500}, "finish": "stop"}
            self.messages["ses_1"] = [assistant(**done)]
        return super()._get(path, request)


@pytest.mark.parametrize("failing", [1, 2], ids=["once", "twice"])
def test_a_last_message_that_could_not_be_read_is_read_again_not_an_outcome(
    monkeypatch: pytest.MonkeyPatch, failing: int
) -> None:
    """A 500 on the session's last message read as unknown, settled: `wait` exited 5 for a run
    that completed (a review, against a server failing that one route for a few seconds)."""
    api = Failing(sessions=[wire_session("ses_1")])
    api.failing = failing
    out = run_wait(api, monkeypatch, timeout=30)
    assert (out.code, out.row.state, out.row.reason) == (ExitCode.COMPLETED, "idle", "completed")
    assert api.hits["/session/{id}/message"] == failing + 1


@pytest.mark.parametrize("timeout", [0, 60])
def test_a_last_message_that_cannot_be_read_is_said_not_an_outcome(
    monkeypatch: pytest.MonkeyPatch, timeout: float
) -> None:
    """Still unreadable once UNREACHABLE_PATIENCE passed (made short here): exit 2, saying
    why, as for a server that cannot be read; with `--timeout 0` at once."""
    monkeypatch.setattr(wait, "UNREACHABLE_PATIENCE", 0.3)
    api = Failing(sessions=[wire_session("ses_1")])
    api.failing = 10**9
    out = run_wait(api, monkeypatch, timeout=timeout)
    assert out.code == ExitCode.USAGE and "last message unreadable" in (out.message or ""), out
    assert ("gave up after 0.3s" in out.message) == bool(timeout)
