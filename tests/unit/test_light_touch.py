"""A light touch on the server: while the event stream has carried every event since a session's
last message was fetched, a resync brings that message up to date from the journal instead of
asking again; a lost stream, a sequence gap, an unreadable frame, a removed message, a moved
`time.updated`, a status that changed with no event or a message older than vouch_max_age makes
it ask again. The rows are the same either way."""

from __future__ import annotations

import json

import pytest

from tests.fakes import FakeAPI, wire_session
from tests.unit.test_transitions import Clock, frame, wire_msg
from tui.core.client import OcwatchError
from tui.core.monitor import ServerMonitor
from tui.core.settings import Settings

T0 = 1_800_000_000.0
S = Settings(grace=3.0)
MSG = "/session/{id}/message"


def busy_server(n: int = 3) -> FakeAPI:
    sessions = [wire_session(f"ses_{i}", updated=T0 * 1000) for i in range(n)]
    return FakeAPI(
        sessions=sessions,
        status={"/p/a": {s["id"]: {"type": "busy"} for s in sessions}},
        messages={s["id"]: [wire_msg(s["id"], created=T0 - 5)] for s in sessions},
    )


async def watched(api: FakeAPI, clock: Clock, settings: Settings = S) -> ServerMonitor:
    mon = ServerMonitor("http://test", settings=settings, transport=api.transport(), clock=clock)
    mon.stream_opened()  # the stream is up before the first snapshot
    assert await mon.take_snapshot()
    return mon


def finish(api: FakeAPI, mon: ServerMonitor, sid: str, at: float) -> None:
    """The run of `sid` ends on the server, and the stream says so."""
    done = wire_msg(sid, created=T0 - 5, completed=at)
    api.messages[sid] = [done]
    del api.status["/p/a"][sid]
    mon.on_data(frame("message.updated", {"sessionID": sid, "info": done["info"]}))
    mon.on_data(frame("session.status", {"sessionID": sid, "status": {"type": "idle"}}))


async def test_a_resync_over_a_healthy_stream_asks_no_busy_sessions_last_message() -> None:
    api, clock = busy_server(), Clock(T0)
    mon = await watched(api, clock)
    assert api.hits[MSG] == 3
    clock.t = T0 + 5
    finish(api, mon, "ses_0", T0 + 4)
    clock.t = T0 + 30
    assert await mon.take_snapshot()  # the periodic resync
    assert api.hits[MSG] == 3  # none asked again: the stream vouched for all three
    assert mon.snapshot is not None and mon.snapshot.vouched == 3
    rows = mon.rows(clock.t)
    r0 = rows[("http://test", "ses_0")]
    assert (r0.state, r0.reason) == ("idle", "completed")  # the journal's message, kept
    assert {rows[("http://test", f"ses_{i}")].state for i in (1, 2)} == {"busy"}
    # what a monitor that asked everything again makes of the same server
    fresh = ServerMonitor("http://test", settings=S, transport=api.transport(), clock=clock)
    assert await fresh.take_snapshot()
    assert {k: (r.state, r.reason) for k, r in fresh.rows(clock.t).items()} == {
        k: (r.state, r.reason) for k, r in rows.items()
    }


async def test_a_lost_stream_a_gap_or_an_unreadable_frame_makes_it_ask_again() -> None:
    api, clock = busy_server(), Clock(T0)
    mon = await watched(api, clock)
    clock.t = T0 + 10
    mon.stream_down(OcwatchError("http://test: event stream closed"))
    mon.stream_opened()
    assert await mon.take_snapshot()
    assert api.hits[MSG] == 6  # every busy one asked again after the reconnect

    clock.t = T0 + 20
    sync = {
        "type": "sync",
        "syncEvent": {
            "id": "x",
            "type": "session.updated.1",
            "seq": 1,
            "aggregateID": "ses_1",
            "data": {},
        },
    }
    mon.on_data(json.dumps({"directory": "/p/a", "payload": sync}))
    mon.on_data(
        json.dumps(
            {"directory": "/p/a", "payload": {**sync, "syncEvent": {**sync["syncEvent"], "seq": 5}}}
        )
    )  # seq 2..4 never came
    assert await mon.take_snapshot()
    assert api.hits[MSG] == 9

    clock.t = T0 + 30
    mon.on_data("{not json")
    assert await mon.take_snapshot()
    assert api.hits[MSG] == 12

    clock.t = T0 + 40
    assert await mon.take_snapshot()  # nothing missed since: vouched again
    assert api.hits[MSG] == 12


async def test_a_removed_message_or_a_moved_update_time_is_asked_again() -> None:
    api, clock = busy_server(), Clock(T0)
    mon = await watched(api, clock)
    clock.t = T0 + 10
    mon.on_data(frame("message.removed", {"sessionID": "ses_2", "messageID": "msg_1"}))
    assert await mon.take_snapshot()
    assert api.hits[MSG] == 6  # the journal cannot say what the last message is now

    clock.t = T0 + 20
    api.sessions[1]["time"]["updated"] = (T0 + 15) * 1000
    mon.on_data(frame("session.updated", {"sessionID": "ses_1", "info": api.sessions[1]}))
    assert await mon.take_snapshot()
    assert api.hits[MSG] == 7  # only the session whose time.updated moved


