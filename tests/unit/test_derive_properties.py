"""Property tests (hypothesis) of derive() and of the store's reconciliation."""

from __future__ import annotations

import copy
import dataclasses
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import (
    SERVER,
    T0,
    assistant,
    busy,
    retry,
    session,
    snap,
    status_event,
    user,
)
from tests.fakes import FakeAPI, wire_session
from tui.core.derive import DeriveMemo, derive_server
from tui.core.events import Event
from tui.core.journal import Entry, Journal, fold
from tui.core.models import SessionStatus
from tui.core.monitor import ServerMonitor
from tui.core.settings import Settings
from tui.core.view import REASONS, STATES, View, transitions, transitions_of

IDS = [f"ses_{i}" for i in range(6)]
S = Settings(grace=3.0)

sid_st = st.sampled_from(IDS)
time_st = st.floats(min_value=T0 - 600, max_value=T0, allow_nan=False)


@st.composite
def events(draw):
    kind = draw(
        st.sampled_from(
            [
                "status",
                "idle",
                "error",
                "message",
                "part",
                "asked",
                "replied",
                "created",
                "deleted",
                "moved",
                "garbage",
            ]
        )
    )
    sid = draw(sid_st)
    at = draw(time_st)
    if kind == "status":
        t = draw(st.sampled_from(["busy", "idle", "retry"]))
        return Event(
            "session.status", {"sessionID": sid, "status": {"type": t, "attempt": 1}}, None, at
        )
    if kind == "idle":
        return Event("session.idle", {"sessionID": sid}, None, at)
    if kind == "error":
        name = draw(st.sampled_from(["APIError", "MessageAbortedError"]))
        return Event(
            "session.error", {"sessionID": sid, "error": {"name": name, "data": {}}}, None, at
        )
    if kind == "message":
        n = draw(st.integers(0, 5))
        info = {
            "id": f"msg_{n}",
            "sessionID": sid,
            "role": draw(st.sampled_from(["user", "assistant"])),
            "time": {"created": at * 1000},
        }
        if draw(st.booleans()):
            info["time"]["completed"] = at * 1000
            info["finish"] = draw(st.sampled_from(["stop", "tool-calls", "length"]))
        return Event("message.updated", {"sessionID": sid, "info": info}, None, at)
    if kind == "part":
        n = draw(st.integers(0, 5))
        owner = draw(st.sampled_from([sid, sid, *IDS]))  # filed under another session too
        part = {
            "id": f"prt_{n}",
            "sessionID": owner,
            "messageID": f"msg_{n}",
            "type": "tool",
            "tool": "bash",
            "state": {"status": draw(st.sampled_from(["pending", "running", "completed"]))},
        }
        return Event("message.part.updated", {"sessionID": sid, "part": part}, None, at)
    if kind == "asked":
        return Event(
            "permission.asked",
            {"id": f"per_{sid}", "sessionID": sid, "permission": "bash"},
            None,
            at,
        )
    if kind == "replied":  # some servers may not say whose request it was
        props = {"sessionID": sid, "requestID": f"per_{sid}", "reply": "once"}
        if draw(st.booleans()):
            del props["sessionID"]
        return Event("permission.replied", props, None, at)
    if kind == "moved":  # a session updated under another parent (or none)
        parent = draw(st.sampled_from([None, *IDS]))
        return Event(
            "session.updated",
            {
                "sessionID": sid,
                "info": {
                    "id": sid,
                    "title": "moved",
                    "directory": "/p/a",
                    "parentID": parent,
                    "time": {"created": at * 1000, "updated": at * 1000},
                },
            },
            None,
            at,
        )
    if kind == "created":
        return Event(
            "session.created",
            {
                "sessionID": sid,
                "info": {
                    "id": sid,
                    "title": "x",
                    "directory": "/p/a",
                    "time": {"created": at * 1000, "updated": at * 1000},
                },
            },
            None,
            at,
        )
    if kind == "deleted":
        return Event("session.deleted", {"sessionID": sid, "info": {"id": sid}}, None, at)
    return Event("message.updated", {"sessionID": sid, "info": "not an object"}, None, at)


