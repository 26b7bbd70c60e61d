"""The words and glyphs of the states, written once: every screen of the dashboard, every CLI
line (`status`, `watch`, `wait`, tmux), the metrics' label values and the drift notes read them
here.

A state has a glyph (so that nothing depends on colour alone) and a word (the state's own name);
an idle or unknown row's reason has a glyph of its own that replaces the state's; the stale flag
of a busy row whose run visibly ended has its own. A new state or reason is added to `State` or
`Reason` (view.py) and to the tables below: tests/unit/test_words.py fails if one lacks a word
or a glyph. The row's forms below (`label`, `line`, `waited`, `drifted`, `metric`, `was`) are
each one output's spelling: each is held byte for byte by that output's tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (view.py reads `was` from here: the types only, no cycle)
    from .view import Reason, SessionRow, State


@dataclass(frozen=True, slots=True)
class Look:
    """How a state, an idle reason or the stale flag is shown, on every screen: a glyph (so
    nothing depends on colour alone), a word, the dashboard's theme variable that colours it
    (without `$`), what it means (the help's legend), and the colour of Textual's colour system
    that variable takes in a theme that does not set it (e.g. Textual's own themes)."""

    glyph: str
    word: str
    variable: str
    meaning: str
    fallback: str


#: The one presentation table: each state, in the View's order (view.STATES)...
STATE_LOOK: dict[State, Look] = {
    "busy": Look("●", "busy", "state-busy", "running (the server says busy)", "primary"),
    "retry": Look("↻", "retry", "state-retry", "the provider failed; retrying", "warning"),
    "input": Look(
        "?", "input", "state-input", "waiting for you: a permission or a question", "accent"
    ),
    "idle": Look("○", "idle", "state-idle", "idle, nothing ran yet", "success"),
    "unknown": Look(
        "◌",
        "unknown",
        "state-unknown",
        "the facts contradict idle (e.g. interrupted)",
        "foreground-muted",
    ),
}
#: ...each reason an idle or unknown row gives (its glyph replaces the state's)...
REASON_LOOK: dict[Reason, Look] = {
    "completed": Look("✓", "idle", "state-idle", "idle, the run completed", "success"),
    "aborted": Look("⊘", "idle", "state-idle", "idle, the run was aborted", "success"),
    "error": Look("✗", "idle", "state-error", "idle, the run failed (an error)", "error"),
    "interrupted": Look(
        "◌",
        "unknown",
        "state-unknown",
        "the run was cut off (server restart or crash?)",
        "foreground-muted",
    ),
}
#: ...and the stale flag of a busy row whose run visibly ended.
STALE_LOOK = Look(
    "⚠", "STALE", "state-stale", "the server says busy, but the run visibly ended", "secondary"
)

STATE_GLYPH: dict[State, str] = {state: look.glyph for state, look in STATE_LOOK.items()}
REASON_GLYPH: dict[Reason, str] = {reason: look.glyph for reason, look in REASON_LOOK.items()}
STALE_GLYPH = STALE_LOOK.glyph
STALE_WORD = STALE_LOOK.word
#: A server that cannot be read (the dashboard's header, the tmux line's `✗ 1 down`)
DOWN_GLYPH = "✗"


def glyph(row: SessionRow) -> str:
    """The glyph for a row: the state's, or the reason's for idle and unknown rows."""
    if row.state in ("idle", "unknown") and row.reason in REASON_GLYPH:
        return REASON_GLYPH[row.reason]
    return STATE_GLYPH.get(row.state, "·")


def label(row: SessionRow) -> str:
    """Glyph and word, e.g. `● busy`, `✓ idle`, `✗ idle`, `◌ unknown` (the dashboard)."""
    return f"{glyph(row)} {row.state}"


def described(state: State, reason: Reason | None) -> str:
    """The state and its reason: `busy`, `idle (completed)`."""
    return f"{state} ({reason})" if reason else state


def was(state: State, reason: Reason | None, stale: bool) -> str:
    """What an unreachable server's row last was (view.LastKnown.said): `busy`, `busy, stale`,
    `idle (completed)`."""
    return f"{state}, stale" if stale else described(state, reason)


def line(row: SessionRow) -> str:
    """A row's state on one CLI line (`status`'s table, `watch`): `idle (completed)`,
    `busy STALE`."""
    word = described(row.state, row.reason)
    return f"{word} {STALE_WORD}" if row.stale else word


def waited(row: SessionRow) -> str:
    """The state `wait` ends on, with how a stale run ended or that an idle one never ran."""
    word = described(row.state, row.reason)
    if row.stale:
        word += f"; run {row.ended or 'ended'}, but the server still reports busy (stale)"
    elif row.state == "idle" and row.reason is None:
        word += "; it has never run"
    return word


def drifted(row: SessionRow) -> str:
    """A row's state in a drift note (ServerInfo.drift_examples): `idle/completed (stale)`,
    with what an unsettled row waits for (`(confirming)`)."""
    return (
        row.state
        + (f"/{row.reason}" if row.reason else "")
        + (" (stale)" if row.stale else "")
        + (f" ({row.settling})" if row.settling else "")
    )


def metric(row: SessionRow | None, missing: str) -> str:
    """A transition's end as a metric label value: the state, `stale` for a busy row flagged
    stale, `missing` (`none` before first sight, `gone` after deletion)."""
    if row is None:
        return missing
    return "stale" if row.stale else row.state


#: Levels of nesting (sub-sessions) shown as indentation at most; deeper ones say their depth
INDENT_MAX = 8


def indent(depth: int) -> str:
    """The indentation of a title `depth` levels down: two cells a level, at most INDENT_MAX
    levels; past them the depth is said (`⋯12 `). A chain of thousands of sub-sessions
    indented titles by thousands of cells (the status table's time went quadratic)."""
    if depth <= INDENT_MAX:
        return "  " * depth
    return "  " * INDENT_MAX + f"⋯{depth} "
