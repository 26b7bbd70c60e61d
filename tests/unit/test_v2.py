"""OpenCode V2 (2.0.15) read through the shared store: answers and frames captured from the real
server (tests/integration/record_v2_fixtures.py) go through the V2 client routes, snapshot and
parser, then the journal and derive, and each kind of run reads as it ended."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fakes_v2 import INFO, FakeV2, load
from tui.core.client import Client
from tui.core.derive import derive_server
from tui.core.journal import Journal
from tui.core.monitor import ServerMonitor
from tui.core.protocols.v2 import wire
from tui.core.protocols.v2.events import V2EventParser
from tui.core.protocols.v2.snapshot import fetch_snapshot_v2, read_tail, status_of
from tui.core.settings import Settings
from tui.core.snapshot import MessageCache, Snapshot

#: fixture -> (state while waiting, state at the end)
ENDS: dict[str, tuple[tuple[str, str | None] | None, tuple[str, str | None]]] = {
    "completed": (None, ("idle", "completed")),
    "failed": (None, ("idle", "error")),
    "interrupted": (("busy", None), ("idle", "aborted")),
    "retry": (("retry", None), ("idle", "aborted")),
    "permission_once": (("input", None), ("idle", "completed")),
    "permission_reject": (("input", None), ("idle", "aborted")),
    "question_answered": (("input", None), ("idle", "completed")),
    "question_dismissed": (("input", None), ("idle", "aborted")),
    "question_interrupted": (("input", None), ("idle", "aborted")),
}


IDLE, BUSY, INPUT = ("idle", None), ("busy", None), ("input", None)
#: what the rows show frame by frame, repeats dropped (a reject or a dismiss goes from waiting
#: to aborted with nothing between: the run is ending, the row keeps what it waited for)
LIFECYCLES = {
    "completed": [IDLE, BUSY, ("idle", "completed")],
    "failed": [IDLE, BUSY, ("idle", "error")],
    "interrupted": [IDLE, BUSY, ("idle", "aborted")],
    "retry": [IDLE, BUSY, ("retry", None), ("idle", "aborted")],
    "permission_once": [IDLE, BUSY, INPUT, BUSY, ("idle", "completed")],
    "permission_reject": [IDLE, BUSY, INPUT, ("idle", "aborted")],
    "question_answered": [IDLE, BUSY, INPUT, BUSY, ("idle", "completed")],
    "question_dismissed": [IDLE, BUSY, INPUT, ("idle", "aborted")],
    # (the server cancels the open form, fails its tool call as interrupted, then the run: the
    # row kept waiting until the run's end, never busy between)
    "question_interrupted": [IDLE, BUSY, INPUT, ("idle", "aborted")],
}


def server(moment: dict[str, Any]) -> httpx.MockTransport:
    """A V2 server answering a snapshot's routes as the real one did at `moment`."""
    return FakeV2(moments=[moment]).transport()


async def snapshot_at(moment: dict[str, Any]) -> Snapshot:
    async with Client("http://v2", transport=server(moment)) as client:
        return await fetch_snapshot_v2(client, MessageCache(), clock=lambda: 1.0)


def state_of(snap: Snapshot, journal: Journal, now: float) -> tuple[str, str | None]:
    rows = derive_server(snap, journal.facts(), now, Settings())
    (row,) = rows.values()
    return row.state, row.reason


@pytest.mark.parametrize("name", sorted(ENDS))
async def test_a_snapshot_reads_each_run_as_it_ended(name: str) -> None:
    fx = load(name)
    waiting, end = ENDS[name]
    last = max(t for t, _ in fx["frames"])
    snap = await snapshot_at(fx["end"])
    assert snap.protocol == "v2" and snap.instance == "4242" and snap.version == "2.0.15"
    assert state_of(snap, Journal(), last + 60) == end
    if waiting is not None:
        snap = await snapshot_at(fx["waiting"])
        got = state_of(snap, Journal(), last + 1)
        assert got == waiting, got
        if waiting[0] == "input":
            rows = derive_server(snap, Journal().facts(), last + 1, Settings())
            (row,) = rows.values()
            (pending,) = row.pending
            asked = fx["waiting"]["permissions"] or fx["waiting"]["forms"]
            assert pending.id == asked[0]["id"]


