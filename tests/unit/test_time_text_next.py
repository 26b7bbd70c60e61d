"""When a time cell's text next changes (the table looks again at a row only then): the text
stays the same up to that second and reads differently at it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.app.format import age, age_next, duration, duration_next

seconds = st.one_of(st.integers(0, 200), st.integers(0, 400_000), st.integers(0, 10**8))


@given(seconds, st.floats(0, 0.999))
@settings(max_examples=500)
def test_duration_reads_the_same_until_its_next_change(s: int, frac: float) -> None:
    t = s + frac
    nxt = duration_next(t)
    assert nxt > t
    assert duration(nxt - 0.001) == duration(t)  # the last moment before it
    assert duration(nxt) != duration(t)


@given(seconds, st.floats(0, 0.999))
@settings(max_examples=500)
def test_age_reads_the_same_until_its_next_change(s: int, frac: float) -> None:
    t, now = 1_000.0, 1_000.0 + s + frac
    nxt = age_next(now - t)
    assert t + nxt > now
    assert age(t, t + nxt - 0.001) == age(t, now)
    assert age(t, t + nxt) != age(t, now)


def test_times_before_the_event_read_as_its_first_text() -> None:
    """A clock slightly behind the server's: negative ages read `now` / `0s`, and change at the
    same moment as a zero age."""
    assert age_next(-3.0) == age_next(0.0)
    assert duration_next(-3.0) == duration_next(0.0) == 1


def test_one_time_text_for_the_evidence_and_the_table() -> None:
    """view.ago is the evidence's text (its duration, `ago`) and, coarse, the table's age."""
    from tui.core.view import ago

    now = 10_000_000.0
    cases = {
        0: ("0s ago", "0s ago"),
        59: ("59s ago", "59s ago"),
        125: ("2m05s ago", "2m ago"),
        3725: ("1h02m ago", "1h ago"),
        90_061: ("1d01h ago", "1d ago"),
    }
    for s, (precise, coarse) in cases.items():
        assert ago(now, now - s) == precise == duration(s) + " ago"
        assert ago(now, now - s, coarse=True) == coarse
        assert age(now - s, now) == ("now" if s < 5 else coarse)
    assert ago(now, now + 30) == "0s ago"  # a time after now: not negative
