"""`ocwatch status`'s path (issue 11: its import under 150 ms): every snapshot GET of a plain-http
server is a quick read first, so httpx is imported only when something needs it; a stalled
server is said at once from the quick read, as httpx would have said it, not asked twice."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.cli_env import cli_env
from tests.hostile import Answer, HostileServer, json_answer
from tui.core.client import Client, Unreachable
from tui.core.config import ENV_NAMES, Config, _layered, load_config

#: `main()` run as `ocwatch status --json` runs it, then what it imported
STATUS = """
import json, sys
from tui.cli.main import main
code = main(["status", "--json", "--server", sys.argv[1]])
sys.stdout.flush()
print(json.dumps({"code": code, "httpx": "httpx" in sys.modules,
    "pydantic_settings": "pydantic_settings" in sys.modules}), file=sys.stderr)
"""


@pytest.fixture
def server() -> Iterator[HostileServer]:
    srv = HostileServer()
    srv.routes["/api/session/active"] = json_answer({"data": {}})  # as 1.18.33 answers it
    srv.start()
    yield srv
    srv.stop()


def status(url: str) -> tuple[dict, dict, str]:
    proc = subprocess.run(
        [sys.executable, "-c", STATUS, url],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
    )
    *lines, last = proc.stderr.strip().splitlines()
    return json.loads(proc.stdout or "{}"), json.loads(last), "\n".join(lines)


def test_status_of_a_healthy_server_never_imports_httpx(server: HostileServer):
    out, ran, err = status(server.url)
    assert ran == {"code": 0, "httpx": False, "pydantic_settings": False}, err
    assert [s["id"] for s in out["sessions"]] == ["ses_ok"]
    assert out["servers"][0]["reachable"] is True


def test_an_unclean_answer_is_asked_again_through_httpx_and_said_exactly(server: HostileServer):
    server.routes["/session/status"] = Answer(
        200, b"<!doctype html><html>web UI</html>", {"content-type": "text/html"}
    )
    out, ran, err = status(server.url)
    assert ran["code"] == 2 and ran["httpx"] is True
    assert "/session/status: expected JSON but got HTML" in json.dumps(out) + err


async def test_a_silent_server_is_a_read_timeout_at_once_not_asked_again():
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1 << 16)
        await asyncio.sleep(30)

    srv = await asyncio.start_server(silent, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
    loop = asyncio.get_running_loop()
    try:
        async with Client(url, timeout=0.4, deadline=20) as client:
            t = loop.time()
            with pytest.raises(
                Unreachable, match=r"^http://127\.0\.0\.1:\d+: timed out \(ReadTimeout\)$"
            ):
                await client.health()
            took = loop.time() - t
            assert client._http is None  # not asked again through httpx
    finally:
        srv.close()
    assert 0.4 <= took < 0.4 * 1.25 + 0.3


async def test_a_trickle_past_the_deadline_is_said_once(server: HostileServer):
    server.routes["/global/health"] = Answer(
        200, b'{"healthy": true}' * 10, {"content-type": "application/json"}, trickle=0.1
    )
    loop = asyncio.get_running_loop()
    async with Client(server.url, timeout=5.0, deadline=1.0) as client:
        t = loop.time()
        with pytest.raises(Unreachable, match="GET /global/health: no complete answer within 1s"):
            await client.health()
        assert loop.time() - t < 1.8 and client._http is None


async def test_the_session_pages_cursor_is_read_from_a_quick_answer(server: HostileServer):
    server.routes["/experimental/session"] = Answer(
        200,
        json.dumps([{"id": "ses_ok"}]).encode(),
        {"content-type": "application/json", "x-next-cursor": "c1"},
    )
    async with Client(server.url) as client:
        got = await client.all_sessions()
        # the first page said there is a next one: it was asked for (the server answers the
        # same page again, with the same cursor: the end)
        assert client.requests == 2 and client._http is None
    assert [s["id"] for s in got] == ["ses_ok"]


def test_with_no_file_and_no_variable_the_config_is_what_the_layers_give(tmp_path):
    missing = tmp_path / "config.toml"
    assert load_config(missing, {}) == (_layered({}, {}, []), [])
    assert load_config(missing, {"OCWATCH_GRACE": ""})[0] == Config()
    # anything to layer is layered: a file, or any of the variables
    (tmp_path / "c.toml").write_text("grace = 7\n")
    assert load_config(tmp_path / "c.toml", {})[0].grace == 7
    for field_name, name in ENV_NAMES.items():
        value = (
            "http://h:1"
            if field_name == "servers"
            else "ocwatch-light"
            if field_name == "theme"
            else "none"
            if field_name == "discover"
            else "9"
        )
        assert load_config(missing, {name: value})[0] != Config(), name


@pytest.mark.parametrize("on", [True, False])
def test_the_collector_is_as_it_was_once_the_command_line_is_loaded(on: bool):
    code = (
        f"import gc; {'' if on else 'gc.disable(); '}import tui.cli.main; "
        "print(gc.isenabled(), gc.get_count()[0] < 700)"
    )  # on: the loaded modules were frozen (the young generation is nearly empty)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env()
    )
    assert proc.stdout.split() == [str(on), str(on)], proc.stderr


async def _answers_once_per_connection() -> tuple[asyncio.Server, str, list[int]]:
    """A server that answers the first request of each connection, then hears nothing more on
    it and never closes it (as a connection a NAT or firewall forgot looks from here)."""
    conns: list[int] = []
    body = b'{"healthy": true}'

    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conns.append(1)
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        await asyncio.sleep(30)

    srv = await asyncio.start_server(once, "127.0.0.1", 0)
    return srv, f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}", conns


async def test_a_connection_idle_too_long_is_not_reused(monkeypatch: pytest.MonkeyPatch):
    import tui.core.quick as quick

    monkeypatch.setattr(quick, "KEEP_IDLE", 0.2)
    srv, url, conns = await _answers_once_per_connection()
    try:
        async with Client(url, timeout=0.5, deadline=5) as client:
            assert await client.health() == {"healthy": True}
            await asyncio.sleep(0.3)  # idle past KEEP_IDLE: a fresh connection, not a timeout
            assert await client.health() == {"healthy": True}
            assert client._http is None
    finally:
        srv.close()
    assert len(conns) == 2


async def test_a_read_in_flight_when_the_client_closes_makes_no_new_client():
    srv, url, _conns = await _answers_once_per_connection()
    try:
        client = Client(url, timeout=5, deadline=10)
        assert await client.health() == {"healthy": True}
        task = asyncio.create_task(client.health())  # (the same connection: never answered)
        await asyncio.sleep(0.1)  # (the read under way; not yet on a slow machine: the close
        # comes first and the read says "closed" all the same, so this cannot fail falsely)
        await client.aclose()
        with pytest.raises(Unreachable, match="closed"):
            await task
        assert client._http is None
    finally:
        srv.close()