@st.composite
def snapshots(draw):
    present = draw(st.lists(sid_st, unique=True, max_size=len(IDS)))
    sessions = []
    for sid in present:
        parent = draw(st.sampled_from([None, *[p for p in present if p < sid]]))
        sessions.append(session(sid, parent=parent))
    status, messages = {}, {}
    for s in sessions:
        choice = draw(st.sampled_from(["none", "busy", "retry"]))
        if choice == "busy":
            status[s.id] = busy()
        elif choice == "retry":
            status[s.id] = retry()
        m = draw(st.sampled_from(["none", "user", "streaming", "done", "error", "toolcalls"]))
        at = draw(time_st)
        messages[s.id] = {
            "none": None,
            "user": user("msg_1", s.id, created=at),
            "streaming": assistant("msg_2", s.id, created=at, tools=("running",)),
            "done": assistant("msg_2", s.id, created=at - 1, completed=at, finish="stop"),
            "error": assistant("msg_2", s.id, created=at - 1, completed=at, error="APIError"),
            "toolcalls": assistant(
                "msg_2", s.id, created=at - 1, completed=at, finish="tool-calls"
            ),
        }[m]
    out = snap(sessions, status=status, messages=messages)
    # a first snapshot shown before its last messages are all read (Snapshot.loading)
    loading = draw(st.frozensets(st.sampled_from(present))) if present else frozenset()
    return dataclasses.replace(out, loading=loading) if loading else out


now_st = st.floats(min_value=T0, max_value=T0 + 30, allow_nan=False)


@given(snapshots(), st.lists(events(), max_size=25), now_st)
@settings(max_examples=200, deadline=None)
def test_derive_is_deterministic_and_pure(snapshot, evs, now):
    j = Journal()
    for e in evs:
        j.add(e)
    entries = j.entries()
    snap_copy = copy.deepcopy(snapshot)
    entries_copy = copy.deepcopy(entries)
    a = derive_server(snapshot, entries, now, S)
    b = derive_server(snapshot, entries, now, S)
    assert a == b
    assert snapshot == snap_copy and entries == entries_copy
    for r in a.values():  # and every row is well formed
        assert r.state in STATES
        assert r.reason is None or r.reason in REASONS
        assert not r.stale or r.state == "busy"
        assert (r.state == "input") == bool(r.pending)
        assert r.reason != "interrupted" or r.state == "unknown"
        if r.state in ("busy", "retry", "input"):
            assert r.reason is None
        # a row whose last message is not read yet claims nothing the maps do not say
        if r.id in snapshot.loading and r.state not in ("input", "retry"):
            assert (r.settled, r.settling, r.stale) == (False, "loading", False)
            assert r.state in ("busy", "unknown")
        assert r.settling != "loading" or r.id in snapshot.loading


@given(snapshots(), st.lists(events(), max_size=25), now_st)
@settings(max_examples=200, deadline=None)
def test_events_then_a_covering_snapshot_equal_the_snapshot_alone(snapshot, evs, now):
    # carry_for=0: what a cut carries over lives for a while (test_carry_* covers it); once it
    # has expired, nothing observed before the snapshot may show
    j = Journal(carry_for=-1.0)
    for e in evs:
        j.add(e)
    seq = j.seq  # the snapshot's fetch began after every one of these events
    j.cut(seq)
    assert derive_server(snapshot, j.entries(), now, S) == derive_server(snapshot, (), now, S)


@given(st.lists(st.one_of(events(), st.integers(0, 40)), max_size=40))
@settings(max_examples=300, deadline=None)
def test_the_journals_running_fold_equals_a_fold_of_what_it_observed_since_the_cut(steps):
    """Journal.facts() is kept up to date incrementally: it equals folding every entry added
    since the last cut that covered anything it held (those an overflow dropped from the
    entries included: facts observed after the snapshot), whatever mix of additions and cuts
    (integers are cut points) came before; a cut leaves nothing older than its point."""
    j = Journal(limit=6)
    held: list = []  # what the fold should hold: entries since it was last made anew
    for step in steps:
        if isinstance(step, int):
            if held and held[0].seq < step:
                held = [e for e in j.entries() if e.seq >= step]
            j.cut(step)
            assert all(e.seq >= step for e in j.entries())
        else:
            seq = j.add(step)
            held.append(Entry(seq, step))
        assert j.facts() == fold(held, j.carry)
        kept = [e.seq for e in j.entries()]  # the newest of them, at most the limit
        assert len(kept) <= 6 and kept == [e.seq for e in held][len(held) - len(kept) :]


