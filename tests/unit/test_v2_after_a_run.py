"""V2 sessions after their run, as 2.0.15 leaves them (found by a review against the real
server, each checked there): a transcript whose newest entries are no turn, a session moved to
another folder, and a shell command's output queued after a run."""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.fakes_v2 import FakeV2, load
from tests.unit.test_transitions import Clock
from tui.core.client import Client
from tui.core.derive import derive_server
from tui.core.journal import Journal
from tui.core.monitor import ServerMonitor
from tui.core.outcome import outcome
from tui.core.protocols.v2.snapshot import TAIL, TAIL_MAX, fetch_snapshot_v2
from tui.core.settings import Settings
from tui.core.snapshot import MessageCache

URL = "http://v2"


def switches(n: int, after: float) -> list[dict[str, Any]]:
    """`n` agent switches (Tab in OpenCode's TUI) after `after` (epoch ms), newest first: what
    2.0.15's transcript holds after them, none of them a turn."""
    return [
        {
            "id": f"msg_z{n - k:04d}",
            "time": {"created": after + 1000 * (n - k)},
            "type": "agent-switched",
            "agent": "plan" if k % 2 else "build",
            "previous": "build" if k % 2 else "plan",
        }
        for k in range(n)
    ]


async def row_after(n: int) -> tuple[Any, FakeV2]:
    """The row of a completed session with `n` agent switches after its run, read by a
    snapshot of a server that answers `limit` as 2.0.15 does (newest first)."""
    moment = copy.deepcopy(load("completed")["end"])
    t = moment["session"]["time"]["idle"]
    moment["transcript"] = switches(n, t) + moment["transcript"]
    moment["session"]["time"]["updated"] = t + 1000 * (n + 1)
    api = FakeV2(moments=[moment])
    async with Client(URL, transport=api.transport()) as client:
        snap = await fetch_snapshot_v2(client, MessageCache(), clock=lambda: t / 1000 + 60)
    (row,) = derive_server(snap, Journal().facts(), t / 1000 + 60, Settings()).values()
    return row, api


async def test_a_run_followed_by_more_switches_than_the_tail_holds_is_still_completed() -> None:
    """The newest TAIL entries are agent switches: the tail is read deeper until the run's turn
    and its idle marker, not called a session that never ran (`wait` exited 5 for it)."""
    for n in (TAIL - 2, TAIL - 1, TAIL, 4 * TAIL - 2, 4 * TAIL):
        row, api = await row_after(n)
        assert (row.state, row.reason) == ("idle", "completed"), (n, row.evidence)
        assert outcome(row) == "completed"
        reads = sum(k for p, k in api.hits.items() if p.endswith("/message"))
        # (read again only when it must: the turn is the entry after the switches and the
        # run's idle marker, read with the first depth that holds it)
        assert reads == (1 if n + 1 < TAIL else 2 if n + 1 < 4 * TAIL else 3), n


async def test_a_tail_of_no_turn_as_deep_as_it_is_read_is_unknown_not_never_ran() -> None:
    row, _ = await row_after(TAIL_MAX + 3)
    assert row.state == "unknown", row
    assert any(f"no turn among the newest {TAIL_MAX}" in e for e in row.evidence), row.evidence


def frame(n: int, etype: str, data: dict[str, Any], at_ms: int, folder: str) -> str:
    return json.dumps(
        {
            "id": f"evt_t{n}",
            "created": at_ms + n,
            "type": etype,
            "data": data,
            "location": {"directory": folder},
        }
    )


async def test_a_session_moved_to_another_folder_is_asked_there_at_each_resync() -> None:
    """Seen on 2.0.15: `session.moved {sessionID, location: {directory}}` (the frame's own
    location the old folder). A permission asked in the new folder stays shown through the
    resyncs the stream vouches for (which relist from the last list): they ask that folder."""
    done = load("completed")["end"]
    sid = done["session"]["id"]
    asked = load("permission_once")["waiting"]
    alpha = done["session"]["location"]["directory"]
    beta = alpha.replace("alpha", "beta")
    api = FakeV2(moments=[copy.deepcopy(done)])
    clock = Clock(done["session"]["time"]["idle"] / 1000 + 10)
    mon = ServerMonitor(URL, settings=Settings(), transport=api.transport(), clock=clock)
    mon.stream_opened()
    assert await mon.take_snapshot()
    now = api.moments[sid]  # the server: the session lives in beta, runs, and asks there
    now["session"]["location"] = {"directory": beta}
    now["active"] = [sid]
    perm = {**asked["permissions"][0], "sessionID": sid}
    now["permissions"] = [perm]
    now["transcript"] = [{**asked["transcript"][0], "sessionID": sid}, *now["transcript"]]
    ms = int(clock.t * 1000)
    moved = {"sessionID": sid, "location": {"directory": beta}, "projectID": "p", "subpath": ""}
    for n, (etype, data) in enumerate(
        [
            ("session.moved", moved),
            ("session.execution.started", {"sessionID": sid}),
            ("permission.asked", perm),
        ]
    ):
        clock.t += 0.1
        mon.on_data(frame(n, etype, data, ms, alpha if n == 0 else beta), clock.t)
    assert mon.rows(clock.t)[(URL, sid)].directory == beta
    for _ in range(3):  # the periodic resyncs
        clock.t += 30
        assert await mon.take_snapshot()
        row = mon.rows(clock.t)[(URL, sid)]
        assert row.state == "input" and [p.id for p in row.pending] == [perm["id"]], row
        assert beta in mon.snapshot.folders
    # a move of a session it has not seen says nothing (the next listing has its folder)
    assert (
        mon.parser.parse(
            frame(9, "session.moved", {**moved, "sessionID": "ses_x"}, ms, alpha), 1.0
        ).event
        is None
    )


