"""The demo server's V2 face (`ocwatch demo --protocol v2`, issue 39 item 7): the same simulated
world served as 2.0.15 serves it. Read through ocwatch's own V2 reader it gives every session the
state the V1 face gives it; its events move the rows as V1's do; V2's actions act on it; and its
shapes are those of the real server's recorded answers (tests/fixtures/v2)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

from tests.fakes_v2 import load
from tui.core import actions
from tui.core.client import Client
from tui.core.fleet import Fleet
from tui.core.settings import Settings
from tui.demo.server import DemoServer

FAST = Settings(grace=0.2, snapshot_debounce=0.01, snapshot_min_gap=0.05)


def rows_of(fleet: Fleet) -> dict[str, tuple[Any, ...]]:
    view = fleet.current()
    return {r.id: (r.state, r.reason, r.stale, r.parent_id) for r in view.rows.values()}


async def settled_rows(protocol: str) -> tuple[dict[str, tuple[Any, ...]], str | None]:
    """Every row of the frozen initial world, read by a Fleet through the face of `protocol`."""
    server = DemoServer(speed=400, heartbeat=0.05, protocol=protocol)
    server.freeze()
    async with server:
        fleet = Fleet([server.url], settings=FAST)
        try:
            await fleet.snapshot_once()
            return rows_of(fleet), fleet.servers()[0].protocol
        finally:
            await fleet.aclose()


async def test_the_v2_face_tells_every_session_as_the_v1_face_does() -> None:
    v1, p1 = await settled_rows("v1")
    v2, p2 = await settled_rows("v2")
    assert (p1, p2) == ("v1", "v2")
    assert len(v1) == 14 and v2 == v1  # input, busy, stale, retry, unknown, each idle reason


async def test_its_shapes_are_the_real_servers(tmp_path: Any) -> None:
    real = load("question_answered")["waiting"]
    server = DemoServer(speed=400, heartbeat=0.05, protocol="v2")
    server.freeze()
    async with server, httpx.AsyncClient(base_url=server.url, timeout=5) as http:
        info = (await http.get("/api/info")).json()
        assert info["version"] == "2.0.15" and isinstance(info["pid"], int)
        assert "<html" in (await http.get("/global/health")).text  # V1 routes: the web UI
        sessions = (await http.get("/api/session", params={"limit": 5})).json()
        assert len(sessions["data"]) == 5 and sessions["cursor"]["next"]
        assert set(real["session"]) >= {"id", "title", "location", "time"}
        for s in sessions["data"]:
            assert set(s) >= {"id", "title", "location", "time", "cost", "tokens"}
        sid = sessions["data"][0]["id"]
        tail = (await http.get(f"/api/session/{sid}/message", params={"limit": 3})).json()
        assert tail["data"] and {e["type"] for e in tail["data"]} <= {"user", "assistant", "idle"}
        forms = [
            f
            for d in ("/work/webshop", None)
            for f in (
                await http.get("/api/form", params={"location[directory]": d} if d else None)
            ).json()["data"]
        ]
        for form in forms:
            assert set(form) >= set(real["forms"][0]) - {"metadata"}
            assert form["fields"][0]["key"] == "q0" and form["metadata"]["kind"] == "question"


async def until(pred: Callable[[], Any], timeout: float = 30.0) -> Any:
    async with asyncio.timeout(timeout):
        while not (got := pred()):
            await asyncio.sleep(0.01)
        return got


async def test_v2_actions_and_events_move_the_rows() -> None:
    server = DemoServer(speed=400, heartbeat=0.05, protocol="v2")
    server.freeze()
    async with server:
        fleet = Fleet([server.url], settings=FAST)
        running = asyncio.create_task(fleet.run(lambda: None))
        try:
            await until(lambda: len(rows_of(fleet)) == 14)
            view = fleet.current()
            asking = [r for r in view.rows.values() if r.state == "input" and r.pending]
            perm = next(p for r in asking for p in r.pending if p.kind == "permission")
            quest = next(p for r in asking for p in r.pending if p.kind == "question")
            busy = next(r for r in view.rows.values() if r.state == "busy" and not r.stale)
            async with Client(server.url) as c:
                await actions.reply_permission(c, perm.id, "once")
                form = await actions.locate_request(c, quest.id)
                label = form.request.questions[0].options[0].label  # type: ignore[union-attr]
                await actions.answer_question(c, quest.id, options=[label])
                assert await actions.abort(c, busy.id) is True
            assert perm.id not in server.world.permissions
            assert quest.id not in server.world.questions
            # the abort's end arrives as V2's `execution.interrupted {reason: user}`
            await until(lambda: rows_of(fleet).get(busy.id, ())[:2] == ("idle", "aborted"))
            assert fleet.servers()[0].skipped_events == 0
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await fleet.aclose()
