"""Replay event streams recorded from a real `opencode serve` 1.18.33 through parser, journal
and derive: the stream alone (snapshot taken before the run) must reach the true final state, and
the intermediate states must be right too."""

from __future__ import annotations

import pytest

from tests.recorded import frames, manifest
from tui.core.derive import derive_server
from tui.core.events import EventParser
from tui.core.journal import Journal
from tui.core.settings import Settings
from tui.core.snapshot import Snapshot

MANIFEST = manifest()
S = Settings(grace=3.0)


def empty_snapshot() -> Snapshot:
    return Snapshot(
        server="real",
        started_at=0.0,
        sessions={},
        status={},
        permissions={},
        questions={},
        messages={},
    )


def replay(name: str):
    """Yield (frame payload type, rows) after each frame, times spaced 10 ms apart."""
    parser, journal = EventParser(), Journal()
    snap = empty_snapshot()
    t = 1_000.0
    for line in frames(name):
        t += 0.01
        got = parser.parse(line, t)
        if got.event is not None and got.control is None:
            journal.add(got.event)
        yield got, derive_server(snap, journal.entries(), t, S), t
    assert parser.skipped == 0


def final(name: str, after: float = 10.0):
    """Rows after the whole stream, derived `after` seconds later (past the grace)."""
    *_, (_got, _rows, t) = replay(name)
    parser, journal = EventParser(), Journal()
    for line in frames(name):
        p = parser.parse(line, t)
        if p.event is not None and p.control is None:
            journal.add(p.event)
    return derive_server(empty_snapshot(), journal.entries(), t + after, S)


def main_row(name: str, rows):
    sid = next(k for k, v in MANIFEST[name]["sessions"].items() if v == "main")
    return rows[("real", sid)]


@pytest.mark.parametrize(
    ("name", "state", "reason"),
    [
        ("completed", "idle", "completed"),
        ("failed", "idle", "error"),
        ("aborted", "idle", "aborted"),
        ("permission_once", "idle", "completed"),
        ("permission_reject", "idle", "aborted"),
        ("question_replied", "idle", "completed"),
        ("question_rejected", "idle", "aborted"),
        ("second_folder", "idle", "completed"),
    ],
)
def test_stream_alone_reaches_the_true_final_state(name, state, reason):
    r = main_row(name, final(name))
    assert (r.state, r.reason, r.settled, r.stale) == (state, reason, True, False)


@pytest.mark.parametrize(
    "name", ["permission_once", "permission_reject", "question_replied", "question_rejected"]
)
def test_input_while_asked_and_never_completed_early(name):
    sid = next(k for k, v in MANIFEST[name]["sessions"].items() if v == "main")
    seen_input = False
    asked = False
    for got, rows, _t in replay(name):
        ev = got.event
        r = rows.get(("real", sid))
        if ev is not None and ev.type in ("permission.asked", "question.asked"):
            asked = True
        if ev is not None and ev.type in (
            "permission.replied",
            "question.replied",
            "question.rejected",
        ):
            assert seen_input
            asked = False
        if asked:
            assert r is not None and r.state == "input"
            seen_input = True
    assert seen_input


@pytest.mark.parametrize(
    "name", ["completed", "failed", "aborted", "permission_once", "question_replied"]
)
def test_no_settled_outcome_before_the_run_really_ended(name):
    """Like `wait`: no frame before the final assistant message is persisted may give a settled
    idle row with a different outcome than the true one."""
    want = main_row(name, final(name))
    sid = want.id
    for _got, rows, _t in replay(name):
        r = rows.get(("real", sid))
        if r is None or not r.settled or r.state != "idle":
            continue
        if r.reason is None:
            continue  # a fresh session before its first prompt
        assert r.reason == want.reason


def test_retry_is_seen_while_the_server_retries():
    states = {r.state for _g, rows, _t in replay("retry") for r in rows.values()}
    assert "retry" in states


def test_subagent_child_has_parent_and_parent_stays_busy_while_child_runs():
    name = "subagent"
    roles = MANIFEST[name]["sessions"]
    parent = next(k for k, v in roles.items() if v in ("main", "parent"))
    child_busy_parent_ok = False
    for _got, rows, _t in replay(name):
        kids = [r for r in rows.values() if r.parent_id == parent]
        p = rows.get(("real", parent))
        if kids and p is not None and any(k.state == "busy" for k in kids):
            assert p.state in ("busy", "input") and not p.stale
            child_busy_parent_ok = True
    assert child_busy_parent_ok


def test_a_childs_permission_rolls_up_to_the_parent():
    roles = MANIFEST["subagent_permission"]["sessions"]
    parent = next(k for k, v in roles.items() if v == "main")
    child = next(k for k, v in roles.items() if v == "child")
    rolled = False
    for _got, rows, _t in replay("subagent_permission"):
        p, c = rows.get(("real", parent)), rows.get(("real", child))
        if c is not None and c.state == "input":
            assert p is not None and p.state == "input"
            assert p.pending[0].session_id == child
            rolled = True
    assert rolled
