"""The built-in demo server: routes, shapes, filters, event stream, replies, restart, scripts."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from tests import recorded
from tui.core.models import Message, PermissionRequest, QuestionRequest, Session, SessionStatus
from tui.demo.cast import ERRORS, INFRA, MARKUP_TITLE, SPEC_BY_ID, SPECS, WEBSHOP, reply_to
from tui.demo.initial import build_initial_world
from tui.demo.scenarios import RUNS, Actor, Director
from tui.demo.server import DemoServer
from tui.demo.world import World

FIXED_NOW = 1_760_000_000.0


async def until(pred: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Poll `pred` until it returns something truthy."""
    async with asyncio.timeout(timeout):
        while not (value := pred()):
            await asyncio.sleep(0.005)
        return value


class Events:
    """Collects the frames of an SSE route in the background."""

    def __init__(self, client: httpx.AsyncClient, path: str = "/global/event") -> None:
        self.client, self.path = client, path
        self.frames: list[dict[str, Any]] = []
        self.ended = False
        self._task: asyncio.Task[None] | None = None

    async def _read(self) -> None:
        try:
            async with self.client.stream("GET", self.path, timeout=None) as resp:
                assert resp.headers["content-type"].startswith("text/event-stream")
                async for line in resp.aiter_lines():
                    if line.startswith("data: "):
                        self.frames.append(json.loads(line[6:]))
        except httpx.HTTPError:
            pass
        finally:
            self.ended = True

    async def __aenter__(self) -> Events:
        self._task = asyncio.create_task(self._read())
        await until(lambda: self.frames)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    def payloads(self, sid: str | None = None) -> list[dict[str, Any]]:
        out = [f["payload"] for f in self.frames if f["payload"]["type"] != "sync"]
        return [p for p in out if sid is None or p["properties"].get("sessionID") == sid]

    async def wait(
        self, pred: Callable[[dict[str, Any]], bool], sid: str | None = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        return await until(lambda: next((p for p in self.payloads(sid) if pred(p)), None), timeout)


def client_for(server: DemoServer, **kwargs: Any) -> httpx.AsyncClient:
    """A client for plain HTTP (verify=False skips loading a CA bundle: faster)."""
    return httpx.AsyncClient(base_url=server.url, timeout=5, verify=False, **kwargs)


@pytest.fixture
async def demo() -> AsyncIterator[tuple[DemoServer, httpx.AsyncClient]]:
    """A frozen server: the deterministic initial world, until a test thaws it."""
    server = DemoServer(speed=400, heartbeat=0.05)
    server.freeze()
    async with server, client_for(server) as client:
        yield server, client


async def last_assistant(client: httpx.AsyncClient, sid: str) -> Message:
    data = (await client.get(f"/session/{sid}/message", params={"limit": 5})).json()
    return [Message.parse(m) for m in data if m["info"]["role"] == "assistant"][-1]


async def status(client: httpx.AsyncClient, directory: str = WEBSHOP) -> dict[str, Any]:
    return (await client.get("/session/status", params={"directory": directory})).json()


# ----- routes and shapes ---------------------------------------------------------------------
async def test_health_projects_and_html_fallback(
    demo: tuple[DemoServer, httpx.AsyncClient],
) -> None:
    _, client = demo
    assert (await client.get("/global/health")).json() == {
        "healthy": True,
        "version": "1.18.33-demo",
    }
    projects = (await client.get("/project")).json()
    assert {p["worktree"] for p in projects} == {WEBSHOP, INFRA}
    assert all(len(p["id"]) == 40 and "created" in p["time"] for p in projects)
    for path in ("/no/such/route", "/", "/doc"):
        resp = await client.get(path)
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
        assert "<html" in resp.text
    # 1.18.33 has this route; runs started through v1 prompts are not listed in it
    assert (await client.get("/api/session/active")).json() == {"data": {}}


async def test_session_list_is_per_folder_like_the_real_server(
    demo: tuple[DemoServer, httpx.AsyncClient],
) -> None:
    _, client = demo
    default = (await client.get("/session")).json()
    assert {s["directory"] for s in default} == {WEBSHOP} and len(default) == 7
    infra = (await client.get("/session", params={"directory": INFRA})).json()
    assert {s["directory"] for s in infra} == {INFRA} and len(infra) == 7
    updated = [s["time"]["updated"] for s in default]
    assert updated == sorted(updated, reverse=True)
    every = (await client.get("/experimental/session")).json()
    assert len(every) == 14 and all(s["project"]["worktree"] == s["directory"] for s in every)
    assert len((await client.get("/experimental/session", params={"roots": "true"})).json()) == 12


async def test_list_all_folders_option() -> None:
    server = DemoServer(list_all_folders=True)
    server.freeze()
    async with server, client_for(server) as client:
        assert len((await client.get("/session")).json()) == 14
        assert len((await client.get("/session", params={"directory": INFRA})).json()) == 7


async def test_session_shape(demo: tuple[DemoServer, httpx.AsyncClient]) -> None:
    _, client = demo
    raw = (await client.get("/experimental/session")).json()
    assert len(raw) == 14
    for item in raw:
        assert {
            "id",
            "slug",
            "projectID",
            "directory",
            "title",
            "version",
            "time",
            "cost",
            "tokens",
        } <= item.keys()
        assert {"created", "updated"} <= item["time"].keys()
        assert set(item["tokens"]) == {"input", "output", "reasoning", "cache"}
        assert set(item["tokens"]["cache"]) == {"read", "write"}
    sessions = {s.id: s for s in map(Session.parse, raw)}
    assert {s.directory for s in sessions.values()} == {WEBSHOP, INFRA}
    assert sessions["ses_demo_markup"].title == MARKUP_TITLE
    assert sessions["ses_demo_auth_explore"].parent_id == "ses_demo_auth"
    assert sessions["ses_demo_dns_apply"].parent_id == "ses_demo_dns"
    assert sessions["ses_demo_cart"].cost and sessions["ses_demo_cart"].tokens.total > 0
    one = (await client.get("/session/ses_demo_cart")).json()
    assert one["id"] == "ses_demo_cart"
    assert (await client.get("/session/ses_nope")).status_code == 404


async def test_status_permission_question_filter_by_directory(
    demo: tuple[DemoServer, httpx.AsyncClient],
) -> None:
    _, client = demo
    default = (await client.get("/session/status")).json()
    assert default == await status(client, WEBSHOP)
    assert default["ses_demo_checkout"] == {"type": "busy"}
    retry = SessionStatus.parse(default["ses_demo_search"])
    assert retry.type == "retry" and retry.attempt == 4 and retry.message and retry.next
    infra = await status(client, INFRA)
    assert set(infra) == {"ses_demo_k8s", "ses_demo_dns", "ses_demo_dns_apply"}
    header = await client.get("/session/status", headers={"x-opencode-directory": INFRA})
    assert header.json() == infra
    assert not set(default) & set(infra)

    perms = (await client.get("/permission")).json()
    assert [p["sessionID"] for p in perms] == ["ses_demo_deploy"]
    deploy = PermissionRequest.parse(perms[0])
    assert deploy.permission == "bash" and deploy.patterns == ("git push origin main",)
    assert deploy.always == ("git push *",) and deploy.tool and deploy.tool.call_id
    infra_perms = (await client.get("/permission", params={"directory": INFRA})).json()
    assert [p["sessionID"] for p in infra_perms] == ["ses_demo_dns_apply"]
    assert infra_perms[0]["permission"] == "edit"

    questions = (await client.get("/question", params={"directory": WEBSHOP})).json()
    assert [q["sessionID"] for q in questions] == ["ses_demo_i18n"]
    question = QuestionRequest.parse(questions[0])
    assert [o.label for o in question.questions[0].options] == ["de-DE", "de-AT", "de-CH"]
    assert (await client.get("/question", params={"directory": INFRA})).json() == []


async def test_messages_shape_and_limit(demo: tuple[DemoServer, httpx.AsyncClient]) -> None:
    _, client = demo
    every = (await client.get("/session/ses_demo_cart/message")).json()
    last = (await client.get("/session/ses_demo_cart/message", params={"limit": 2})).json()
    assert len(every) > 2 and last == every[-2:]
    info = last[-1]["info"]
    assert info["role"] == "assistant" and info["finish"] == "stop"
    assert {"modelID", "providerID", "cost", "tokens"} <= info.keys()
    assert info["time"]["completed"] >= info["time"]["created"]
    assert [p["type"] for p in last[-1]["parts"]] == ["step-start", "text", "step-finish"]
    assert (
        await client.get("/session/ses_demo_cart/message", params={"limit": "x"})
    ).status_code == 400


async def test_initial_world_has_every_state(demo: tuple[DemoServer, httpx.AsyncClient]) -> None:
    _, client = demo
    web, infra = await status(client, WEBSHOP), await status(client, INFRA)

    async def facts(sid: str) -> tuple[Message, list[Any]]:
        msg = await last_assistant(client, sid)
        return msg, [p for p in msg.parts if p.is_open_tool]

    # busy: status busy, a running tool
    msg, open_tools = await facts("ses_demo_checkout")
    assert web["ses_demo_checkout"]["type"] == "busy" and msg.info.time.completed is None
    assert [p.tool for p in open_tools] == ["bash"]
    # retry
    assert web["ses_demo_search"]["type"] == "retry"
    # input: permission and question (the server says busy meanwhile)
    assert web["ses_demo_deploy"]["type"] == web["ses_demo_i18n"]["type"] == "busy"
    # idle completed / aborted / error: absent from status, completed messages
    msg, _ = await facts("ses_demo_cart")
    assert "ses_demo_cart" not in web and msg.info.finish == "stop" and msg.info.error is None
    msg, _ = await facts("ses_demo_terraform")
    assert "ses_demo_terraform" not in infra and msg.info.time.completed
    assert msg.info.error and msg.info.error.name == "MessageAbortedError"
    assert [p.state.status for p in msg.parts if p.type == "tool"] == ["error"]
    msg, _ = await facts("ses_demo_alerts")
    assert "ses_demo_alerts" not in infra and msg.info.error
    assert msg.info.error.name == "APIError" and msg.info.time.completed
    # unknown/interrupted: absent from status, last assistant never completed, tool left running
    msg, open_tools = await facts("ses_demo_backup")
    assert "ses_demo_backup" not in infra and msg.info.time.completed is None and open_tools
    # stale busy: status busy but the last assistant completed with stop, nothing open
    msg, open_tools = await facts("ses_demo_k8s")
    assert infra["ses_demo_k8s"]["type"] == "busy"
    assert msg.info.time.completed and msg.info.finish == "stop" and not open_tools
    # parent with a running task tool and a busy child; parent whose child asks a permission
    for parent, child, directory in (
        ("ses_demo_auth", "ses_demo_auth_explore", WEBSHOP),
        ("ses_demo_dns", "ses_demo_dns_apply", INFRA),
    ):
        msg, open_tools = await facts(parent)
        assert [p.tool for p in open_tools] == ["task"]
        assert open_tools[0].state.input["subagent_type"] == "general"
        assert (await status(client, directory))[child]["type"] == "busy"
        children = (await client.get(f"/session/{parent}/children")).json()
        assert [c["id"] for c in children] == [child]


def test_initial_world_is_deterministic() -> None:
    def dump(world: World) -> str:
        return json.dumps(
            [
                world.sessions,
                world.messages,
                world.status,
                world.permissions,
                world.questions,
                world.projects,
            ],
            sort_keys=True,
        )

    first = build_initial_world(lambda: FIXED_NOW, seed=3)
    assert dump(first) == dump(build_initial_world(lambda: FIXED_NOW, seed=3))
    assert first.status["ses_demo_search"]["next"] == int((FIXED_NOW + 14) * 1000)


# ----- event stream ----------------------------------------------------------------------------
async def test_stream_connected_first_then_events_in_real_order(
    demo: tuple[DemoServer, httpx.AsyncClient],
) -> None:
    _, client = demo
    async with Events(client) as events:
        first = events.frames[0]  # like the real server: no directory on stream-level frames
        assert first == {
            "payload": {"id": first["payload"]["id"], "type": "server.connected", "properties": {}}
        }
        assert first["payload"]["id"].startswith("evt_")
        assert (await client.post("/session/ses_demo_checkout/abort")).json() is True
        sid = "ses_demo_checkout"
        await events.wait(lambda p: p["type"] == "session.updated", sid)  # the last one
        kinds = [p["type"] for p in events.payloads(sid)]
        # recorded order of an abort: error, idle, parts, message (completed + error), idle again
        assert kinds == [
            "session.error",
            "session.status",
            "session.idle",
            "message.part.updated",
            "message.updated",
            "session.status",
            "session.idle",
            "session.updated",
        ]
        error = events.payloads(sid)[0]["properties"]["error"]
        assert error == {"name": "MessageAbortedError", "data": {"message": "Aborted"}}
        await events.wait(lambda p: p["type"] == "server.heartbeat")
        frames = [f for f in events.frames if f["payload"]["type"] != "server.heartbeat"][1:]
        assert all(f["directory"] == WEBSHOP and f["project"] for f in frames)
        for plain, dup in zip(frames, frames[1:], strict=False):
            if dup["payload"]["type"] == "sync":  # the duplicate follows its event, same id
                sync = dup["payload"]["syncEvent"]
                assert sync["id"] == dup["payload"]["id"] == plain["payload"]["id"]
                assert sync["type"] == plain["payload"]["type"] + ".1"
                assert sync["data"] == plain["payload"]["properties"]
        syncs = [f["payload"]["syncEvent"] for f in frames if f["payload"]["type"] == "sync"]
        assert syncs and all(s["aggregateID"] == sid for s in syncs)
        seqs = [s["seq"] for s in syncs]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))