@pytest.mark.parametrize("name", sorted(ENDS))
def test_the_frames_alone_tell_each_run(name: str) -> None:
    """From a snapshot of the new session (no message yet), the stream's frames bring it to its
    end: every frame read, none unknown, no gap in the durable sequence."""
    fx = load(name)
    sid = fx["session_id"]
    listed = {**fx["end"]["session"], "outcome": None, "time": {"created": 1, "updated": 1}}
    snap = Snapshot(
        server="http://v2",
        started_at=0.0,
        sessions={sid: MessageCache().sessions_from([wire.session(listed)])[0][0]},
        status={},
        permissions={},
        questions={},
        messages={sid: None},
        protocol="v2",
    )
    parser, journal = V2EventParser(), Journal()
    seen: list[tuple[str, str | None]] = []
    rows: dict[Any, Any] = {}
    for t, data in fx["frames"]:
        parsed = parser.parse(data, t)
        assert not parsed.gap, data[:200]
        if parsed.event is not None and parsed.control is None:
            journal.add(parsed.event, len(data))
            for more in parsed.more:
                journal.add(more)
            rows = derive_server(snap, journal.facts(), t, Settings(), previous=rows)
            (row,) = rows.values()
            seen.append((row.state, row.reason))
    assert parser.skipped == 0 and parser.unknown == 0, parser.unknown_types
    assert journal.facts().malformed == 0
    waiting, end = ENDS[name]
    lifecycle = [s for i, s in enumerate(seen) if i == 0 or seen[i - 1] != s]
    assert lifecycle == LIFECYCLES[name], lifecycle


def test_a_missed_durable_event_is_a_gap() -> None:
    frames = [d for _, d in load("completed")["frames"]]
    durable = [i for i, d in enumerate(frames) if '"durable"' in d]
    parser = V2EventParser()
    gaps = [parser.parse(d, 1.0).gap for i, d in enumerate(frames) if i != durable[3]]
    assert gaps.count(True) == 1


def test_a_frame_with_a_huge_seq_hides_no_later_gap() -> None:
    """A copy of a real durable frame whose `seq` is huge (a hostile sender) is a gap; the
    real frames after it go back below it (one more gap), and a real frame missed after that
    is still seen."""
    frames = [d for _, d in load("completed")["frames"]]
    durable = [i for i, d in enumerate(frames) if '"durable"' in d]
    hostile = json.loads(frames[durable[1]])
    hostile["id"] = "evt_hostile"
    hostile["durable"]["seq"] = 10**18
    stream = [*frames[: durable[1] + 1], json.dumps(hostile), *frames[durable[1] + 1 :]]
    missed = stream.index(frames[durable[4]])
    parser = V2EventParser()
    gaps = [parser.parse(d, 1.0).gap for i, d in enumerate(stream) if i != missed]
    assert gaps.count(True) == 3  # the huge one, the real one after it, the one after a miss


def test_a_replayed_copy_of_a_durable_frame_is_no_gap() -> None:
    """A copy of an applied frame (a proxy, an attacker) is dropped before its older seq is
    read: no gap, and none at the real frame after it."""
    frames = [d for _, d in load("completed")["frames"]]
    durable = [i for i, d in enumerate(frames) if '"durable"' in d]
    stream = [*frames[: durable[3] + 1], frames[durable[1]], *frames[durable[3] + 1 :]]
    parser = V2EventParser()
    assert [parser.parse(d, 1.0).gap for d in stream].count(True) == 0
    assert parser.duplicates == 1


def test_a_reject_before_shutdown_is_the_user_and_a_shutdown_alone_is_the_server() -> None:
    frames = load("permission_reject")["frames"]
    parser = V2EventParser()
    ends = [p.event for t, d in frames if (p := parser.parse(d, t)).event is not None]
    assert ends[-1].properties["status"]["reason"] == "aborted"
    assert "just after the user rejected a permission" in ends[-1].properties["status"]["message"]
    parser = V2EventParser()
    kept = [(t, d) for t, d in frames if '"permission.replied"' not in d]
    ends = [p.event for t, d in kept if (p := parser.parse(d, t)).event is not None]
    assert ends[-1].properties["status"]["reason"] == "interrupted"


