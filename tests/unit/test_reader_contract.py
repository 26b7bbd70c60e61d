"""The two HTTP readers agree (issue 43 item 5): a plain-http server's GETs are read the quick way
first (tui.core.quick, a few lines of HTTP/1.1 on the event loop) and through httpx when the quick
reader declines; `OCWATCH_QUICK_READS=0` reads every answer through httpx. The same scripted
answers, written byte for byte by a real socket server, go through a Client with quick reads and
one without: each gives the same value and headers, or the same error class and message. Which
answers the quick reader reads itself is pinned too, so the contract cannot hold only because it
declines everything."""

from __future__ import annotations

import gzip
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.scripted import Script, ScriptedServer
from tui.core.client import (
    AuthFailed,
    BadResponse,
    Client,
    NotFound,
    OcwatchError,
    Redirected,
    Unreachable,
    describe_transport_error,
)

TIMEOUT = 0.5  # the clients' read timeout (s)
DEADLINE = 1.5  # the clients' deadline for a whole answer (s)
MAX_BODY = 4096  # the clients' limit on an answer's body (bytes)

BODY = json.dumps([{"info": {"id": "msg_1", "role": "assistant"}, "parts": []}]).encode()
VALUE = json.loads(BODY)


def answer(
    status: str = "200 OK",
    headers: list[tuple[str, str]] | None = None,
    body: bytes = b"",
    *,
    version: str = "HTTP/1.1",
    length: bool = True,
) -> bytes:
    """An answer's bytes: its head (content-length added unless `length` is False) and body."""
    lines = [f"{version} {status}"] + [f"{k}: {v}" for k, v in headers or []]
    if length:
        lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


JSON = [("content-type", "application/json")]


def chunked(body: bytes, cut: int = 7) -> bytes:
    """`body` in chunks of `cut` bytes (an extension on the first), a trailer after the last."""
    pieces = [body[i : i + cut] for i in range(0, len(body), cut)]
    out = b"".join(
        f"{len(p):x}{';ext=1' if i == 0 else ''}\r\n".encode() + p + b"\r\n"
        for i, p in enumerate(pieces)
    )
    return out + b"0\r\nx-trailer: 1\r\n\r\n"


def error_json(tag: str, message: str) -> bytes:
    return json.dumps({"_tag": tag, "message": message}).encode()


