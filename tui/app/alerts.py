"""Attention in the dashboard: alerts on transitions, and "unread" marks on rows that changed
while the user looked elsewhere.

Both read the difference between two consecutive Views (`view.transitions`), as the source
computed it once for that View (`ViewSource.last_changes`), never a status map of their own.
Alerts go through the core `Alerter` (one per real transition, rate limited); the sinks here
ring the bell through the app, write OSC 9 through its driver, and run notify-send.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tui.core.alerts import Alert, Alerter, terminal_sinks
from tui.core.config import AlertConfig
from tui.core.view import Changes

Key = tuple[str, str]
Sink = Callable[[Alert], None]


def app_sinks(
    config: AlertConfig,
    bell: Callable[[], None],
    write: Callable[[str], None],
    focused: Callable[[], bool] = lambda: False,
    inside_tmux: bool | None = None,
) -> list[Sink]:
    """The configured sinks: `bell()` rings, `write(sequence)` reaches the terminal (OSC 9,
    777, 99; through tmux when inside it), notify-send runs where it exists. With
    `unfocused_only`, none of them fires while `focused()`."""
    sinks = terminal_sinks(config, write, bell, inside_tmux)
    if not config.unfocused_only:
        return sinks

    def when_unfocused(sink: Sink) -> Sink:
        return lambda alert: None if focused() else sink(alert)

    return [when_unfocused(s) for s in sinks]


class Attention:
    """Feeds each new View's transitions to the alerter and keeps the unread marks."""

    def __init__(
        self, config: AlertConfig, sinks: list[Sink], clock: Callable[[], float] = time.monotonic
    ) -> None:
        """`sinks`: the terminal's (app_sinks) and any off-terminal delivery (a Deliverer)."""
        self.config = config
        self.alerter = Alerter(config, sinks, clock)
        self.unread: set[Key] = set()

    @property
    def alerting(self) -> bool:
        """Whether any sink is configured."""
        return bool(self.alerter.sinks)

    def apply(self, found: Changes | None, looking_at: Callable[[Key], bool]) -> bool:
        """Take in a new View's changes (its settled transitions, view.transitions, and the new
        requests of rows waiting for input); True when the unread marks changed. A row that
        appears (first sight, a server reconnecting) is not a change; a row that changed while
        `looking_at(key)` was false is marked; a row that left loses its mark."""
        if found is None:
            return False
        changes = found.transitions + found.asks
        if not changes:
            return False
        if self.alerting:
            self.alerter.feed(changes)
        marked = False
        for tr in changes:
            if tr.after is None:
                if tr.key in self.unread:
                    self.unread.discard(tr.key)
                    marked = True
            elif tr.before is not None and tr.key not in self.unread and not looking_at(tr.key):
                self.unread.add(tr.key)
                marked = True
        return marked

    def read(self, key: Key | None) -> bool:
        """The user looked at this row; True when it had a mark."""
        if key is None or key not in self.unread:
            return False
        self.unread.discard(key)
        return True