def test_a_form_of_any_kind_asks_what_it_says() -> None:
    raw = {
        "id": "frm_1",
        "sessionID": "ses_1",
        "title": "Connect the database",
        "metadata": {"kind": "mcp", "mode": "form"},
        "fields": [
            {"key": "host", "title": "Host", "type": "string"},
            {"key": "ok", "title": "Proceed?", "type": "boolean"},
        ],
    }
    q = wire.form(raw)
    assert [x["question"] for x in q["questions"]] == ["Host", "Proceed?"]
    empty = wire.form(
        {
            "id": "frm_2",
            "sessionID": "ses_1",
            "title": "Open this link",
            "metadata": {"kind": "mcp", "mode": "url"},
        }
    )
    assert empty["questions"][0]["question"] == "Open this link"


def test_an_outcome_belongs_to_the_run_it_dates() -> None:
    """`Session.outcome` of an earlier run says nothing of a later one (2.0.15 leaves it as it
    was when the user rejects or dismisses): only an idle time after the last turn counts."""
    fx = load("permission_reject")["end"]
    msg, tail = read_tail(fx["transcript"], fx["session"]["id"])
    from tui.core.models import Message

    last = Message.parse(msg)
    created = last.info.time.created
    assert status_of("s", False, last, tail, ("succeeded", created - 1000)) is None
    st = status_of("s", False, last, tail, ("succeeded", created + 1000))
    assert st is not None and st.reason == "completed"
    # a last turn that says no time (a hostile or broken server) dates nothing: an outcome
    # is not taken as its own on the strength of a missing date
    wire_msg = json.loads(json.dumps(msg))
    del wire_msg["info"]["time"]["created"]
    undated = Message.parse(wire_msg)
    assert undated.info.time.created == 0
    assert status_of("s", False, undated, tail, ("succeeded", created - 1000)) is None


@pytest.mark.parametrize(
    "data",
    [
        "{not json",
        "[1, 2]",
        '{"type": 7}',
        '{"type": "session.execution.started", "data": []}',
        '{"type": "session.execution.started", "data": {"sessionID": 7}}',
        '{"type": "form.created", "data": {"form": "x"}}',
        '{"type": "permission.asked", "data": {"sessionID": "s", "resources": "rm"}}',
        '{"type": "session.step.ended", "data": {"sessionID": "s", "tokens": "many"}}',
    ],
)
def test_hostile_frames_are_counted_never_raised(data: str) -> None:
    parser = V2EventParser()
    parsed = parser.parse(data, 1.0)
    journal = Journal()
    if parsed.event is not None:
        journal.add(parsed.event)
    assert parser.skipped + journal.facts().malformed + (parsed.event is not None) >= 1


def test_comments_are_signs_of_life_not_events() -> None:
    parser = V2EventParser()
    assert parser.parse("", 1.0).event is None and parser.skipped == 0


async def test_the_probe_reads_a_v2_server_and_says_so() -> None:
    fx = load("completed")["end"]
    mon = ServerMonitor("http://v2", transport=server(fx))
    assert await mon.take_snapshot()
    assert mon.protocol is not None and mon.protocol.name == "v2"
    info = mon.info()
    assert info.protocol == "v2" and info.version == "2.0.15" and info.reachable
    assert isinstance(mon.parser, V2EventParser)
    assert mon.stall_after > Settings().stall_after  # a 15 s heartbeat is no stall


async def test_a_server_that_speaks_neither_is_said_so_not_unreachable() -> None:
    html = httpx.MockTransport(
        lambda r: httpx.Response(200, text="<html>hi</html>", headers={"content-type": "text/html"})
    )
    mon = ServerMonitor("http://neither", transport=html)
    assert not await mon.take_snapshot()
    assert mon.error is not None and "speaks neither OpenCode protocol" in mon.error
    assert "unreachable" not in mon.error.lower() and "\n" not in mon.error