async def test_folder_stream_filters(demo: tuple[DemoServer, httpx.AsyncClient]) -> None:
    _, client = demo
    async with Events(client, f"/event?directory={INFRA}") as events:
        assert events.frames[0]["type"] == "server.connected"
        await client.post("/session/ses_demo_checkout/abort")
        await client.post("/session/ses_demo_k8s/abort")
        await until(
            lambda: any(
                f.get("properties", {}).get("sessionID") == "ses_demo_k8s" for f in events.frames
            )
        )
        sids = {f["properties"].get("sessionID") for f in events.frames[1:]}
        assert "ses_demo_checkout" not in sids


# ----- actions -----------------------------------------------------------------------------------
async def test_abort_parent_aborts_child(demo: tuple[DemoServer, httpx.AsyncClient]) -> None:
    _, client = demo
    assert (await client.post("/session/ses_demo_auth/abort")).json() is True
    web = await status(client)
    assert "ses_demo_auth" not in web and "ses_demo_auth_explore" not in web
    for sid in ("ses_demo_auth", "ses_demo_auth_explore"):
        msg = await last_assistant(client, sid)
        assert msg.info.error and msg.info.error.name == "MessageAbortedError"
        assert msg.info.time.completed and not any(p.is_open_tool for p in msg.parts)
    # aborting a stale-busy session clears its status entry
    await client.post("/session/ses_demo_k8s/abort")
    assert "ses_demo_k8s" not in await status(client, INFRA)
    assert (await client.post("/session/ses_nope/abort")).status_code == 404


