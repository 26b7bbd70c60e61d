"""Client errors are one clear line; snapshots ask every folder and cache last messages."""

from __future__ import annotations

import httpx
import pytest

from tests.fakes import FakeAPI, wire_session
from tui.core.client import AuthFailed, BadResponse, Client, NotFound, Unreachable
from tui.core.settings import Auth
from tui.core.snapshot import MessageCache, fetch_snapshot


def clock() -> float:
    return 1000.0


async def test_unreachable_server_is_one_line():
    async with Client("http://127.0.0.1:9", timeout=2) as c:
        with pytest.raises(Unreachable) as ei:
            await c.health()
    assert "cannot connect" in ei.value.message and "\n" not in ei.value.message


async def test_wrong_or_missing_password_says_how_to_fix_and_hides_the_password():
    api = FakeAPI(password="s3cret")
    for auth, says in (
        (None, "the server wants a password; set OPENCODE_SERVER_PASSWORD"),
        (
            Auth("opencode", "wrong-pass"),
            "the server refused user 'opencode' with the password from OPENCODE_SERVER_PASSWORD",
        ),
    ):
        async with Client("http://x", auth, transport=api.transport()) as c:
            with pytest.raises(AuthFailed) as ei:
                await c.sessions()
        assert says in ei.value.message
        assert "wrong-pass" not in ei.value.message and "s3cret" not in ei.value.message
    async with Client("http://x", Auth("opencode", "s3cret"), transport=api.transport()) as c:
        assert await c.sessions() == []
    assert "s3cret" not in repr(Auth("opencode", "s3cret"))


async def test_html_instead_of_json_is_a_clear_error():
    api = FakeAPI(html_everywhere=True)
    async with Client("http://x", transport=api.transport()) as c:
        with pytest.raises(BadResponse) as ei:
            await c.sessions()
    assert "expected JSON but got HTML" in ei.value.message


async def test_not_found_carries_the_server_tag():
    api = FakeAPI()
    async with Client("http://x", transport=api.transport()) as c:
        with pytest.raises(NotFound) as ei:
            await c.reply_permission("per_x", "once")
    assert ei.value.tag == "PermissionNotFoundError"


async def test_server_error_status_is_bad_response():
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(500, json={"name": "UnknownError", "data": {"message": "boom"}})

    async with Client("http://x", transport=httpx.MockTransport(handler)) as c:
        with pytest.raises(BadResponse) as ei:
            await c.health()
    assert "HTTP 500 boom" in ei.value.message


async def test_active_route_absent_is_none():
    async with Client("http://x", transport=FakeAPI().transport()) as c:
        assert await c.active() is None  # HTML fallback on 1.18.33
    async with Client("http://x", transport=FakeAPI(active_route=True).transport()) as c:
        assert await c.active() == set()


def two_folder_api() -> FakeAPI:
    return FakeAPI(
        sessions=[wire_session("ses_a", "/p/a"), wire_session("ses_b", "/p/b")],
        status={"/p/a": {}, "/p/b": {"ses_b": {"type": "busy"}}},
        permissions={"/p/b": [{"id": "per_1", "sessionID": "ses_b", "permission": "bash"}]},
        questions={"/p/a": [{"id": "que_1", "sessionID": "ses_a", "questions": []}]},
        projects=[{"id": "prj2", "worktree": "/p/c"}, {"id": "global", "worktree": "/"}],
        messages={
            "ses_a": [
                {
                    "info": {
                        "id": "msg_1",
                        "sessionID": "ses_a",
                        "role": "user",
                        "time": {"created": 1},
                    },
                    "parts": [],
                }
            ]
        },
    )


async def test_snapshot_asks_every_folder():
    api = two_folder_api()
    async with Client("http://x", transport=api.transport()) as c:
        snap = await fetch_snapshot(c, MessageCache(), clock=clock)
    assert snap.status["ses_b"].type == "busy"  # only answered for /p/b
    assert set(snap.permissions) == {"per_1"} and set(snap.questions) == {"que_1"}
    assert api.hits["/session/status"] == 3  # /p/a, /p/b and the project /p/c
    assert snap.messages["ses_a"] is not None and snap.messages["ses_b"] is None
    assert snap.version == "fake"


def done_message(sid: str) -> list[dict]:
    return [
        {
            "info": {
                "id": "msg_1",
                "sessionID": sid,
                "role": "assistant",
                "time": {"created": 1000, "completed": 2000},
                "finish": "stop",
            },
            "parts": [],
        }
    ]


async def test_resync_of_unchanged_idle_sessions_costs_a_bounded_number_of_requests():
    ids = [f"ses_{i:04d}" for i in range(2000)]
    api = FakeAPI(
        sessions=[wire_session(s, f"/p/{i % 3}", updated=1e6 + i) for i, s in enumerate(ids)],
        messages={s: done_message(s) for s in ids},
    )
    cache = MessageCache()
    async with Client("http://x", transport=api.transport()) as c:
        first = await fetch_snapshot(c, cache, clock=clock)
        second = await fetch_snapshot(c, cache, clock=clock)
    # health, 2 pages of sessions, projects, 3 per folder, active; then the messages
    assert first.requests == 1 + 2 + 1 + 3 * 3 + 1 + 2000
    assert second.requests == 1 + 2 + 1 + 3 * 3 + 1  # no message fetch for unchanged sessions