ALL_FRAMES = [(name, t, d) for name in sorted(ENDS) for t, d in load(name)["frames"]]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(range(len(ALL_FRAMES))), max_size=60))
def test_any_subsequence_of_real_frames_derives_a_sound_view(picks: list[int]) -> None:
    """Whatever frames were missed (any subsequence, in order), derive never raises, shows only
    sessions it knows, and never shows a session waiting with nothing asked."""
    parser, journal = V2EventParser(), Journal()
    snap = Snapshot("http://v2", 0.0, {}, {}, {}, {}, {}, protocol="v2")
    for i in sorted(picks):
        _, t, data = ALL_FRAMES[i]
        parsed = parser.parse(data, t)
        if parsed.event is not None and parsed.control is None:
            journal.add(parsed.event, len(data))
            for more in parsed.more:
                journal.add(more)
    now = max((ALL_FRAMES[i][1] for i in picks), default=0.0) + 1
    rows = derive_server(snap, journal.facts(), now, Settings())
    created = set(journal.facts().sessions)
    for row in rows.values():
        assert row.id in created
        assert row.state in ("busy", "retry", "input", "idle", "unknown")
        if row.state == "input" and row.settled:
            assert row.pending


async def test_the_raw_facts_name_v2_routes_and_events() -> None:
    from tui.core.raw import fact_sources

    fx = load("permission_once")
    snap = await snapshot_at(fx["waiting"])
    sources = {src for _, src, _ in fact_sources(fx["session_id"], snap, None)}
    assert "snapshot GET /api/permission/request" in sources
    assert "snapshot GET /api/session/{id}/message" in sources
    assert not any(src.startswith("snapshot GET /session") for src in sources), sources


def test_a_rename_changes_the_title_and_a_delete_the_list() -> None:
    """Seen on 2.0.15: `session.renamed {sessionID, title}` and `session.deleted {sessionID}`."""
    fx = load("completed")
    listed = wire.session(fx["end"]["session"])
    known = MessageCache().sessions_from([listed])[0]
    parser = V2EventParser()
    parser.prune({s.id: s for s in known})
    sid = fx["session_id"]
    renamed = parser.parse(
        json.dumps(
            {
                "id": "evt_1",
                "created": 1,
                "type": "session.renamed",
                "data": {"sessionID": sid, "title": "[b]new[/b] name"},
            }
        ),
        1.0,
    ).event
    assert renamed is not None and renamed.type == "session.updated"
    journal = Journal()
    journal.add(renamed)
    assert journal.facts().sessions[sid].title == "[b]new[/b] name"
    assert journal.facts().sessions[sid].directory == listed["directory"]
    gone = parser.parse(
        json.dumps({"id": "evt_2", "type": "session.deleted", "data": {"sessionID": sid}}), 2.0
    ).event
    assert gone is not None and gone.type == "session.deleted"
    journal.add(gone)
    assert sid in journal.facts().deleted
    # a rename of a session it does not know yet says nothing (the next listing has it)
    fresh = V2EventParser()
    got = fresh.parse(
        json.dumps({"type": "session.renamed", "data": {"sessionID": "ses_x", "title": "t"}}), 3.0
    )
    assert got.event is None and fresh.unknown == 0 and fresh.skipped == 0


async def test_a_resync_the_stream_vouches_for_reads_no_running_transcript_again() -> None:
    """A light touch on V2 as on V1: the running sessions' transcripts the stream vouches for
    are brought up to date from the journal, and the status the events say is their entry."""
    from tui.core.models import SessionStatus

    api = FakeV2()
    cache = MessageCache()
    async with Client("http://v2", transport=api.transport()) as client:
        first = await fetch_snapshot_v2(client, cache, clock=lambda: 100.0)
        running = {sid for sid, x in api.moments.items() if sid in x["active"]}
        assert running and first.vouched == 0
        reads = sum(n for p, n in api.hits.items() if p.endswith("/message"))
        retry_sid = load("retry")["session_id"]
        said = {sid: SessionStatus(type="busy") for sid in running}
        said[retry_sid] = SessionStatus(type="retry", attempt=7, message="from the stream")
        second = await fetch_snapshot_v2(
            client,
            cache,
            clock=lambda: 200.0,
            vouch=lambda sid, msg: msg,
            vouched_since=lambda: 50.0,
            expected_status=said.get,
        )
    assert sum(n for p, n in api.hits.items() if p.endswith("/message")) == reads
    assert second.vouched == len(running)
    assert second.status[retry_sid].attempt == 7
    assert {sid for sid, st in second.status.items() if st.type in ("busy", "retry")} == running
    # a stream that says a run ended while the active list still lists it vouches for nothing
    api2, cache2 = FakeV2(), MessageCache()
    async with Client("http://v2", transport=api2.transport()) as client:
        await fetch_snapshot_v2(client, cache2, clock=lambda: 100.0)
        reads = sum(n for p, n in api2.hits.items() if p.endswith("/message"))
        third = await fetch_snapshot_v2(
            client,
            cache2,
            clock=lambda: 200.0,
            vouch=lambda sid, msg: msg,
            vouched_since=lambda: 50.0,
            expected_status=lambda sid: None,
        )
    assert third.vouched == 0
    assert sum(n for p, n in api2.hits.items() if p.endswith("/message")) == reads + len(running)