def assert_memo_agrees(first, steps, new_snapshot) -> None:
    """Run `steps` (events, seconds passing, and the steps for which `new_snapshot(step,
    snapshot)` returns a Snapshot: a cut and that snapshot), deriving after each with and
    without a DeriveMemo (each with its own previous rows); the rows must be equal every time."""
    j = Journal()
    memo = DeriveMemo()
    snapshot, now = first, T0
    prev_plain: dict = {}
    prev_memo: dict = {}
    settled_full = settled_some = None  # the transitions of the memoed rows, two ways
    for step in steps:
        replaced = None if isinstance(step, (float, Event)) else new_snapshot(step, snapshot)
        if replaced is not None:
            j.cut(j.seq)
            snapshot = replaced
        elif isinstance(step, float):
            now += step
        else:
            j.add(step)
        plain = derive_server(snapshot, j.facts(), now, S, previous=prev_plain)
        memoed = derive_server(snapshot, j.facts(), now, S, previous=prev_memo, memo=memo)
        assert memoed == plain
        # the rows the memo says it changed are the only ones transitions_of needs to read
        view = View(now, (), memoed)
        full = transitions(settled_full, view)
        some = (
            transitions(settled_some, view)
            if memo.changed is None or settled_some is None
            else transitions_of(settled_some, view, memo.changed)
        )
        assert (some.transitions, some.asks, some.settled) == (
            full.transitions,
            full.asks,
            full.settled,
        )
        settled_full, settled_some = full.settled, some.settled
        prev_plain, prev_memo = plain, memoed


@given(
    snapshots(),
    snapshots(),
    st.lists(
        st.one_of(events(), st.floats(min_value=0, max_value=5), st.just("snapshot")), max_size=40
    ),
)
@settings(max_examples=300, deadline=None)
def test_a_memo_never_changes_what_derive_returns(first, second, steps):
    """The monitor passes a DeriveMemo to reuse unchanged rows; with or without it, the rows are
    the same at every step (events arrive, time passes, a new snapshot replaces the old)."""
    assert_memo_agrees(
        first, [*steps, 0.0], lambda step, _snapshot: second if step == "snapshot" else None
    )


def message_of(kind: str, sid: str, at: float):
    return {
        "none": None,
        "user": user("msg_1", sid, created=at),
        "streaming": assistant("msg_2", sid, created=at, tools=("running",)),
        "done": assistant("msg_2", sid, created=at - 1, completed=at, finish="stop"),
        "error": assistant("msg_2", sid, created=at - 1, completed=at, error="APIError"),
    }[kind]


resyncs = st.tuples(
    st.just("resync"),
    st.frozensets(sid_st),
    st.sampled_from(["none", "busy", "retry", "idle-aborted"]),
    st.sampled_from(["keep", "none", "user", "streaming", "done", "error"]),
    st.booleans(),
    time_st,
    st.floats(min_value=0, max_value=60),
)


def resynced(snapshot, change, status_kind, message_kind, active, at, later=0.0):
    """A new Snapshot as a resync gives it, taken `later` seconds after the last: the objects of
    unchanged sessions reused (status entries parsed again: equal, not the same), the sessions
    in `change` with a new status entry, a new last message (unless "keep") and listed as active
    or not."""
    status = {sid: SessionStatus.parse(e.to_wire()) for sid, e in snapshot.status.items()}
    messages = dict(snapshot.messages)
    listed = set(snapshot.active)
    for sid in change & snapshot.sessions.keys():
        status.pop(sid, None)
        if status_kind == "busy":
            status[sid] = busy()
        elif status_kind == "retry":
            status[sid] = retry()
        elif status_kind == "idle-aborted":
            status[sid] = SessionStatus(type="idle", reason="aborted")
        if message_kind != "keep":
            messages[sid] = message_of(message_kind, sid, at)
        (listed.add if active else listed.discard)(sid)
    return dataclasses.replace(
        snapshot,
        sessions=dict(snapshot.sessions),
        status=status,
        messages=messages,
        active=frozenset(listed),
        started_at=snapshot.started_at + later,
    )


@given(
    snapshots(),
    st.lists(st.one_of(events(), st.floats(min_value=0, max_value=5), resyncs), max_size=40),
)
@settings(max_examples=300, deadline=None)
def test_a_memo_across_resyncs_never_changes_what_derive_returns(first, steps):
    """After a resync the memo reuses the rows of sessions whose objects the snapshot reused and
    that no journal fact touches; whatever changed (an object, a status entry, the active list,
    an event before or after the cut, a fact carried across it), the rows equal a plain derive."""
    assert_memo_agrees(
        first,
        [*steps, 0.0, 30.0],
        lambda step, snapshot: resynced(snapshot, *step[1:]) if isinstance(step, tuple) else None,
    )