async def test_a_session_changed_with_no_event_is_seen_at_the_next_list() -> None:
    """While the stream vouches, a resync does not read the session list; a session the server
    changed without an event (its time.updated moved) is seen when the list is read again,
    `relist_every` after the last read, and its last message is asked again then."""
    api, clock = busy_server(), Clock(T0)
    mon = await watched(api, clock, Settings(grace=3.0, relist_every=60.0))
    clock.t = T0 + 20
    api.sessions[1]["time"]["updated"] = (T0 + 15) * 1000
    assert await mon.take_snapshot()
    assert api.hits[MSG] == 3 and api.hits["/experimental/session"] == 1
    clock.t = T0 + 61
    assert await mon.take_snapshot()
    assert api.hits["/experimental/session"] == 2
    assert api.hits[MSG] == 4  # the one whose time.updated moved


async def test_a_vouched_resync_reads_only_the_maps() -> None:
    """No health, no session list, no project list: the status, permission and question maps of
    each folder and the active list; the sessions the events created or deleted are in it."""
    api, clock = busy_server(), Clock(T0)
    api.active_route = True
    mon = await watched(api, clock)
    first = dict(api.hits)
    new = wire_session("ses_new", folder="/p/b", updated=(T0 + 5) * 1000)
    api.sessions.append(new)
    clock.t = T0 + 5
    mon.on_data(frame("session.created", {"sessionID": "ses_new", "info": new}))
    mon.on_data(frame("session.deleted", {"sessionID": "ses_2", "info": api.sessions[2]}))
    del api.sessions[2]
    clock.t = T0 + 30
    assert await mon.take_snapshot()
    asked = {k: v - first.get(k, 0) for k, v in api.hits.items() if v != first.get(k, 0)}
    # the maps of /p/a, and of /p/b (a folder only the event named); the active list
    assert asked == {
        "/session/status": 2,
        "/permission": 2,
        "/question": 2,
        "/api/session/active": 1,
        MSG: 1,
    }  # (ses_new: never read)
    assert mon.snapshot is not None
    assert set(mon.snapshot.sessions) == {"ses_0", "ses_1", "ses_new"}
    assert mon.snapshot.folders == ("/p/a", "/p/b")
    assert mon.snapshot.listed_at == T0


async def test_a_stream_that_is_down_vouches_for_nothing() -> None:
    api, clock = busy_server(), Clock(T0)
    mon = ServerMonitor("http://test", settings=S, transport=api.transport(), clock=clock)
    assert await mon.take_snapshot()  # `status`: no stream at all
    clock.t = T0 + 30
    assert await mon.take_snapshot()
    assert api.hits[MSG] == 6


async def test_a_vouched_message_is_asked_again_once_it_is_old() -> None:
    api, clock = busy_server(), Clock(T0)
    mon = await watched(api, clock)
    clock.t = T0 + S.vouch_max_age - 1
    assert await mon.take_snapshot()
    assert api.hits[MSG] == 3
    clock.t = T0 + S.vouch_max_age + 1  # fetched longer ago than that: a safety net,
    assert await mon.take_snapshot()  # one a minute (reverify_per_minute), the oldest first
    assert api.hits[MSG] == 4
    clock.t += 30
    assert await mon.take_snapshot()
    assert api.hits[MSG] == 4  # half a minute: no credit yet
    for _ in range(2):
        clock.t += 30
        assert await mon.take_snapshot()
    assert api.hits[MSG] == 5
    for _ in range(2):
        clock.t += 30
        assert await mon.take_snapshot()
    assert api.hits[MSG] == 6  # then the last one
    for _ in range(4):
        clock.t += 30
        assert await mon.take_snapshot()
    assert api.hits[MSG] == 6  # each asked again once


async def test_the_stream_vouches_only_while_nothing_was_missed_since_the_snapshot() -> None:
    api, clock = busy_server(), Clock(T0)
    mon = await watched(api, clock)
    assert mon.vouches()
    clock.t = T0 + 5
    mon.on_data("{not json")
    assert not mon.vouches()  # until a snapshot begins after the unreadable frame
    assert await mon.take_snapshot()
    assert mon.vouches()
    mon.stream_down(OcwatchError("http://test: event stream closed"))
    assert not mon.vouches()


