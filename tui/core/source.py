"""What consumers (the dashboard, `wait`) read Views from.

`Fleet` (tui.core.fleet) is the live implementation; `StaticSource` serves fixed Views to tests and
screenshots.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from .view import Changes, Transition, TransitionFeed, View


class ViewSource(Protocol):
    """A source of Views. `run()` keeps the View current and calls `notify()` (cheap, may be called
    at a high rate; consumers coalesce) whenever it may have changed. `last_changes` are the
    settled transitions of the View `current()` last returned (view.transitions), computed
    once by the source: every consumer of that View reads them, none computes its own."""

    last_changes: Changes | None

    def current(self, now: float | None = None) -> View:
        """The View at `now` (default: the wall clock)."""
        ...

    def history(self, key: tuple[str, str]) -> list[Transition]:
        """Observed transitions of one row, oldest first (bounded)."""
        ...

    async def run(self, notify: Callable[[], None]) -> None:
        """Run until cancelled."""
        ...


class StaticSource:
    """A ViewSource holding one View (tests, screenshots). `set()` swaps it and notifies."""

    def __init__(self, view: View, history: dict[tuple[str, str], list[Transition]] | None = None):
        self._view = view
        self._history = history or {}
        self._notify: Callable[[], None] | None = None
        self._feed = TransitionFeed()
        self._fed: View | None = None
        self.last_changes: Changes | None = None

    def current(self, now: float | None = None) -> View:
        if self._view is not self._fed:  # a new View: its changes (the same one again: none)
            self.last_changes = self._feed.feed(self._view)
            self._fed = self._view
        elif self.last_changes is not None:
            self.last_changes = Changes([], self.last_changes.settled, [])
        return self._view

    def history(self, key: tuple[str, str]) -> list[Transition]:
        return list(self._history.get(key, []))

    def set(self, view: View) -> None:
        self._view = view
        if self._notify is not None:
            self._notify()

    async def run(self, notify: Callable[[], None]) -> None:
        self._notify = notify
        notify()
        await asyncio.Event().wait()
