"""A snapshot focused on some sessions (`ocwatch wait`'s, `watch --session`'s, `prompt --wait`'s)
reads only them and their descendants (tui.core.snapshot.narrow): their last messages and
their folders' maps, never the rest of the server. What it says of them is what a snapshot of
the whole server says: their rows are the same, for any world (hypothesis), on both
protocols."""

from __future__ import annotations

import asyncio
import copy
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fakes import FakeAPI, wire_session
from tests.fakes_v2 import FakeV2, load, names
from tui.cli.main import main
from tui.cli.prompt import _send_and_wait
from tui.cli.report import capture
from tui.cli.wait import wait_many
from tui.cli.watch import watch
from tui.core import monitor as monitor_module
from tui.core.client import Client
from tui.core.derive import derive_server
from tui.core.exitcodes import ExitCode
from tui.core.fleet import Fleet
from tui.core.models import Session
from tui.core.protocols.v2.snapshot import fetch_snapshot_v2
from tui.core.settings import Auth, Settings
from tui.core.snapshot import MessageCache, Relist, Snapshot, family_of, fetch_snapshot
from tui.core.targets import Servers

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
    """A fake server's transport that also counts the requests of each path, with its folder
    (V1's `directory`, V2's `location[directory]`)."""

    def __init__(self, api: FakeAPI | FakeV2) -> None:
        self.api = api
        self.paths: Counter[str] = Counter()

    def transport(self) -> httpx.MockTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            params = request.url.params
            folder = params.get("directory") or params.get("location[directory]")
            self.paths[request.url.path + (f"?{folder}" if folder else "")] += 1
            return self.api.handle(request)

        return httpx.MockTransport(handle)

    def messages_read(self) -> set[str]:
        paths = (p.split("?", 1)[0] for p in self.paths)
        return {p.split("/")[-2] for p in paths if p.endswith("/message")}

    def folders_asked(self, route: str = "/session/status") -> set[str]:
        return {p.split("?", 1)[1] for p in self.paths if p.startswith(route + "?")}


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


def two_folder_moments(waiting: bool) -> list[dict[str, Any]]:
    """Every recorded 2.0.15 session (as it waited, or as it ended), every other one moved to
    a second folder (where its open requests are then listed)."""
    moments = []
    for i, name in enumerate(names()):
        fx = load(name)
        moment = copy.deepcopy(fx["waiting"] if waiting and "waiting" in fx else fx["end"])
        if i % 2:
            where = moment["session"].setdefault("location", {})
            where["directory"] = str(where.get("directory") or "/x") + "-beta"
        moments.append(moment)
    return moments


async def v2_snapshot(api: FakeV2, focus: frozenset[str] | None) -> tuple[Snapshot, Counted]:
    counted = Counted(api)
    async with Client("http://v2", transport=counted.transport()) as client:
        snap = await fetch_snapshot_v2(client, MessageCache(), clock=lambda: NOW, focus=focus)
    return snap, counted


async def test_a_focused_v2_snapshot_of_each_recorded_session_says_what_a_whole_one_says():
    for waiting in (True, False):
        api = FakeV2(moments=two_folder_moments(waiting))
        whole, counted = await v2_snapshot(api, None)
        assert len(counted.folders_asked("/api/permission/request")) == 2
        rows = derive_server(whole, (), NOW, Settings())
        assert any(r.pending for r in rows.values()) or not waiting
        for sid in whole.sessions:
            focused, counted = await v2_snapshot(api, frozenset({sid}))
            family = family_of(whole.sessions, {sid})
            assert set(focused.sessions) == set(family)
            assert counted.messages_read() == set(family)  # no other transcript read
            folders = {s.directory for s in family.values()}
            assert counted.folders_asked("/api/permission/request") == folders
            mine = derive_server(focused, (), NOW, Settings())
            assert mine and all(mine[k] == rows[k] for k in mine)


def five_hundred() -> FakeAPI:
    """A server of 500 idle sessions in 3 folders, one of which has a sub-agent."""
    api = FakeAPI()
    for i in range(500):
        sid = f"ses_{i:04d}"
        api.sessions.append(wire_session(sid, FOLDERS[i % 3], updated=1_000_000.0 + i))
        api.messages[sid] = message(sid, "done")
    api.sessions.append(wire_session("ses_kid", "/p/b", parent="ses_0007"))
    api.messages["ses_kid"] = message("ses_kid", "done")
    return api


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Counted:
    """five_hundred(), the server of every monitor the commands make (whatever their URL)."""
    counted = Counted(five_hundred())
    made = monitor_module.Client

    def client(url: str, auth: Auth | None = None, **kw: Any) -> Client:
        return made(url, auth, **{**kw, "transport": counted.transport()})

    monkeypatch.setattr(monitor_module, "Client", client)
    return counted


