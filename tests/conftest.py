"""Settings of the whole test run (loaded at its start, before any tier's own conftest)."""

from __future__ import annotations

import os

import pytest

#: Workers at most with `-n auto`, whatever the machine: each may start real OpenCode servers
MAX_WORKERS = 8


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject's addopts): two workers a core, at most MAX_WORKERS. Most of an
    integration test is waiting on a real server and its scripted model, so a second worker
    a core keeps the cores busy (docs/PERFORMANCE.md, "The test suite")."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(2 * (cores or 1), MAX_WORKERS))