async def test_permission_once_runs_tool_and_completes(
    demo: tuple[DemoServer, httpx.AsyncClient],
) -> None:
    server, client = demo
    (request,) = (await client.get("/permission")).json()
    async with Events(client) as events:
        resp = await client.post(f"/permission/{request['id']}/reply", json={"reply": "once"})
        assert resp.json() is True
        assert (await client.get("/permission")).json() == []
        replied = await events.wait(lambda p: p["type"] == "permission.replied")
        assert replied["properties"] == {
            "sessionID": "ses_demo_deploy",
            "requestID": request["id"],
            "reply": "once",
        }
        server.thaw()
        # recorded: message.updated with finish first, then again with the completed time
        await events.wait(
            lambda p: (
                p["type"] == "message.updated"
                and p["properties"]["info"].get("finish") == "stop"
                and "completed" in p["properties"]["info"]["time"]
            ),
            "ses_demo_deploy",
        )
        await events.wait(lambda p: p["type"] == "session.idle", "ses_demo_deploy")
        tools = [
            p["properties"]["part"]
            for p in events.payloads("ses_demo_deploy")
            if p["type"] == "message.part.updated"
            and p["properties"]["part"].get("callID") == request["tool"]["callID"]
        ]
        assert tools[-1]["state"]["status"] == "completed"
    again = await client.post(f"/permission/{request['id']}/reply", json={"reply": "once"})
    assert again.status_code == 404


