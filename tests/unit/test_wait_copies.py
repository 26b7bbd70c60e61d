"""`wait` over named servers that read one storage (so each lists the session): the copy of
the server running it says how it is. The other server infers the run from the storage (no
status of its own, the last message unfinished: cut off), and `wait` exited 5 for a running
session when that server was named first."""

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

RUNNING, OTHER = "http://running:4096", "http://other:4096"


def unfinished() -> list[dict[str, Any]]:
    info = {"id": "msg_2", "sessionID": "ses_1", "role": "assistant", "time": {"created": 1}}
    return [{"info": info, "parts": []}]


def wait_on(order: tuple[str, ...], monkeypatch: pytest.MonkeyPatch, timeout: float) -> Any:
    running = FakeAPI(sessions=[wire_session("ses_1")], messages={"ses_1": unfinished()})
    running.status = {"/p/a": {"ses_1": {"type": "busy"}}}
    other = FakeAPI(sessions=[wire_session("ses_1")], messages={"ses_1": unfinished()})
    by_host = {"running": running, "other": other}
    transport = httpx.MockTransport(lambda r: by_host[r.url.host].handle(r))
    wait_on_transport(monkeypatch, transport)
    (out,) = asyncio.run(wait.wait_many(["ses_1"], Servers(order, Settings()), timeout=timeout))
    return out


@pytest.mark.parametrize(
    "order", [(OTHER, RUNNING), (RUNNING, OTHER)], ids=["other-first", "running-first"]
)
def test_the_copy_of_the_server_running_it_is_the_answer(
    monkeypatch: pytest.MonkeyPatch, order: tuple[str, ...]
) -> None:
    out = wait_on(order, monkeypatch, timeout=1.0)
    assert (out.code, out.row.server, out.row.state) == (ExitCode.TIMEOUT, RUNNING, "busy")


def test_a_copy_read_cut_off_waits_for_the_copy_whose_server_is_down() -> None:
    """The server running the session blips (its copy unreadable); the other reads the run
    cut off from the storage: that is no outcome while the one that may run it is down."""
    from dataclasses import replace

    from tests.unit.test_watch_output import srow
    from tui.core.view import ServerInfo, View

    cut = replace(srow("unknown", "interrupted"), server=OTHER)
    blip = replace(srow("unknown"), server=RUNNING)
    servers = (ServerInfo(url=OTHER, reachable=True), ServerInfo(url=RUNNING, reachable=False))
    view = View(0.0, servers, {(OTHER, "ses_1"): cut, (RUNNING, "ses_1"): blip})
    assert wait._best_copy(view, "ses_1") is blip
    # every server read: the cut-off is said, unless the running one says it runs
    both = (ServerInfo(url=OTHER, reachable=True), ServerInfo(url=RUNNING, reachable=True))
    alone = {(OTHER, "ses_1"): cut}
    assert wait._best_copy(View(0.0, both, alone), "ses_1") is cut
    runs = replace(srow("busy"), server=RUNNING)
    rows = {(OTHER, "ses_1"): cut, (RUNNING, "ses_1"): runs}
    assert wait._best_copy(View(0.0, both, rows), "ses_1") is runs
