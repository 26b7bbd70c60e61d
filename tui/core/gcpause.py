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
  later collections walk only newer objects.

The pure functions themselves (derive, decide) leave the interpreter alone: their callers
choose. What each of these saved is in docs/PERFORMANCE.md.
"""

from __future__ import annotations

import gc
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
