"""Benchmark: recording and replaying (issue 14).

    python benchmarks/bench_recording.py [--sessions 2000] [--busy 200] [--rate 2000] [--seconds 15]

The real client, monitors and derive follow an in-process OpenCode API (httpx MockTransport;
bench_dashboard's StreamAPI: streamed-token noise, part updates and status repeats for `busy`
sessions at `rate` events a second), pulled as `ocwatch metrics` does (a View after news, at
most every 0.1 s, and every second). Measured (targets in brackets):

- the process's CPU time over `seconds`, without and then with a recording (plain NDJSON, and
  gzip), as a share of the time: the extra a recording costs [< 5 % extra CPU at 2,000/s];
- the file's size per hour of such a server (extrapolated from the run);
- replaying that file at full speed, in events per second [>= 50,000/s]: `watch --replay`'s
  and `status --replay`'s way (Replay.follow: a View after every read's batch, and every
  recorded second); a record at a time (Replay.step, each snapshot answer caught up with
  before the next record; no Views); and the dashboard player (`ocwatch replay` at its
  fastest, 1000x: ReplaySource, which steps so and derives a View where follow does, its
  screen pulling every 50 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_dashboard import URL, StreamAPI  # noqa: E402
from tui.core.fleet import Fleet  # noqa: E402
from tui.core.settings import Settings  # noqa: E402
from tui.export.serve import follow  # noqa: E402
from tui.record.replay import Replay, ReplaySource  # noqa: E402
from tui.record.writer import Recorder  # noqa: E402


async def run(args: argparse.Namespace, path: Path | None) -> tuple[float, int, int]:
    """CPU seconds spent over `args.seconds` of following the stream (from the first snapshot
    on), the events received, and the file's size."""
    api = StreamAPI(args.sessions, args.busy, args.rate)
    fleet = Fleet(
        [URL], settings=Settings(resync_interval=3600), transport=httpx.MockTransport(api.handle)
    )
    recorder = None
    if path is not None:
        recorder = Recorder(path, [(URL, "")], fleet.settings, version="bench")
        fleet.monitors[0].tap = recorder
    stop = asyncio.Event()
    task = asyncio.create_task(follow(fleet, [], stop=stop))
    await fleet.monitors[0].first_snapshot()
    sent0, cpu0 = api.sent, time.process_time()
    await asyncio.sleep(args.seconds)
    cpu = time.process_time() - cpu0
    events = api.sent - sent0
    stop.set()
    await task
    size = 0
    if recorder is not None:
        recorder.close()
        size = recorder.size()
    return cpu, events, size


async def player_speed(path: Path) -> float:
    """Events per second of the dashboard player at 1000x, its screen pulling every 50 ms."""
    source = ReplaySource(path, speed=1000.0)
    started = time.perf_counter()
    task = asyncio.create_task(source.run(lambda: None))
    while not source.finished:
        await asyncio.sleep(0.05)
        source.current()
    ended = time.perf_counter()
    task.cancel()
    return source.replay.events / (ended - started)


async def replay_speed(path: Path) -> tuple[float, float, float, int]:
    """Events per second: follow's way (watch and status), a record at a time (Replay.step),
    and that once the first snapshot (one last message per session: 2,000 answers) is in."""
    replay = Replay(path)
    started = time.perf_counter()
    await replay.follow(lambda _v, _c: None)
    watch_s = time.perf_counter() - started
    events = replay.events
    replay = Replay(path)
    started = time.perf_counter()
    loaded = None
    while (rec := await replay.step()) is not None:
        if loaded is None and rec.kind == "snap" and not rec.data["begin"]:
            loaded, before = time.perf_counter(), replay.events
    replay.view()
    ended = time.perf_counter()
    after = (replay.events - before) / (ended - loaded) if loaded else 0.0
    return events / watch_s, events / (ended - started), after, events


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--busy", type=int, default=200)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs of each kind, interleaved (CPU shares: the median)",
    )
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ocwatch-bench-rec-"))
    names = ("rec.ndjson", "rec.ndjson.gz")
    cpu: dict[str, list[float]] = {"none": [], **{n: [] for n in names}}
    sizes: dict[str, int] = {}
    for k in range(args.repeat):
        for name in ("none", *names):
            path = None if name == "none" else folder / f"{k}-{name}"
            spent, n, size = asyncio.run(run(args, path))
            cpu[name].append(100 * spent / args.seconds)
            sizes[name] = size
    base = statistics.median(cpu["none"])
    print(
        f"following {n:,} events in {args.seconds:g} s ({n / args.seconds:,.0f}/s), "
        f"no recording: {base:.1f} % of a core (median of {args.repeat}: "
        f"{', '.join(f'{c:.1f}' for c in cpu['none'])})"
    )
    for name in names:
        path = folder / f"0-{name}"
        mid = statistics.median(cpu[name])
        per_hour = sizes[name] / args.seconds * 3600
        print(
            f"  recording to {name}: {mid:.1f} % of a core ({mid - base:+.1f} points; runs "
            f"{', '.join(f'{c:.1f}' for c in cpu[name])}) [target < +5]; "
            f"{sizes[name] / 2**20:.1f} MiB, {per_hour / 2**30:.2f} GiB per hour at this rate"
        )
        follow_rate, step_rate, after, events = asyncio.run(replay_speed(path))
        player = asyncio.run(player_speed(path))
        print(
            f"  replaying it ({events:,} events): watch's and status's way "
            f"{follow_rate:,.0f} events/s; a record at a time {step_rate:,.0f} events/s, "
            f"{after:,.0f} events/s once the first snapshot is in; the dashboard player at "
            f"1000x {player:,.0f} events/s [target >= 50,000]"
        )


if __name__ == "__main__":
    main()
