"""Benchmark: the load a resync puts on an idle server (issue 15, "a light touch").

    python benchmarks/bench_light_touch.py [--sessions 2000] [--folders 4] [--busy 0.05]
                                           [--minutes 30]

The real monitor and snapshot code against an in-process OpenCode API (tests.fakes.FakeAPI,
httpx MockTransport) holding N sessions in D folders, a share of them busy, no events: requests
per resync and per minute at the default 30 s resync, while the event stream vouches for what it
carried (connected, nothing missed) and while it does not (`status`, or a stream that was lost),
beside a naive poller (one `GET /session/status` per folder every 2 s) and a per-busy-session
message poller (every 2 s). The first snapshot is counted apart.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes import FakeAPI, wire_session  # noqa: E402
from tests.unit.test_transitions import wire_msg  # noqa: E402
from tui.core.monitor import ServerMonitor  # noqa: E402
from tui.core.settings import Settings  # noqa: E402

T0 = 1_800_000_000.0


def server(n: int, folders: int, busy: float) -> FakeAPI:
    dirs = [f"/p/{chr(97 + i)}" for i in range(folders)]
    sessions = [
        wire_session(f"ses_{i:05d}", folder=dirs[i % folders], updated=(T0 - i) * 1000)
        for i in range(n)
    ]
    running = sessions[: int(n * busy)]
    status: dict[str, dict[str, dict[str, str]]] = {d: {} for d in dirs}
    for s in running:
        status[s["directory"]][s["id"]] = {"type": "busy"}
    messages = {
        s["id"]: [wire_msg(s["id"], created=T0 - 50, completed=None if s in running else T0 - 40)]
        for s in sessions
    }
    return FakeAPI(
        sessions=sessions,
        status=status,
        messages=messages,
        projects=[{"id": d, "worktree": d} for d in dirs],
    )


async def per_resync(
    n: int, folders: int, busy: float, stream: bool, minutes: float
) -> tuple[int, int, float]:
    """(requests of the first snapshot, of the resync after it, and a minute's on average over
    `minutes` of resyncs: the session list read again every relist_every, old vouched messages
    asked again a few at a time)."""
    api = server(n, folders, busy)
    now = [T0]
    settings = Settings()
    mon = ServerMonitor(
        "http://bench", settings=settings, transport=api.transport(), clock=lambda: now[0]
    )
    if stream:
        mon.stream_opened()
    sent = mon.client.requests
    assert await mon.take_snapshot()
    first = mon.client.requests - sent
    sent = mon.client.requests
    again = 0
    end, i = T0 + minutes * 60, 0
    while now[0] + mon.resync_delay() <= end:  # the resyncs as the monitor spaces them
        now[0] += mon.resync_delay()
        assert await mon.take_snapshot()
        if i == 0:
            again = mon.client.requests - sent
        i += 1
    rate = (mon.client.requests - sent) / minutes
    await mon.client.aclose()
    return first, again, rate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--folders", type=int, default=4)
    ap.add_argument("--busy", type=float, default=0.05)
    ap.add_argument("--minutes", type=float, default=30.0)
    args = ap.parse_args()
    for busy in sorted({0.0, args.busy}):
        for stream in (True, False):
            first, again, rate = asyncio.run(
                per_resync(args.sessions, args.folders, busy, stream, args.minutes)
            )
            how = "stream vouches" if stream else "no stream    "
            print(
                f"{args.sessions:,} sessions, {args.folders} folders, {busy:.0%} busy, {how}: "
                f"first snapshot {first:,} requests; the next resync {again} requests; "
                f"{rate:.1f} a minute over {args.minutes:g} min [issue 15 target <= 10]"
            )
        naive = args.folders * 60 / 2
        print(
            f"  beside: a naive 2 s status poller {naive:.0f} a minute; a per-busy-session "
            f"message poller {naive + int(args.sessions * busy) * 30:.0f} a minute"
        )


if __name__ == "__main__":
    main()
