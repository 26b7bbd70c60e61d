"""The transition contract (docs/STATES.md): no state the facts have not settled, stale only when
the server says busy after the run ended, a failed route or an outage is not a wall of unknown."""

from __future__ import annotations

import json
from dataclasses import replace

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import SERVER, T0
from tests.fakes import FakeAPI, wire_session
from tui.cli.watch import transition_json
from tui.core.monitor import ServerMonitor
from tui.core.settings import Settings
from tui.core.view import SessionRow, TransitionFeed, View, transitions

S = Settings(grace=3.0, snapshot_debounce=0.0)


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def wire_msg(
    sid: str,
    *,
    created: float,
    completed: float | None = None,
    role: str = "assistant",
    mid: str = "msg_1",
) -> dict:
    info: dict = {"id": mid, "sessionID": sid, "role": role, "time": {"created": created * 1000}}
    if completed is not None:
        info["time"]["completed"] = completed * 1000
        info["finish"] = "stop"
    return {"info": info, "parts": []}


def frame(etype: str, props: dict) -> str:
    return json.dumps({"directory": "/p/a", "payload": {"type": etype, "properties": props}})


class FlakyAPI(FakeAPI):
    """FakeAPI whose chosen paths answer 500 while `failing` holds them."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.failing: set[str] = set()

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.path in self.failing or "*" in self.failing:
            return httpx.Response(500, json={"error": "boom"})
        return super().handle(request)


def running(kind: type[FakeAPI], n: int) -> FakeAPI:
    """A server with `n` sessions `ses_0`... each in a run (busy, its reply streaming)."""
    sessions = [wire_session(f"ses_{i}") for i in range(n)]
    return kind(
        sessions=sessions,
        status={"/p/a": {s["id"]: {"type": "busy"} for s in sessions}},
        messages={s["id"]: [wire_msg(s["id"], created=T0 - 10)] for s in sessions},
    )


def monitor(api: FakeAPI, clock: Clock) -> ServerMonitor:
    mon = ServerMonitor(SERVER, settings=S, clock=clock, transport=api.transport())
    mon._connected = True  # the event stream is up; events are fed with on_data
    return mon


def state(mon: ServerMonitor, sid: str = "ses_1") -> tuple:
    r = mon.rows(mon.clock())[(SERVER, sid)]
    return r.state, r.reason, r.stale, r.settled


async def test_a_lost_idle_event_is_a_drift_not_a_stale_run():
    clock = Clock()
    api = FakeAPI(
        sessions=[wire_session("ses_1")],
        status={"/p/a": {"ses_1": {"type": "busy"}}},
        messages={"ses_1": [wire_msg("ses_1", created=T0 - 10)]},
    )
    mon = monitor(api, clock)
    assert await mon.take_snapshot()
    assert state(mon) == ("busy", None, False, True)
    # the run ends; its idle events are lost: only the final message arrives
    clock.t = T0 + 1
    done = wire_msg("ses_1", created=T0 - 10, completed=T0 + 1)
    api.status, api.messages = {}, {"ses_1": [done]}
    mon.on_data(frame("message.updated", {"sessionID": "ses_1", "info": done["info"]}))
    clock.t = T0 + 10  # long past the grace period: old news says busy, nothing says stale
    row = mon.rows(clock.t)[(SERVER, "ses_1")]
    assert (row.state, row.stale, row.settled, row.settling) == ("busy", False, False, "confirming")
    assert mon._want_snapshot.is_set()  # it asks the server
    assert await mon.take_snapshot()
    assert state(mon) == ("idle", "completed", False, True)
    assert mon.drift_count == 1
    assert "no idle event came" in mon.drift_examples[-1]


async def test_busy_after_the_run_ended_is_stale_once_the_server_says_so():
    clock = Clock()
    done = wire_msg("ses_1", created=T0 - 10, completed=T0 - 8)
    api = FakeAPI(
        sessions=[wire_session("ses_1")],
        status={"/p/a": {"ses_1": {"type": "busy"}}},
        messages={"ses_1": [done]},
    )
    mon = monitor(api, clock)
    assert await mon.take_snapshot()  # taken 8 s after the run ended: the server says busy
    row = mon.rows(clock.t)[(SERVER, "ses_1")]
    assert (row.state, row.stale, row.settled, row.ended) == ("busy", True, True, "completed")
    assert any("after the run ended" in e for e in row.evidence)


async def test_a_route_that_fails_keeps_the_rows_while_the_stream_is_live():
    clock = Clock()
    api = FlakyAPI(
        sessions=[wire_session("ses_1"), wire_session("ses_2")],
        status={"/p/a": {"ses_1": {"type": "busy"}}},
        messages={
            "ses_1": [wire_msg("ses_1", created=T0 - 10)],
            "ses_2": [wire_msg("ses_2", created=T0 - 99, completed=T0 - 90)],
        },
    )
    mon = monitor(api, clock)
    feed = TransitionFeed()
    assert await mon.take_snapshot()
    first = feed.feed(View(clock.t, (mon.info(),), mon.rows(clock.t)))
    assert len(first.transitions) == 2  # first sight
    api.failing = {"/session/status"}
    clock.t += 30
    assert not await mon.take_snapshot()
    view = View(clock.t, (mon.info(),), mon.rows(clock.t))
    assert state(mon, "ses_1") == ("busy", None, False, True)
    assert state(mon, "ses_2") == ("idle", "completed", False, True)
    assert mon.info().reachable and "500" in (mon.info().error or "")
    assert feed.feed(view).transitions == []
    api.failing = set()
    clock.t += 1
    assert await mon.take_snapshot()
    assert feed.feed(View(clock.t, (mon.info(),), mon.rows(clock.t))).transitions == []
    assert mon.drift_count == 0 and mon.info().error is None


async def test_an_outage_shows_unknown_emits_nothing_and_is_one_drift():
    clock = Clock()
    api = running(FlakyAPI, 5)
    mon = monitor(api, clock)
    feed = TransitionFeed()
    assert await mon.take_snapshot()
    feed.feed(View(clock.t, (), mon.rows(clock.t)))
    mon._connected, api.failing = False, {"*"}
    clock.t += 5
    assert not await mon.take_snapshot()
    down = mon.rows(clock.t)
    assert {(r.state, r.settled, r.settling) for r in down.values()} == {
        ("unknown", False, "unreachable")
    }
    assert feed.feed(View(clock.t, (), down)).transitions == []
    # back: every run was cut off meanwhile (the server restarted)
    api.failing, api.status = set(), {}
    mon._connected = True
    clock.t += 60
    assert await mon.take_snapshot()
    after = feed.feed(View(clock.t, (), mon.rows(clock.t)))
    assert {(t.before.state, t.after.state, t.after.reason) for t in after.transitions} == {
        ("busy", "unknown", "interrupted")
    }
    assert mon.drift_count == 1 and "events missed from" in mon.drift_examples[-1]


async def test_a_prompt_to_an_idle_session_goes_straight_to_busy():
    """The prompt arrives before the server reports busy: no `unknown` between."""
    clock = Clock()
    done = wire_msg("ses_1", created=T0 - 99, completed=T0 - 90)
    api = FakeAPI(sessions=[wire_session("ses_1")], messages={"ses_1": [done]})
    mon = monitor(api, clock)
    feed = TransitionFeed()
    assert await mon.take_snapshot()
    seen = []

    def look() -> None:
        for tr in feed.feed(View(clock.t, (), mon.rows(clock.t))).transitions:
            seen.append((tr.after.state, tr.after.reason))

    look()
    clock.t += 1
    prompt = wire_msg("ses_1", created=clock.t, role="user", mid="msg_2")
    mon.on_data(frame("message.updated", {"sessionID": "ses_1", "info": prompt["info"]}))
    look()
    assert state(mon)[:2] == ("idle", "completed")  # kept while it starts
    # a snapshot taken now (the server lists it busy a moment later) is no drift either
    api.messages = {"ses_1": [done, prompt]}
    assert await mon.take_snapshot()
    look()
    clock.t += 0.05
    mon.on_data(frame("session.status", {"sessionID": "ses_1", "status": {"type": "busy"}}))
    look()
    assert seen == [("idle", "completed"), ("busy", None)]
    assert mon.drift_count == 0


# -- transitions() as a pure function ------------------------------------------------------------
def srow(sid: str, state: str, settled: bool = True, reason: str | None = None) -> SessionRow:
    return SessionRow(
        SERVER,
        sid,
        "t",
        "/p",
        None,
        state,
        reason,
        False,
        (),
        (),
        T0,
        T0,
        None,
        None,
        settled,
        settling=None if settled else "starting",
    )


def test_an_unsettled_row_emits_nothing_until_it_settles():
    a = transitions(None, View(T0, (), {(SERVER, "s"): srow("s", "busy", settled=False)}))
    assert a.transitions == [] and a.settled == {}
    b = transitions(a.settled, View(T0 + 1, (), {(SERVER, "s"): srow("s", "busy")}))
    assert [(t.before, t.after.state) for t in b.transitions] == [(None, "busy")]
    c = transitions(b.settled, View(T0 + 2, (), {(SERVER, "s"): srow("s", "idle", False)}))
    assert c.transitions == [] and c.settled[(SERVER, "s")].state == "busy"
    d = transitions(c.settled, View(T0 + 3, (), {}))
    assert [(t.before.state, t.after) for t in d.transitions] == [("busy", None)]


STATES = st.sampled_from(
    [
        ("busy", None),
        ("idle", "completed"),
        ("idle", "error"),
        ("unknown", None),
        ("input", None),
        ("retry", None),
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(STATES, st.booleans()), min_size=1, max_size=30))
def test_transitions_follow_exactly_the_settled_states(steps):
    """Emitted `to` states are the settled states with repeats dropped, never an unsettled one;
    each `from` is the previous emitted `to`."""
    feed = TransitionFeed()
    emitted: list[tuple] = []
    for i, ((state_, reason), settled_) in enumerate(steps):
        row = srow("s", state_, settled_, reason)
        for tr in feed.feed(View(T0 + i, (), {(SERVER, "s"): row})).transitions:
            assert tr.after is row and tr.after.settled
            assert (tr.before is None) == (not emitted)
            if tr.before is not None:
                assert (tr.before.state, tr.before.reason) == emitted[-1]
            emitted.append((state_, reason))
    want: list[tuple] = []
    for (state_, reason), settled_ in steps:
        if settled_ and (not want or want[-1] != (state_, reason)):
            want.append((state_, reason))
    assert emitted == want


def test_a_snapshot_that_confirms_the_journal_emits_nothing():
    rows = {(SERVER, "s"): srow("s", "busy")}
    a = transitions(None, View(T0, (), rows))
    again = {(SERVER, "s"): replace(rows[(SERVER, "s")], evidence=("from the snapshot",))}
    assert transitions(a.settled, View(T0 + 1, (), again)).transitions == []


def test_a_transition_is_a_change_of_what_the_row_is_settled_as():
    """(state, reason, stale) and nothing else (SessionRow.settled_as): the stale flag alone is
    one; the time held, the evidence or the cost are not; `watch --json` says the three."""
    busy = srow("s", "busy")
    a = transitions(None, View(T0, (), {(SERVER, "s"): busy}))
    later = replace(busy, since=T0 + 5, evidence=("x",), cost=1.0)
    assert later.settled_as == busy.settled_as == ("busy", None, False)
    assert transitions(a.settled, View(T0 + 1, (), {(SERVER, "s"): later})).transitions == []
    stale = replace(busy, stale=True, ended="completed")
    [tr] = transitions(a.settled, View(T0 + 1, (), {(SERVER, "s"): stale})).transitions
    assert tr.before is busy and tr.after is stale
    assert transition_json(tr)["to"] == {"state": "busy", "reason": None, "stale": True}


async def test_busy_between_two_retry_attempts_stays_retry_across_a_snapshot():
    """1.18.33 reads busy for the moment between two attempts: still retrying, until output
    arrives, also when a snapshot taken in that moment cuts the journal."""
    clock = Clock()
    msg = wire_msg("ses_1", created=T0 - 5)
    api = FakeAPI(
        sessions=[wire_session("ses_1")],
        status={"/p/a": {"ses_1": {"type": "busy"}}},
        messages={"ses_1": [msg]},
    )
    mon = monitor(api, clock)
    assert await mon.take_snapshot()

    def status(body: dict) -> None:
        mon.on_data(frame("session.status", {"sessionID": "ses_1", "status": body}))

    status({"type": "retry", "attempt": 1, "message": "overloaded", "next": (T0 + 2) * 1000})
    assert state(mon)[0] == "retry"
    clock.t += 2
    status({"type": "busy"})
    assert state(mon)[0] == "retry"
    assert await mon.take_snapshot()  # the server's map reads busy right now
    assert state(mon)[0] == "retry"
    part = {"id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1", "type": "step-start"}
    mon.on_data(frame("message.part.updated", {"sessionID": "ses_1", "part": part}))
    assert state(mon)[0] == "busy"


async def retrying_at_first_sight(clock: Clock) -> tuple[FakeAPI, ServerMonitor]:
    """A monitor whose first snapshot reads ses_1 retrying (no event has said so)."""
    retrying = {"type": "retry", "attempt": 1, "message": "overloaded", "next": (T0 + 2) * 1000}
    api = FakeAPI(
        sessions=[wire_session("ses_1")],
        status={"/p/a": {"ses_1": retrying}},
        messages={"ses_1": [wire_msg("ses_1", created=T0 - 5)]},
    )
    mon = monitor(api, clock)
    assert await mon.take_snapshot()
    assert state(mon)[0] == "retry"
    return api, mon


async def test_busy_between_two_retry_attempts_is_retry_when_only_a_snapshot_saw_the_retry():
    """Found against 1.18.33: `watch` started while a run was retrying printed retry -> busy ->
    retry at the next attempt. The snapshot read the retry, the stream then said busy (the
    attempt under way), and only a retry the stream had seen was remembered. The snapshot's
    retry is the last one known too, until output arrives."""
    clock = Clock()
    api, mon = await retrying_at_first_sight(clock)
    clock.t += 2
    mon.on_data(frame("session.status", {"sessionID": "ses_1", "status": {"type": "busy"}}))
    assert state(mon)[0] == "retry"
    part = {"id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1", "type": "step-start"}
    mon.on_data(frame("message.part.updated", {"sessionID": "ses_1", "part": part}))
    assert state(mon)[0] == "busy"


async def test_a_retry_a_later_snapshot_reads_over_is_forgotten():
    """With no events (the stream down, the resyncs working), a retry only snapshots saw must
    end with the snapshot that reads the session idle: else a later run, busy with no output
    yet, read as that old retry (found by a review of the fix above)."""
    clock = Clock()
    api, mon = await retrying_at_first_sight(clock)
    clock.t += 60  # the retry went through, the run completed
    api.status = {"/p/a": {}}
    api.messages = {"ses_1": [wire_msg("ses_1", created=T0 - 5, completed=T0 + 10)]}
    assert await mon.take_snapshot()
    assert state(mon)[:2] == ("idle", "completed")
    clock.t += 600  # a new run: busy, its assistant message not written yet
    api.status = {"/p/a": {"ses_1": {"type": "busy"}}}
    api.messages = {"ses_1": [wire_msg("ses_1", created=clock.t - 0.5, mid="msg_3")]}
    assert await mon.take_snapshot()
    assert state(mon)[0] == "busy"


async def test_a_lost_stream_is_one_drift_however_many_sessions_it_hid():
    from tui.core.client import OcwatchError

    clock = Clock()
    api = running(FakeAPI, 4)
    sessions = api.sessions
    mon = monitor(api, clock)
    assert await mon.take_snapshot()
    mon.rows(clock.t)
    mon.stream_down(OcwatchError("event stream lost"))
    clock.t += 5
    mon._connected, mon._connected_at = True, clock.t  # reconnected; meanwhile all runs ended
    api.status = {}
    api.messages = {
        s["id"]: [wire_msg(s["id"], created=T0 - 10, completed=T0 + 1)] for s in sessions
    }
    assert await mon.take_snapshot()
    assert {r.reason for r in mon.rows(clock.t).values()} == {"completed"}
    assert mon.drift_count == 1 and "4 sessions changed unseen" in mon.drift_examples[-1]


async def test_a_lost_busy_event_is_asked_again_not_called_unknown():
    """The prompt arrives, its busy event is lost: past the grace period the row does not
    turn `unknown` on the word of a snapshot older than the prompt; a new snapshot says busy."""
    clock = Clock()
    done = wire_msg("ses_1", created=T0 - 99, completed=T0 - 90)
    api = FakeAPI(sessions=[wire_session("ses_1")], messages={"ses_1": [done]})
    mon = monitor(api, clock)
    assert await mon.take_snapshot()
    assert state(mon) == ("idle", "completed", False, True)
    clock.t += 1
    prompt = wire_msg("ses_1", created=clock.t, role="user", mid="msg_2")
    mon.on_data(frame("message.updated", {"sessionID": "ses_1", "info": prompt["info"]}))
    clock.t += 10
    mon._want_snapshot.clear()
    row = mon.rows(clock.t)[(SERVER, "ses_1")]
    assert (row.state, row.reason, row.settled, row.settling) == (
        "idle",
        "completed",
        False,
        "confirming",
    )
    assert mon._want_snapshot.is_set()
    api.status = {"/p/a": {"ses_1": {"type": "busy"}}}
    api.messages = {"ses_1": [done, prompt]}
    assert await mon.take_snapshot()
    assert state(mon) == ("busy", None, False, True)