async def test_permission_reject_ends_run_like_the_real_server(
    demo: tuple[DemoServer, httpx.AsyncClient],
) -> None:
    _, client = demo
    (request,) = (await client.get("/permission", params={"directory": INFRA})).json()
    resp = await client.post(f"/permission/{request['id']}/reply", json={"reply": "reject"})
    assert resp.json() is True
    sid = request["sessionID"]
    await until(lambda: sid not in server_status(demo[0], INFRA))
    msg = await last_assistant(client, sid)  # recorded: tool error, finish tool-calls, no error
    assert msg.info.error is None and msg.info.time.completed
    assert msg.info.finish == "tool-calls"
    tool = next(p for p in msg.parts if p.call_id == request["tool"]["callID"])
    assert tool.state and tool.state.status == "error"
    assert tool.state.error == "The user rejected permission to use this specific tool call."


async def test_permission_reject_with_a_message_goes_on_like_the_real_server(
    demo: tuple[DemoServer, httpx.AsyncClient],
) -> None:
    server, client = demo
    server.thaw()
    (request,) = (await client.get("/permission", params={"directory": INFRA})).json()
    resp = await client.post(
        f"/permission/{request['id']}/reply", json={"reply": "reject", "message": "use rsync"}
    )
    assert resp.json() is True
    sid = request["sessionID"]
    # recorded on 1.18.33: the feedback goes to the model, a next step follows and completes
    await until(lambda: sid not in server_status(server, INFRA))
    msg = await last_assistant(client, sid)
    assert msg.info.error is None and msg.info.finish == "stop"


def server_status(server: DemoServer, directory: str) -> dict[str, Any]:
    return server.world.status_for(directory)


