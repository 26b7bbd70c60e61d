"""`wait` says a run was cut off (exit 5, interrupted) only once a snapshot begun after it
first read so says it too: an aborted run's status ends a moment before its message says it
was aborted, and a snapshot reading in between read it cut off (CI: `wait` exited 5 for a run
`ocwatch abort` had just ended)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.fakes import FakeAPI, wire_session
from tui.cli import wait
from tui.core.exitcodes import ExitCode
from tui.core.fleet import Fleet
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
    made = Fleet.of_servers

    def of_servers(servers: Servers, **kw: Any) -> Fleet:
        return made(servers, transport=api.transport(), **kw)

    monkeypatch.setattr(wait.Fleet, "of_servers", of_servers)
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
