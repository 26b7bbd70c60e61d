"""A snapshot focused on some sessions (`ocwatch wait`'s, `watch --session`'s, `prompt --wait`'s)
reads only them and their descendants (tui.core.snapshot.narrow): their last messages and
their folders' maps, never the rest of the server. What it says of them is what a snapshot of
the whole server says: their rows are the same, for any world (hypothesis), on both
protocols."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fakes import FakeAPI, wire_session
from tests.fakes_v2 import FakeV2
from tui.core.client import Client
from tui.core.derive import derive_server
from tui.core.fleet import Fleet
from tui.core.models import Session
from tui.core.protocols.v2.snapshot import fetch_snapshot_v2
from tui.core.settings import Settings
from tui.core.snapshot import MessageCache, Snapshot, family_of, fetch_snapshot

IDS = [f"ses_{i}" for i in range(8)]
FOLDERS = ["/p/a", "/p/b", "/p/c"]
NOW = 1_000_100.0  # after every time below (epoch seconds)


def descendants_by_fixpoint(parents: dict[str, str | None], focus: set[str]) -> set[str]:
    """The reference: grow the set by any listed session whose parent is in it, until it stops."""
    keep = {s for s in focus if s in parents}
    while True:
        more = {s for s, p in parents.items() if p in keep} - keep
        if not more:
            return keep
        keep |= more


def sessions_of(parents: dict[str, str | None]) -> dict[str, Session]:
    return {sid: Session.parse(wire_session(sid, parent=parent)) for sid, parent in parents.items()}


@given(
    st.dictionaries(st.sampled_from(IDS), st.none() | st.sampled_from(IDS + ["ses_gone"])),
    st.sets(st.sampled_from(IDS + ["ses_other"])),
)
def test_a_family_is_the_focus_and_every_descendant_in_the_listed_order(parents, focus):
    sessions = sessions_of(parents)  # (parents may make cycles, or name a session not listed)
    got = family_of(sessions, focus)
    assert set(got) == descendants_by_fixpoint(parents, focus)
    assert list(got) == [sid for sid in sessions if sid in got]  # the listed order
    assert all(got[sid] is sessions[sid] for sid in got)


def message(sid: str, kind: str) -> list[dict[str, Any]]:
    """A session's last message of one kind (`none`: it has none)."""
    info: dict[str, Any] = {
        "id": f"msg_{sid}",
        "sessionID": sid,
        "time": {"created": 1_000_000_000},
    }
    if kind == "none":
        return []
    if kind == "prompt":
        info["role"] = "user"
    else:
        info.update(role="assistant", modelID="m", providerID="p")
        if kind in ("done", "error"):
            info["time"]["completed"] = 1_000_001_000
            info["finish"] = "stop"
        if kind == "error":
            info["error"] = {"name": "APIError", "data": {"message": "boom"}}
    return [{"info": info, "parts": []}]


STATUS = {
    "absent": None,
    "busy": {"type": "busy"},
    "retry": {"type": "retry", "attempt": 2, "message": "overloaded", "next": 1_000_200_000},
}


@st.composite
def worlds(draw: st.DrawFn) -> tuple[FakeAPI, set[str]]:
    """A V1 server of up to 8 sessions in 3 folders, in trees, each running or not, with a
    last message of any kind and maybe a permission or question open; and a focus."""
    listed = draw(st.lists(st.sampled_from(IDS), unique=True, min_size=1))
    api = FakeAPI(projects=[{"id": "prj", "worktree": "/p/a"}])
    for i, sid in enumerate(listed):
        folder = draw(st.sampled_from(FOLDERS))
        # (a tree: parents come first)
        parent = draw(st.none() | st.sampled_from(listed[:i])) if i else None
        api.sessions.append(wire_session(sid, folder, updated=1_000_050.0 + i, parent=parent))
        api.messages[sid] = message(
            sid, draw(st.sampled_from(["none", "prompt", "open", "done", "error"]))
        )
        status = STATUS[draw(st.sampled_from(list(STATUS)))]
        if status is not None:
            api.status.setdefault(folder, {})[sid] = status
        ask = draw(st.sampled_from(["", "permission", "question"]))
        if ask == "permission":
            req = {"id": f"per_{sid}", "sessionID": sid, "permission": "bash", "patterns": ["ls"]}
            api.permissions.setdefault(folder, []).append(req)
        elif ask == "question":
            q = {"question": "Which?", "header": "Pick", "options": [{"label": "a"}]}
            api.questions.setdefault(folder, []).append(
                {"id": f"que_{sid}", "sessionID": sid, "questions": [q]}
            )
    focus = draw(st.sets(st.sampled_from(listed + ["ses_other"]), min_size=1))
    return api, focus


