"""Benchmark: does the dashboard's player keep the speed it says?

    python benchmarks/bench_player_pace.py [--events 2000,20000] [--seconds 100] [--speeds 10,100]

A recording of `events` frames spread evenly over `seconds` (tests/unit/test_recording.py's
`synthetic`: 50 sessions, token noise and status changes) played by `ReplaySource` (what
`ocwatch replay --speed X` runs), from its start until it has applied the last record. Printed
for each: the wall time it took beside the recorded span over the speed (what it should take),
and the CPU it used. A player slower than that while its CPU is idle is waiting wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.unit.test_recording import synthetic  # noqa: E402
from tui.record.replay import ReplaySource  # noqa: E402


async def play(path: Path, speed: float) -> tuple[float, float]:
    """Wall and CPU seconds to play `path` at `speed`."""
    source = ReplaySource(path, speed=speed)
    wall, cpu = time.monotonic(), time.process_time()
    runner = asyncio.create_task(source.run(lambda: None))
    while not source.finished:
        await asyncio.sleep(0.01)
    runner.cancel()
    return time.monotonic() - wall, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", default="2000,20000")
    ap.add_argument("--seconds", type=float, default=100.0)
    ap.add_argument("--speeds", default="10,100")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for events in (int(x) for x in a.events.split(",")):
            path = Path(tmp) / f"{events}.ndjson"
            synthetic(path, events, a.seconds)
            for speed in (float(x) for x in a.speeds.split(",")):
                wall, cpu = asyncio.run(play(path, speed))
                print(
                    f"{events:,} events over {a.seconds:g} s at {speed:g}x: played in "
                    f"{wall:.2f} s (should take {a.seconds / speed:.2f} s), CPU {cpu:.2f} s"
                )


if __name__ == "__main__":
    main()
