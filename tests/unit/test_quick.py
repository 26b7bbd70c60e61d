"""Quick reads (tui.core.quick): last messages on stdlib keep-alive connections, the clean case
only; whatever else the server answers is asked again through the async client, so every error
reads as it does on every other route (real sockets: tests.hostile)."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
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
    s.seen: list[tuple[str, dict[str, str]]] = []  # type: ignore[misc]
    serve = s._serve

    def spy(h):  # type: ignore[no-untyped-def]
        s.seen.append((h.path, {k.lower(): v for k, v in h.headers.items()}))
        serve(h)

    s._serve = spy  # type: ignore[method-assign]
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


# -- the answer reader itself (tui.core.quick._answer), fed in any pieces ------------------------


class Pieces:
    """A socket whose recv hands out `data` in the given pieces, then b"" (closed)."""

    def __init__(self, data: bytes, cuts: list[int]) -> None:
        self.parts = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        self.parts = [p for p in self.parts if p]

    def recv(self, _n: int) -> bytes:
        return self.parts.pop(0) if self.parts else b""


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
    from tui.core.quick import _answer

    return _answer(Pieces(data, sorted(cuts or [])), time.monotonic() + 60, max_body)  # type: ignore[arg-type]


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
    quick = QuickGet(server.url, None, timeout=1, deadline=1, max_body=1 << 20)
    for target in ("/a b", "/a\r\nX: y", "/é", "no-slash", "/a\x00", "*"):
        assert quick.get(target) is None
    assert not quick._open and server.seen == []  # nothing was even connected
    assert quick.get(ROUTE + "?limit=1") == MSG
    quick.close()
