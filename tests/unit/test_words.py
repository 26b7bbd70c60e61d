"""The states' words and glyphs are written once (tui.core.words): every state and reason the
View can give has a glyph and a word, and each output's spelling of a row is held here."""

from __future__ import annotations

from typing import get_args

import pytest

from tests.app.views import row
from tui.core import words
from tui.core.view import REASON_STATE, STATE_REASONS, LastKnown, Reason, SessionRow, State


def test_every_state_and_reason_has_a_glyph_and_a_word() -> None:
    # a state or reason added to view.State / view.Reason without its look fails here
    assert tuple(words.STATE_LOOK) == get_args(State)
    assert tuple(words.REASON_LOOK) == get_args(Reason)
    for state, look in words.STATE_LOOK.items():
        assert look.glyph.strip() and look.word == state and look.meaning and look.variable
    for reason, look in words.REASON_LOOK.items():
        assert look.glyph.strip() and look.word == REASON_STATE[reason] and look.meaning
    assert words.STALE_LOOK.glyph.strip() and words.STALE_WORD == "STALE"


def test_glyphs_tell_states_apart_without_colour() -> None:
    states = list(words.STATE_GLYPH.values())
    assert len(set(states)) == len(states)
    assert words.STALE_GLYPH not in states
    # the idle rows differ by glyph: each way a run ended, and never having run
    idle = [words.STATE_GLYPH["idle"]]
    idle += [g for r, g in words.REASON_GLYPH.items() if REASON_STATE[r] == "idle"]
    assert len(set(idle)) == len(idle)


def _every_row() -> list[SessionRow]:
    out = []
    for state, reason in STATE_REASONS:
        out.append(row("s", "t", state, reason=reason or None))
    out.append(row("s", "t", "busy", stale=True, ended="error"))
    return out


@pytest.mark.parametrize("r", _every_row(), ids=lambda r: f"{r.state}-{r.reason}-{r.stale}")
def test_every_form_names_the_state(r: SessionRow) -> None:
    for form in (words.line, words.waited, words.drifted):
        said = form(r)
        assert r.state in said and (r.reason is None or r.reason in said)
    assert words.label(r) == f"{words.glyph(r)} {r.state}"  # (the glyph says the reason)
    assert words.metric(r, "none") == ("stale" if r.stale else r.state)
    assert words.metric(None, "gone") == "gone"


STALE_ERROR = row("s", "t", "busy", stale=True, ended="error")
DONE = row("s", "t", "idle", reason="completed")
NEVER = row("s", "t", "idle")
CONFIRMING = row("s", "t", "busy", settled=False, settling="confirming")


@pytest.mark.parametrize(
    ("form", "r", "said"),
    [
        (words.label, DONE, "✓ idle"),
        (words.label, NEVER, "○ idle"),
        (words.label, STALE_ERROR, "● busy"),
        (words.line, DONE, "idle (completed)"),
        (words.line, STALE_ERROR, "busy STALE"),
        (words.waited, DONE, "idle (completed)"),
        (words.waited, NEVER, "idle; it has never run"),
        (
            words.waited,
            STALE_ERROR,
            "busy; run error, but the server still reports busy (stale)",
        ),
        (words.drifted, DONE, "idle/completed"),
        (words.drifted, STALE_ERROR, "busy (stale)"),
        (words.drifted, CONFIRMING, "busy (confirming)"),
        (words.metric, STALE_ERROR, "stale"),
    ],
)
def test_each_output_spells_a_row_as_before(form, r: SessionRow, said: str) -> None:
    assert (form(r, "none") if form is words.metric else form(r)) == said


def test_what_an_unreachable_servers_row_was() -> None:
    assert LastKnown("busy", None, True).said() == "busy, stale"
    assert LastKnown("idle", "completed", False).said() == "idle (completed)"
    assert LastKnown("input", None, False).said() == "input"