async def test_a_shell_commands_output_queued_after_a_run_starts_no_run() -> None:
    """Seen on 2.0.15: `!cmd` after a rejected run (`POST /api/session/{id}/shell`) sends
    shell events and `session.inbox.enqueued` with a `synthetic` item (the output, queued for
    the next prompt); no run starts, and the session stays idle aborted through the resyncs
    (it read `unknown`: a prompt with no reply)."""
    rej = load("permission_reject")["end"]
    sid = rej["session"]["id"]
    api = FakeV2(moments=[copy.deepcopy(rej)])
    clock = Clock(rej["transcript"][0]["time"]["completed"] / 1000 + 5)
    mon = ServerMonitor(URL, settings=Settings(), transport=api.transport(), clock=clock)
    mon.stream_opened()
    assert await mon.take_snapshot()
    assert mon.rows(clock.t)[(URL, sid)].reason == "aborted"
    ms = int(clock.t * 1000)
    folder = rej["session"]["location"]["directory"]
    m = api.moments[sid]
    m["transcript"] = [
        {"id": "msg_sh", "type": "shell", "time": {"created": ms, "completed": ms + 20}},
        *m["transcript"],
    ]
    m["session"]["time"]["updated"] = ms
    item = {"type": "synthetic", "payload": {"text": "The user ran echo hi"}}
    clock.t += 0.05
    mon.on_data(
        frame(
            1,
            "session.inbox.enqueued",
            {"inboxID": "msg_q", "sessionID": sid, "item": item},
            ms,
            folder,
        ),
        clock.t,
    )
    for _ in range(3):
        clock.t += 30
        assert await mon.take_snapshot()
        row = mon.rows(clock.t)[(URL, sid)]
        assert (row.state, row.reason) == ("idle", "aborted"), row.evidence
    # a prompt's item (`user`) is one: the run is starting
    got = mon.parser.parse(
        frame(
            2,
            "session.inbox.enqueued",
            {"inboxID": "msg_u", "sessionID": sid, "item": {**item, "type": "user"}},
            ms,
            folder,
        ),
        clock.t,
    ).event
    assert got is not None and got.type == "message.updated"


async def test_a_message_read_while_the_run_went_on_is_read_again_once_it_stopped() -> None:
    """The stream drops between two steps of a run; the snapshot the drop asks for reads the
    first step, completed (finish tool-calls), while the session runs. Missed meanwhile: the
    second step asks a permission, the user rejects it (2.0.15 moves no time.updated, writes no
    time.idle). The cached first step was reused as final by every snapshot after: the row read
    unknown, interrupted, for good. A message read while running is read again once it
    stopped (MessageCache.fresh, as its docstring said)."""
    from tui.core.client import OcwatchError

    once = load("permission_once")["end"]
    rej = load("permission_reject")["end"]
    sid = rej["session"]["id"]
    step1 = {**copy.deepcopy(once["transcript"][2]), "id": "msg_24a3951e0000aaaaaaaaaaaaaa"}
    user = rej["transcript"][1]
    between = {**copy.deepcopy(rej), "transcript": [step1, user], "active": [sid]}
    end = {**copy.deepcopy(rej), "transcript": [rej["transcript"][0], step1, user], "active": []}
    assert between["session"]["time"] == end["session"]["time"]
    api = FakeV2(moments=[copy.deepcopy(between)])
    clock = Clock(rej["transcript"][0]["time"]["created"] / 1000 - 1)
    mon = ServerMonitor(URL, settings=Settings(), transport=api.transport(), clock=clock)
    mon.stream_opened()
    assert await mon.take_snapshot()
    mon.stream_down(OcwatchError(f"{URL}: event stream closed"))
    assert await mon.take_snapshot()  # (the one the drop asks for, during the outage)
    assert mon.rows(clock.t)[(URL, sid)].state == "busy"
    api.moments[sid] = copy.deepcopy(end)  # the second step, its permission, the reject
    clock.t += 30
    mon.stream_opened()
    for _ in range(3):
        assert await mon.take_snapshot()
        row = mon.rows(clock.t)[(URL, sid)]
        assert (row.state, row.reason) == ("idle", "aborted"), row.evidence
        clock.t += 30
