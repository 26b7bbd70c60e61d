"""Quick reads (tui.core.quick): last messages on kept-alive connections of the event loop,
the clean case only; whatever else the server answers is asked again through the async client,
so every error reads as it does on every other route (real sockets: tests.hostile)."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.hostile import Answer, HostileServer, json_answer
from tui.core.client import AuthFailed, BadResponse, Client, NotFound, Unreachable
from tui.core.quick import QuickGet
from tui.core.settings import Auth

MSG = [
    {
        "info": {
            "id": "msg_1",
            "sessionID": "ses_ok",
            "role": "assistant",
            "time": {"created": 1, "completed": 2},
            "finish": "stop",
        },
        "parts": [],
    }
]
ROUTE = "/session/ses_ok/message"


@pytest.fixture
def server() -> Iterator[HostileServer]:
    s = HostileServer().start()
    s.messages["ses_ok"] = MSG
    yield s
    s.stop()


async def test_a_clean_answer_is_read_the_quick_way(server: HostileServer) -> None:
    async with Client(server.url) as client:
        assert client._quick is not None
        for _ in range(3):
            assert await client.messages("ses_ok", directory="/a b") == MSG
        assert client.requests == 3  # one each: none asked again
        quick = client._quick
    # one kept-alive connection per worker thread, asked with the folder in the query
    assert [p for p, _ in server.seen] == ["/session/ses_ok/message?limit=1&directory=%2Fa%20b"] * 3
    assert all(h.get("accept-encoding") == "identity" for _, h in server.seen)
    assert quick._closed and not quick._open  # closed with the client


@pytest.mark.parametrize(
    ("answer", "error", "match"),
    [
        (
            json_answer({"_tag": "NotFoundError", "message": "Session not found"}, 404),
            NotFound,
            "not found: Session not found",
        ),
        (
            Answer(200, b"<!doctype html><html>web UI</html>", {"content-type": "text/html"}),
            BadResponse,
            "expected JSON but got HTML",
        ),
        (Answer(302, b"", {"location": "http://login.example/sso"}), BadResponse, "redirected"),
        (Answer(500, b"boom", {"content-type": "text/plain"}), BadResponse, "HTTP 500"),
        (
            Answer(200, b"[" + b" " * (3 * 2**20) + b"]", {"content-type": "application/json"}),
            BadResponse,
            "larger than 2 MiB",
        ),
    ],
)
async def test_anything_else_is_asked_again_and_said_as_usual(
    server: HostileServer, answer: Answer, error: type[Exception], match: str
) -> None:
    server.routes[ROUTE] = answer
    async with Client(server.url, max_body=2 * 2**20) as client:
        with pytest.raises(error, match=match):
            await client.messages("ses_ok")
        assert client.requests == 2  # the quick read, then the usual one that says why
        server.routes.clear()
        assert await client.messages("ses_ok") == MSG  # and the next reads quickly again
        assert client.requests == 3


async def test_a_compressed_answer_is_read_the_usual_way(server: HostileServer) -> None:
    server.routes[ROUTE] = Answer(
        200,
        gzip.compress(json.dumps(MSG).encode()),
        {"content-type": "application/json", "content-encoding": "gzip"},
    )
    async with Client(server.url) as client:
        assert await client.messages("ses_ok") == MSG
        assert client.requests == 2


async def test_a_trickling_answer_cannot_hold_a_quick_read_past_the_deadline(
    server: HostileServer,
) -> None:
    server.routes[ROUTE] = Answer(
        200, json.dumps(MSG).encode(), {"content-type": "application/json"}, trickle=0.2
    )
    loop = asyncio.get_running_loop()
    t = loop.time()
    async with Client(server.url, timeout=5.0, deadline=1.0) as client:
        with pytest.raises(Unreachable, match="no complete answer within 1s"):
            await client.messages("ses_ok")
    assert loop.time() - t < 3.5  # the quick read's deadline, then the usual read's


async def test_credentials_go_with_it_and_a_refusal_reads_as_usual(server: HostileServer) -> None:
    async with Client(server.url, Auth("opencode", "s3cret-pass")) as client:
        assert await client.messages("ses_ok") == MSG
        _, headers = server.seen[-1]
        assert headers["authorization"] == "Basic b3BlbmNvZGU6czNjcmV0LXBhc3M="
        server.routes[ROUTE] = Answer(401, b"no", {"www-authenticate": "Basic"})
        with pytest.raises(AuthFailed, match="authentication failed"):
            await client.messages("ses_ok")


async def test_a_refused_connection_reads_as_usual() -> None:
    async with Client("http://127.0.0.1:9", timeout=1.0) as client:
        with pytest.raises(Unreachable):
            await client.messages("ses_ok")


async def test_not_for_https_a_proxy_a_test_transport_or_a_recording(
    server: HostileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not QuickGet.usable("https://example.org:4096", trust_env=False)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert not QuickGet.usable("http://10.1.2.3:4096", trust_env=True)
    assert QuickGet.usable("http://10.1.2.3:4096", trust_env=False)  # (httpx ignores it too)
    monkeypatch.setenv("NO_PROXY", "10.1.2.3")
    assert QuickGet.usable("http://10.1.2.3:4096", trust_env=True)
    monkeypatch.delenv("HTTP_PROXY")
    monkeypatch.setenv("OCWATCH_QUICK_READS", "0")
    async with Client(server.url) as client:
        assert client._quick is None
    monkeypatch.delenv("OCWATCH_QUICK_READS")
    async with Client(server.url) as client:
        client.tap = object()  # type: ignore[assignment]  # a recording: every answer to it
        with pytest.raises(AttributeError):  # the usual way, which tells the tap
            await client.messages("ses_ok")


# -- the answer reader itself (tui.core.quick._Conn and _parse), fed in any pieces -------------


class Wire:
    """A transport that takes the request and records whether the connection was cut."""

    def __init__(self) -> None:
        self.sent = b""
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.sent += data

    def abort(self) -> None:
        self.aborted = True


def frame(body: bytes, how: str, chunks: list[int] | None = None, extra: bytes = b"") -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\n"
    if how == "length":
        return head + b"Content-Length: %d\r\n\r\n" % len(body) + body + extra
    if how == "close":
        return head + b"Connection: close\r\n\r\n" + body + extra
    out, at = [head + b"Transfer-Encoding: chunked\r\n\r\n"], 0
    for cut in [*(chunks or []), len(body)]:
        part = body[at:cut]
        if part:
            out.append(b"%x;ext=1\r\n%s\r\n" % (len(part), part))
        at = max(at, cut)
    return b"".join(out) + b"0\r\nX-Trailer: t\r\n\r\n" + extra


def read(data: bytes, cuts: list[int] | None = None, max_body: int = 1 << 20):
    """The answer a connection reads when `data` arrives in pieces cut at `cuts`, then the
    server closes: as the event loop feeds it (data_received for each piece, then EOF)."""
    from tui.core.quick import _Conn

    async def run():
        conn, wire = _Conn(), Wire()
        conn.connection_made(wire)  # type: ignore[arg-type]
        answer = conn.ask(b"GET / HTTP/1.1\r\n\r\n", max_body)
        at = 0
        for cut in [*sorted(cuts or []), len(data)]:
            if data[at:cut] and not wire.aborted:
                conn.data_received(data[at:cut])
            at = max(at, cut)
        if not answer.done():
            conn.eof_received()
            conn.connection_lost(None)
        return answer.result()

    return asyncio.run(run())


@given(
    body=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
        max_leaves=20,
    ).map(lambda v: json.dumps(v).encode()),
    how=st.sampled_from(["length", "chunked", "close"]),
    data=st.data(),
)
def test_any_framing_cut_anywhere_reads_the_same_body(body, how, data) -> None:
    chunks = data.draw(st.lists(st.integers(0, len(body)), max_size=5).map(sorted))
    raw = frame(body, how, chunks)
    cuts = data.draw(st.lists(st.integers(1, max(1, len(raw) - 1)), max_size=8, unique=True))
    got, reusable = read(raw, cuts)
    assert got == body
    assert reusable == (how != "close")
    if how != "close":  # (there, what follows is the body)
        # a byte past the answer: the body is still right, the connection not reused
        got, reusable = read(frame(body, how, chunks, extra=b"H"), cuts)
        assert got == body and not reusable


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 2000 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/2 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3\r\n"
        b"Content-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: -2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 99\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n folded: x\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nno colon\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"zz\r\n{}\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\n{}XX0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\n{}\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"X: y\r\n" * 20_000,
    ],
    ids=[
        "not-200",
        "status-2000",
        "not-http-1",
        "html",
        "gzip",
        "two-lengths",
        "negative-length",
        "closed-short",
        "folded-header",
        "no-colon",
        "other-coding",
        "bad-chunk-size",
        "chunk-not-ended",
        "chunks-cut-off",
        "endless-head",
    ],
)
def test_anything_unclean_is_refused_and_the_connection_dropped(raw: bytes) -> None:
    assert read(raw) == (None, False)


def test_a_body_over_the_limit_is_refused_however_it_is_framed() -> None:
    body = json.dumps(["x" * 100]).encode()
    for how in ("length", "chunked", "close"):
        assert read(frame(body, how, [10, 50]), max_body=len(body)) == (body, how != "close")
        assert read(frame(body, how, [10, 50]), max_body=len(body) - 1) == (None, False)


def test_a_target_that_could_end_the_request_line_is_never_sent(server: HostileServer) -> None:
    async def run() -> None:
        quick = QuickGet(server.url, None, timeout=1, deadline=1, max_body=1 << 20)
        for target in ("/a b", "/a\r\nX: y", "/é", "no-slash", "/a\x00", "*"):
            assert await quick.get(target) is None
        assert not quick._open and server.seen == []  # nothing was even connected
        assert await quick.get(ROUTE + "?limit=1") == MSG
        quick.close()

    asyncio.run(run())


def test_bytes_nobody_asked_for_end_the_connection() -> None:
    """A byte after a clean answer, arriving later: the connection is cut, so the pool never
    hands it out again (its bytes would be read as the next answer's)."""
    from tui.core.quick import _Conn

    async def run() -> None:
        conn, wire = _Conn(), Wire()
        conn.connection_made(wire)  # type: ignore[arg-type]
        answer = conn.ask(b"GET / HTTP/1.1\r\n\r\n", 1 << 20)
        conn.data_received(frame(b"[]", "length"))
        assert answer.result() == (b"[]", True) and not conn.ended
        conn.data_received(b"H")
        assert conn.ended and wire.aborted

    asyncio.run(run())


async def test_an_id_or_folder_that_needs_escaping_is_escaped(server: HostileServer) -> None:
    async with Client(server.url) as client:
        await client.messages("ses/x y", directory="/a&b=c")
        assert await client.messages("ses_ok", limit=None) == MSG
    assert [p for p, _ in server.seen] == [
        "/session/ses%2Fx%20y/message?limit=1&directory=%2Fa%26b%3Dc",
        "/session/ses_ok/message?",
    ]
