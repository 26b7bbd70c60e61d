"""decide(), the pure decision, carry(), the previous row laid over it, and the memo's one reuse
condition around them.

The memo (derive.DeriveMemo) reuses a decision exactly when its SessionInputs equal those it was
decided from (but for the claim and quiet times, when the decision reads neither) and
`now < valid_until` (the clock not gone back since its last call). That is sound only if
`valid_until` is honest: the same inputs decide the same at every moment before it. These
properties hold decide() and carry() to that, and each part of the reuse condition to a case
that fails without it.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.builders import SERVER, T0, assistant, busy, session, snap, status_event, user
from tests.unit.test_derive_properties import assert_memo_agrees, events, now_st, snapshots
from tui.core import derive as derive_mod
from tui.core.decide import Link, SessionInputs, Verdict, carry, decide, later, row_of, sooner
from tui.core.derive import DeriveMemo, derive_server, inputs_of
from tui.core.journal import Journal
from tui.core.settings import Settings

S = Settings(grace=3.0)


def journal_of(evs) -> Journal:
    j = Journal()
    for e in evs:
        j.add(e)
    return j


@given(
    snapshots(),
    st.lists(events(), max_size=25),
    now_st,
    st.lists(st.floats(min_value=0, max_value=1, exclude_max=True), min_size=1, max_size=4),
    st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_a_decision_holds_until_its_valid_until(snapshot, evs, now, fractions, with_previous):
    """For any facts, decide() decides the same at every moment in [now, valid_until) (but for
    the `since` of a state no fact dates, the moment decided: Decided.undated), and carry()
    over a previous row gives the same row at every moment before the sooner of that and its
    own until: the memo may reuse them there. (A rule that reads the clock without saying when
    its verdict can change fails this.)"""
    facts = journal_of(evs).facts()
    previous = derive_server(snapshot, facts, now - 7.0, S) if with_previous else {}
    for sid, inputs in inputs_of(snapshot, facts).items():
        first = decide(inputs, now, S)
        assert first == decide(inputs, now, S)  # deterministic
        assert first.valid_until >= now
        old = previous.get((SERVER, sid))
        row, until = carry(first, old, now, inputs.link)
        assert until >= now
        assert first.row.since == now if first.undated else True
        horizon = min(first.valid_until, now + 600.0)
        for f in fractions:
            later = now + f * (horizon - now)
            if later >= first.valid_until:
                continue  # rounded up onto the boundary
            again = decide(inputs, later, S)
            assert again.undated == first.undated
            moment = {"since": later} if first.undated else {}
            assert again.row == dataclasses.replace(first.row, **moment), later - now
            if later < until:
                assert carry(again, old, later, inputs.link)[0] == row, (later - now, until)


links = st.sampled_from(
    [Link(), Link(False, "connection refused", T0 - 5.0), Link(False, None, None)]
)


@given(
    snapshots(),
    st.lists(events(), max_size=25),
    now_st,
    st.lists(st.floats(min_value=0, max_value=1, exclude_max=True), min_size=1, max_size=4),
    st.sampled_from([None, Link(), Link(False, "connection refused", T0 - 9.0)]),
)
@settings(max_examples=300, deadline=None)
def test_a_row_handed_back_as_its_previous_carries_itself(snapshot, evs, now, fractions, before):
    """carry(): a row handed back as the previous row of the decision it was carried over gives
    that row again, wherever the decision and the carry hold (the memo files a row with itself
    as its previous row, for the next call, which is handed it back). The link being down, it
    is not so (its last known state is the previous row's): the memo files it with the row it
    was carried over instead."""
    facts = journal_of(evs).facts()
    previous = {} if before is None else derive_server(snapshot, facts, now - 7.0, S, link=before)
    for sid, inputs in inputs_of(snapshot, facts).items():
        first = decide(inputs, now, S)
        row, until = carry(first, previous.get((SERVER, sid)), now, inputs.link)
        assert carry(first, row, now, inputs.link)[0] == row
        horizon = min(first.valid_until, until, now + 600.0)
        for f in fractions:
            later = now + f * (horizon - now)
            if later < first.valid_until and later < until:
                again = decide(inputs, later, S)
                assert carry(again, row, later, inputs.link)[0] == row, (later - now, until)


@given(snapshots(), st.lists(events(), max_size=25), now_st, links)
@settings(max_examples=200, deadline=None)
def test_carry_over_no_previous_row_is_the_decision_itself(snapshot, evs, now, link):
    """A session seen for the first time, its link up: carry() hands back the decided row
    itself (a state no server fact dates counted from this moment: it holds for this moment
    alone; given a decision of an earlier moment, counted from this one); the link down, the
    row is unknown, with the decided state as its last known."""
    facts = journal_of(evs).facts()
    for inputs in inputs_of(snapshot, facts, link).values():
        first = decide(inputs, now, S)
        decided = first.row
        row, until = carry(first, None, now, link)
        if not link.reachable:
            assert (row.state, row.settling, row.settled) == ("unknown", "unreachable", False)
            if decided.settling != "loading":
                assert row.last_known is not None
                assert row.last_known.state == decided.state
        elif first.undated:
            assert row is decided and (row.since, until) == (now, now)
            later = carry(first, None, now + 2.5, link)
            assert (later[0].since, later[1]) == (now + 2.5, now + 2.5)
        else:
            assert row is decided and until == math.inf


@given(snapshots(), st.lists(events(), max_size=25), st.data())
@settings(max_examples=300, deadline=None)
def test_the_gathered_claim_and_quiet_times_are_the_servers_last_word(snapshot, evs, data):
    """claim_at / quiet_at: when the server last said the session runs / does not run: its last
    status event, else the snapshot, by its status map and its active list."""
    listed = data.draw(st.frozensets(st.sampled_from(sorted(snapshot.sessions) or ["ses_0"])))
    snapshot = dataclasses.replace(snapshot, active=listed, started_at=T0 - 30.0)
    facts = journal_of(evs).facts()
    for sid, i in inputs_of(snapshot, facts).items():
        fact = facts.status.get(sid)
        if fact is None:
            runs = sid in snapshot.status or sid in snapshot.active
            at = snapshot.started_at
        else:
            runs, at = fact.status is not None, fact.at
        assert (i.claim_at, i.quiet_at) == ((at, None) if runs else (None, at)), sid


claim_times = st.one_of(st.none(), st.floats(min_value=T0 - 600, max_value=T0 + 60))


@given(snapshots(), st.lists(events(), max_size=25), now_st, links, claim_times, claim_times)
@settings(max_examples=400, deadline=None)
def test_a_row_that_reads_no_claim_is_the_same_whatever_the_claims(
    snapshot, evs, now, link, claim, quiet
):
    """Decided.reads_claims False: the row and its validity do not depend on claim_at and
    quiet_at, so the memo may reuse it under inputs differing only in them (a resync moves both
    for every session). A rule that compares either time and does not say so fails this."""
    facts = journal_of(evs).facts()
    for inputs in inputs_of(snapshot, facts, link).values():
        first = decide(inputs, now, S)
        if first.reads_claims:
            continue
        moved = decide(inputs._replace(claim_at=claim, quiet_at=quiet), now, S)
        assert (moved.row, moved.valid_until) == (first.row, first.valid_until), (claim, quiet)


@given(snapshots(), st.lists(events(), max_size=25), now_st, st.booleans())
@settings(max_examples=200, deadline=None)
def test_derive_is_decide_over_the_gathered_inputs(snapshot, evs, now, with_previous):
    """derive_server() is decide() of each session's gathered inputs with its previous row
    carried over the decision (row_of), nothing more."""
    facts = journal_of(evs).facts()
    previous = derive_server(snapshot, facts, now - 7.0, S) if with_previous else None
    rows = derive_server(snapshot, facts, now, S, previous=previous)
    decided = {
        (SERVER, sid): row_of(i, (previous or {}).get((SERVER, sid)), now, S)
        for sid, i in inputs_of(snapshot, facts).items()
    }
    assert rows == decided


@given(
    snapshots(),
    snapshots(),
    st.lists(
        st.one_of(events(), st.floats(min_value=-6, max_value=6), st.just("snapshot")), max_size=40
    ),
)
@settings(max_examples=200, deadline=None)
def test_a_memo_agrees_when_the_clock_goes_back_too(first, second, steps):
    """The memo's clock check: a clock stepped back (NTP, a replay seeking) decides again."""
    assert_memo_agrees(
        first, [*steps, 0.0], lambda step, _snapshot: second if step == "snapshot" else None
    )


def _counting(monkeypatch) -> list[str]:
    """decide() wrapped to record which sessions derive asks it about."""
    asked: list[str] = []
    real = derive_mod.decide

    def counted(inputs: SessionInputs, now: float, settings: Settings):
        asked.append(inputs.session.id)
        return real(inputs, now, settings)

    monkeypatch.setattr(derive_mod, "decide", counted)
    return asked


def _prompted():
    """One session whose prompt has no reply: unsettled ("starting") within the grace period,
    settled unknown after it, with an "N s ago" that ticks every second."""
    s = session("ses_a")
    return snap([s], messages={"ses_a": user("msg_1", "ses_a", created=T0)}, started_at=T0 + 20)


def test_the_same_inputs_inside_their_validity_are_not_decided_again(monkeypatch):
    asked = _counting(monkeypatch)
    snapshot, memo = _prompted(), DeriveMemo()
    rows = derive_server(snapshot, (), T0 + 10.2, S, memo=memo)
    rows = derive_server(snapshot, (), T0 + 10.2, S, previous=rows, memo=memo)
    asked.clear()
    again = derive_server(snapshot, (), T0 + 10.7, S, previous=rows, memo=memo)
    assert asked == [] and again[(SERVER, "ses_a")] is rows[(SERVER, "ses_a")]


def test_a_row_decided_before_its_previous_was_known_is_reused_with_it(monkeypatch):
    """The first call has no previous rows; the next passes what it returned: the memo files
    each row with itself as its previous row (carry makes it again), so nothing is decided
    again, and a row that changed is decided once, not again on the call after."""
    asked = _counting(monkeypatch)
    sessions = [session(f"ses_{i}") for i in range(3)]
    done = {s.id: assistant("msg_2", s.id, created=T0 - 9, completed=T0 - 8) for s in sessions}
    snapshot, memo = snap(sessions, messages=done, started_at=T0), DeriveMemo()
    rows = derive_server(snapshot, (), T0 + 1, S, memo=memo)
    asked.clear()
    again = derive_server(snapshot, (), T0 + 1, S, previous=rows, memo=memo)
    assert asked == [] and again == rows
    resynced = dataclasses.replace(snapshot, status={"ses_1": busy()})
    rows = derive_server(resynced, (), T0 + 1, S, previous=again, memo=memo)
    assert asked == ["ses_1"] and rows[(SERVER, "ses_1")].state == "busy"
    asked.clear()
    derive_server(dataclasses.replace(resynced), (), T0 + 1, S, previous=rows, memo=memo)
    assert asked == []


def test_a_clock_gone_back_decides_again(monkeypatch):
    """Without `at <= now` the row of T0+10 (settled, "10s ago") would be reused at T0+1, where
    the prompt is still within its grace period (unsettled, starting)."""
    asked = _counting(monkeypatch)
    snapshot, memo = _prompted(), DeriveMemo()
    late = derive_server(snapshot, (), T0 + 10.0, S, memo=memo)
    assert late[(SERVER, "ses_a")].settled
    asked.clear()
    early = derive_server(snapshot, (), T0 + 1.0, S, memo=memo)  # the same inputs
    assert asked == ["ses_a"]
    assert early == derive_server(snapshot, (), T0 + 1.0, S)
    assert early[(SERVER, "ses_a")].settling == "starting"


def test_past_its_validity_a_row_is_decided_again(monkeypatch):
    """Without `now < valid_until` the "10s ago" evidence would stay at 10s."""
    asked = _counting(monkeypatch)
    snapshot, memo = _prompted(), DeriveMemo()
    first = derive_server(snapshot, (), T0 + 10.2, S, memo=memo)
    assert memo.rows["ses_a"].valid_until == T0 + 11.0
    asked.clear()
    later = derive_server(snapshot, (), T0 + 11.0, S, previous=first, memo=memo)
    assert asked == ["ses_a"]
    assert "11s ago" in later[(SERVER, "ses_a")].evidence[0]


def test_rows_past_their_validity_are_decided_again_after_a_first_derive_of_many(monkeypatch):
    """A first derive files its many deadlines unsorted (made a heap when next read): the next
    derive on the same snapshot decides again exactly the rows whose validity ended, whatever
    the order they were filed in (latest first here: read as filed, none would be due)."""
    asked = _counting(monkeypatch)
    ids = [f"ses_{i:03}" for i in range(100)]
    prompts = {sid: user("msg_1", sid, created=T0 + i / 100) for i, sid in enumerate(ids)}
    snapshot = snap([session(sid) for sid in reversed(ids)], messages=prompts, started_at=T0 + 20)
    facts, memo = Journal().facts(), DeriveMemo()  # (the same fold: only the due looked at)
    first = derive_server(snapshot, facts, T0 + 10.5, S, memo=memo)
    due = [sid for sid in ids if memo.rows[sid].valid_until <= T0 + 10.8]
    assert due == ids[51:81]  # their grace periods ended: prompted 10 s ago, no reply
    asked.clear()
    later = derive_server(snapshot, facts, T0 + 10.8, S, previous=first, memo=memo)
    assert sorted(asked) == due and memo.changed is not None
    assert later == derive_server(snapshot, (), T0 + 10.8, S, previous=first)
    assert later[(SERVER, "ses_060")] != first[(SERVER, "ses_060")]


def test_inputs_that_differ_are_decided_again(monkeypatch):
    """Without the inputs' equality a new status entry (busy now) would keep the idle row."""
    asked = _counting(monkeypatch)
    s = session("ses_a")
    done = assistant("msg_2", "ses_a", created=T0 - 2, completed=T0 - 1, finish="stop")
    idle = snap([s], messages={"ses_a": done}, started_at=T0)
    memo = DeriveMemo()
    rows = derive_server(idle, (), T0 + 1, S, memo=memo)
    assert rows[(SERVER, "ses_a")].state == "idle"
    running = dataclasses.replace(idle, status={"ses_a": busy()})
    asked.clear()
    rows = derive_server(running, (), T0 + 1, S, previous=rows, memo=memo)
    assert asked == ["ses_a"] and rows[(SERVER, "ses_a")].state == "busy"


def test_a_resync_decides_again_only_the_rows_that_read_its_time(monkeypatch):
    """A resync moves every session's claim or quiet time to the new snapshot's. A finished
    run's idle row does not read them: it is reused. A stale busy row (the server said busy
    after the run ended) and an interrupted run (it said not busy after the run's last
    activity) do: they are decided again. Without Decided.reads_claims every row is."""
    asked = _counting(monkeypatch)
    done = {
        f"ses_{i}": assistant(
            "msg_2", f"ses_{i}", created=T0 - 60, completed=T0 - 50, finish="stop"
        )
        for i in range(3)
    }
    done["ses_2"] = assistant("msg_2", "ses_2", created=T0 - 60, tools=("running",))
    sessions = [session(sid) for sid in done]
    first = snap(sessions, messages=done, status={"ses_1": busy()}, started_at=T0 - 5)
    memo = DeriveMemo()
    rows = derive_server(first, (), T0, S, memo=memo)
    assert [(r.state, r.reason, r.stale) for r in rows.values()] == [
        ("idle", "completed", False),
        ("busy", None, True),
        ("unknown", "interrupted", False),
    ]
    asked.clear()
    later = dataclasses.replace(first, started_at=T0 - 1)
    again = derive_server(later, (), T0, S, previous=rows, memo=memo)
    assert sorted(asked) == ["ses_1", "ses_2"]
    assert again[(SERVER, "ses_0")] is rows[(SERVER, "ses_0")]
    assert again == derive_server(later, (), T0, S, previous=rows)


def test_an_equal_row_decided_again_is_the_previous_object(monkeypatch):
    """Deciding again what did not change returns the caller's previous row itself, so that
    consumers comparing by identity (transitions, the table) see nothing changed."""
    s = session("ses_a")
    snapshot = snap([s], status={"ses_a": busy()}, started_at=T0)
    memo = DeriveMemo()
    rows = derive_server(snapshot, (), T0 + 1, S, memo=memo)
    again = derive_server(
        dataclasses.replace(snapshot, status={"ses_a": busy()}),
        (),
        T0 + 1,
        S,
        previous=rows,
        memo=memo,
    )
    assert again[(SERVER, "ses_a")] is rows[(SERVER, "ses_a")]


def test_a_decision_is_carried_over_another_previous_row_not_decided_again(monkeypatch):
    """The memo keys on the facts: the same facts handed another previous row are carried over
    it (decide.carry), not decided again. A prompt just sent is not settled yet: seen first, it
    shows the run starting (busy); handed a previous row, idle, that row's state is kept."""
    asked = _counting(monkeypatch)
    snapshot = snap(
        [session("ses_a")], messages={"ses_a": user("msg_1", "ses_a", created=T0)}, started_at=T0
    )
    memo = DeriveMemo()
    first = derive_server(snapshot, (), T0 + 1, S, memo=memo)
    assert asked == ["ses_a"] and first[(SERVER, "ses_a")].state == "busy"
    done = assistant("msg_2", "ses_a", created=T0 - 9, completed=T0 - 8, finish="stop")
    idle = derive_server(snap([session("ses_a")], messages={"ses_a": done}), (), T0, S)
    assert idle[(SERVER, "ses_a")].state == "idle"
    asked.clear()
    kept = derive_server(snapshot, (), T0 + 1.5, S, previous=idle, memo=memo)
    assert asked == []  # carried, not decided again
    assert kept[(SERVER, "ses_a")].state == "idle"
    assert kept == derive_server(snapshot, (), T0 + 1.5, S, previous=idle)


def test_a_row_counted_from_first_sight_is_not_reused_later():
    """No server fact dates a busy session with no message: its time in state counts from the
    moment ocwatch first saw it, so that row read the clock and holds for that moment only;
    with the previous row passed, the count goes on from it and holds."""
    snapshot = snap([session("ses_a")], status={"ses_a": busy()}, started_at=T0)
    memo = DeriveMemo()
    first = derive_server(snapshot, (), T0 + 1, S, memo=memo)
    assert first[(SERVER, "ses_a")].since == T0 + 1
    assert memo.rows["ses_a"].valid_until == T0 + 1
    alone = derive_server(snapshot, (), T0 + 5, S, memo=memo)
    assert alone[(SERVER, "ses_a")].since == T0 + 5  # no previous row: counted afresh
    kept = derive_server(snapshot, (), T0 + 9, S, previous=alone, memo=memo)
    assert kept[(SERVER, "ses_a")].since == T0 + 5
    assert memo.rows["ses_a"].valid_until == math.inf


def test_a_changed_link_or_settings_decides_every_row_again(monkeypatch):
    asked = _counting(monkeypatch)
    snapshot = snap([session("ses_a")], status={"ses_a": busy()}, started_at=T0)
    memo = DeriveMemo()
    rows = derive_server(snapshot, (), T0 + 1, S, memo=memo)
    asked.clear()
    down = derive_server(
        snapshot,
        (),
        T0 + 1,
        S,
        previous=rows,
        memo=memo,
        link=Link(False, "connection refused", T0),
    )
    assert asked == ["ses_a"] and down[(SERVER, "ses_a")].settling == "unreachable"
    asked.clear()
    derive_server(
        snapshot,
        (),
        T0 + 1,
        Settings(grace=9.0),
        previous=down,
        memo=memo,
        link=Link(False, "connection refused", T0),
    )
    assert asked == ["ses_a"]


def test_a_row_valid_for_ever_is_decided_again_when_the_link_goes_down(monkeypatch):
    """A finished run's row holds for ever (valid_until inf) and reads no claim time: only the
    link among its inputs tells the memo that the server went away. (A reuse check that left
    the link out would keep showing it idle, completed, from an unreachable server.)"""
    asked = _counting(monkeypatch)
    done = assistant("msg_2", "ses_a", created=T0 - 9, completed=T0 - 8, finish="stop")
    snapshot = snap([session("ses_a")], messages={"ses_a": done}, started_at=T0)
    memo = DeriveMemo()
    rows = derive_server(snapshot, (), T0 + 1, S, memo=memo)
    rows = derive_server(snapshot, (), T0 + 2, S, previous=rows, memo=memo)
    assert rows[(SERVER, "ses_a")].reason == "completed"
    asked.clear()
    down = derive_server(
        snapshot,
        (),
        T0 + 3,
        S,
        previous=rows,
        memo=memo,
        link=Link(False, "connection refused", T0 + 2),
    )
    row = down[(SERVER, "ses_a")]
    assert asked == ["ses_a"]
    assert (row.state, row.settling) == ("unknown", "unreachable")


def test_a_validity_of_inf_is_kept_out_of_the_memos_deadlines():
    """A busy row dated by its prompt holds until its inputs change: no deadline to watch."""
    snapshot = snap(
        [session("ses_a")],
        status={"ses_a": busy()},
        started_at=T0,
        messages={"ses_a": user("msg_1", "ses_a", created=T0 - 5)},
    )
    memo = DeriveMemo()
    derive_server(snapshot, (), T0 + 1, S, memo=memo)
    assert memo.rows["ses_a"].valid_until == math.inf and memo.deadlines == []


def test_a_busy_row_stays_its_object_as_events_arrive_for_others():
    """The warm path: an event for one session leaves every other row the same object."""
    sessions = [session(f"ses_{i}") for i in range(3)]
    snapshot = snap(sessions, status={s.id: busy() for s in sessions}, started_at=T0)
    j, memo = Journal(), DeriveMemo()
    rows = derive_server(snapshot, j.facts(), T0 + 1, S, memo=memo)
    j.add(status_event("ses_1", "idle", T0 + 1))
    after = derive_server(snapshot, j.facts(), T0 + 1, S, previous=rows, memo=memo)
    assert memo.changed == [(SERVER, "ses_1")]
    assert after[(SERVER, "ses_0")] is rows[(SERVER, "ses_0")]
    assert after[(SERVER, "ses_2")] is rows[(SERVER, "ses_2")]


def test_decide_reads_no_clock_and_imports_nothing_impure():
    """decide.py is the decision alone: no clock, no I/O, no GC policy, no cache."""
    tree = ast.parse(Path(derive_mod.__file__).with_name("decide.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            imported.add((node.module or "").split(".")[0])
    assert imported <= {"__future__", "math", "dataclasses", "typing"}, imported


def test_a_request_asked_again_under_its_id_with_other_options_is_the_new_one():
    """Pending compares by id and summary: an equal row decided again must still carry the
    request as the server sends it now (the dialog offers and answers with its options)."""
    from tests.builders import question
    from tui.core.models import QuestionRequest

    s = session("ses_a")
    first = question("que_1", "ses_a", "Which database?")
    snapshot = snap([s], status={"ses_a": busy()}, questions=[first], started_at=T0)
    memo = DeriveMemo()
    rows = derive_server(snapshot, (), T0 + 1, S, memo=memo)
    again = QuestionRequest.parse(
        {
            "id": "que_1",
            "sessionID": "ses_a",
            "questions": [
                {
                    "question": "Which database?",
                    "header": "DB",
                    "options": [
                        {"label": "MySQL", "description": ""},
                        {"label": "DuckDB", "description": ""},
                    ],
                }
            ],
        }
    )
    assert again.id == first.id and again != first
    newer = dataclasses.replace(snapshot, questions={"que_1": again})
    rows = derive_server(newer, (), T0 + 1, S, previous=rows, memo=memo)
    assert rows[(SERVER, "ses_a")].pending[0].request is again
    assert rows == derive_server(newer, (), T0 + 1, S, previous=rows)


def test_verdict_of_makes_the_verdict_its_fields_say():
    """The rules build their Verdicts with Verdict.of (the NamedTuple's own __new__ takes
    1.4-1.8x the time, per session): the same record, field for field, defaults included. A
    field added to the Verdict and not to `of`, or in another order, fails here."""
    assert list(inspect.signature(Verdict.of).parameters) == list(Verdict.__annotations__)
    given_all = ("busy", None, True, ("e",), False, 1.0, "completed", "confirming", 2.0, True)
    assert Verdict.of(*given_all) == Verdict(*given_all)
    assert type(Verdict.of(*given_all)) is Verdict
    least = ("idle", "completed", False, (), True, None)
    assert Verdict.of(*least) == Verdict(*least)
    assert Verdict.of(*least, until=5.0, reads_claims=True) == Verdict(
        *least, until=5.0, reads_claims=True
    )


@given(st.floats(allow_nan=True), st.floats(allow_nan=True))
@example(math.nan, 1.0)
@example(1.0, math.nan)
@example(0.0, -0.0)
@example(float("2"), float("2"))  # a tie of two objects (literals would be one constant)
def test_sooner_and_later_are_min_and_max(a, b):
    """The hot path's two-argument min and max give the very object the builtins give (NaN and
    ties included: the first argument on a tie, as the builtins)."""
    assert sooner(a, b) is min(a, b)
    assert later(a, b) is max(a, b)