async def test_question_answer_completes_and_reject_errors(
    demo: tuple[DemoServer, httpx.AsyncClient],
) -> None:
    server, client = demo
    (question,) = (await client.get("/question")).json()
    async with Events(client) as events:
        resp = await client.post(f"/question/{question['id']}/reply", json={"answers": [["de-AT"]]})
        assert resp.json() is True
        replied = await events.wait(lambda p: p["type"] == "question.replied")
        assert replied["properties"]["answers"] == [["de-AT"]]
        server.thaw()
        await events.wait(
            lambda p: (
                p["type"] == "message.updated" and p["properties"]["info"].get("finish") == "stop"
            ),
            "ses_demo_i18n",
        )
    msgs = (await client.get("/session/ses_demo_i18n/message", params={"limit": 4})).json()
    outputs = [
        p["state"].get("output", "")
        for m in msgs
        for p in m["parts"]
        if p.get("tool") == "question"
    ]
    assert any("de-AT" in out for out in outputs)
    bad = await client.post(f"/question/{question['id']}/reply", json={"answers": [["x"]]})
    assert bad.status_code == 404


async def test_question_reject(demo: tuple[DemoServer, httpx.AsyncClient]) -> None:
    _, client = demo
    (question,) = (await client.get("/question")).json()
    assert (await client.post(f"/question/{question['id']}/reject")).json() is True
    msg = await last_assistant(client, "ses_demo_i18n")
    assert msg.info.error is None and msg.info.finish == "tool-calls"
    assert "ses_demo_i18n" not in await status(client)
    tool = next(p for p in msg.parts if p.tool == "question")
    assert tool.state and tool.state.error == "The user dismissed this question"


async def test_not_found_and_bad_request_shapes(demo: tuple[DemoServer, httpx.AsyncClient]) -> None:
    _, client = demo
    resp = await client.post("/permission/per_nope/reply", json={"reply": "once"})
    assert resp.status_code == 404
    assert resp.json()["_tag"] == "PermissionNotFoundError"
    assert resp.json()["requestID"] == "per_nope" and resp.json()["message"]
    for path, body in (
        ("/question/que_nope/reply", {"answers": [["a"]]}),
        ("/question/que_nope/reject", None),
    ):
        resp = await client.post(path, json=body)
        assert resp.status_code == 404
        assert resp.json()["_tag"] == "QuestionNotFoundError"
        assert resp.json()["requestID"] == "que_nope"
    (request,) = (await client.get("/permission")).json()
    bad = await client.post(f"/permission/{request['id']}/reply", json={"reply": "maybe"})
    assert bad.status_code == 400
    assert (await client.post("/question/q/reply", content=b"{nope")).status_code == 400


async def test_prompt_async_starts_a_run(demo: tuple[DemoServer, httpx.AsyncClient]) -> None:
    _, client = demo
    resp = await client.post(
        "/session/ses_demo_cart/prompt_async",
        json={"parts": [{"type": "text", "text": "Add a test"}]},
    )
    assert resp.status_code == 204
    await until(lambda: "ses_demo_cart" in server_status(demo[0], WEBSHOP))


async def test_basic_auth() -> None:
    async with DemoServer(password="s3cret", heartbeat=0.05) as server:
        server.freeze()
        async with client_for(server) as client:
            for path in ("/global/health", "/session", "/global/event", "/nope"):
                resp = await client.get(path)
                assert resp.status_code == 401
                assert resp.headers["www-authenticate"].startswith("Basic")
            wrong = await client.get("/global/health", auth=("opencode", "nope"))
            assert wrong.status_code == 401
        async with client_for(server, auth=("opencode", "s3cret")) as client:
            assert (await client.get("/global/health")).json()["healthy"] is True
            async with Events(client) as events:
                assert events.frames[0]["payload"]["type"] == "server.connected"


async def test_restart_drops_streams_and_forgets_status(
    demo: tuple[DemoServer, httpx.AsyncClient],
) -> None:
    server, client = demo
    async with Events(client) as events:
        await server.restart()
        await until(lambda: events.ended)
    assert await status(client, WEBSHOP) == {} and await status(client, INFRA) == {}
    assert (await client.get("/permission")).json() == []
    assert (await client.get("/question")).json() == []
    msg = await last_assistant(client, "ses_demo_checkout")  # was busy: now interrupted
    assert msg.info.time.completed is None and any(p.is_open_tool for p in msg.parts)
    async with Events(client) as events:
        assert events.frames[0]["payload"]["type"] == "server.connected"


async def test_frozen_server_sends_only_heartbeats(
    demo: tuple[DemoServer, httpx.AsyncClient],
) -> None:
    _, client = demo
    async with Events(client) as events:
        await until(lambda: len(events.frames) >= 4)
        assert {f["payload"]["type"] for f in events.frames[1:]} == {"server.heartbeat"}


async def test_thawed_scripts_move_on() -> None:
    server = DemoServer(speed=400, heartbeat=5)
    # no scripted restart (a run kind of the cycle): at 400x one may come before the scripts
    # below on a loaded machine, and it ends the stream read here (its own tests are below)
    server.director.restart_hook = None
    async with server, client_for(server) as client, Events(client) as events:
        # the busy run finishes, the idle sessions start new runs, retries go on
        await events.wait(lambda p: p["type"] == "session.idle", "ses_demo_checkout")
        await events.wait(
            lambda p: p["type"] == "session.status" and p["properties"]["status"]["type"] == "busy",
            "ses_demo_cart",
        )
        await events.wait(
            lambda p: p["type"] == "session.status" and p["properties"]["status"]["type"] == "retry"
        )
        assert not events.ended


