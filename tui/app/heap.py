"""Keep CPython's cyclic garbage collector from pausing the dashboard in the middle of a frame.

With 2,000 sessions the app holds about 340,000 objects the collector tracks (wire models, rows,
rendered cells, Textual's own widgets). A full collection walks every one of them: about 165 ms on
a 2-core VM, and under a stream of events CPython starts one every few seconds, which is most of
the slow frames `benchmarks/bench_dashboard.py` saw.

Once the first sessions are on screen, the app collects once and then freezes what survived
(`gc.freeze()`): later collections walk only newer objects. Reference counting still frees frozen
objects as usual; only a reference *cycle* among frozen objects waits. So every `refreeze`
seconds the keeper unfreezes, collects and freezes again (one full pause per period, instead of
one every few seconds), and on exit it unfreezes, leaving the process as it found it.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

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
        self._scheduled = False

    @property
    def frozen(self) -> bool:
        return self.frozen_at is not None

    def loaded(self, schedule: Callable[[Callable[[], None]], object]) -> None:
        """The long-lived state is in: have `schedule` run `settle` once (e.g. after the next
        frame), unless the heap is already frozen or a settle is already scheduled."""
        if self.frozen_at is None and not self._scheduled:
            self._scheduled = True
            schedule(self.settle)

    def settle(self) -> None:
        """Collect, then freeze what survived."""
        self._scheduled = False
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self.frozen_at = self.clock()

    def maintain(self) -> None:
        """Refresh the frozen heap when it is older than `refreeze` (call from a timer)."""
        if self.frozen_at is not None and self.clock() - self.frozen_at >= self.refreeze:
            self.settle()

    def release(self) -> None:
        """Unfreeze: the frozen objects are collectable again (call on exit)."""
        if self.frozen_at is not None:
            gc.unfreeze()
            self.frozen_at = None
