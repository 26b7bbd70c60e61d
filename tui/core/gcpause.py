"""The cyclic GC paused around work that allocates many short-lived, acyclic objects.

derive() builds a row (and its inputs) per session; a full collection triggered in the middle
of a large snapshot doubled its time (benchmarks/bench_derive.py). Reference counting still
frees everything; the collector runs again when the block ends. The callers choose (the
monitor around its derives): the pure functions themselves leave the interpreter alone.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


#: The youngest generation's threshold while relaxed: CPython's default (700) starts a
#: collection every few hundred frames of a replay, whose objects (parsed frames, journal
#: entries, rows) are short-lived and acyclic: ~8 % of a replay's time went to the collector.
RELAXED_THRESHOLD = 5000


@contextmanager
def gc_relaxed(threshold: int = RELAXED_THRESHOLD) -> Iterator[None]:
    """The cyclic GC collecting less often (its youngest generation's threshold raised), for a
    batch of work that spans awaits, where pausing it outright would let cycles pile up. The
    thresholds are restored when the block ends (never lowered: a caller that raised them
    further keeps its own)."""
    before = gc.get_threshold()
    if before[0] >= threshold or before[0] == 0:  # (0: the collector is off)
        yield
        return
    gc.set_threshold(threshold, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