# ----- run kinds, one by one ---------------------------------------------------------------
async def play_frames(kind: str, sid: str = "ses_demo_cart") -> tuple[World, list[dict[str, Any]]]:
    """Run one scripted run kind to its end, fast; the world and every global-stream frame."""
    world = build_initial_world(lambda: FIXED_NOW)
    director = Director(world, speed=20_000)
    actor: Actor = director.actors[sid]
    actor.rng = random.Random(7)
    queue = world.subscribe()
    task = actor.spawn(RUNS[kind](actor))
    await asyncio.wait_for(asyncio.wait({task}), 30)
    frames = []
    while not queue.empty():
        frame = queue.get_nowait()
        if frame is not None:
            frames.append(json.loads(frame.text))
    await director.stop()
    return world, frames


async def play(kind: str, sid: str = "ses_demo_cart") -> tuple[World, list[dict[str, Any]]]:
    """Like play_frames, but only the payloads of plain (not `sync`) events."""
    world, frames = await play_frames(kind, sid)
    return world, [f["payload"] for f in frames if f["payload"]["type"] != "sync"]


@pytest.mark.parametrize("kind", ["complete", "long", "retry", "permission", "question", "stale"])
async def test_run_kinds_end_idle(kind: str) -> None:
    world, payloads = await play(kind)
    assert "ses_demo_cart" not in world.status and "ses_demo_cart" not in world.runs
    info = world.messages["ses_demo_cart"][-1]["info"]
    assert info["time"].get("completed")
    types = [p["type"] for p in payloads]
    assert types.count("session.status") >= 2 and "session.idle" in types
    if kind == "stale":  # completed with stop while still busy, the late idle comes last
        stop = next(
            i
            for i, p in enumerate(payloads)
            if p["type"] == "message.updated" and p["properties"]["info"].get("finish") == "stop"
        )
        assert types.index("session.idle") > stop
    if kind in ("permission", "question"):
        assert f"{kind}.asked" in types and f"{kind}.replied" in types


@pytest.mark.parametrize("kind", ["error", "abort"])
async def test_failing_runs_keep_the_real_order(kind: str) -> None:
    world, payloads = await play(kind)
    info = world.messages["ses_demo_cart"][-1]["info"]
    expected = {"MessageAbortedError"} if kind == "abort" else {e["name"] for e in ERRORS}
    assert info["error"]["name"] in expected and info["time"]["completed"]
    tail = [p["type"] for p in payloads]
    start = tail.index("session.error")
    assert tail[start : start + 3] == ["session.error", "session.status", "session.idle"]
    done = tail.index("message.updated", start)
    assert tail[done : done + 3] == ["message.updated", "session.status", "session.idle"]


async def test_restart_run_interrupts() -> None:
    world, _ = await play("restart", "ses_demo_backup")
    assert world.status == {} and world.runs == {}
    last = world.messages["ses_demo_backup"][-1]
    assert last["info"]["role"] == "assistant" and "completed" not in last["info"]["time"]


async def test_subagent_run_drives_child() -> None:
    world, payloads = await play("subagent", "ses_demo_dns")
    child = SPEC_BY_ID["ses_demo_dns"].child
    asked = [p for p in payloads if p["type"] == "permission.asked"]
    assert asked and asked[0]["properties"]["sessionID"] == child
    assert world.messages[child][-1]["info"].get("finish") == "stop"
    assert world.messages["ses_demo_dns"][-1]["info"].get("finish") == "stop"


# ----- conformance with frames recorded from a real server -----------------------------------


def _shapes(frames: list[dict[str, Any]]) -> dict[tuple[str, ...], set[tuple[str, ...]]]:
    """Key sets per kind of frame, event, part and tool state."""
    out: dict[tuple[str, ...], set[tuple[str, ...]]] = {}

    def add(key: tuple[str, ...], obj: dict[str, Any]) -> None:
        out.setdefault(key, set()).add(tuple(sorted(obj)))

    for frame in frames:
        payload = frame["payload"]
        kind = payload["type"]
        add(("frame", "sync" if kind == "sync" else "event"), frame)
        add(("payload", kind), payload)
        if kind == "sync":
            add(("syncEvent",), payload["syncEvent"])
            continue
        add(("properties", kind), payload["properties"])
        part = payload["properties"].get("part")
        if kind == "message.part.updated" and part["type"] == "tool":
            add(("state", part["tool"], part["state"]["status"]), part["state"])
    return out