async def test_a_status_that_changed_with_no_event_refutes_the_stream() -> None:
    """The server ends a run and says nothing: the status map shows it, and the session's last
    message is asked again (its error is found), though the stream never missed a frame."""
    api, clock = busy_server(), Clock(T0)
    mon = await watched(api, clock)
    clock.t = T0 + 10
    failed = wire_msg("ses_1", created=T0 - 5, completed=T0 + 9)
    failed["info"]["error"] = {"name": "APIError", "data": {"message": "boom"}}
    api.messages["ses_1"] = [failed]
    del api.status["/p/a"]["ses_1"]
    assert await mon.take_snapshot()
    assert api.hits[MSG] == 4  # ses_1 alone
    row = mon.rows(clock.t + 5)[("http://test", "ses_1")]
    assert (row.state, row.reason) == ("idle", "error")


async def test_the_servers_requests_a_minute_are_measured_over_a_minute() -> None:
    api, clock = busy_server(), Clock(T0)
    mon = await watched(api, clock)
    sent = mon.client.requests
    assert mon.info().requests_per_minute is None  # not a minute of samples yet
    for k in range(1, 7):  # a resync every 10 s for a minute
        clock.t = T0 + 10 * k
        assert await mon.take_snapshot()
        info = mon.info()
    per_resync = (mon.client.requests - sent) / 6
    assert info.requests == mon.client.requests
    assert info.requests_per_minute == pytest.approx(6 * per_resync)


async def test_what_a_resync_reads_is_decided_when_it_begins() -> None:
    """A replay begins a snapshot when the recording says it began and takes it when it ended,
    with the events of the meantime in between: the list it takes, and so the messages it asks
    for, are those known at its beginning, as they were live."""
    api, clock = busy_server(), Clock(T0)
    mon = await watched(api, clock)
    clock.t = T0 + 30
    begun = mon.begin_snapshot()
    assert begun.relist is not None and set(begun.relist.sessions) == {"ses_0", "ses_1", "ses_2"}
    new = wire_session("ses_late", updated=(T0 + 31) * 1000)
    api.sessions.append(new)
    mon.on_data(frame("session.created", {"sessionID": "ses_late", "info": new}))
    sent = api.hits[MSG]
    assert await mon.take_snapshot(begun)
    assert api.hits[MSG] == sent  # ses_late came after it began: not asked by this one
    assert mon.snapshot is not None and "ses_late" not in mon.snapshot.sessions
    assert ("http://test", "ses_late") in mon.rows(clock.t)  # the journal still shows it


async def test_an_overflowing_journal_ends_the_vouch() -> None:
    """Past its limit the journal drops entries (their facts stay folded until a cut): the next
    snapshot reads the session list again instead of taking it from facts a cut may lose."""
    api, clock = busy_server(), Clock(T0)
    mon = await watched(api, clock, Settings(grace=3.0, journal_limit=5))
    clock.t = T0 + 5
    for i in range(8):
        mon.on_data(
            frame(
                "session.status",
                {"sessionID": "ses_0", "status": {"type": "busy" if i % 2 else "idle"}},
            )
        )
    assert not mon.vouches()
    clock.t = T0 + 30
    assert await mon.take_snapshot()
    assert api.hits["/experimental/session"] == 2  # read again, not taken from the journal


async def test_resyncs_over_a_vouching_stream_are_spaced_to_the_light_touch_budget() -> None:
    """Each resync asks three maps per folder and the active list: with four folders at the
    default 8 requests a minute they come every 97.5 s, not every 30 s; once the stream stops
    vouching (lost), every resync_interval again, whatever it costs."""
    dirs = ["/p/a", "/p/b", "/p/c", "/p/d"]
    sessions = [wire_session(f"ses_{i}", folder=d, updated=T0 * 1000) for i, d in enumerate(dirs)]
    api = FakeAPI(
        sessions=sessions,
        status={d: {} for d in dirs},
        messages={s["id"]: [wire_msg(s["id"], created=T0 - 5, completed=T0 - 4)] for s in sessions},
        projects=[{"id": d, "worktree": d} for d in dirs],
    )
    clock = Clock(T0)
    mon = ServerMonitor("http://test", settings=S, transport=api.transport(), clock=clock)
    assert mon.resync_delay() == S.resync_interval  # nothing read yet
    mon.stream_opened()
    assert await mon.take_snapshot()
    assert mon.resync_delay() == pytest.approx(60 * 13 / 8)
    sent = mon.client.requests
    clock.t += mon.resync_delay()
    assert await mon.take_snapshot()
    assert mon.client.requests - sent == 13  # what the spacing was computed from
    one = await watched(busy_server(), Clock(T0))  # one folder: 4 requests, within the budget
    assert one.resync_delay() == S.resync_interval
    mon.stream_down(OcwatchError("gone"))
    assert mon.resync_delay() == S.resync_interval
    free = Settings(grace=3.0, light_touch_per_minute=0)
    unbudgeted = ServerMonitor("http://test", settings=free, transport=api.transport(), clock=clock)
    unbudgeted.stream_opened()
    assert await unbudgeted.take_snapshot()
    assert unbudgeted.resync_delay() == free.resync_interval
