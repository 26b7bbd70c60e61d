"""A hostile server and hostile text (issue 10): never a traceback, never a lie with exit 0.

The CLI runs as a user runs it, against tests/hostile.py: real HTTP on loopback. Each case
failed on the code before it (a crash, a hang, or "no sessions" with exit 0).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
import sys
import zlib
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.cli_env import cli_env
from tests.hostile import Answer, HostileServer, gzip_bomb, json_answer, raw_json, session
from tui.core import text
from tui.core.alerts import Alert, osc9
from tui.core.client import BadResponse, Client, Unreachable


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    srv = HostileServer().start()
    yield srv
    srv.stop()


def ocwatch(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = cli_env()
    env["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run(
        [sys.executable, "-m", "tui.cli.main", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="strict",
        timeout=timeout,
        env=env,
    )


def status_json(url: str) -> tuple[int, dict, str]:
    proc = ocwatch("status", "--json", "--server", url)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


def test_a_lone_surrogate_and_an_impossible_time_hide_nothing(hostile: HostileServer):
    hostile.sessions = (
        '[{"id": "ses_bad", "title": "SURR\\ud800", "directory": "/tmp/p", '
        '"time": {"created": 1795985000000, "updated": 1e300}}, '
        + json.dumps(session("ses_ok"))
        + "]"
    )
    hostile.messages["ses_bad"] = (
        '[{"info": {"id": "msg_1", "sessionID": "ses_bad", "role": "assistant", '
        '"time": {"created": 1795985000000, "completed": 1795985001000}, '
        '"error": {"name": "APIError", "data": {"message": "bad \\udfff thing"}}}, "parts": []}]'
    )
    code, data, err = status_json(hostile.url)
    assert code == 0, err
    rows = {r["id"]: r for r in data["sessions"]}
    assert set(rows) == {"ses_bad", "ses_ok"}
    assert rows["ses_bad"]["title"] == "SURR\ufffd"
    assert rows["ses_bad"]["reason"] == "error" and "\ufffd" in rows["ses_bad"]["error"]
    proc = ocwatch("status", "--server", hostile.url)
    assert proc.returncode == 0 and "SURR\ufffd" in proc.stdout, proc.stderr


def test_one_odd_field_does_not_drop_a_session(hostile: HostileServer):
    hostile.sessions = [
        session("ses_null", title=None),
        session("ses_tokens", tokens={"input": 1.5, "output": 2}),
        session("ses_ok"),
    ]
    code, data, err = status_json(hostile.url)
    assert code == 0, err
    assert {r["id"] for r in data["sessions"]} == {"ses_null", "ses_tokens", "ses_ok"}


def test_a_record_that_cannot_be_read_is_named_and_exits_2(hostile: HostileServer):
    hostile.sessions = [{"title": "no id"}, session("ses_ok")]
    code, data, err = status_json(hostile.url)
    assert code == 2 and "skipped 1 malformed record (session without an id)" in err
    assert data["servers"][0]["malformed"] == 1
    assert [r["id"] for r in data["sessions"]] == ["ses_ok"]


@pytest.mark.parametrize("route", ["/experimental/session", "/permission", "/question"])
def test_a_redirect_or_an_empty_answer_is_an_error_not_none(hostile: HostileServer, route: str):
    hostile.routes[route] = Answer(302, b"", {"location": "http://login.example/sso"})
    code, _data, err = status_json(hostile.url)
    assert code == 2 and "redirected (HTTP 302) to 'http://login.example/sso'" in err
    hostile.routes[route] = Answer(200, b"", {"content-type": "application/json"})
    code, _data, err = status_json(hostile.url)
    # (the session list too: only a 404 is an older server, whose folder-by-folder listing
    # misses sessions; issue 40)
    assert code == 2 and "no body where JSON was expected" in err


def test_a_gzip_bomb_is_refused_not_inflated(hostile: HostileServer):
    hostile.routes["/session/status"] = gzip_bomb(200 * 2**20)
    code, _data, err = status_json(hostile.url)
    assert code == 2 and "larger than 64 MiB (decompressed); refused" in err


def test_an_answer_compressed_twice_is_refused_unread(hostile: HostileServer):
    """`content-encoding: gzip, gzip`: each chunk inflated through both layers at once before
    its size was checked (a review's 3 KB answer holding 2 GiB took `status` to 4.2 GB)."""
    inner = gzip.compress(b"[" + b" " * (64 * 2**20) + b"]", compresslevel=9)
    body = gzip.compress(inner, compresslevel=9)
    hostile.routes["/session/status"] = Answer(
        200, body, {"content-type": "application/json", "content-encoding": "gzip, gzip"}
    )
    code, _data, err = status_json(hostile.url)
    assert code == 2 and "compressed several times over (gzip, gzip); refused" in err, err


def test_a_compressed_event_stream_is_refused_not_inflated(hostile: HostileServer):
    """The stream is asked for uncompressed; one that comes gzipped anyway (4.5 MB inflating
    to 1 GiB of blank lines) is refused: `wait --timeout 3` ends in time (a review found it
    held for a minute, Ctrl-C ignored, while the lines were read one by one)."""
    deflate = zlib.compressobj(1, zlib.DEFLATED, 31)  # (31: a gzip member)
    lines = b"\n" * 2**24
    body = b"".join(deflate.compress(lines) for _ in range(64)) + deflate.flush()
    hostile.stream = Answer(
        200, body, {"content-type": "text/event-stream", "content-encoding": "gzip"}
    )
    hostile.routes["/session/status"] = json_answer({"ses_ok": {"type": "busy"}})
    proc = ocwatch("wait", "ses_ok", "--timeout", "3", "--server", hostile.url, timeout=30)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 124, (proc.returncode, proc.stderr)
    streams = [headers for path, headers in hostile.seen if path.startswith("/global/event")]
    assert streams and all(h.get("accept-encoding") == "identity" for h in streams)


async def test_a_trickling_server_cannot_hold_a_request_past_its_deadline(hostile: HostileServer):
    hostile.routes["/global/health"] = Answer(
        200, b'{"healthy": true}' * 10, {"content-type": "application/json"}, trickle=0.2
    )
    loop = asyncio.get_running_loop()
    t = loop.time()
    async with Client(hostile.url, timeout=5.0, deadline=1.5) as client:
        with pytest.raises(Unreachable, match="no complete answer within 1.5s"):
            await client.health()
    assert loop.time() - t < 4


async def test_html_and_non_finite_numbers():
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/global/health":
            return httpx.Response(
                200,
                text='{"healthy": true, "n": NaN, "m": Infinity}',
                headers={"content-type": "application/json"},
            )
        return httpx.Response(200, text="<html>", headers={"content-type": "text/html"})

    async with Client("http://x", transport=httpx.MockTransport(handle)) as client:
        assert await client.health() == {"healthy": True, "n": None, "m": None}
        with pytest.raises(BadResponse, match="got HTML"):
            await client.status()


# -- hostile text ---------------------------------------------------------------------------------
HOSTILE = [
    "H\u202egnp.exe",
    "a\u2066b\u2069",
    "zero\u200bwidth\u200d\ufeff",
    "\x1b[31mred\x1b[0m",
    "\x1b]0;title\x07",
    "\x1bP+q\x1b\\",
    "csi\x9b31m",
    "osc\x9d0;x\x9c",
    "bell\x07",
    "bs\x08\x08",
    "cr\roverwrite",
    "[bold]markup[/]",
    "a\u2028b",
]


@pytest.mark.parametrize("s", HOSTILE)
def test_every_text_path_neutralises_controls(s: str):
    for out in (
        text.literal(s, escapes=True),
        text.plain(s),
        osc9(Alert("input", ("u", "s"), (), s, s))[5:-1],
        text.dumps({"t": s}),
    ):
        assert not text.UNSAFE.search(out), (s, out)
    assert json.loads(text.dumps({"t": s})) == {"t": s}  # valid JSON, the text unchanged


def test_a_bidi_override_cannot_reorder_a_status_line(hostile: HostileServer):
    hostile.sessions = [session("ses_x", title="H\u202egnp.exe")]
    proc = ocwatch("status", "--server", hostile.url)
    assert proc.returncode == 0, proc.stderr
    assert "H\\u202egnp.exe" in proc.stdout and "\u202e" not in proc.stdout
    proc = ocwatch("status", "--json", "--server", hostile.url)
    assert "\u202e" not in proc.stdout and "\\u202e" in proc.stdout


def test_huge_text_is_read(hostile: HostileServer):
    hostile.sessions = [session("ses_big", title="x" * 100_000)]
    code, data, err = status_json(hostile.url)
    assert code == 0 and len(data["sessions"][0]["title"]) == 100_000, err


def test_raw_helper_sanity():
    assert raw_json("[]").status == 200 and json_answer([]).body == b"[]"


@pytest.mark.parametrize("applies", [True, False])
async def test_a_reply_whose_answer_timed_out_says_whether_it_was_applied(applies: bool):
    from tests.fakes import FakeAPI, wire_session
    from tui.core.actions import ActionError, reply_permission

    api = FakeAPI(
        sessions=[wire_session("ses_1")],
        permissions={
            "/p/a": [
                {"id": "per_1", "sessionID": "ses_1", "permission": "bash", "patterns": ["ls"]}
            ]
        },
    )

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            if applies:  # the server applied it, but its answer never came
                api.permissions = {}
            raise httpx.ReadTimeout("timed out", request=request)
        return api.handle(request)

    async with Client("http://x", transport=httpx.MockTransport(handle)) as client:
        if applies:
            await reply_permission(client, "per_1", "once")
        else:
            with pytest.raises(ActionError, match="per_1 is still open: the server did not"):
                await reply_permission(client, "per_1", "once")


def test_json_nested_too_deeply_is_bad_json_not_a_crash() -> None:
    """The parser's RecursionError is no ValueError: every caller that says "unparseable" for
    bad JSON would let it through as a traceback (found by a review: a snapshot answer of
    100,000 `[`, and `report` on a frame nested 1,500 deep)."""
    from tui.core import text

    with pytest.raises(ValueError, match="nested too deeply"):
        text.loads("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="nested too deeply"):  # and with a lone surrogate
        text.loads('["\\ud800",' + "[" * 100_000 + "]" * 100_000 + "]")
    nested = text.loads("[" * 50 + "]" * 50)  # nesting as deep as real answers' parses
    for _ in range(49):
        (nested,) = nested
    assert nested == []


async def test_a_listing_that_pages_on_for_ever_is_refused(monkeypatch: pytest.MonkeyPatch):
    """A server answering every page of the session list with new sessions and a new cursor
    was read until memory ran out (5 GB in 40 s, found by a review): the whole listing is
    bounded (MAX_LISTING, made small here), and refused past it, naming the route."""
    import tui.core.client as client_mod

    monkeypatch.setattr(client_mod, "MAX_LISTING", 2**20)
    pages = 0

    def handle(request: httpx.Request) -> httpx.Response:
        nonlocal pages
        if request.url.path != "/experimental/session":
            return httpx.Response(404)
        pages += 1
        items = [session(f"ses_{pages}_{i}", title="t" * 1000) for i in range(100)]
        return httpx.Response(200, json=items, headers={"x-next-cursor": str(pages)})

    async with Client("http://fake:4096", transport=httpx.MockTransport(handle)) as client:
        with pytest.raises(BadResponse, match="passed 1 MiB over .* page.*page on for ever"):
            await client.all_sessions()
    assert 8 <= pages <= 12  # (about 110 KB a page)


def test_an_answer_that_parses_far_larger_than_its_bytes_is_refused(hostile: HostileServer):
    """61 KB of gzip inflating to 63 MB of `{},` (under the 64 MiB answer limit) parsed into
    1.7 GB (found by a review): an answer of more than MAX_CONTAINERS objects and lists (or
    MAX_COMMAS values) is refused before it is parsed, naming the route."""
    from tui.core import text

    many = b"[" + b"{}," * 2_500_000 + b"{}]"
    with pytest.raises(text.TooMany):
        text.loads(many)
    assert len(text.loads(b"[" + b"{}," * 100_000 + b"{}]")) == 100_001
    hostile.routes["/session/status"] = Answer(
        200,
        gzip.compress(many),
        {"content-type": "application/json", "content-encoding": "gzip"},
    )
    code, _data, err = status_json(hostile.url)
    assert code == 2 and "/session/status" in err and "more than 2,000,000 objects" in err, err


@pytest.mark.parametrize(
    "answer",
    [
        Answer(500, b'{"name": "UnknownError"}', {"content-type": "application/json"}),
        Answer(502, b"bad gateway", {"content-type": "text/plain"}),
        Answer(503, b"", {}),
        Answer(200, b"<!doctype html><p>sign in</p>", {"content-type": "text/html"}),
        Answer(200, b'[{"id": "ses_a"', {"content-type": "application/json"}),
    ],
)
def test_a_failing_session_list_is_an_error_never_a_shorter_list(
    hostile: HostileServer, answer: Answer
) -> None:
    """Issue 40: a 5xx, HTML or a cut body from the session list made ocwatch list folder by
    folder, which misses the sessions of a folder that is no git repository: sessions gone,
    exit 0. Only a 404 is an older server; anything else is said, exit 2."""
    hostile.sessions = [session("ses_a"), session("ses_b")]
    hostile.routes["/experimental/session"] = answer
    code, _data, err = status_json(hostile.url)
    assert code == 2, err
    assert "/experimental/session" in err


def test_status_has_an_overall_deadline(hostile: HostileServer) -> None:
    """Issue 40: answers each slow but within the per-request limit held `status` for minutes
    with exit 0. The whole read is bounded (command_deadline): past it, exit 2, said why."""
    import time as _time

    hostile.routes["/session/status"] = Answer(
        200, json.dumps({"x": "y" * 200}).encode(), {"content-type": "application/json"}, 0.25
    )  # (~50 s to trickle, each byte well within the per-request read timeout)
    env = cli_env()
    env["OCWATCH_COMMAND_DEADLINE"] = "2"
    t = _time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "tui.cli.main", "status", "--server", hostile.url],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    took = _time.monotonic() - t
    assert proc.returncode == 2, proc.stderr
    assert "no complete snapshot within 2s (the server answers too slowly" in proc.stderr
    assert took < 30, took  # (not the ~50 s the trickle takes)


@pytest.mark.parametrize(
    "sid", ["\x1b]0;PWNED\x07\x1b[2J[red]ses", "ses 1", "ses/../x", "s" * 201, "ses_é"]
)
async def test_a_new_sessions_id_that_is_not_one_is_refused_never_printed(sid: str) -> None:
    """`ocwatch prompt --new` prints the new session's id for scripts: an id with escape
    sequences, markup, spaces or a path in it is refused (it printed `ESC]0;PWNED BEL`
    raw), and the error shows it literally."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"id": sid})

    async with Client("http://h", transport=httpx.MockTransport(answer)) as client:
        with pytest.raises(BadResponse, match="the new session's id is not one") as caught:
            await client.create_session("/tmp/project")
        assert "\x1b" not in caught.value.message and "\x07" not in caught.value.message
        got = httpx.MockTransport(lambda r: httpx.Response(200, json={"id": "ses_4fA.b~c-d"}))
    async with Client("http://h", transport=got) as client:
        assert await client.create_session("/tmp/project") == "ses_4fA.b~c-d"


def test_a_new_event_type_in_every_frame_is_counted_not_remembered_for_good() -> None:
    """A server sending a type never seen before in each event (a review's 5,000 types of
    100 KB took 491 MB): the first UNKNOWN_TYPES_KEPT are remembered (each said once), the
    rest only counted."""
    from tui.core.events import UNKNOWN_TYPES_KEPT, EventParser
    from tui.core.protocols.v2.events import V2EventParser

    v1, v2 = EventParser(), V2EventParser()
    for i in range(3 * UNKNOWN_TYPES_KEPT):
        kind = f"x.{i}." + "y" * 300 * (i % 2)
        v1.parse(json.dumps({"type": kind, "properties": {}}), 1.0)
        v2.parse(json.dumps({"id": f"evt_{i}", "type": kind, "data": {}}), 1.0)
    for parser in (v1, v2):
        assert parser.unknown == 3 * UNKNOWN_TYPES_KEPT
        assert len(parser.unknown_types) == UNKNOWN_TYPES_KEPT
        assert all(len(t) <= 200 for t in parser.unknown_types)


def test_a_skipped_events_type_is_logged_literally(caplog: pytest.LogCaptureFixture) -> None:
    """The one log line that names a server's text: an escape sequence in a skipped event's
    type reaches stderr (`-v`) as characters, never as the sequence."""
    from tui.core.events import EventParser
    from tui.core.protocols.v2.events import V2EventParser

    kind = "session.status\x1b]0;PWNED\x07\x1b[31m[bold]"
    with caplog.at_level("WARNING"):
        EventParser().parse(json.dumps({"type": kind, "properties": 7}), 1.0)
        V2EventParser().parse(json.dumps({"id": "e", "type": kind, "data": 7}), 1.0)
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("skipped")]
    assert said and not any("\x1b" in s or "\x07" in s for s in said), said


@pytest.mark.parametrize(
    "url",
    ["http://例え.jp:1", "http://127.0.0.1:1/é", "http://127.0.0.1:1/a\tb", "http://h:1/\x1b[2J"],
)
def test_a_url_that_is_not_printable_ascii_is_a_clear_error(url: str) -> None:
    """A request line and its Host header are ASCII: an IDN host or a path of other
    characters (`--server`, a servers file, service.json) crashed a read with a traceback."""
    from tui.core.client import OcwatchError, normalize_url

    with pytest.raises(OcwatchError, match="only printable ASCII") as caught:
        normalize_url(url)
    assert "\x1b" not in caught.value.message and "\t" not in caught.value.message
    assert normalize_url("http://xn--r8jz45g.jp:1/a%C3%A9") == "http://xn--r8jz45g.jp:1/a%C3%A9"


class Chunks(httpx.AsyncByteStream):
    """A body that arrives in chunks of `size` bytes, as from a socket (a whole `content` is
    decoded by httpx as the answer is made)."""

    def __init__(self, body: bytes, size: int = 65536) -> None:
        self.body, self.size = body, size

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for at in range(0, len(self.body), self.size):
            yield self.body[at : at + self.size]


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
async def test_a_compressed_answer_is_inflated_no_further_than_its_bound(coding: str) -> None:
    """httpx inflates each chunk whole before the size is checked: 32 KB of gzip inflated to
    32 MiB at once (a 64 KB chunk, 64 MiB) for an answer refused at 1 MiB. It is now inflated
    at most the bound's worth at a time."""
    import tracemalloc
    import zlib

    from tui.core.client import BadResponse, Client

    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31 if coding == "gzip" else 15)
    body = squeeze.compress(b"[" + b" " * (32 * 2**20) + b"]") + squeeze.flush()
    headers = {"content-type": "application/json", "content-encoding": coding}
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, stream=Chunks(body), headers=headers)
    )
    async with Client("http://x", transport=transport, max_body=2**20) as client:
        tracemalloc.start()
        try:
            with pytest.raises(BadResponse, match="larger than 1 MiB"):
                await client.status()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 8 * 2**20, peak