# name: (the script, what both readers give, whether the quick reader reads it itself)
CASES: dict[str, tuple[Script, object, bool]] = {
    "json": (Script([answer(headers=JSON, body=BODY)]), VALUE, True),
    "json with headers of its own": (
        Script([answer(headers=[*JSON, ("x-next", "c2")], body=BODY)]),
        VALUE,
        True,
    ),
    "json, a header in latin-1": (
        Script([answer(headers=[*JSON, ("x-who", "caf\xe9")], body=BODY)]),
        VALUE,
        True,
    ),
    "json chunked, an extension and a trailer": (
        Script(
            [
                answer(headers=[*JSON, ("transfer-encoding", "chunked")], length=False)
                + chunked(BODY)
            ]
        ),
        VALUE,
        True,
    ),
    "json chunked, written a byte at a time": (
        Script(
            [
                bytes([b])
                for b in answer(headers=[*JSON, ("transfer-encoding", "chunked")], length=False)
                + chunked(BODY, cut=40)
            ]
        ),
        VALUE,
        True,
    ),
    "json, HTTP/1.0 without a length: the body ends with the connection": (
        Script([answer(headers=JSON, body=BODY, version="HTTP/1.0", length=False)], close=True),
        VALUE,
        True,
    ),
    "json, HTTP/1.1 with connection: close and no length": (
        Script(
            [answer(headers=[*JSON, ("connection", "close")], body=BODY, length=False)],
            close=True,
        ),
        VALUE,
        True,
    ),
    "json, a status line without its reason": (
        Script([answer("200", headers=JSON, body=BODY)]),
        VALUE,
        True,
    ),
    "json, whitespace around it": (
        Script([answer(headers=JSON, body=b" \n" + BODY + b"\n ")]),
        VALUE,
        True,
    ),
    "json with NaN and a lone surrogate": (
        Script([answer(headers=JSON, body=b'[NaN, "a\\ud800b", 1]')]),
        [None, "a\ufffdb", 1],
        True,
    ),
    "json with bytes that are not UTF-8": (
        Script([answer(headers=JSON, body=b'["caf\xe9"]')]),
        ["caf\ufffd"],
        True,
    ),
    "json labelled as both html and json": (
        Script([answer(headers=[("content-type", "text/html; profile=json")], body=BODY)]),
        BadResponse,
        False,
    ),
    "json, 201 Created": (Script([answer("201 Created", JSON, BODY)]), VALUE, False),
    "json, chunked and a length both said": (
        Script(
            [
                answer(
                    headers=[*JSON, ("transfer-encoding", "chunked"), ("content-length", "5")],
                    length=False,
                )
                + chunked(BODY)
            ],
            close=True,
        ),
        VALUE,
        False,  # (a length told two ways is not a clean answer)
    ),
    "json of exactly the limit": (
        Script([answer(headers=JSON, body=b"[" + b" " * (MAX_BODY - 2) + b"]")]),
        [],
        True,
    ),
    "json of exactly the limit, chunked": (
        Script(
            [
                answer(headers=[*JSON, ("transfer-encoding", "chunked")], length=False)
                + chunked(b"[" + b" " * (MAX_BODY - 2) + b"]", cut=1000)
            ]
        ),
        [],
        True,
    ),
    "json of exactly the limit, ended by the connection": (
        Script(
            [answer(headers=JSON, body=b"[" + b" " * (MAX_BODY - 2) + b"]", length=False)],
            close=True,
        ),
        [],
        True,
    ),
    "a body one byte over the limit, ended by the connection": (
        Script(
            [answer(headers=JSON, body=b"[" + b" " * (MAX_BODY - 1) + b"]", length=False)],
            close=True,
        ),
        BadResponse,
        False,
    ),
    "json labelled text/plain": (
        Script([answer(headers=[("content-type", "text/plain")], body=BODY)]),
        VALUE,
        False,
    ),
    "json without a content type": (Script([answer(body=BODY)]), VALUE, False),
    "json gzip'd": (
        Script(
            [
                answer(
                    headers=[*JSON, ("content-encoding", "gzip")],
                    body=gzip.compress(BODY),
                )
            ]
        ),
        VALUE,
        False,
    ),
    "json, a length said twice": (
        Script(
            [
                answer(
                    headers=[*JSON, ("content-length", str(len(BODY)))],
                    body=BODY,
                )
            ],
            close=True,
        ),
        VALUE,
        False,
    ),
    "json after 100 Continue": (
        Script([b"HTTP/1.1 100 Continue\r\n\r\n" + answer(headers=JSON, body=BODY)]),
        VALUE,
        False,
    ),
    "401": (
        Script([answer("401 Unauthorized", [("www-authenticate", "Basic")], b"no")]),
        AuthFailed,
        False,
    ),
    "404 with the server's error": (
        Script([answer("404 Not Found", JSON, error_json("NotFoundError", "Session not found"))]),
        NotFound,
        False,
    ),
    "500": (
        Script([answer("500 Internal Server Error", [("content-type", "text/plain")], b"boom")]),
        BadResponse,
        False,
    ),
    "503 with retry-after": (
        Script([answer("503 Service Unavailable", [("retry-after", "7")], b"")]),
        BadResponse,
        False,
    ),
    "302": (
        Script([answer("302 Found", [("location", "http://login.example/sso")])]),
        Redirected,
        False,
    ),
    "204": (Script([answer("204 No Content", length=False)]), BadResponse, False),
    "html where JSON was expected": (
        Script([answer(headers=[("content-type", "text/html")], body=b"<!doctype html><html>")]),
        BadResponse,
        False,
    ),
    "html labelled json": (
        Script([answer(headers=JSON, body=b"<!doctype html><html>")]),
        BadResponse,
        False,
    ),
    "json with nothing in it": (Script([answer(headers=JSON, body=b"")]), BadResponse, False),
    "json that does not parse": (
        Script([answer(headers=JSON, body=b'[{"id": "msg_1",')]),
        BadResponse,
        False,
    ),
    "json after a byte-order mark": (
        Script([answer(headers=JSON, body=b"\xef\xbb\xbf" + BODY)]),
        BadResponse,
        False,
    ),
    "a body over the limit": (
        Script([answer(headers=JSON, body=b"[" + b" " * MAX_BODY + b"]")]),
        BadResponse,
        False,
    ),
    "a chunked body over the limit": (
        Script(
            [
                answer(headers=[*JSON, ("transfer-encoding", "chunked")], length=False)
                + chunked(b"[" + b" " * MAX_BODY + b"]", cut=1000)
            ]
        ),
        BadResponse,
        False,
    ),
    "a body cut short": (
        Script(
            [answer(headers=[*JSON, ("content-length", "1000")], length=False) + BODY], close=True
        ),
        Unreachable,
        False,
    ),
    "a chunk size that is not hex": (
        Script(
            [
                answer(headers=[*JSON, ("transfer-encoding", "chunked")], length=False)
                + b"zz\r\n"
                + BODY
            ],
            close=True,
        ),
        Unreachable,
        False,
    ),
    "closed without an answer": (Script([], close=True), Unreachable, False),
    "not HTTP": (Script([b"SSH-2.0-OpenSSH_9.6\r\n"], close=True), Unreachable, False),
    "silent past the read timeout": (Script([30.0]), Unreachable, False),
    "a head, then silent past the read timeout": (
        Script([answer(headers=[*JSON, ("content-length", "100")], length=False), 30.0]),
        Unreachable,
        False,
    ),
    "trickling past the deadline": (
        Script(
            [answer(headers=[*JSON, ("content-length", "100")], length=False)]
            + [b" ", TIMEOUT / 3] * 100
        ),
        Unreachable,
        False,
    ),
}


