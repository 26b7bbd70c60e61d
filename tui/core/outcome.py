"""How a settled row ended: decided here once, read by `wait` (its exit code), the alerts (their
kind) and the metrics (`ocwatch_runs_total{outcome}`), each through its own small table.

A stale row (the server still reports busy although the run visibly ended: docs/STATES.md)
ended as its messages show (`row.ended`). An errored run is an error, stale or not: the failure
is what needs someone, and `wait`, the metrics and the alerts all say so. A stale run that
completed or was aborted keeps its own members, so that `wait` and the metrics can say how it
ended and the alerts can say that the server still calls it busy.
"""

from __future__ import annotations

from enum import StrEnum

from .view import SessionRow


class Outcome(StrEnum):
    """How a settled row that is no longer a plain run under way ended (or what it waits for)."""

    COMPLETED = "completed"  # idle completed
    ABORTED = "aborted"  # idle aborted (also a refused permission or dismissed question)
    ERROR = "error"  # idle error, or a stale row whose run ended with an error
    INTERRUPTED = "interrupted"  # unknown interrupted: the run was cut off (a server restart)
    UNKNOWN = "unknown"  # unknown: the evidence contradicts idle (a prompt with no reply)
    NEVER_RAN = "never-ran"  # idle with no reason: the session has never run
    INPUT = "input"  # waiting for a permission or a question
    STALE_COMPLETED = "stale-completed"  # busy STALE, the run visibly completed
    STALE_ABORTED = "stale-aborted"  # busy STALE, the run visibly aborted
    STALE = "stale"  # busy STALE, how the run ended not known


_IDLE = {"completed": Outcome.COMPLETED, "aborted": Outcome.ABORTED, "error": Outcome.ERROR}
_STALE = {
    "completed": Outcome.STALE_COMPLETED,
    "aborted": Outcome.STALE_ABORTED,
    "error": Outcome.ERROR,
}


def outcome(row: SessionRow) -> Outcome | None:
    """The row's outcome; None while it has none: not settled, or busy or retrying (not stale)."""
    if not row.settled:
        return None
    if row.state == "input":
        return Outcome.INPUT
    if row.stale:
        return _STALE.get(row.ended or "", Outcome.STALE)
    if row.state == "idle":
        if row.reason is None:
            return Outcome.NEVER_RAN
        return _IDLE.get(row.reason, Outcome.INTERRUPTED)
    if row.state == "unknown":
        return Outcome.INTERRUPTED if row.reason == "interrupted" else Outcome.UNKNOWN
    return None