async def test_the_commands_that_look_at_sessions_read_only_them(served: Counted) -> None:
    """`wait`, `watch --session` and `prompt --wait`, each over the server of 500 sessions:
    the session looked at and its sub-agent are read, none of the others."""
    servers = Servers(("http://x",))
    (out,) = await wait_many(["ses_0007"], servers, timeout=0)
    assert out.code == 0 and out.row is not None and out.row.children == ("ses_kid",)
    assert served.messages_read() == {"ses_0007", "ses_kid"}
    assert served.folders_asked() == {"/p/b"}  # (ses_0007 and its sub-agent's folder)

    served.paths.clear()
    stop, lines = asyncio.Event(), []

    def said(line: str) -> None:
        lines.append(line)
        stop.set()

    await watch(
        servers,
        sessions=["ses_0007"],
        out=io.StringIO(),
        err=io.StringIO(),
        stop=stop,
        on_line=said,
    )
    assert "ses_0007" in lines[0] and served.messages_read() == {"ses_0007", "ses_kid"}

    served.paths.clear()
    code, row, _ = await _send_and_wait("ses_0007", "go on", "http://x", None, Settings(), 0.5)
    assert code == ExitCode.TIMEOUT and row is not None  # (the fake never runs it)
    assert ("/session/ses_0007/prompt_async", {"parts": [{"type": "text", "text": "go on"}]}) in (
        served.api.posts
    )
    assert served.messages_read() == {"ses_0007", "ses_kid"}


def test_a_report_reads_only_its_session_and_its_recording_replays_as_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ocwatch report` over the server of 500 sessions reads the session and its sub-agent
    alone; the recording it writes names that focus (version 2), and replays to the same
    rows: its replay asks only what was recorded (an unfocused replay would ask for the last
    messages of 499 sessions never read, and fail its snapshots)."""
    counted = Counted(five_hundred())
    path = tmp_path / "report.ndjson"
    got = asyncio.run(
        capture(
            "ses_0007",
            Servers(("http://x",)),
            seconds=0,
            recording=path,
            redacted=False,
            transport=counted.transport(),
        )
    )
    assert got["session"]["state"] == "idle" and got["session"]["reason"] == "completed"
    assert [c["id"] for c in got["children"]] == ["ses_kid"]
    assert counted.messages_read() == {"ses_0007", "ses_kid"}
    assert counted.folders_asked() == {"/p/b"}
    header = json.loads(path.read_text().splitlines()[0])
    assert header["version"] == 2 and header["focus"] == ["ses_0007"]

    assert main(["status", "--json", "--replay", str(path)]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["servers"][0]["reachable"] and replayed["servers"][0]["error"] is None
    rows = {r["id"]: r for r in replayed["sessions"]}
    for sid, said in (("ses_0007", got["session"]), ("ses_kid", got["children"][0])):
        assert (rows[sid]["state"], rows[sid]["reason"]) == (said["state"], said["reason"])
    assert set(rows) == {"ses_0007", "ses_kid"}


def test_a_server_added_later_reads_the_same_sessions() -> None:
    fleet = Fleet(["http://a"], focus=["ses_1"])
    added = fleet.add("http://b")
    assert fleet.monitors[0].focus == added.focus == frozenset({"ses_1"})
    assert Fleet(["http://a"]).add("http://b").focus is None  # (no focus: every session)


async def test_a_resync_without_the_list_keeps_the_focus_and_reads_a_sub_agent_seen_since():
    """A resync over a stream that vouches for every event lays the events' sessions over the
    last list (Relist): one of them a sub-agent started since, another an unrelated session.
    The focus keeps the sub-agent, and only its last message is read."""
    api = FakeAPI(sessions=[wire_session("ses_a", "/p/a"), wire_session("ses_b", "/p/b")])
    api.messages = {"ses_a": message("ses_a", "done"), "ses_b": message("ses_b", "done")}
    cache, focus = MessageCache(), frozenset({"ses_a"})
    counted = Counted(api)
    async with Client("http://x", transport=counted.transport()) as client:
        first = await fetch_snapshot(client, cache, clock=lambda: NOW, focus=focus)
        assert set(first.sessions) == {"ses_a"}
        kid = wire_session("ses_kid", "/p/c", parent="ses_a")
        api.sessions.append(kid)
        api.messages["ses_kid"] = message("ses_kid", "open")
        api.status["/p/c"] = {"ses_kid": {"type": "busy"}}
        relist = Relist(
            {**first.sessions, "ses_kid": Session.parse(kid), "ses_b": first_of(api, "ses_b")},
            first.folders,
            first.version,
            first.listed_at,
        )
        counted.paths.clear()
        again = await fetch_snapshot(client, cache, clock=lambda: NOW, focus=focus, relist=relist)
    assert set(again.sessions) == {"ses_a", "ses_kid"}
    assert counted.messages_read() == {"ses_kid"}  # (ses_a's final message is kept)
    assert counted.folders_asked() == {"/p/a", "/p/c"}
    rows = {r.id: r for r in derive_server(again, (), NOW, Settings()).values()}
    assert rows["ses_a"].children == ("ses_kid",) and rows["ses_kid"].state == "busy"


def first_of(api: FakeAPI, sid: str) -> Session:
    return Session.parse(next(x for x in api.sessions if x["id"] == sid))