def test_a_step_the_server_aborted_with_no_marker_and_no_refusal_is_a_cut_run() -> None:
    """Seen on 2.0.15 stopped by SIGTERM mid-run: the step closes with error `aborted`, no idle
    marker, no outcome; a tool waiting on the user says the location shut down. A user's
    refusal leaves the same step with its words in the tool: aborted, not cut."""
    fx = load("permission_reject")["end"]
    sid = fx["session"]["id"]
    msg, tail = read_tail(fx["transcript"], sid)
    assert not tail.shut_down  # "The user declined this tool call"
    stopped = json.loads(json.dumps(fx["transcript"]))
    stopped[0]["content"][-1]["state"]["error"]["message"] = (
        "Interaction cancelled because the location shut down"
    )
    msg, tail = read_tail(stopped, sid)
    assert tail.shut_down
    from tui.core.models import Message

    st = status_of(sid, False, Message.parse(msg), tail, (None, None))
    assert st is not None and (st.type, st.reason) == ("idle", "interrupted")
    assert status_of(sid, True, Message.parse(msg), tail, None).type == "busy"
    hang = [
        {
            "id": "msg_1",
            "type": "assistant",
            "content": [{"type": "text", "text": "Working on it"}],
            "time": {"created": 1, "completed": 2},
            "finish": "error",
            "error": {"type": "aborted", "message": "Step interrupted"},
        }
    ]
    assert read_tail(hang, sid)[1].shut_down
    marked = [{"id": "msg_2", "type": "idle", "outcome": "interrupted", "time": {"created": 3}}]
    assert not read_tail(marked + hang, sid)[1].shut_down  # a user's interrupt: its marker


async def test_a_server_speaking_neither_reads_not_opencode_everywhere() -> None:
    """404 where V1's health and V2's info are (an ordinary web server) is no OpenCode server:
    said so in one line, in the server's info and the table, never 'unreachable'."""
    from tui.cli.output import render_table
    from tui.core.view import View

    web = httpx.MockTransport(
        lambda r: httpx.Response(
            404, text="<html>Not Found</html>", headers={"content-type": "text/html"}
        )
    )
    mon = ServerMonitor("http://web", transport=web)
    assert not await mon.take_snapshot()
    info = mon.info()
    assert info.foreign and not info.reachable
    assert info.error is not None and "speaks neither OpenCode protocol" in info.error
    assert "NOT OPENCODE" in render_table(View(0.0, (info,), {}), 0.0)


async def test_numbers_no_float_holds_are_no_time_not_a_crash() -> None:
    """A hostile `1e400` (inf once parsed) or a 400-digit integer where a time goes: the record
    is read without it; the snapshot and the parser never raise (found by a review)."""
    fx = load("completed")["end"]
    huge = "1" + "0" * 400
    session_text = json.dumps(fx["session"]).replace(
        '"idle": ' + str(fx["session"]["time"]["idle"]), '"idle": 1e400'
    )
    assert "1e400" in session_text
    transcript_text = json.dumps(fx["transcript"]).replace(
        str(fx["transcript"][0]["time"]["created"]), huge, 1
    )
    sid = fx["session"]["id"]

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        body = {
            "/api/info": json.dumps(INFO),
            "/api/session": '{"data": [' + session_text + '], "cursor": {}}',
            "/api/session/active": '{"data": {}}',
            "/api/permission/request": '{"data": []}',
            "/api/form": '{"data": []}',
            f"/api/session/{sid}/message": '{"data": ' + transcript_text + "}",
        }.get(path)
        if body is None:
            return httpx.Response(200, text="<html>", headers={"content-type": "text/html"})
        return httpx.Response(200, text=body, headers={"content-type": "application/json"})

    async with Client("http://v2", transport=httpx.MockTransport(handle)) as client:
        snap = await fetch_snapshot_v2(client, MessageCache(), clock=lambda: 1.0)
    assert sid in snap.sessions
    parser = V2EventParser()
    for data in (
        '{"type": "session.created", "created": ' + huge + ', "data": {"sessionID": "ses_1"}}',
        '{"type": "session.step.ended", "created": 1e400, "data": {"sessionID": "ses_1", '
        '"assistantMessageID": "msg_1"}}',
    ):
        parser.parse(data, 1.0)  # (never raises)


