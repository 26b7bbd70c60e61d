"""The wire facts ocwatch's design and unit tests rely on, checked against the pinned server.

If one of these fails after a server upgrade, the fact changed: update /work/oc/findings.md's
counterpart in tests/fixtures/README.md, re-record the fixtures (record_fixtures.py) and revisit
the core's derive rules. Assertions are on the raw API / raw event frames only.
"""

from __future__ import annotations

from typing import Any

import pytest

from .driver import Driver, EventRecorder, Frame, wait_until
from .oc_server import OpenCodeServer

pytestmark = pytest.mark.integration


def _milestones(frames: list[Frame], sid: str) -> list[str]:
    """status:<type> | idle | error | completed (assistant message.updated with time.completed)."""
    out = []
    for f in frames:
        if f.session_id != sid:
            continue
        p = f.payload
        props: dict[str, Any] = p.get("properties") or {}
        if p.get("type") == "session.status":
            out.append("status:" + props["status"]["type"])
        elif p.get("type") == "session.idle":
            out.append("idle")
        elif p.get("type") == "session.error":
            out.append("error")
        elif p.get("type") == "message.updated":
            info = props["info"]
            if info["role"] == "assistant" and info["time"].get("completed"):
                out.append("completed")
    return out


def _settled(events: EventRecorder, sid: str, idles: int) -> None:
    wait_until(
        lambda: _milestones(events.snapshot(), sid).count("idle") >= idles,
        what=f"{idles} session.idle for {sid}",
    )


def test_completed_run_order(oc: Driver, events: EventRecorder) -> None:
    s = oc.run("text")
    oc.wait_completed_idle(s["id"])
    _settled(events, s["id"], 1)
    ms = _milestones(events.snapshot(), s["id"])
    # the completed assistant message comes before the status goes idle; one session.idle
    assert ms.index("completed") < ms.index("status:idle")
    assert ms.count("idle") == 1
    assert "error" not in ms


def test_failed_run_order_idle_twice(oc: Driver, events: EventRecorder) -> None:
    s = oc.run("fail")
    oc.wait_assistant_error(s["id"], "APIError")
    _settled(events, s["id"], 2)
    ms = _milestones(events.snapshot(), s["id"])
    # seen: error, status:idle, idle, completed (with the error), status:idle, idle
    assert ms.index("error") < ms.index("status:idle") < ms.index("completed")
    assert ms.count("idle") == 2
    err = events.find(lambda f: f.type == "session.error" and f.session_id == s["id"])[0]
    assert err.payload["properties"]["error"]["name"] == "APIError"


def test_failed_run_does_not_bump_session_time_updated(oc: Driver) -> None:
    s = oc.run("fail")
    m = oc.wait_assistant_error(s["id"], "APIError")
    oc.wait_absent(s["id"])
    session = oc.session(s["id"])
    assert session["time"]["updated"] < m["info"]["time"]["completed"]
    assert "cost" in session and "tokens" in session


def test_sync_frames_follow_plain_events_with_per_session_seq(
    oc: Driver, events: EventRecorder
) -> None:
    s = oc.run("text")
    oc.wait_completed_idle(s["id"])
    _settled(events, s["id"], 1)
    frames = events.snapshot()
    seqs = []
    for i, f in enumerate(frames):
        if f.type != "sync":
            continue
        se = f.payload["syncEvent"]
        if se["aggregateID"] != s["id"]:
            continue
        prev = frames[i - 1].payload
        assert f.payload["id"] == se["id"] == prev["id"]
        assert se["type"] == prev["type"] + ".1"
        assert se["data"] == prev["properties"]
        seqs.append(se["seq"])
    assert seqs == list(range(len(seqs))) and seqs[0] == 0


def test_child_permission_carries_child_session(oc: Driver, events: EventRecorder) -> None:
    parent = oc.run("task", "permission")
    child = oc.wait_child(parent["id"])
    assert child["parentID"] == parent["id"]
    req = oc.wait_permission(child["id"])
    assert req["sessionID"] == child["id"]
    assert not [p for p in oc.permissions() if p["sessionID"] == parent["id"]]
    asked = events.wait_event("permission.asked", child["id"])
    assert asked.payload["properties"]["sessionID"] == child["id"]
    oc.reply_permission(req["id"], "once")
    oc.wait_completed_idle(child["id"])
    oc.wait_completed_idle(parent["id"])


def test_session_list_is_per_project(oc: Driver, oc_server: OpenCodeServer) -> None:
    a = oc.create_session(directory=str(oc_server.project), title="list alpha")
    b = oc.create_session(directory=str(oc_server.project2), title="list beta")
    plain = {s["id"] for s in oc.get_global("/session")}
    assert a["id"] in plain and b["id"] not in plain
    beta = {s["id"] for s in oc.get_global("/session", directory=str(oc_server.project2))}
    assert b["id"] in beta
    everywhere = {s["id"] for s in oc.get_global("/experimental/session")}
    assert {a["id"], b["id"]} <= everywhere


def test_api_session_active_ignores_v1_runs(oc: Driver, all_states: Any) -> None:
    r = oc.client.get("/api/session/active")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"data"}
    assert all_states.busy not in body["data"]
    assert oc.status_map()[all_states.busy]["type"] == "busy"


async def test_last_messages_are_plain_answers_that_quick_reads_take(
    oc_server_auth: OpenCodeServer, oc_auth: Driver, oc_password: str
) -> None:
    """`GET /session/{id}/message` answers 200 JSON, uncompressed, on a kept-alive connection
    (with the password, too): tui.core.quick reads it so, and gets what the usual read gets."""
    from tui.core.client import Client
    from tui.core.settings import Auth

    sid = oc_auth.create_session(title="quick reads")["id"]
    oc_auth.prompt(sid, "Say hello", "text")
    wait_until(
        lambda: any(
            m["info"]["role"] == "assistant" and m["info"]["time"].get("completed")
            for m in oc_auth.messages(sid)
        ),
        60,
        what="a completed reply",
    )
    async with Client(oc_server_auth.url, Auth("opencode", oc_password)) as client:
        assert client._quick is not None
        usual = await client.request("GET", f"/session/{sid}/message", params={"limit": 1})
        sent = client.requests
        for _ in range(3):  # the same connection, asked again
            quick = await client._quick_get(f"/session/{sid}/message?limit=1")
            assert quick == usual and quick
        assert client.requests == sent + 3
        assert await client.messages(sid) == usual
        assert client.requests == sent + 4  # taken the quick way: not asked again
