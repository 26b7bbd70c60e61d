"""Keep CPython's cyclic garbage collector from pausing the dashboard in the middle of a frame.

The app holds hundreds of thousands of objects the collector tracks (wire models, rows, rendered
cells, Textual's own widgets), nearly all of them long-lived. A full collection walks every one
of them, long enough to be seen as a slow frame, and under a stream of events CPython starts one
every few seconds (docs/PERFORMANCE.md has what it cost).

Once the first sessions are on screen, the app collects once and then freezes what survived
(`tui.core.gcpause.freeze_heap`): later collections walk only newer objects. A progressive
first snapshot shows its rows before the last messages are read; once every message is in, the
heap is frozen once more, so the bulk of it (the parsed messages) is not walked again either.
Reference counting still frees frozen objects as usual; only a reference *cycle* among frozen
objects waits. So every `refreeze` seconds the keeper unfreezes, collects and freezes again (one
full pause per period, instead of one every few seconds). From the first freeze on, the middle
generation is collected less often (`gcpause.spare_the_middle`: what a stream keeps for a
moment dies young). On exit it unfreezes and restores the thresholds, leaving the process as
it found it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..core import gcpause

REFREEZE = 600.0
"""Seconds between full collections once the heap is frozen."""


class HeapKeeper:
    """Freezes the long-lived heap after startup and refreshes it every `refreeze` seconds."""

    def __init__(
        self, refreeze: float = REFREEZE, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.refreeze = refreeze
        self.clock = clock
        self.frozen_at: float | None = None
        self.complete = False  # the heap was frozen with everything loaded
        self._scheduled = False
        self._thresholds: tuple[int, ...] | None = None  # the collector's, before the first freeze

    @property
    def frozen(self) -> bool:
        return self.frozen_at is not None

    def loaded(
        self, schedule: Callable[[Callable[[], None]], object], *, complete: bool = True
    ) -> None:
        """The long-lived state is in (`complete`: all of it, not only the first rows): have
        `schedule` run `settle` once (e.g. after the next frame), unless the heap is already
        frozen with as much loaded or a settle is already scheduled."""
        if self._scheduled or (self.frozen_at is not None and (self.complete or not complete)):
            return
        self._scheduled = True
        schedule(lambda: self.settle(complete=complete))

    def settle(self, *, complete: bool | None = None) -> None:
        """Collect, then freeze what survived (`complete`: with everything loaded; None: as
        loaded as before). The first time, also spare the middle generation (the thresholds
        found are restored by `release`)."""
        self._scheduled = False
        if complete is not None:
            self.complete = self.complete or complete
        gcpause.freeze_heap()
        if self._thresholds is None:
            self._thresholds = gcpause.spare_the_middle()
        self.frozen_at = self.clock()

    def maintain(self) -> None:
        """Refresh the frozen heap when it is older than `refreeze` (call from a timer)."""
        if self.frozen_at is not None and self.clock() - self.frozen_at >= self.refreeze:
            self.settle()

    def release(self) -> None:
        """Unfreeze: the frozen objects are collectable again, and the collector's thresholds
        are what they were (call on exit)."""
        if self.frozen_at is not None:
            gcpause.thaw_heap()
            self.frozen_at, self.complete = None, False
        if self._thresholds is not None:
            gcpause.restore_thresholds(self._thresholds)
            self._thresholds = None
