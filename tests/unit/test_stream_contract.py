"""The event stream's two readers agree (issue 42 item 2): a server reached without a proxy is read
straight from its socket (tui.core.stream: asyncio streams, httptools), anything else through
httpx; `OCWATCH_DIRECT_STREAM=0` reads every stream through httpx. The same scripted answers,
written byte for byte by a real socket server, go through `Client.events` both ways: each gives
the same events and ends the same way (the same OcwatchError and message, or the same httpx
error class, which the monitor says by its name)."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import trustme

from tests.hostile import HostileServer
from tests.scripted import Script, ScriptedServer
from tui.core import tls
from tui.core.client import Client, OcwatchError, describe_transport_error
from tui.core.settings import Auth

TIMEOUT = 0.5  # the clients' connect and read timeouts (s)
LIMIT = 1024  # the largest event (bytes)
SSE = [("content-type", "text/event-stream")]


def head(
    status: str = "200 OK",
    headers: list[tuple[str, str]] | None = None,
    *,
    version: str = "HTTP/1.1",
    chunked: bool = True,
) -> bytes:
    lines = [f"{version} {status}"] + [f"{k}: {v}" for k, v in headers or []]
    if chunked:
        lines.append("transfer-encoding: chunked")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


END = b"0\r\n\r\n"


@pytest.fixture
async def server() -> AsyncIterator[ScriptedServer]:
    # (each script is the whole stream, its name the path's last step: the client's base path
    # may come before it)
    srv = ScriptedServer(key=lambda path: path.rsplit("/", 1)[-1], close=True)
    await srv.start()
    yield srv
    await srv.stop()


FRAMES = [b'data: {"n": %d}\n\n' % i for i in range(5)]
CASES: dict[str, tuple[list[bytes | float], list[str], str]] = {
    # name: (what the server writes, the events read, how the stream ends)
    "an event a chunk": (
        [head(headers=SSE)] + [chunk(f) for f in FRAMES] + [END],
        [f'{{"n": {i}}}' for i in range(5)],
        "end",
    ),
    "lines cut anywhere, CRLF, several data lines, comments and other fields": (
        [
            head(headers=SSE),
            chunk(b'data: {"a"'),
            0.02,
            chunk(b": 1}\r"),
            0.02,
            chunk(b"\n\r\n: beat\nevent: x\nid: 3\ndata:two\ndata: lines\n"),
            chunk(b"\n\n\n: another\n"),
            END,
        ],
        ['{"a": 1}', "", "two\nlines", ""],
        "end",
    ),
    "a body that ends with the connection, HTTP 1.0": (
        [head(headers=SSE, version="HTTP/1.0", chunked=False), b"data: 1\n\ndata: 2\n\n"],
        ["1", "2"],
        "end",
    ),
    "a chunked body cut off": (
        [head(headers=SSE), chunk(b"data: 1\n\n"), b"40\r\ndata: 2"],
        ["1"],
        "RemoteProtocolError",
    ),
    "an event over the limit": (
        [head(headers=SSE), chunk(b"data: 1\n\n")] + [chunk(b"data: " + b"x" * 300 + b"\n")] * 4,
        ["1"],
        "OcwatchError: larger than 0 MiB",
    ),
    "a line over the limit that never ends": (
        [head(headers=SSE), chunk(b"data: 1\n\n")] + [chunk(b"x" * 400), 0.01] * 3,
        ["1"],
        "OcwatchError: larger than 0 MiB",
    ),
    "silence after the head": (
        [head(headers=SSE), chunk(b"data: 1\n\n"), 5.0],
        ["1"],
        "ReadTimeout",
    ),
    "silence before the head": ([5.0], [], "ReadTimeout"),
    "a 401": ([head("401 Unauthorized", SSE), END], [], "AuthFailed: authentication failed"),
    "a 503 that says when to come back": (
        [head("503 Busy", [*SSE, ("retry-after", "7")]), END],
        [],
        "BadResponse: answered http 503",
    ),
    "a redirect": (
        [head("302 Found", [("location", "http://elsewhere/")]), END],
        [],
        "BadResponse: not an event stream",
    ),
    "a web page": ([head(headers=[("content-type", "text/html")]), END], [], "BadResponse: html"),
    "a compressed stream": (
        [head(headers=[*SSE, ("content-encoding", "gzip")]), END],
        [],
        "BadResponse: compressed",
    ),
    "no HTTP at all": ([b"SSH-2.0-OpenSSH_9.6\r\n\r\n"], [], "RemoteProtocolError"),
    "a head that never ends": (
        [b"HTTP/1.1 200 OK\r\n"] + [b"x-pad: " + b"y" * 1000 + b"\r\n"] * 100,
        [],
        "RemoteProtocolError",
    ),
}


async def watch(url: str, path: str, *, direct: bool, mp: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """What Client.events makes of the stream at `path`: the events read, how it ended (`end`,
    the httpx error's class, or the OcwatchError's class and message) and its retry_after."""
    if direct:
        mp.delenv("OCWATCH_DIRECT_STREAM", raising=False)
    else:
        mp.setenv("OCWATCH_DIRECT_STREAM", "0")
    got: list[str] = []
    async with Client(url, timeout=TIMEOUT) as client:
        assert client._direct_stream() is direct
        try:
            async with client.events(
                read_timeout=TIMEOUT, max_event=LIMIT, path=path, comments=True
            ) as frames:
                async for data in frames:
                    got.append(data)
        except OcwatchError as exc:
            return got, type(exc).__name__, str(exc), getattr(exc, "retry_after", None)
        except httpx.HTTPError as exc:
            return got, type(exc).__name__
    return got, "end"


@pytest.mark.parametrize("name", list(CASES))
async def test_both_stream_readers_read_the_same(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    pieces, events, ends = CASES[name]
    key = name.replace(" ", "-")
    server.scripts[key] = Script(pieces)
    direct = await watch(server.url, "/" + key, direct=True, mp=monkeypatch)
    usual = await watch(server.url, "/" + key, direct=False, mp=monkeypatch)
    assert direct == usual
    assert direct[0] == events
    kind, _, words = ends.partition(": ")
    assert direct[1] == kind
    if words:
        assert words.lower() in direct[2].lower()
    if "retry-after" in str(pieces[0]):
        assert direct[3] is not None and direct[3] > 0


async def test_a_refused_connection_is_said_the_same_both_ways(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    srv = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
    srv.close()
    await srv.wait_closed()
    said = []
    for direct in (True, False):
        monkeypatch.setenv("OCWATCH_DIRECT_STREAM", "1" if direct else "0")
        async with Client(url, timeout=TIMEOUT) as client:
            with pytest.raises(httpx.ConnectError) as exc:
                async with client.events(read_timeout=TIMEOUT, max_event=LIMIT):
                    pass
            said.append(describe_transport_error(url, exc.value).message)
    assert said[0].startswith(f"{url}: cannot connect (")
    assert said[0].split(" (")[0] == said[1].split(" (")[0]


async def test_the_direct_stream_asks_as_httpx_does(server: ScriptedServer) -> None:
    """Credentials (Basic, as httpx says them), an uncompressed stream, under the URL's path."""
    server.scripts["event"] = Script([head(headers=SSE), chunk(b"data: 1\n\n"), END])
    auth = Auth(username="opencode", password="pässword")
    async with Client(server.url + "/base", auth) as client:
        assert client._direct_stream()
        async with client.events(read_timeout=TIMEOUT, max_event=LIMIT) as frames:
            assert [d async for d in frames] == ["1"]
    sent = server.heads[0].decode("latin-1").split("\r\n")
    assert sent[0] == "GET /base/global/event HTTP/1.1"
    fields = {
        k.lower(): v.strip() for k, _, v in (line.partition(":") for line in sent[1:] if line)
    }
    token = base64.b64encode("opencode:pässword".encode()).decode()
    assert fields["authorization"] == f"Basic {token}"
    assert fields["accept"] == "text/event-stream"
    assert fields["accept-encoding"] == "identity"
    assert fields["host"] == server.url.removeprefix("http://")


