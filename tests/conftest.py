"""Settings of the whole test run (loaded at its start, before any tier's own conftest)."""

from __future__ import annotations

import gc
import os
import sys

import pytest

#: Workers at most with `-n auto`, whatever the machine: each may start real OpenCode servers
MAX_WORKERS = 8


#: The youngest generation's threshold in a test process (CPython's: 700)
GC_THRESHOLD = 10_000


def pytest_configure(config: pytest.Config) -> None:
    """Collect cyclic garbage less often than CPython would. A test process holds pytest's,
    every loaded test module's and the tests' own long-lived objects, and each full
    collection walks them all: with CPython's thresholds, about 70 a worker over the unit
    and app tiers, 75 of their ~350 CPU-s in the collector; with these, 28 (measured with
    gc.callbacks). What ocwatch itself does to the collector (tui.core.gcpause) is tested
    against CPython's own thresholds where it reads them (test_replay_fast_paths)."""
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    _keep_byte_code()


def _keep_byte_code() -> None:
    """Write byte code in the test run, whatever `PYTHONDONTWRITEBYTECODE` says. With it set
    (this project's machines set it), nothing is cached: every pytest worker rewrites and
    compiles every test module again (7 of collection's 9 CPU-s), and every `ocwatch` a test
    starts compiles tui/, which an editable install leaves uncompiled (0.39-0.52 CPU-s to
    import tui.cli.main against 0.27-0.32 from its byte code). Set here, before xdist starts
    its workers, so they and every process a test starts inherit it."""
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject's addopts): two workers a core, at most MAX_WORKERS. Most of an
    integration test is waiting on a real server and its scripted model, so a second worker
    a core keeps the cores busy (docs/PERFORMANCE.md, "The test suite")."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(2 * (cores or 1), MAX_WORKERS))


@pytest.fixture(autouse=True)
def _heap_left_alone(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dashboard collects the whole heap once its sessions show, and freezes what survived
    (tui.app.heap). In a test process that heap is pytest's and every loaded test module's: a
    full collection of it costs 0.25-0.3 s of CPU for each dashboard a test opens (the app
    tier: 218 of them, 58 of its ~200 CPU-s), and changes nothing a test reads. So the
    keeper's freeze does nothing here, but in tests marked `real_heap`
    (tests/app/test_heap.py), which test it."""
    if request.node.get_closest_marker("real_heap") is None:
        from tui.core import gcpause

        monkeypatch.setattr(gcpause, "freeze_heap", lambda: None)
