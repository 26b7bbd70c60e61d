"""One session's unreadable last message is that session's failure alone (issue 40, should-fix).

JSON nested 5,000 deep or a 5,000-digit integer in one message made the whole server
"UNREACHABLE". The damage stays with that session: its row says why (busy when the server says it
runs, else unknown; never "idle, no messages", for there is a message and it says how the run
ended), every other row stands, `status` says it on stderr and exits 2, and the next snapshot reads
it again. A failure that says the server as a whole cannot answer still fails the snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes_v2 import FakeV2, load
from tests.hostile import Answer, HostileServer, raw_json, session
from tests.unit.test_hostile import status_json
from tui.core.client import BadResponse, Client, Redirected, Unreachable
from tui.core.derive import derive_server
from tui.core.journal import Journal
from tui.core.protocols.v2.snapshot import fetch_snapshot_v2
from tui.core.settings import Settings
from tui.core.snapshot import MessageCache, confined, fetch_snapshot

DEEP = "[" * 5_000 + "]" * 5_000


def done(sid: str, extra: str = "") -> str:
    return (
        f'[{{"info": {{"id": "msg_1", "sessionID": "{sid}", "role": "assistant", '
        f'"time": {{"created": 1795985000000, "completed": 1795985001000}}, "finish": "stop"'
        f"{extra}}}, "
        '"parts": []}]'
    )


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    srv = HostileServer().start()
    yield srv
    srv.stop()


def test_one_unreadable_message_is_that_rows_failure_alone(hostile: HostileServer) -> None:
    hostile.sessions = [session(s) for s in ("ses_ok", "ses_deep", "ses_digits", "ses_busy")]
    hostile.messages["ses_ok"] = done("ses_ok")
    hostile.messages["ses_deep"] = DEEP
    hostile.messages["ses_digits"] = done("ses_digits", ', "cost": ' + "7" * 5_000)
    hostile.messages["ses_busy"] = "[" + DEEP + "]"
    hostile.routes["/session/status"] = raw_json('{"ses_busy": {"type": "busy"}}')
    code, data, err = status_json(hostile.url)
    rows = {r["id"]: r for r in data["sessions"]}
    assert set(rows) == {"ses_ok", "ses_deep", "ses_digits", "ses_busy"}, err
    assert data["servers"][0]["reachable"] is True
    assert (rows["ses_ok"]["state"], rows["ses_ok"]["reason"]) == ("idle", "completed")
    for sid in ("ses_deep", "ses_digits"):
        assert (rows[sid]["state"], rows[sid]["reason"]) == ("unknown", None), rows[sid]
        assert any("last message unreadable" in e for e in rows[sid]["evidence"]), rows[sid]
    assert any("nested too deeply" in e for e in rows["ses_deep"]["evidence"])
    assert rows["ses_busy"]["state"] == "busy"  # the server says it runs: it does
    assert any("last message unreadable" in e for e in rows["ses_busy"]["evidence"])
    # said, never hidden: exit 2, with which sessions
    assert code == 2, err
    assert "last message of ses_deep" in err and "last message of ses_digits" in err


def test_a_session_whose_messages_route_fails_alone_is_unknown(hostile: HostileServer) -> None:
    hostile.sessions = [session("ses_ok"), session("ses_broken")]
    hostile.messages["ses_ok"] = done("ses_ok")
    hostile.routes["/session/ses_broken/message"] = Answer(
        500, b'{"name": "UnknownError", "data": {"message": "corrupt storage"}}', {}
    )
    code, data, err = status_json(hostile.url)
    rows = {r["id"]: r for r in data["sessions"]}
    assert rows["ses_ok"]["reason"] == "completed"
    assert rows["ses_broken"]["state"] == "unknown", err
    assert any("HTTP 500" in e for e in rows["ses_broken"]["evidence"])
    assert code == 2


@pytest.mark.parametrize(
    "answer",
    [
        Answer(503, b"", {"retry-after": "30"}),
        Answer(429, b"", {}),
        Answer(302, b"", {"location": "http://login.example/"}),
    ],
)
def test_a_failure_of_the_server_as_a_whole_still_fails_the_snapshot(
    hostile: HostileServer, answer: Answer
) -> None:
    hostile.sessions = [session("ses_ok"), session("ses_x")]
    hostile.messages["ses_ok"] = done("ses_ok")
    hostile.routes["/session/ses_x/message"] = answer
    code, data, err = status_json(hostile.url)
    assert code == 2 and data["servers"][0]["reachable"] is False, err


def test_what_is_confined_and_what_is_not() -> None:
    def bad(status: int | None = None, after: float | None = None) -> BadResponse:
        exc = BadResponse("x")
        exc.status, exc.retry_after = status, after
        return exc

    assert confined(bad()) and confined(bad(500)) and confined(bad(400))
    assert not confined(bad(503)) and not confined(bad(429)) and not confined(bad(502))
    assert not confined(bad(500, after=5.0))
    assert not confined(Redirected("x")) and not confined(Unreachable("x"))


async def test_the_next_snapshot_reads_it_again_and_then_it_is_read() -> None:
    messages: dict[str, Any] = {"ses_a": DEEP}

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/global/health":
            return httpx.Response(200, json={"healthy": True, "version": "1.18.33"})
        if path == "/experimental/session":
            return httpx.Response(200, json=[session("ses_a")])
        if path == "/session/ses_a/message":
            got = messages["ses_a"]
            return httpx.Response(200, text=got, headers={"content-type": "application/json"})
        if path == "/session/status":
            return httpx.Response(200, json={})
        return httpx.Response(200, json=[])

    cache = MessageCache()
    async with Client("http://x", transport=httpx.MockTransport(handle)) as client:
        first = await fetch_snapshot(client, cache, clock=lambda: 1_795_985_100.0)
        assert "ses_a" in first.unreadable and first.skipped == 1
        messages["ses_a"] = done("ses_a")
        second = await fetch_snapshot(client, cache, clock=lambda: 1_795_985_200.0)
    assert not second.unreadable and second.skipped == 0
    row = derive_server(second, Journal().facts(), 1_795_985_200.0, Settings())
    assert next(iter(row.values())).reason == "completed"


async def test_a_v2_transcript_that_cannot_be_read_is_that_rows_alone() -> None:
    api = FakeV2(waiting=False)
    sid = load("completed")["end"]["session"]["id"]
    inner = api.handle

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == f"/api/session/{sid}/message":
            return httpx.Response(200, text=DEEP, headers={"content-type": "application/json"})
        return inner(request)

    async with Client("http://x", transport=httpx.MockTransport(handle)) as client:
        client.protocol = "v2"
        snap = await fetch_snapshot_v2(client, MessageCache(), clock=lambda: 1.0)
    assert set(snap.unreadable) == {sid} and len(snap.sessions) == len(api.moments)
    rows = {k[1]: r for k, r in derive_server(snap, Journal().facts(), 2.0, Settings()).items()}
    assert rows[sid].state == "unknown" and "nested too deeply" in " ".join(rows[sid].evidence)
    others = [r for s, r in rows.items() if s != sid]
    assert others and all(r.state != "unknown" for r in others), [(r.id, r.state) for r in others]
    assert json.dumps(snap.malformed)  # named, as every record not read
