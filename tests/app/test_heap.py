"""HeapKeeper: freeze the loaded heap once, refresh it on its period, leave nothing frozen."""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable

import pytest

from tui.app.heap import HeapKeeper
from tui.core.gcpause import MIDDLE_THRESHOLD, spare_the_middle

from . import views
from .conftest import make_app
from .test_actions import until

pytestmark = pytest.mark.real_heap  # (tests/conftest.py: elsewhere the freeze does nothing)


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_loaded_schedules_one_settle_that_freezes_and_release_unfreezes() -> None:
    clock = Clock()
    keeper = HeapKeeper(refreeze=60, clock=clock)
    scheduled: list[Callable[[], None]] = []
    try:
        keeper.loaded(scheduled.append)
        keeper.loaded(scheduled.append)  # already scheduled: not twice
        assert len(scheduled) == 1 and not keeper.frozen
        scheduled[0]()
        assert keeper.frozen and gc.get_freeze_count() > 0
        keeper.loaded(scheduled.append)  # frozen: nothing more to do
        assert len(scheduled) == 1
        # the frozen heap is refreshed only once its period is over
        keeper.maintain()
        assert keeper.frozen_at == 0.0
        clock.t = 61.0
        keeper.maintain()
        assert keeper.frozen_at == 61.0 and gc.get_freeze_count() > 0
    finally:
        keeper.release()
    assert not keeper.frozen and gc.get_freeze_count() == 0


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="CPython's three generations only")
def test_once_frozen_the_middle_generation_is_spared_until_release() -> None:
    """From the first freeze the middle generation's threshold is MIDDLE_THRESHOLD (what a
    stream keeps for a moment dies before the oldest generation); release restores what the
    collector had. A caller's higher threshold is never lowered, an off collector untouched."""
    before = gc.get_threshold()
    keeper = HeapKeeper(refreeze=60, clock=Clock())
    try:
        gc.set_threshold(700, 10, 10)
        keeper.settle()
        assert gc.get_threshold() == (700, MIDDLE_THRESHOLD, 10)
        keeper.settle()  # (frozen again: the thresholds found at the first are kept)
        keeper.release()
        assert gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(700, 500, 10)
        assert spare_the_middle() == (700, 500, 10) and gc.get_threshold() == (700, 500, 10)
        gc.set_threshold(0, 10, 10)
        spare_the_middle()
        assert gc.get_threshold() == (0, 10, 10)
    finally:
        keeper.release()
        gc.set_threshold(*before)


def test_a_heap_frozen_while_loading_is_frozen_again_once_everything_is_in() -> None:
    """A progressive first snapshot shows its rows before the last messages: frozen then, the
    parsed messages would stay in the collector's walks."""
    keeper = HeapKeeper(refreeze=60, clock=Clock())
    scheduled: list[Callable[[], None]] = []
    try:
        keeper.loaded(scheduled.append, complete=False)
        scheduled.pop()()
        assert keeper.frozen and not keeper.complete
        keeper.loaded(scheduled.append, complete=False)  # still loading: once is enough
        assert scheduled == []
        keeper.loaded(scheduled.append, complete=True)
        assert len(scheduled) == 1
        scheduled.pop()()
        assert keeper.frozen and keeper.complete
        keeper.loaded(scheduled.append, complete=True)  # frozen with everything: done
        assert scheduled == []
    finally:
        keeper.release()
    assert not keeper.complete and gc.get_freeze_count() == 0


async def test_the_app_freezes_once_sessions_show_and_unfreezes_on_exit() -> None:
    app, _ = make_app()
    async with app.run_test() as pilot:
        await until(pilot, lambda: app.heap.frozen)  # the sessions show (frozen after a refresh)
        assert app.heap.frozen and gc.get_freeze_count() > 0
    assert not app.heap.frozen and gc.get_freeze_count() == 0


async def test_the_frozen_heap_is_refreshed_under_a_steady_stream_of_changes() -> None:
    app, source = make_app()
    app.heap = HeapKeeper(refreeze=0.5)
    async with app.run_test() as pilot:
        await until(pilot, lambda: app.heap.frozen_at is not None)
        first = app.heap.frozen_at
        assert first is not None
        view = views.every_state()
        deadline = time.monotonic() + 30
        i = 0
        while app.heap.frozen_at == first and time.monotonic() < deadline:
            # a change every 0.2 s (wall time is what the refreeze waits for): the app pulls
            # more than once a second; refreshed after 0.5 s, later on a loaded machine
            i += 1
            source.set(views.with_row(view, (views.A, "ses_busy"), cost=float(i)))
            await pilot.pause(0.2)
        assert app.heap.frozen_at != first