@pytest.mark.parametrize(
    ("coding", "wbits"),
    [("gzip", 31), ("x-gzip", 31), ("deflate", 15), ("deflate", -15), ("identity", 0), ("", 0)],
    ids=["gzip", "x-gzip", "deflate", "raw-deflate", "identity", "none"],
)
async def test_a_compressed_answer_within_its_bound_is_read(coding: str, wbits: int) -> None:
    """Inflated as it arrives, 3 bytes at a time; `deflate` in zlib's format or raw (as some
    servers send it), `x-gzip` as gzip (RFC 9110)."""
    import zlib

    from tui.core.client import Client

    raw = json.dumps({"ses_1": {"type": "busy"}}).encode()
    if wbits:
        squeeze = zlib.compressobj(6, zlib.DEFLATED, wbits)
        body = squeeze.compress(raw) + squeeze.flush()
    else:
        body = raw
    headers = {"content-type": "application/json", "content-encoding": coding}
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, stream=Chunks(body, 3), headers=headers)
    )
    async with Client("http://x", transport=transport) as client:
        assert await client.status() == {"ses_1": {"type": "busy"}}


async def test_an_answer_its_encoding_cannot_decode_is_said() -> None:
    from tui.core.client import BadResponse, Client

    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, stream=Chunks(b"not gzip at all"), headers=headers)
    )
    async with Client("http://x", transport=transport) as client:
        with pytest.raises(BadResponse, match="answer not decodable as its content-encoding"):
            await client.status()


