"""Benchmark: the requests the dashboard sends an idle server while its details pane is open
on a running session (issue 42 item 1, "a light touch with the dashboard open").

    python benchmarks/bench_pane_requests.py [--seconds 60]

A real `opencode serve` 1.18.33 on the scripted model; one session runs a model stream that
says a few words and then waits (a run in progress, nothing more to stream), every other
session is idle. Three figures over the same span, side by side:

1. the monitor alone (a Fleet, no dashboard): the light-touch resyncs;
2. the dashboard at 160x48, the details pane open on the running session (what ships);
3. the same dashboard with the pane's previous rule (read the running session's messages and
   todos every 2 s whatever the stream says): what it cost before.

Requests are the server's own client counter (ServerInfo.requests), counted after a warm-up
(the first snapshot and the pane's first look are not counted).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.driver import Driver  # noqa: E402
from tests.integration.oc_server import scripted_server  # noqa: E402
from tui.app import DashboardOptions, create_app  # noqa: E402
from tui.app.actions import FleetActions  # noqa: E402
from tui.app.inspect import FleetPeek  # noqa: E402
from tui.core.fleet import Fleet  # noqa: E402

WARM_UP = 8.0


class OldPeek(FleetPeek):
    """The pane's previous rule: the stream never vouches, a running session is read every
    RUNNING_EVERY seconds."""

    def stream_output_at(self, server: str) -> float | None:
        return None


def requests(fleet: Fleet) -> int:
    return sum(s.requests for s in fleet.servers())


async def monitor_alone(url: str, seconds: float) -> float:
    fleet = Fleet([url])
    task = asyncio.create_task(fleet.run(lambda: None))
    try:
        await asyncio.sleep(WARM_UP)
        start = requests(fleet)
        await asyncio.sleep(seconds)
        return (requests(fleet) - start) * 60 / seconds
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await fleet.aclose()


async def dashboard(url: str, sid: str, seconds: float, old: bool) -> float:
    fleet = Fleet([url], progressive=True)
    peek = OldPeek(fleet) if old else FleetPeek(fleet)
    app = create_app(
        fleet, DashboardOptions(server_urls=[url], actions=FleetActions(fleet), peek=peek)
    )
    async with app.run_test(size=(160, 48)) as pilot:
        deadline = time.monotonic() + 60
        while not (app.view and any(k[1] == sid for k in app.view.rows)):
            assert time.monotonic() < deadline, "the session never showed"
            await pilot.pause(0.1)
        key = next(k for k in app.view.rows if k[1] == sid)
        while not app.main_screen.table.select_key(key):
            await pilot.pause(0.1)
        while app.inspector.activity(key) is None:
            assert time.monotonic() < deadline, "the pane never read the session"
            await pilot.pause(0.1)
        await asyncio.sleep(WARM_UP)
        start = requests(fleet)
        await asyncio.sleep(seconds)
        return (requests(fleet) - start) * 60 / seconds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    args = ap.parse_args()
    with scripted_server() as srv:
        with Driver(srv.url, default_directory=str(srv.project)) as d:
            for i in range(20):
                d.create_session(title=f"idle {i}")
            sid = d.run("hang", "bench", title="runs, says nothing more")["id"]
            d.wait_status(sid, "busy")
            alone = asyncio.run(monitor_alone(srv.url, args.seconds))
            now = asyncio.run(dashboard(srv.url, sid, args.seconds, old=False))
            before = asyncio.run(dashboard(srv.url, sid, args.seconds, old=True))
        print(f"requests a minute to an idle server over {args.seconds:.0f} s (1.18.33):")
        print(f"  monitor alone                                {alone:6.1f}")
        print(f"  dashboard, pane on the running session       {now:6.1f}")
        print(f"  same, the pane's previous rule (every 2 s)   {before:6.1f}")


if __name__ == "__main__":
    main()