async def test_a_known_v2_server_stays_v2_when_its_probe_fails_once() -> None:
    """One 404 from `/api/info` (a proxy's misroute, a restart) does not make a V2 server V1:
    its parser and cache stay, and the error says what failed, not 'not OpenCode'."""

    api = FakeV2()
    broken = {"on": False}

    def handle(request: httpx.Request) -> httpx.Response:
        if broken["on"] and request.url.path == "/api/info":
            return httpx.Response(404, json={"_tag": "NotFound"})
        return api.handle(request)

    mon = ServerMonitor("http://v2", transport=httpx.MockTransport(handle))
    assert await mon.take_snapshot()
    parser, cached = mon.parser, len(mon.cache.entries)
    broken["on"] = True
    assert not await mon.take_snapshot()
    assert mon.protocol is not None and mon.protocol.name == "v2"
    assert mon.parser is parser and len(mon.cache.entries) == cached
    info = mon.info()
    assert not info.foreign and info.error is not None and "/api/info" in info.error
    broken["on"] = False
    assert await mon.take_snapshot() and mon.parser is parser


def test_a_refusal_outlives_a_snapshot_that_did_not_list_its_session_yet() -> None:
    """A session created after a snapshot read its list, rejected before that snapshot is in:
    its run's `shutdown` is still the user's (found by a review)."""
    frames = load("permission_reject")["frames"]
    parser = V2EventParser()
    last = None
    for t, data in frames:
        parsed = parser.parse(data, t)
        if '"permission.replied"' in data:
            parser.prune({})  # a snapshot installed that does not list the session
        last = parsed.event or last
    assert last is not None and last.properties["status"]["reason"] == "aborted"


async def test_a_vouched_newer_turn_drops_what_the_tail_said_of_the_old_one() -> None:
    """A new prompt the stream carried after a completed run: a light-touch resync does not
    pair the old run's idle marker with it (found by a review)."""
    from tui.core.journal import merge_message

    fx = load("completed")
    sid = fx["session_id"]
    api_moment = fx["end"]

    async with Client("http://v2", transport=server(api_moment)) as client:
        cache = MessageCache()
        first = await fetch_snapshot_v2(client, cache, clock=lambda: 100.0)
        assert first.status[sid].reason == "completed"
        journal = Journal()
        parser = V2EventParser()
        prompt = {
            "id": "evt_9",
            "created": api_moment["session"]["time"]["idle"] + 1000,
            "type": "session.inbox.enqueued",
            "data": {"sessionID": sid, "inboxID": "msg_zzzzzzzzzzzzzzzzzzzz"},
        }
        journal.add(parser.parse(json.dumps(prompt), 150.0).event)  # type: ignore[arg-type]
        second = await fetch_snapshot_v2(
            client,
            cache,
            clock=lambda: 200.0,
            touched=[sid],
            vouch=lambda s, msg: merge_message(msg, journal.facts(), s),
            vouched_since=lambda: 50.0,
            expected_status=lambda s: None,
        )
    assert second.vouched == 1
    assert second.messages[sid] is not None and second.messages[sid].info.role == "user"
    assert sid not in second.status  # no marker of the old run: the new prompt decides


def test_a_replayed_frame_is_applied_once() -> None:
    """Issue 40: frames replayed with their event ids after a run ended made a run that never
    happened. A copy of an event applied already is dropped (counted)."""
    frames = load("completed")["frames"]
    parser, journal = V2EventParser(), Journal()
    for t, data in frames + [(t + 5, d) for t, d in frames]:
        parsed = parser.parse(data, t)
        if parsed.event is not None and parsed.control is None:
            journal.add(parsed.event)
    applied = [e.event.type for e in journal.entries()]
    assert applied.count("session.status") == 2  # busy once, idle completed once
    assert parser.duplicates > 0
