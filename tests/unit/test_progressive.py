"""A progressive first snapshot (issue 15, item 1): the dashboard paints what the session list and
the status, permission and question maps decide (busy, retry, input) as soon as those few requests
are in; the last messages follow, running and recently updated sessions first, and a row whose
last message is not read yet is unsettled (`loading`), so no consumer sees a state the facts have
not settled."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import httpx
import pytest

from tests.fakes import FakeAPI, wire_session
from tests.unit.test_transitions import Clock, wire_msg
from tui.core import snapshot
from tui.core.derive import DeriveMemo, derive_server
from tui.core.journal import Journal
from tui.core.monitor import ServerMonitor
from tui.core.settings import Settings
from tui.core.snapshot import MessageCache, Snapshot, fetch_snapshot
from tui.core.view import TransitionFeed, View

T0 = 1_800_000_000.0
S = Settings(grace=3.0)
URL = "http://test"


def server(n_idle: int = 3) -> FakeAPI:
    """ses_busy (busy), ses_retry (retrying), ses_ask (busy, a permission open), ses_new (no
    messages), and `n_idle` finished sessions ses_i0.. (ses_i0 updated last)."""
    sessions = [
        wire_session(sid, updated=T0 * 1000 - 10_000)
        for sid in ("ses_busy", "ses_retry", "ses_ask", "ses_new")
    ]
    sessions += [
        wire_session(f"ses_i{i}", updated=T0 * 1000 - 1000 * (i + 1)) for i in range(n_idle)
    ]
    messages: dict[str, list[dict[str, Any]]] = {
        s["id"]: [wire_msg(s["id"], created=T0 - 60, completed=T0 - 50)] for s in sessions
    }
    messages["ses_busy"] = [wire_msg("ses_busy", created=T0 - 5)]
    messages["ses_new"] = []
    return FakeAPI(
        sessions=sessions,
        status={
            "/p/a": {
                "ses_busy": {"type": "busy"},
                "ses_ask": {"type": "busy"},
                "ses_retry": {
                    "type": "retry",
                    "attempt": 2,
                    "message": "503",
                    "next": (T0 + 5) * 1000,
                },
            }
        },
        permissions={
            "/p/a": [
                {
                    "id": "per_1",
                    "sessionID": "ses_ask",
                    "permission": "bash",
                    "patterns": ["npm test"],
                    "metadata": {},
                    "always": [],
                }
            ]
        },
        messages=messages,
    )


class Held(FakeAPI):
    """A FakeAPI whose message requests wait for `release`, in the order they are asked."""

    def __init__(self, api: FakeAPI) -> None:
        super().__init__(
            **{
                f: getattr(api, f)
                for f in ("sessions", "status", "permissions", "questions", "messages", "projects")
            }
        )
        self.release = asyncio.Event()
        self.asked: list[str] = []

    async def handle_async(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/message"):
            self.asked.append(request.url.path.split("/")[2])
            await self.release.wait()
        return self.handle(request)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle_async)


async def fetched(api: FakeAPI) -> tuple[Snapshot, list[Snapshot]]:
    """A first snapshot of `api`, and the partial ones it was shown as on the way."""
    from tui.core.client import Client

    partials: list[Snapshot] = []
    async with Client(URL, transport=api.transport()) as client:
        final = await fetch_snapshot(
            client, MessageCache(), clock=lambda: T0, partial=partials.append
        )
    return final, partials


def rows_of(
    snap: Snapshot, memo: DeriveMemo | None = None, prev: Any = None, now: float = T0
) -> dict[str, Any]:
    rows = derive_server(snap, Journal().facts(), now, S, memo=memo, previous=prev)
    return {k[1]: r for k, r in rows.items()}


async def test_the_maps_decide_first_and_the_rest_says_loading() -> None:
    api = server()
    final, partials = await fetched(api)
    assert partials, "no partial snapshot before the last messages"
    first = partials[0]
    assert set(first.sessions) == set(final.sessions)  # the whole list, at once
    assert first.loading == frozenset(first.sessions)  # no last message read yet
    assert not final.loading
    rows = rows_of(first)
    # what the maps decide is settled at once
    assert (rows["ses_ask"].state, rows["ses_ask"].settled) == ("input", True)
    assert (rows["ses_retry"].state, rows["ses_retry"].settled) == ("retry", True)
    # what rests on the last message is not
    busy = rows["ses_busy"]
    assert (busy.state, busy.settled, busy.settling) == ("busy", False, "loading")
    for sid in ("ses_new", "ses_i0"):
        assert (rows[sid].state, rows[sid].reason, rows[sid].settled, rows[sid].settling) == (
            "unknown",
            None,
            False,
            "loading",
        )
        assert any("not read yet" in line for line in rows[sid].evidence)
    done = rows_of(final)
    assert (done["ses_busy"].state, done["ses_busy"].settled) == ("busy", True)
    assert (done["ses_new"].state, done["ses_new"].reason) == ("idle", None)
    assert (done["ses_i0"].state, done["ses_i0"].reason) == ("idle", "completed")


async def test_running_sessions_are_read_first_then_the_most_recently_updated() -> None:
    api = Held(server(n_idle=4))
    from tui.core.client import Client

    async with Client(URL, transport=api.transport()) as client:
        task = asyncio.create_task(
            fetch_snapshot(client, MessageCache(), clock=lambda: T0, concurrency=1)
        )
        while not api.asked:
            await asyncio.sleep(0)
        api.release.set()
        await task
    assert set(api.asked[:3]) == {"ses_busy", "ses_retry", "ses_ask"}  # running, first
    # then newest time.updated first: ses_i0 .. ses_i3, and ses_new (updated longest ago)
    assert api.asked[3:] == ["ses_i0", "ses_i1", "ses_i2", "ses_i3", "ses_new"]


async def test_partials_come_as_the_messages_arrive_each_holding_fewer_loading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(snapshot, "PARTIAL_EVERY", 0.0)  # (a fake server answers at once)
    api = server(n_idle=600)
    _final, partials = await fetched(api)
    sizes = [len(p.loading) for p in partials]
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == len(sizes)
    assert sizes[0] == 604 and 1 < len(sizes) <= 4  # at least 200 apart
    for p in partials:
        for sid, msg in p.messages.items():
            if sid not in p.loading and sid != "ses_new":
                assert msg is not None  # what is not loading is read


async def test_a_memo_never_keeps_a_loading_row_once_the_message_is_in() -> None:
    """A session with no message reads None both while loading and once read: the memo must
    not take the loading row for the loaded one."""
    api = server()
    final, partials = await fetched(api)
    memo = DeriveMemo()
    prev = derive_server(partials[0], Journal().facts(), T0, S, memo=memo)
    rows = rows_of(final, memo=memo, prev=prev)
    plain = rows_of(final)
    assert rows == plain
    assert (rows["ses_new"].state, rows["ses_new"].settled) == ("idle", True)
    # and the other way: a snapshot that lists it loading again derives a loading row
    again = rows_of(
        replace(final, loading=frozenset({"ses_new"})),
        memo=memo,
        prev={(URL, k): v for k, v in rows.items()},
    )
    assert again["ses_new"].settling == "loading"


async def test_no_transition_while_loading_then_one_per_session() -> None:
    api = server()
    final, partials = await fetched(api)
    feed = TransitionFeed()
    first = feed.feed(View(T0, (), derive_server(partials[0], Journal().facts(), T0, S)))
    assert sorted(t.key[1] for t in first.transitions) == ["ses_ask", "ses_retry"]
    after = feed.feed(View(T0, (), derive_server(final, Journal().facts(), T0, S)))
    seen = sorted(t.key[1] for t in after.transitions)
    assert seen == sorted(set(final.sessions) - {"ses_ask", "ses_retry"})
    assert all(t.before is None for t in after.transitions)


async def test_the_monitor_shows_the_first_snapshot_while_it_loads() -> None:
    api = Held(server())
    clock = Clock(T0)
    mon = ServerMonitor(URL, settings=S, transport=api.transport(), clock=clock, progressive=True)
    task = asyncio.create_task(mon.take_snapshot(progressive=True))
    while mon.snapshot is None:
        await asyncio.sleep(0)
    rows = {k[1]: r for k, r in mon.rows(T0).items()}
    assert rows["ses_ask"].state == "input"
    assert rows["ses_i0"].settling == "loading"
    assert mon.reachable
    info = mon.info()
    assert info.loading is not None and info.loading[1] == 7
    api.release.set()
    assert await task
    assert mon.snapshot is not None and not mon.snapshot.loading
    assert mon.info().loading is None
    rows = {k[1]: r for k, r in mon.rows(T0).items()}
    assert rows["ses_i0"].reason == "completed" and rows["ses_i0"].settled
    assert mon.drift_count == 0  # loading rows made no claim to contradict


async def test_a_complete_snapshot_is_not_replaced_by_a_partial_one() -> None:
    """Only a first snapshot is shown as it arrives: a resync keeps the complete one until the
    next is complete (its rows never go back to loading)."""
    api = server()
    clock = Clock(T0)
    mon = ServerMonitor(URL, settings=S, transport=api.transport(), clock=clock, progressive=True)
    assert await mon.take_snapshot(progressive=True)
    shown: list[Snapshot | None] = []
    mon._notify = lambda: shown.append(mon.snapshot)
    assert await mon.take_snapshot(progressive=True)
    assert all(s is not None and not s.loading for s in shown)


async def test_status_and_headless_monitors_take_whole_snapshots() -> None:
    api = Held(server())
    mon = ServerMonitor(URL, settings=S, transport=api.transport(), clock=Clock(T0))
    assert not mon.progressive
    task = asyncio.create_task(mon.snapshot_once())
    while not api.asked:
        await asyncio.sleep(0)
    assert mon.snapshot is None  # nothing shown before it is complete
    api.release.set()
    await task
    assert mon.snapshot is not None and not mon.snapshot.loading


async def test_a_loaded_row_still_settling_is_not_held_to_the_loading_state() -> None:
    """A loading row is no settled state to keep: a session whose message, once read, is a
    prompt just sent (not yet reported busy: `starting`) reads as at first sight, busy."""
    api = server()
    api.messages["ses_i0"] = [wire_msg("ses_i0", created=T0 - 1, role="user")]
    final, partials = await fetched(api)
    prev = derive_server(partials[0], Journal().facts(), T0, S)
    assert prev[(URL, "ses_i0")].state == "unknown"
    row = rows_of(final, prev=prev)["ses_i0"]
    assert (row.state, row.settling) == ("busy", "starting")