def test_a_proxy_or_a_transport_keeps_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OCWATCH_DIRECT_STREAM", raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    assert Client("http://10.1.2.3:4096")._direct_stream()
    assert Client("https://10.1.2.3:4096")._direct_stream()
    transport = httpx.MockTransport(lambda r: httpx.Response(200))
    assert not Client("http://10.1.2.3:4096", transport=transport)._direct_stream()
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    assert Client("http://10.1.2.3:4096")._direct_stream()
    assert not Client("https://10.1.2.3:4096")._direct_stream()
    # with a password, the environment's proxies are not trusted (tui.core.client): direct
    assert Client("https://10.1.2.3:4096", Auth(username="u", password="p"))._direct_stream()


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def https_server(ca: trustme.CA) -> Iterator[HostileServer]:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(ctx)
    srv = HostileServer(tls=ctx).start()
    yield srv
    srv.stop()


async def test_an_https_stream_is_verified_then_read_directly(
    https_server: HostileServer, ca: trustme.CA, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.delenv("OCWATCH_DIRECT_STREAM", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    async with Client(https_server.url, Auth(username="u", password="p")) as client:
        assert client._direct_stream()
        with pytest.raises(httpx.ConnectError) as exc:
            async with client.events(read_timeout=5, max_event=LIMIT):
                pass
        assert "not trusted" in (tls.describe(exc.value) or "")
    pem = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    monkeypatch.setenv("SSL_CERT_FILE", str(pem))
    client = Client(https_server.url, Auth(username="u", password="p"))
    async with client, client.events(read_timeout=5, max_event=LIMIT) as frames:
        first = await anext(aiter(frames))
    assert '"server.connected"' in first
    assert any(h.get("authorization", "").startswith("Basic ") for _p, h in https_server.seen)
