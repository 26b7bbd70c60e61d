"""`prompt --wait` follows the run it starts as `wait` does: a last message that could not be
read once (a 500) is read again, not an outcome. `prompt --wait` had a loop of its own and
exited 5 for a run that completed."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.fakes import FakeAPI, wire_session
from tui.cli import prompt
from tui.core import monitor as monitor_module
from tui.core.exitcodes import ExitCode
from tui.core.settings import Settings

URL = "http://fake:4096"


def assistant(mid: str, **more: Any) -> dict[str, Any]:
    info = {"id": mid, "sessionID": "ses_1", "role": "assistant", "time": {"created": 1}}
    return {"info": {**info, **more}, "parts": []}


DONE = {"time": {"created": 1, "completed": 2}, "finish": "stop"}


class Prompted(FakeAPI):
    """An idle session whose run the prompt starts: busy for `busy_reads` status reads, then
    its new last message answers 500 `failing` times before it reads completed."""

    busy_reads: int = 2
    failing: int = 1
    sent: bool = False
    read_after: int = 0

    def _post(self, path: str, request: httpx.Request) -> httpx.Response:
        if path.endswith("/prompt_async"):
            self.sent = True
            self.status = {"/p/a": {"ses_1": {"type": "busy"}}}
            self.messages["ses_1"] = [assistant("msg_1", **DONE), assistant("msg_2")]
        return super()._post(path, request)

    def _get(self, path: str, request: httpx.Request) -> httpx.Response:
        if self.sent and path == "/session/status":
            self.busy_reads -= 1
            if self.busy_reads < 0:
                self.status = {}
        if self.sent and not self.status and path == "/session/ses_1/message":
            self.read_after += 1
            if self.read_after <= self.failing:
                return httpx.Response(500, json={"name": "UnknownError"})
            self.messages["ses_1"] = [assistant("msg_1", **DONE), assistant("msg_2", **DONE)]
        return super()._get(path, request)


def test_a_last_message_read_once_unreadable_is_no_outcome(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = Prompted(
        sessions=[wire_session("ses_1")], messages={"ses_1": [assistant("msg_1", **DONE)]}
    )
    made = monitor_module.Client

    def client(url: str, auth: Any, **kw: Any) -> Any:
        return made(url, auth, **{**kw, "transport": api.transport()})

    monkeypatch.setattr(monitor_module, "Client", client)
    monkeypatch.setattr("tui.core.client.Client", client)
    settings = Settings(resync_interval=0.1, snapshot_min_gap=0.1)
    code, row, message = asyncio.run(
        prompt._send_and_wait("ses_1", "go on", URL, None, settings, 20.0)
    )
    assert api.sent
    assert (code, row.state, row.reason) == (ExitCode.COMPLETED, "idle", "completed"), message