async def test_frames_have_the_recorded_shapes() -> None:
    real: list[dict[str, Any]] = []
    for name in recorded.manifest():
        if not name.startswith("_"):
            real += [json.loads(r.data["d"]) for r in recorded.records(name) if r.kind == "frame"]
    real = [f for f in real if f["payload"]["type"] not in ("server.connected", "server.heartbeat")]
    demo: list[dict[str, Any]] = []
    for kind, sid in (
        ("complete", "ses_demo_cart"),
        ("permission", "ses_demo_cart"),
        ("question", "ses_demo_cart"),
        ("error", "ses_demo_cart"),
        ("abort", "ses_demo_cart"),
        ("retry", "ses_demo_cart"),
        ("subagent", "ses_demo_dns"),
    ):
        demo += (await play_frames(kind, sid))[1]
    seen, ours = _shapes(real), _shapes(demo)
    compared = 0
    for key, shapes in ours.items():
        if key in seen:
            compared += 1
            assert shapes <= seen[key], key
    assert compared >= 25


# ----- what the scripted agents say (issue 41 item 10) -------------------------------------------
def texts_of(entry: dict[str, Any]) -> list[str]:
    return [p["text"] for p in entry["parts"] if p["type"] == "text"]


def replies_answer_their_prompts(world: World) -> int:
    """Every completed assistant message's last text is the reply to the prompt before it;
    how many were checked."""
    checked = 0
    for sid, entries in world.messages.items():
        prompt = None
        for entry in entries:
            if entry["info"]["role"] == "user":
                prompt = texts_of(entry)[0]
            elif entry["info"].get("finish") == "stop" and texts_of(entry):
                assert prompt is not None
                assert texts_of(entry)[-1] == reply_to(SPEC_BY_ID[sid], prompt), (sid, prompt)
                checked += 1
    return checked


def test_every_prompt_has_its_own_reply() -> None:
    for spec in SPECS:
        assert len(spec.replies) == len(spec.prompts), spec.sid
        for prompt, reply in zip(spec.prompts, spec.replies, strict=True):
            assert reply_to(spec, prompt) == reply
    every = [r for spec in SPECS for r in spec.replies]
    assert len(set(every)) == len(every)  # no reply stands for two prompts
    # a prompt from outside (p in the dashboard) gets a reply that says it is scripted
    assert "scripted" in reply_to(SPECS[0], "Write me a poem")


def test_the_initial_worlds_replies_answer_their_prompts() -> None:
    world = build_initial_world(lambda: FIXED_NOW)
    assert replies_answer_their_prompts(world) >= 2 * len([s for s in SPECS if not s.parent])


@pytest.mark.parametrize(
    ("kind", "sid"),
    [
        ("complete", "ses_demo_cart"),
        ("complete", "ses_demo_alerts"),
        ("long", "ses_demo_k8s"),
        ("permission", "ses_demo_deploy"),
        ("question", "ses_demo_i18n"),
        ("stale", "ses_demo_terraform"),
        ("subagent", "ses_demo_dns"),
        ("subagent", "ses_demo_auth"),
    ],
)
async def test_a_runs_reply_answers_its_prompt(kind: str, sid: str) -> None:
    world, _ = await play(kind, sid)
    before = replies_answer_their_prompts(build_initial_world(lambda: FIXED_NOW))
    assert replies_answer_their_prompts(world) > before


async def test_a_scripted_restart_says_so() -> None:
    """The demo's restart cuts a run off on purpose: the run says it is scripted, in the
    initial world and each time the cycle restarts the server."""
    initial = build_initial_world(lambda: FIXED_NOW)
    world, _ = await play("restart", "ses_demo_backup")
    for w in (initial, world):
        last = w.messages["ses_demo_backup"][-1]
        assert "completed" not in last["info"]["time"]
        assert "scripted restart (demo)" in texts_of(last)[-1]


async def test_a_restart_is_told_to_whoever_listens() -> None:
    server = DemoServer(speed=400, heartbeat=0.05)
    server.freeze()
    heard: list[int] = []
    server.on_restart = lambda: heard.append(server.restarts)
    async with server:
        await server.restart()
    assert heard == [1]


@pytest.mark.parametrize("protocol", ["v1", "v2"])
async def test_a_session_made_in_the_demo_runs_its_first_prompt(protocol: str) -> None:
    """The dashboard's `N` (and `ocwatch prompt --new`) work on the demo too, on both
    protocols: the session is made in the folder, titled after the prompt, and its run ends
    with the demo's scripted reply; a folder the world does not know becomes a project."""
    from tui.app.actions import ClientActions
    from tui.demo.cast import SCRIPTED_REPLY

    async with DemoServer(speed=400, heartbeat=0.05, protocol=protocol) as server:
        sid = await ClientActions().new_session(server.url, "/srv/new", "Hi\nthere")
        world = server.world
        info = world.sessions[sid]
        assert (info["directory"], info["title"]) == ("/srv/new", "Hi")
        assert "/srv/new" in world.projects

        def replied() -> bool:
            texts = [
                p.get("text")
                for m in world.messages[sid]
                for p in m["parts"]
                if m["info"]["role"] == "assistant"
            ]
            return SCRIPTED_REPLY in texts and sid not in world.status

        try:
            await until(replied)
        except TimeoutError:
            raise AssertionError(f"no scripted reply in {world.messages[sid]}") from None