class Counted:
    """A FakeAPI's transport that also counts the requests of each path, with its folder."""

    def __init__(self, api: FakeAPI) -> None:
        self.api = api
        self.paths: Counter[str] = Counter()

    def transport(self) -> httpx.MockTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            folder = request.url.params.get("directory")
            self.paths[request.url.path + (f"?{folder}" if folder else "")] += 1
            return self.api.handle(request)

        return httpx.MockTransport(handle)

    def messages_read(self) -> set[str]:
        paths = (p.split("?", 1)[0] for p in self.paths)
        return {p.split("/")[2] for p in paths if p.endswith("/message")}

    def folders_asked(self) -> set[str]:
        return {p.split("?", 1)[1] for p in self.paths if p.startswith("/session/status?")}


async def v1_snapshot(api: FakeAPI, focus: frozenset[str] | None) -> tuple[Snapshot, Counted]:
    counted = Counted(api)
    async with Client("http://x", transport=counted.transport()) as client:
        snap = await fetch_snapshot(client, MessageCache(), clock=lambda: NOW, focus=focus)
    return snap, counted


@settings(max_examples=60, deadline=None)
@given(worlds())
def test_a_focused_v1_snapshot_reads_its_family_only_and_says_what_a_whole_one_says(world):
    api, focus = world
    whole, _ = asyncio.run(v1_snapshot(api, None))
    focused, counted = asyncio.run(v1_snapshot(api, frozenset(focus)))
    family = set(family_of(whole.sessions, focus))
    assert set(focused.sessions) == family
    assert counted.messages_read() == family  # no other session's last message asked
    assert counted.folders_asked() <= {whole.sessions[s].directory for s in family}
    rows = derive_server(whole, (), NOW, Settings())
    mine = derive_server(focused, (), NOW, Settings())
    assert set(mine) == {(whole.server, sid) for sid in family}
    assert all(mine[k] == rows[k] for k in mine)


async def v2_snapshot(api: FakeV2, focus: frozenset[str] | None) -> Snapshot:
    async with Client("http://v2", transport=api.transport()) as client:
        return await fetch_snapshot_v2(client, MessageCache(), clock=lambda: NOW, focus=focus)


def transcripts_read(api: FakeV2) -> int:
    return sum(n for path, n in api.hits.items() if path.endswith("/message"))


async def test_a_focused_v2_snapshot_of_each_recorded_session_says_what_a_whole_one_says():
    for waiting in (True, False):  # (each real 2.0.15 run as it waited, and as it ended)
        api = FakeV2(waiting=waiting)
        whole = await v2_snapshot(api, None)
        rows = derive_server(whole, (), NOW, Settings())
        everything = transcripts_read(api)
        assert everything >= len(whole.sessions) > 3
        for sid in whole.sessions:
            before = transcripts_read(api)
            focused = await v2_snapshot(api, frozenset({sid}))
            family = set(family_of(whole.sessions, {sid}))
            assert set(focused.sessions) == family
            assert transcripts_read(api) - before == everything * len(family) // len(whole.sessions)
            mine = derive_server(focused, (), NOW, Settings())
            assert mine and all(mine[k] == rows[k] for k in mine)


async def test_wait_reads_only_the_sessions_it_waits_for_of_a_large_server():
    """`ocwatch wait`'s fleet (its `focus`): of a server of 500 idle sessions, the one waited
    for is read, with its sub-agent; none of the others' last messages."""
    api = FakeAPI()
    for i in range(500):
        sid = f"ses_{i:04d}"
        api.sessions.append(wire_session(sid, FOLDERS[i % 3], updated=1_000_000.0 + i))
        api.messages[sid] = message(sid, "done")
    api.sessions.append(wire_session("ses_kid", "/p/b", parent="ses_0007"))
    api.messages["ses_kid"] = message("ses_kid", "done")
    counted = Counted(api)
    fleet = Fleet(["http://x"], transport=counted.transport(), focus=["ses_0007"])
    changed = asyncio.Event()
    task = asyncio.create_task(fleet.run(changed.set))
    try:
        await fleet.monitors[0].first_snapshot()
        view = fleet.current()
        assert view.servers[0].first_snapshot
        (row,) = [r for r in view.rows.values() if r.id == "ses_0007"]
        assert (row.state, row.reason, row.children) == ("idle", "completed", ("ses_kid",))
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await fleet.aclose()
    assert counted.messages_read() == {"ses_0007", "ses_kid"}
    assert counted.folders_asked() == {"/p/b"}  # (ses_0007 and its sub-agent's folder)
