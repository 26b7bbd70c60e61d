"""Quick reads (tui.core.quick): last messages on stdlib keep-alive connections, the clean case
only; whatever else the server answers is asked again through the async client, so every error
reads as it does on every other route (real sockets: tests.hostile)."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Iterator

import pytest

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