# ----- what the scripted agents do belongs to their task (issue 41 item 10) ---------------------
class Doings:
    """Every file read or edited, command run, permission and question, by session."""

    def __init__(self) -> None:
        self.seen: dict[str, list[tuple[str, Any]]] = {}

    def add(self, sid: str, what: str, value: Any) -> None:
        self.seen.setdefault(sid, []).append((what, value))

    def part(self, sid: str, part: dict[str, Any]) -> None:
        args = part["state"].get("input") or {}
        tool = part.get("tool")
        if tool in ("read", "edit") and "filePath" in args:
            self.add(sid, "file", args["filePath"])
        elif tool == "bash" and "command" in args:
            self.add(sid, "command", args["command"])
        elif tool == "question" and "questions" in args:
            for q in args["questions"]:
                self.add(sid, "question", q)

    def listen(self, _directory: str, payload: dict[str, Any]) -> None:
        kind, props = payload["type"], payload.get("properties") or {}
        if kind == "message.part.updated" and props["part"]["type"] == "tool":
            self.part(props["sessionID"], props["part"])
        elif kind == "permission.asked":
            self.add(props["sessionID"], "permission", props)
        elif kind == "question.asked":
            for q in props["questions"]:
                self.add(props["sessionID"], "asked", q)

    def count(self, sid: str, what: str) -> int:
        return sum(1 for w, _ in self.seen.get(sid, ()) if w == what)


def check_own(sid: str, what: str, value: Any) -> None:
    """`value`, done by session `sid`, is from its own task's work."""
    spec = SPEC_BY_ID[sid]
    work = spec.work
    files = {f"{spec.directory}/{rel}" for rel in work.files}
    commands = {c for c, _d, _o in work.commands} | {c for c, _a, _d in work.asks}
    if what == "file":
        assert value in files, (sid, value)
    elif what == "command":
        assert value in commands, (sid, value)
    elif what in ("question", "asked"):
        assert value in work.questions, (sid, value["question"])
    elif value["permission"] == "edit":  # (a sub-agent's edit of one of its files)
        assert [f"{spec.directory}/{p}" for p in value["patterns"]] == [
            value["metadata"]["filepath"]
        ] and value["metadata"]["filepath"] in files, (sid, value)
    else:
        asks = {(c, a) for c, a, _d in work.asks}
        assert value["permission"] == "bash", (sid, value)
        assert (value["patterns"][0], value["always"][0]) in asks, (sid, value)
        assert value["patterns"] == [value["metadata"]["command"]], (sid, value)


async def test_each_session_reads_runs_and_asks_what_belongs_to_its_own_task() -> None:
    """Over a long fast run of every script (a fixed seed), each session's file reads and
    edits, commands, permission requests and questions come from its own task, never from its
    folder's shared list ("Move DNS zones" never edits scripts/backup.sh, "Add Stripe checkout
    flow" never asks which German variant to use); the initial world's too."""
    world = build_initial_world(lambda: FIXED_NOW, seed=11)
    doings = Doings()
    for sid, entries in world.messages.items():
        for entry in entries:
            for part in entry["parts"]:
                if part["type"] == "tool":
                    doings.part(sid, part)
    for request in world.permissions.values():
        doings.add(request["sessionID"], "permission", request)
    for request in world.questions.values():
        for q in request["questions"]:
            doings.add(request["sessionID"], "asked", q)
    world.listeners.append(doings.listen)
    director = Director(world, speed=20_000, seed=11)
    director.start()
    top = [s for s in SPECS if s.parent is None]

    def enough() -> bool:  # every kind of request each script makes, several times over
        return (
            all(doings.count(s.sid, "permission") >= 3 for s in top if "permission" in s.cycle)
            and all(doings.count(s.sid, "asked") >= 3 for s in top if "question" in s.cycle)
            and all(doings.count(s.sid, "file") >= 5 for s in SPECS)
            and doings.count("ses_demo_dns_apply", "permission") >= 3
        )

    try:
        await until(enough, timeout=120)
    finally:
        await director.stop()
    checked = 0
    for sid, done in doings.seen.items():
        for what, value in done:
            check_own(sid, what, value)
            checked += 1
    assert checked > 200
