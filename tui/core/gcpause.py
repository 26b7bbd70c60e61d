"""How ocwatch handles CPython's cyclic garbage collector: the one module that touches it.

Nearly everything ocwatch allocates is freed by reference counting (parsed frames, journal
entries, rows, rendered cells are short-lived and acyclic); the cyclic collector finds little.
What it costs is its walk: a collection visits every object it tracks, and a process that
holds a large snapshot (or a dashboard's widgets) tracks hundreds of thousands. So:

- around a burst of allocation that runs to its end without awaiting (a derive, a table's
  sync), the collector is paused (`gc_paused`): a collection started in the middle of it
  would walk the whole heap for nothing, and reference counting frees the burst anyway;
- around a batch that spans awaits (a replay at full speed), it is relaxed instead
  (`gc_relaxed`): paused outright for that long, real cycles would pile up;
- while the command line's modules load, it is paused (`pause_for_imports`), and what they
  made is then frozen (`imports_loaded`): those objects live as long as the process, and a
  collection that walks them again only costs;
- once a dashboard's long-lived state is in, the heap is collected once and frozen
  (`freeze_heap`; `tui.app.heap.HeapKeeper` says when), and unfrozen on exit (`thaw_heap`):
  later collections walk only newer objects; and the middle generation is collected less
  often (`spare_the_middle`), so that what a stream keeps for a moment (the journal's
  entries) is freed before it reaches the oldest generation.

The pure functions themselves (derive, decide) leave the interpreter alone: their callers
choose. What each of these saved is in docs/PERFORMANCE.md.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """The collector off for the block (as it was before, after it)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


#: The youngest generation's threshold while relaxed: CPython's default (700) starts a
#: collection every few hundred frames of a replay, whose objects are short-lived and acyclic.
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


def pause_for_imports() -> bool:
    """Pause the collector while a program's modules load; whether it was on (to give to
    `imports_loaded`). An import that fails leaves it paused: the program cannot run then."""
    was = gc.isenabled()
    gc.disable()
    return was


def imports_loaded(was_on: bool) -> None:
    """The modules are loaded: freeze what they made (it lives as long as the process) and let
    the collector run again, if it ran before `pause_for_imports`."""
    if was_on:
        gc.freeze()
        gc.enable()


def freeze_heap() -> None:
    """Collect once, then freeze what survived: later collections leave it alone (a reference
    cycle among frozen objects waits for the next `freeze_heap` or `thaw_heap`)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def thaw_heap() -> None:
    """Unfreeze: the frozen objects are the collector's again."""
    gc.unfreeze()


#: The middle generation's threshold once a dashboard's heap is frozen: collected after this
#: many young collections instead of CPython's 10. Under a stream of 50,000 events a second
#: the journal keeps each event for about a quarter of a second; with 10, a middle collection
#: came every ~0.1 s, walked the entries alive then and moved them to the oldest generation,
#: where they died and counted toward a full collection: the collector took 14 % of the
#: process, 8-9 % with 100 (its middle collections once a second, 20-25 ms each).
MIDDLE_THRESHOLD = 100


def spare_the_middle(threshold: int = MIDDLE_THRESHOLD) -> tuple[int, int, int]:
    """Raise the middle generation's threshold to `threshold` (never lower it, nor touch a
    collector that is off); returned: the thresholds before, for `restore_thresholds`.
    Only on CPython's three generations (before 3.14, whose incremental collector reads the
    thresholds otherwise)."""
    before = gc.get_threshold()
    if sys.version_info < (3, 14) and before[0] and before[1] < threshold:
        gc.set_threshold(before[0], threshold, *before[2:])
    return before


def restore_thresholds(before: tuple[int, ...]) -> None:
    """The thresholds `spare_the_middle` found."""
    gc.set_threshold(*before)