@given(st.lists(events(), max_size=30), st.lists(sid_st, unique=True), now_st)
@settings(max_examples=60, deadline=None)
async def test_no_session_absent_from_the_snapshot_survives_it(evs, present, now):
    """Through the real monitor: events are applied, then a snapshot replaces the store."""
    api = FakeAPI(
        sessions=[wire_session(s) for s in present],
        status={"/p/a": {s: {"type": "busy"} for s in present[:2]}},
    )
    mon = ServerMonitor(SERVER, settings=S, transport=api.transport(), clock=lambda: now)
    for e in evs:  # what the stream delivered before the snapshot's fetch began
        frame = {"directory": "/p/a", "payload": {"type": e.type, "properties": e.properties}}
        mon.on_data(json.dumps(frame))
    await mon.snapshot_once()
    await mon.client.aclose()
    assert mon.snapshot is not None and mon.error is None
    keys = {k[1] for k in mon.rows(now)}
    assert keys == set(present)


def test_a_memo_sees_a_part_filed_under_another_session_than_its_event():
    """A tool part whose own session differs from its event's: the part's session's row is
    looked at again (memoed rows equal plain ones as the tool ends and the grace passes)."""
    first = snap(
        [session("ses_0"), session("ses_1")],
        status={"ses_0": busy()},
        messages={
            "ses_0": assistant(
                "msg_2",
                "ses_0",
                created=T0 - 9,
                completed=T0 - 8,
                finish="stop",
                tools=("running",),
            )
        },
    )
    done = {
        "id": "prt_msg_2_0",
        "sessionID": "ses_0",
        "messageID": "msg_2",
        "type": "tool",
        "tool": "bash",
        "callID": "call0",
        "state": {"status": "completed"},
    }
    ev = Event("message.part.updated", {"sessionID": "ses_1", "part": done}, None, T0)
    assert_memo_agrees(first, [0.0, ev, 1.0, 5.0, 30.0], lambda _step, _snapshot: None)


def test_what_an_overflow_dropped_is_gone_after_a_cut_past_it():
    """The fold keeps what an overflow dropped from the entries (observed after the snapshot)
    until a cut covers it; then nothing of it remains."""
    j = Journal(limit=6)
    for i in range(7):  # the seventh overflows: the first entry is dropped, its fact kept
        j.add(status_event(f"ses_{i}", "busy", T0 + i))
    assert j.overflowed and j.entries()[0].seq == 1 and "ses_0" in j.facts().status
    j.cut(1)
    assert "ses_0" not in j.facts().status and "ses_1" in j.facts().status


def test_the_journal_holds_a_bounded_number_of_bytes():
    """A hostile stream's events of 15 MiB each (under the 16 MiB frame limit) grew memory
    by 25 MB/s while snapshots failed: 5000 entries could hold 80 GB (found by a review). Past
    `max_bytes` the oldest entries go (down to half of it) and the journal overflows, as past
    `limit`: the caller takes a snapshot, and the fold keeps what they said."""
    j = Journal(limit=5000, max_bytes=64 * 2**20)
    for i in range(20):
        j.add(status_event(f"ses_{i}", "busy", T0 + i), 15 * 2**20)
        assert sum(15 * 2**20 for _ in j.entries()) <= 64 * 2**20
    assert j.overflowed and len(j.entries()) < 5 and "ses_0" in j.facts().status
    j.cut(j.seq)  # a snapshot covers them all: the byte count goes with them
    assert j.entries() == ()
    # (under the bound once what the cut dropped is no longer counted)
    j.add(status_event("x", "busy", T0), 60 * 2**20)
    assert not j.overflowed and len(j.entries()) == 1


def test_a_memo_sees_a_session_the_active_list_named_go_idle():
    """Listed by /api/session/active in the snapshot, then an idle event: the memo's merged
    maps drop it from the active list as a plain derive does."""
    first = snap(
        [session("ses_0"), session("ses_1")],
        active=frozenset({"ses_0"}),
        messages={"ses_0": assistant("msg_2", "ses_0", created=T0 - 9)},
    )
    idle = Event("session.status", {"sessionID": "ses_0", "status": {"type": "idle"}}, None, T0)
    busy_again = Event(
        "session.status", {"sessionID": "ses_0", "status": {"type": "busy"}}, None, T0 + 1
    )
    assert_memo_agrees(first, [0.0, idle, 1.0, busy_again, 5.0], lambda _step, _snap: None)