async def test_sessions_of_every_project_without_the_experimental_route():
    api = FakeAPI(
        sessions=[wire_session("ses_a", "/p/a"), wire_session("ses_b", "/p/b")],
        projects=[{"id": "pa", "worktree": "/p/a"}, {"id": "pb", "worktree": "/p/b"}],
        experimental=False,
    )
    async with Client("http://x", transport=api.transport()) as c:
        got = await c.all_sessions()
    assert sorted(x["id"] for x in got) == ["ses_a", "ses_b"]


async def test_unsettled_last_messages_are_asked_again():
    api = FakeAPI(
        sessions=[wire_session("ses_1")],
        messages={
            "ses_1": [
                {
                    "info": {
                        "id": "msg_1",
                        "sessionID": "ses_1",
                        "role": "user",
                        "time": {"created": 999_000},
                    },
                    "parts": [],
                }
            ]
        },
    )
    cache = MessageCache()
    async with Client("http://x", transport=api.transport()) as c:
        await fetch_snapshot(c, cache, clock=clock)
        api.messages["ses_1"] = done_message("ses_1")
        snap = await fetch_snapshot(c, cache, clock=clock)
    assert snap.messages["ses_1"].info.role == "assistant"


async def test_changed_busy_and_touched_sessions_are_refetched():
    api = FakeAPI(
        sessions=[wire_session("ses_1"), wire_session("ses_2"), wire_session("ses_3")],
        status={"/p/a": {"ses_2": {"type": "busy"}}},
    )
    cache = MessageCache()
    async with Client("http://x", transport=api.transport()) as c:
        await fetch_snapshot(c, cache, clock=clock)
        api.hits.clear()
        api.sessions[0] = wire_session("ses_1", updated=2_000_000.0)  # time.updated moved
        await fetch_snapshot(c, cache, clock=clock, touched={"ses_3"})
    assert api.hits["/session/{id}/message"] == 3


async def test_malformed_items_are_skipped_and_counted():
    api = FakeAPI(
        sessions=[wire_session("ses_1"), {"title": "no id"}],
        permissions={"/p/a": [{"id": "per_1"}]},
    )
    async with Client("http://x", transport=api.transport()) as c:
        snap = await fetch_snapshot(c, MessageCache(), clock=clock)
    assert set(snap.sessions) == {"ses_1"} and snap.skipped == 2


async def test_progress_counts_the_last_messages_of_a_first_snapshot():
    ids = [f"ses_{i:03d}" for i in range(250)]
    api = FakeAPI(
        sessions=[wire_session(s, updated=1e6 + i) for i, s in enumerate(ids)],
        messages={s: done_message(s) for s in ids[1:]},
    )  # ses_000 has none
    seen: list[tuple[int, int]] = []
    cache = MessageCache()
    async with Client("http://x", transport=api.transport()) as c:
        await fetch_snapshot(c, cache, clock=clock, progress=lambda d, t: seen.append((d, t)))
        seen_again: list[tuple[int, int]] = []
        await fetch_snapshot(c, cache, clock=clock, progress=lambda d, t: seen_again.append((d, t)))
    assert seen == [(i, 250) for i in range(251)]
    assert seen_again == [(0, 0)]  # a resync of unchanged sessions fetches none


async def test_a_server_of_many_folders_is_read_a_few_folders_at_a_time():
    """Each folder's maps are three requests; a server listing sessions in 60 folders is read
    FOLDERS_AT_ONCE folders at a time (3,000 folders opened 9,000 connections and read as a
    timeout), and every folder is still read."""
    import asyncio

    from tui.core.snapshot import FOLDERS_AT_ONCE

    folders = [f"/p/f{i}" for i in range(60)]
    api = FakeAPI(sessions=[wire_session(f"ses_{i}", folder) for i, folder in enumerate(folders)])
    api.status = {folders[-1]: {"ses_59": {"type": "busy"}}}
    flight = {"now": 0, "most": 0}

    async def handle(request: httpx.Request) -> httpx.Response:
        maps = request.url.path in ("/session/status", "/permission", "/question")
        if maps:
            flight["now"] += 1
            flight["most"] = max(flight["most"], flight["now"])
            await asyncio.sleep(0.001)
            flight["now"] -= 1
        return api.handle(request)

    async with Client("http://x", transport=httpx.MockTransport(handle)) as c:
        snap = await fetch_snapshot(c, MessageCache(), clock=clock)
    assert api.hits["/session/status"] >= len(folders)
    assert snap.status["ses_59"].type == "busy"
    assert 3 < flight["most"] <= 3 * FOLDERS_AT_ONCE, flight
