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
