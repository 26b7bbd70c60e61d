"""The stream path's shortcuts give what the long way gives (issue 42 item 2).

At a firehose's rates the parser, the journal and the reflector take shortcuts for the frames
that come most: a busy status repeated, a journal overflowing frame after frame. Each must leave
the very facts and link state the long way leaves.
"""

from __future__ import annotations

import json

import pytest

from tests.builders import T0, entries, status_event
from tests.unit.test_transitions import Clock, frame
from tui.core import text
from tui.core.client import OcwatchError
from tui.core.journal import Journal, fold
from tui.core.models import SessionStatus
from tui.core.monitor import ServerMonitor
from tui.core.settings import Settings


def test_a_busy_status_folds_as_the_one_parsed() -> None:
    journal = Journal()
    journal.add(status_event("ses_a", "busy", T0))
    journal.add(status_event("ses_b", "busy", T0, attempt=None))  # (not the bare busy)
    facts = journal.facts()
    for sid in ("ses_a", "ses_b"):
        fact = facts.status[sid]
        assert fact.status == SessionStatus.parse({"type": "busy"}) and fact.at == T0
    assert fact.status is not None and fact.status.type == "busy"
    assert not facts.retrying


def test_a_busy_status_after_a_retry_keeps_the_retry_until_output() -> None:
    facts = fold(
        entries(
            status_event("ses_a", "retry", T0, attempt=2, message="rate limited", next=T0 * 1000),
            status_event("ses_a", "busy", T0 + 1),
        )
    )
    assert facts.retrying["ses_a"].attempt == 2
    assert facts.status["ses_a"].status == SessionStatus.parse({"type": "busy"})


def test_an_overflowing_journal_moves_the_vouch_to_its_last_frame() -> None:
    """While the journal overflows, each frame moves the stream's vouch on to its own time (a
    snapshot begun before it is not vouched for): the link state read afterwards says so, and a
    step after it starts from there."""
    clock = Clock(T0)
    mon = ServerMonitor("http://test", settings=Settings(journal_limit=5), clock=clock)
    mon.stream_opened()
    assert mon.state.vouch_since == T0
    for i in range(12):
        clock.t = T0 + 1 + i
        mon.on_data(frame("session.status", {"sessionID": "ses_0", "status": {"type": "busy"}}))
    assert mon.journal.overflowed
    assert mon.state.vouch_since == T0 + 12
    clock.t = T0 + 13
    mon.on_data(frame("session.status", {"sessionID": "ses_0", "status": {"type": "busy"}}))
    mon.stream_down(OcwatchError("gone"))  # a step on the state as it is after that frame
    assert mon.state.vouch_since is None and mon.state.gap_since == T0 + 13
    mon.stream_opened()
    clock.t = T0 + 14
    mon.on_data(frame("session.status", {"sessionID": "ses_0", "status": {"type": "busy"}}))
    assert mon.state.vouch_since == T0 + 14  # (still overflowed: no snapshot cut it)


@pytest.mark.parametrize(
    "doc",
    ['{"a": 1}', ' {"a": 1}\n', "[1] [2]", '{"a": 1}x', "", "  ", '{"a":', "nul", '"x"', "1e400"],
)
def test_text_loads_reads_and_refuses_as_json_does(doc: str) -> None:
    """text.loads reads a frame with the decoder's scanner alone when the frame is one value and
    nothing else; whatever else it is, it is read, or refused with the same words, as json's
    own decode() does."""
    try:
        want: object = json.loads(doc)
    except ValueError as exc:
        with pytest.raises(ValueError) as got:
            text.loads(doc)
        assert str(got.value) == str(exc)
    else:
        assert text.loads(doc) == want
