"""How a settled row ended is decided once (tui.core.outcome) and read by `wait` (exit code),
the alerts (kind) and the metrics (`ocwatch_runs_total{outcome}` label), each by a table."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from tests.app.views import row
from tui.cli.wait import EXIT_OF, exit_code_for
from tui.core.alerts import KIND_OF, _kind, alerts_for
from tui.core.outcome import Outcome, outcome
from tui.core.view import REASONS, STATES, Transition
from tui.export.metrics import LABEL_OF, OUTCOMES, run_label

Oc = Outcome

# (state, reason, stale, ended) -> outcome, exit code, alert kind, metric label: every settled
# row a derive can give (a stale row is busy; its reason is None, `ended` says how it ended).
CASES = [
    ("idle", "completed", False, None, Oc.COMPLETED, 0, "completed", "completed"),
    ("idle", "aborted", False, None, Oc.ABORTED, 3, "aborted", "aborted"),
    ("idle", "error", False, None, Oc.ERROR, 1, "error", "error"),
    ("idle", None, False, None, Oc.NEVER_RAN, 5, None, "idle"),
    ("unknown", "interrupted", False, None, Oc.INTERRUPTED, 5, "unknown", "interrupted"),
    ("unknown", None, False, None, Oc.UNKNOWN, 5, "unknown", "unknown"),
    ("input", None, False, None, Oc.INPUT, 4, "input", "input"),
    ("busy", None, True, "completed", Oc.STALE_COMPLETED, 0, "stale", "completed"),
    ("busy", None, True, "aborted", Oc.STALE_ABORTED, 3, "stale", "aborted"),
    # the case the three disagreed on: the run errored, the server still says busy. An error.
    ("busy", None, True, "error", Oc.ERROR, 1, "error", "error"),
    ("busy", None, True, None, Oc.STALE, 0, "stale", "stale"),
    ("busy", None, False, None, None, None, None, "busy"),
    ("retry", None, False, None, None, None, None, "retry"),
]


@pytest.mark.parametrize(
    ("state", "reason", "stale", "ended", "expected", "code", "kind", "label"), CASES
)
def test_each_settled_row_has_one_outcome_and_each_consumer_reads_it(
    state, reason, stale, ended, expected, code, kind, label
):
    r = row("s1", "t", state, reason=reason, stale=stale, ended=ended)
    assert outcome(r) == expected
    assert exit_code_for(r) == code
    assert _kind(r) == kind
    assert run_label(r) == label
    # not settled: no outcome yet, whatever the row shows
    assert outcome(replace(r, settled=False, settling="finishing")) is None
    assert exit_code_for(replace(r, settled=False, settling="finishing")) is None
    assert _kind(replace(r, settled=False, settling="finishing")) is None


@pytest.mark.parametrize(
    ("state", "reason", "stale", "ended", "settled"),
    list(
        itertools.product(STATES, (None, *REASONS), (False, True), (None, *REASONS), (True, False))
    ),
)
def test_every_combination_has_an_outcome_each_consumer_can_map(
    state, reason, stale, ended, settled
):
    r = row("s1", "t", state, reason=reason, stale=stale, ended=ended, settled=settled)
    got = outcome(r)
    runs_on = state in ("busy", "retry") and not stale
    assert (got is None) == (not settled or runs_on)
    if got is not None:
        assert got in EXIT_OF and got in KIND_OF and got in LABEL_OF
        # a label the exporter serves (waiting for input is a run going on: no run ended)
        assert got is Oc.INPUT or LABEL_OF[got] in OUTCOMES
    if stale and settled and state != "input":
        # a stale row ended as its messages show; an errored one is an error
        assert got == {
            "completed": Oc.STALE_COMPLETED,
            "aborted": Oc.STALE_ABORTED,
            "error": Oc.ERROR,
        }.get(ended or "", Oc.STALE)


def test_every_outcome_is_in_every_table():
    assert set(EXIT_OF) == set(KIND_OF) == set(LABEL_OF) == set(Outcome)


def test_a_stale_errored_run_alerts_once_as_an_error_saying_the_server_still_reports_busy():
    busy = row("s1", "t", "busy")
    stale = row("s1", "t", "busy", stale=True, ended="error", error="APIError: boom", since=-5)
    idle = row("s1", "t", "idle", reason="error", error="APIError: boom", since=-5)
    (alert,) = alerts_for([Transition(busy.key, busy, stale, 0.0)])
    assert alert.kind == "error"
    assert alert.text == "error: APIError: boom (the server still reports busy)"
    # the server catching up (idle error) is the same news: no second alert
    assert alerts_for([Transition(busy.key, stale, idle, 1.0)]) == []