async def test_a_folder_too_long_for_a_url_is_said_not_a_traceback() -> None:
    """A server's folder (or session id) of 70,000 characters goes into a query (a path):
    httpx refuses the URL with InvalidURL, no HTTPError, and it went up as a traceback."""
    from tui.core.client import BadResponse, Client

    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={}))
    async with Client("http://x", transport=transport) as client:
        with pytest.raises(BadResponse, match="cannot be asked") as got:
            await client.status("/" + "d" * 70_000)
        assert len(got.value.message) < 400
        with pytest.raises(BadResponse, match="cannot be asked"):
            await client.messages("ses_" + "x" * 70_000, 5)


@pytest.mark.parametrize("route", ["/experimental/session", "/api/session"])
async def test_a_listing_whose_cursor_goes_round_in_a_circle_is_refused(route: str) -> None:
    """The cursors alternated a, b, a, b: the same page was read until the page limit (1,000
    requests a snapshot), and what it listed was then taken as every session."""
    from tui.core.client import Client, Endless

    asked: list[str | None] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path != route:
            return httpx.Response(404)
        cursor = request.url.params.get("cursor")
        asked.append(cursor)
        nxt = "b" if cursor == "a" else "a"
        items = [session(f"ses_{i}") for i in range(2)]
        if route == "/api/session":
            return httpx.Response(200, json={"data": items, "cursor": {"next": nxt}})
        return httpx.Response(200, json=items, headers={"x-next-cursor": nxt})

    async with Client("http://fake:4096", transport=httpx.MockTransport(handle)) as client:
        with pytest.raises(Endless, match="came back to a page read before"):
            if route == "/api/session":
                await client.v2_sessions(page=2)
            else:
                await client.all_sessions(page=2)
    assert asked == [None, "a", "b"]


async def test_a_listing_past_its_page_limit_is_refused_not_taken_as_every_session() -> None:
    from tui.core.client import Client, Endless

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path != "/experimental/session":
            return httpx.Response(404)
        n = int(request.url.params.get("cursor") or 0)
        return httpx.Response(
            200, json=[session(f"ses_{n}")], headers={"x-next-cursor": str(n + 1)}
        )

    async with Client("http://fake:4096", transport=httpx.MockTransport(handle)) as client:
        with pytest.raises(Endless, match="more than 5 pages"):
            await client.all_sessions(page=1, max_pages=5)


@pytest.mark.parametrize("url", ["http://127.0.0.1:0", "127.0.0.1:0", "https://h:0/x"])
def test_port_0_is_no_servers(url: str) -> None:
    """Port 0 was taken as a server's address (`--server`, a servers file): no server
    listens there."""
    from tui.core.client import OcwatchError, normalize_url

    with pytest.raises(OcwatchError, match="port 0 is no server's"):
        normalize_url(url)
