"""`wait` gives up on a server that stays unreachable for UNREACHABLE_PATIENCE, but only once a
try begun after the patience ran out has failed too. The monitor backs off between tries
(0.5 s doubling), so its last try before the patience ran out could be seconds old: `wait`
exited 2 for a server that had been back (a restart) a while."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.fakes import FakeAPI, wait_on_transport, wire_session
from tui.cli import wait
from tui.core.exitcodes import ExitCode
from tui.core.settings import Settings
from tui.core.targets import Servers

URL = "http://fake:4096"


def wait_through_an_outage(
    monkeypatch: pytest.MonkeyPatch, down_for: float, timeout: float
) -> wait.Awaited:
    """Wait on a busy session while its server is down for `down_for` s from 0.2 s after the
    first look (patience 1 s); each snapshot attempt is timed by the monitor's own backoff."""
    monkeypatch.setattr(wait, "UNREACHABLE_PATIENCE", 1.0)
    monkeypatch.setattr(wait, "LOOK_EVERY_DOWN", 0.05)  # looked at as the patience runs out
    api = FakeAPI(sessions=[wire_session("ses_1")])
    api.status = {"/p/a": {"ses_1": {"type": "busy"}}}
    outage: list[float] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if outage and outage[0] <= time.monotonic() < outage[0] + down_for:
            raise httpx.ConnectError("connection refused", request=request)
        return api.handle(request)

    wait_on_transport(monkeypatch, httpx.MockTransport(handle))
    servers = Servers((URL,), Settings(resync_interval=0.05))

    def ready() -> None:
        outage.append(time.monotonic() + 0.2)

    (out,) = asyncio.run(wait.wait_many(["ses_1"], servers, timeout=timeout, on_ready=ready))
    return out


def test_a_server_back_before_the_patience_ran_out_is_waited_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # back 0.9 s in: the monitor's tries at ~0.05 and ~0.6-0.8 s failed, its next would be at
    # ~1.5 s or later, after the patience ran out (~1.05 s)
    out = wait_through_an_outage(monkeypatch, down_for=0.9, timeout=3.0)
    assert (out.code, out.row.state) == (ExitCode.TIMEOUT, "busy"), out.message


def test_a_server_still_down_after_the_last_try_is_given_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = wait_through_an_outage(monkeypatch, down_for=60.0, timeout=20.0)
    assert out.code == ExitCode.USAGE
    assert "connection refused" in (out.message or "") or "unreachable" in (out.message or "")
    assert "gave up after 1s" in (out.message or "")


@pytest.mark.parametrize("timeout", [0, 0.5], ids=["timeout-0", "timeout-0.5"])
def test_a_server_that_never_answers_the_one_look(
    monkeypatch: pytest.MonkeyPatch, timeout: float
) -> None:
    """`--timeout 0` looks once: a server that does not answer within the request timeout
    could not be read (2, as `status` says), where it said "timed out" (124), which claims
    the run was seen not settled. A `--timeout` that runs out first is still 124."""

    async def never(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(3600)
        raise AssertionError

    wait_on_transport(monkeypatch, httpx.MockTransport(never))
    servers = Servers((URL,), Settings(request_timeout=0.3))
    (out,) = asyncio.run(wait.wait_many(["ses_1"], servers, timeout=timeout))
    if timeout:
        assert (out.code, out.message) == (
            ExitCode.TIMEOUT,
            "timed out after 0.5s (no snapshot yet)",
        )
    else:
        assert out.code == ExitCode.USAGE
        assert out.message == f"{URL}: no answer within 0.3s (the server answers too slowly)"


def test_a_server_that_says_when_to_ask_again_is_given_up_after_the_last_try_s_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 503 with `Retry-After: 30`: the monitor rightly asks nothing before then, so the last
    try is never made; `wait` gives up LAST_TRY_WAIT after asking it, not 30 s (or 600) later."""
    monkeypatch.setattr(wait, "UNREACHABLE_PATIENCE", 1.0)
    monkeypatch.setattr(wait, "LAST_TRY_WAIT", 1.0)
    api = FakeAPI(sessions=[wire_session("ses_1")])
    api.status = {"/p/a": {"ses_1": {"type": "busy"}}}
    outage: list[float] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if outage and time.monotonic() >= outage[0]:
            return httpx.Response(503, headers={"retry-after": "30"}, text="busy")
        return api.handle(request)

    wait_on_transport(monkeypatch, httpx.MockTransport(handle))
    servers = Servers((URL,), Settings(resync_interval=0.05))

    def ready() -> None:
        outage.append(time.monotonic() + 0.2)

    (out,) = asyncio.run(wait.wait_many(["ses_1"], servers, timeout=20, on_ready=ready))
    assert out.code == ExitCode.USAGE, out.message
    assert "HTTP 503" in (out.message or "") and "gave up after 1s" in (out.message or "")


def test_a_try_begun_before_the_last_one_was_asked_is_no_answer_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Down from 0.2 s, starting up from 1.0 s (a snapshot's requests hang, the stream is
    refused with a 503), fully back at 1.6 s. The snapshot begun while it started up is given
    up once the stream is back (GivenUp, after the last try was asked): that is no failed try,
    and `wait` gave up on a server that was back."""
    monkeypatch.setattr(wait, "UNREACHABLE_PATIENCE", 1.0)
    monkeypatch.setattr(wait, "LOOK_EVERY_DOWN", 0.05)
    api = FakeAPI(sessions=[wire_session("ses_1")])
    api.status = {"/p/a": {"ses_1": {"type": "busy"}}}
    ready: list[float] = []

    def phase() -> str:
        t = time.monotonic() - ready[0] if ready else 0.0
        return "up" if t < 0.2 else "down" if t < 1.0 else "starting" if t < 1.6 else "up"

    class Stream(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield b'data: {"type":"server.connected","properties":{}}\n\n'
            while True:
                await asyncio.sleep(0.1)
                if phase() == "down":
                    raise httpx.ReadError("connection reset")
                yield b'data: {"type":"server.heartbeat","properties":{}}\n\n'

    async def handle(request: httpx.Request) -> httpx.Response:
        now = phase()
        if now == "down":
            raise httpx.ConnectError("connection refused", request=request)
        if request.url.path == "/global/event":
            if now == "starting":
                return httpx.Response(503, text="starting")
            return httpx.Response(
                200, headers={"content-type": "text/event-stream"}, stream=Stream()
            )
        if now == "starting":
            await asyncio.sleep(30)
        return api.handle(request)

    wait_on_transport(monkeypatch, httpx.MockTransport(handle))
    settings = Settings(resync_interval=0.5, request_timeout=8, request_deadline=20)
    servers = Servers((URL,), settings)
    got = wait.wait_many(
        ["ses_1"], servers, timeout=6, on_ready=lambda: ready.append(time.monotonic())
    )
    (out,) = asyncio.run(got)
    assert (out.code, out.row.state) == (ExitCode.TIMEOUT, "busy"), out.message