@pytest.fixture
async def server() -> AsyncIterator[ScriptedServer]:
    srv = ScriptedServer()
    await srv.start()
    yield srv
    await srv.stop()


Outcome = tuple[Any, ...]


async def read(url: str, path: str, *, quick: bool, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    """What a Client (with quick reads or without) makes of `GET path`: ("value", the parsed
    body, its headers, how many requests it sent) or ("error", the class, the message)."""
    if quick:
        monkeypatch.delenv("OCWATCH_QUICK_READS", raising=False)
    else:
        monkeypatch.setenv("OCWATCH_QUICK_READS", "0")
    async with Client(url, timeout=TIMEOUT, deadline=DEADLINE, max_body=MAX_BODY) as client:
        assert (client._quick is not None) is quick
        try:
            data, headers = await client.get(path)
        except OcwatchError as exc:
            return ("error", type(exc), str(exc), client.requests)
        return ("value", data, dict(headers), client.requests)


@pytest.mark.parametrize("name", list(CASES))
async def test_both_readers_give_the_same_answer(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    script, expected, read_quickly = CASES[name]
    path = "/" + name.replace(" ", "-").replace(",", "").replace("'", "").replace(":", "")
    server.scripts[path] = script
    *quick, quick_requests = await read(server.url, path, quick=True, monkeypatch=monkeypatch)
    *usual, _ = await read(server.url, path, quick=False, monkeypatch=monkeypatch)
    assert quick == usual
    if isinstance(expected, type):
        assert usual[:2] == ["error", expected], usual
    else:
        assert usual[:2] == ["value", expected], usual
    # one request when the quick reader read it; else asked again through httpx, except a
    # server that stalled: said at once, as httpx would have said it, not asked twice
    stalled = "timed out" in str(usual) or "no complete answer" in str(usual)
    assert quick_requests == (1 if read_quickly or stalled else 2), quick_requests


async def test_a_refused_connection_is_said_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:  # a port nobody listens on (bound, never listening)
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
        *quick, _ = await read(url, "/session", quick=True, monkeypatch=monkeypatch)
        *usual, _ = await read(url, "/session", quick=False, monkeypatch=monkeypatch)
        # the event stream's own reader fails as httpx would (the monitor says its errors
        # through describe_transport_error), in the same words
        async with Client(url, timeout=TIMEOUT, deadline=DEADLINE, max_body=MAX_BODY) as client:
            assert client._direct_stream()
            with pytest.raises(httpx.ConnectError) as failed:
                async with client.events(read_timeout=TIMEOUT, max_event=MAX_BODY):
                    pass
        streamed = describe_transport_error(url, failed.value)
    assert quick == usual
    # in the system's words, not in the reader's (httpx's "All connection attempts failed",
    # asyncio's "[Errno 111] Connect call failed (...)")
    assert usual[:3] == ["error", Unreachable, f"{url}: cannot connect (connection refused)"]
    assert (type(streamed), str(streamed)) == (Unreachable, usual[2])


async def test_the_headers_of_a_quick_read_are_httpxs(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The headers `Client.get` gives (a V2 listing reads its cursor from them) are the same
    both ways, names lower-cased and a latin-1 value decoded as httpx decodes it."""
    server.scripts["/h"] = Script(
        [answer(headers=[*JSON, ("X-Next", "c2"), ("x-who", "caf\xe9")], body=BODY)]
    )
    *quick, requests = await read(server.url, "/h", quick=True, monkeypatch=monkeypatch)
    *usual, _ = await read(server.url, "/h", quick=False, monkeypatch=monkeypatch)
    assert quick == usual and requests == 1
    assert usual[2]["x-next"] == "c2" and usual[2]["x-who"] == "caf\xe9"
    # one value in UTF-8, another in latin-1: httpx reads them all in latin-1 (one encoding
    # for the whole head, the first that reads every value)
    utf8 = "café".encode()
    server.scripts["/mixed"] = Script(
        [
            answer(headers=JSON, body=BODY).replace(
                b"\r\n\r\n", b"\r\nx-a: " + utf8 + b"\r\nx-b: caf\xe9\r\n\r\n", 1
            )
        ]
    )
    *quick, requests = await read(server.url, "/mixed", quick=True, monkeypatch=monkeypatch)
    *usual, _ = await read(server.url, "/mixed", quick=False, monkeypatch=monkeypatch)
    assert quick == usual and requests == 1
    assert usual[2]["x-a"] == utf8.decode("latin-1") and usual[2]["x-b"] == "caf\xe9"
    server.scripts["/utf8"] = Script(
        [answer(headers=JSON, body=BODY).replace(b"\r\n\r\n", b"\r\nx-a: " + utf8 + b"\r\n\r\n", 1)]
    )
    *quick, requests = await read(server.url, "/utf8", quick=True, monkeypatch=monkeypatch)
    *usual, _ = await read(server.url, "/utf8", quick=False, monkeypatch=monkeypatch)
    assert quick == usual and requests == 1 and usual[2]["x-a"] == "café"
