"""The exit codes of the `ocwatch` commands, in one place (README.md#ocwatch-wait-exit-codes).

The members are listed worst first: `wait --all` exits with the worst code of its sessions, in
this order (tests/unit/test_exit_codes.py holds the README's table and order to it). A newcomer
adding a code adds it here, in its rank, and a row to that table.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class ExitCode(IntEnum):
    """An exit code; iteration gives the members worst first."""

    USAGE = 2  # usage error, unknown session, or a server that cannot be read
    TIMEOUT = 124  # --timeout passed before the session settled
    ERROR = 1  # the run ended with an error
    UNKNOWN = 5  # unknown: interrupted, a prompt with no reply, a session that never ran
    ABORTED = 3  # aborted
    INPUT = 4  # waiting for user input
    COMPLETED = 0  # completed
    OK = 0  # (alias of COMPLETED) a command other than wait did what was asked


def worst(codes: Iterable[int]) -> int:
    """The worst of several exit codes, by ExitCode's order (USAGE when there are none; a code
    that is no member counts as the worst)."""
    rank = {c.value: i for i, c in enumerate(ExitCode)}
    return min(codes, key=lambda c: rank.get(c, 0), default=ExitCode.USAGE)
