"""Benchmark: reading a V2 (2.x) server over real sockets (issue 38's figures).

    python benchmarks/bench_v2.py [--sessions 2000] [--folders 2] [--runs 3] [--idle 150]
                                  [--waits 5]

Starts benchmarks/synthetic_v2_server.py and measures:
- `ocwatch status --json` wall time (a subprocess, as a script runs it; min / median / max over
  `runs`) beside `curl --parallel --parallel-max 8` fetching the same routes (the floor);
- the first complete snapshot of an in-process Fleet, and the dashboard (the real app,
  headless): start to the first frame painted with every row, and to every transcript read;
- requests a minute an idle server (no session running) gets from a Fleet with its stream up,
  over `idle` seconds after the first snapshot;
- `ocwatch wait` (a subprocess) on a running session: from the moment the server sends
  `session.execution.succeeded` to the process's exit (`waits` times).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import bench_scale as scale  # noqa: E402

AUTH = ("opencode", "pw")


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCODE_", "OCWATCH_"))}
    e["OPENCODE_SERVER_PASSWORD"] = AUTH[1]
    e["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="ocwatch-bench-")
    return e


def ocwatch() -> str:
    return shutil.which("ocwatch") or str(Path(sys.executable).parent / "ocwatch")


def status_wall(url: str) -> float:
    t = time.perf_counter()
    subprocess.run(
        [ocwatch(), "status", "--json", "--server", url],
        check=True,
        stdout=subprocess.DEVNULL,
        env=env(),
    )
    return time.perf_counter() - t


def urls_of(url: str) -> list[str]:
    """The requests a V2 snapshot sends: the probe (V1's health, then /api/info), the session
    pages, the active list, the maps of each folder and one transcript tail per session."""
    out = [f"{url}/global/health", f"{url}/api/info"]
    sessions: list[dict] = []
    cursor = None
    with httpx.Client(base_url=url, auth=AUTH) as c:
        while True:
            params = {"limit": "500", "order": "asc", **({"cursor": cursor} if cursor else {})}
            r = c.get("/api/session", params=params)
            out.append(str(r.url))
            body = r.json()
            sessions += body["data"]
            cursor = body["cursor"]["next"]
            if not cursor or len(body["data"]) < 500:
                break
    out.append(f"{url}/api/session/active")
    for d in sorted({s["location"]["directory"] for s in sessions}):
        out += [
            f"{url}/api/permission/request?location%5Bdirectory%5D={d}",
            f"{url}/api/form?location%5Bdirectory%5D={d}",
        ]
    out += [f"{url}/api/session/{s['id']}/message?order=desc&limit=5" for s in sessions]
    return out


def curl_parallel(urls: list[str]) -> float:
    took = scale.curl_parallel(urls, "-u", ":".join(AUTH))
    if took is None:
        raise SystemExit("curl is needed for the floor")
    return took


def spread(xs: list[float]) -> str:
    return scale.spread(xs, 3)


class Synthetic(scale.Synthetic):
    def __init__(self, n: int, folders: int, busy: float) -> None:
        super().__init__(n, folders, busy, "synthetic_v2_server.py")


async def first_snapshot(url: str) -> float:
    from tui.core.fleet import Fleet
    from tui.core.settings import Auth

    t = time.perf_counter()
    fleet = Fleet([url], auth=Auth(*AUTH))
    task = asyncio.create_task(fleet.run(lambda: None))
    await fleet.monitors[0].first_snapshot()
    took = time.perf_counter() - t
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return took


async def dashboard(url: str, n: int) -> tuple[float, float]:
    """The dashboard (the real app, headless): start to the first frame painted with every row,
    and to every transcript read."""
    from benchmarks.bench_dashboard import painted_after, record_paints
    from tui.app import DashboardOptions, create_app
    from tui.app.widgets.session_table import SessionTable
    from tui.core.fleet import Fleet
    from tui.core.settings import Auth

    record_paints()
    t0 = time.perf_counter()
    fleet = Fleet([url], auth=Auth(*AUTH), progressive=True)
    app = create_app(fleet, DashboardOptions(server_urls=[url]))
    async with app.run_test(size=(160, 48)):
        table = app.main_screen.query_one(SessionTable)
        while table.row_count < n:
            await asyncio.sleep(0.005)
        first = await painted_after(time.perf_counter()) - t0
        mon = fleet.monitors[0]
        while mon.snapshot is None or mon.snapshot.loading:
            await asyncio.sleep(0.01)
        loaded = time.perf_counter() - t0
    return first, loaded


async def idle_rate(url: str, seconds: float) -> tuple[float, int]:
    """Requests a minute after the first snapshot, over `seconds`, and the snapshots taken."""
    from tui.core.fleet import Fleet
    from tui.core.settings import Auth

    fleet = Fleet([url], auth=Auth(*AUTH))
    task = asyncio.create_task(fleet.run(lambda: None))
    mon = fleet.monitors[0]
    await mon.first_snapshot()
    while not mon.connected:
        await asyncio.sleep(0.05)
    await asyncio.sleep(2)  # (the snapshot the stream's opening asks for)
    before, taken = mon.client.requests, mon.snapshots_taken
    await asyncio.sleep(seconds)
    rate = (mon.client.requests - before) * 60.0 / seconds
    taken = mon.snapshots_taken - taken
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return rate, taken


def wait_latency(url: str, sid: str) -> float:
    """From the server sending `execution.succeeded` to `ocwatch wait`'s exit (seconds)."""
    proc = subprocess.Popen(
        [ocwatch(), "wait", sid, "--server", url, "--timeout", "60"],
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    with httpx.Client(base_url=url, auth=AUTH) as c:
        # wait until its stream is open (the server counts one more listener)
        time.sleep(1.5)
        sent = c.post("/_control/finish", params={"session": sid}).json()["sent"]
    code = proc.wait(60)
    exited = time.time()
    if code != 0:
        raise SystemExit(f"wait exited {code}: {proc.stderr.read() if proc.stderr else ''}")
    return exited - sent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--folders", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--idle", type=float, default=150.0)
    ap.add_argument("--waits", type=int, default=5)
    args = ap.parse_args()

    srv = Synthetic(args.sessions, args.folders, 0.05)
    try:
        urls = urls_of(srv.url)
        curl = [curl_parallel(urls) for _ in range(args.runs)]
        walls = [status_wall(srv.url) for _ in range(args.runs)]
        firsts = [asyncio.run(first_snapshot(srv.url)) for _ in range(args.runs)]
        print(f"{args.sessions} sessions, {args.folders} folders, {len(urls)} requests")
        print(f"  curl --parallel 8, the same routes: {spread(curl)}")
        print(
            f"  ocwatch status --json:              {spread(walls)}  "
            f"({statistics.median(walls) / statistics.median(curl):.2f}x curl)"
        )
        print(
            f"  a Fleet's first complete snapshot:  {spread(firsts)}  "
            f"({statistics.median(firsts) / statistics.median(curl):.2f}x curl) [target <= 2x]"
        )
        dash = [asyncio.run(dashboard(srv.url, args.sessions)) for _ in range(args.runs)]
        firsts_painted = [d[0] for d in dash]
        print(
            f"  dashboard, first frame with every row: {spread(firsts_painted)}  "
            f"({statistics.median(firsts_painted) / statistics.median(curl):.2f}x curl) "
            f"[target <= 2x]; every transcript read: {spread([d[1] for d in dash])}"
        )
        lat = [wait_latency(srv.url, f"ses_{i:05d}synthetic") for i in range(args.waits)]
        print(
            f"  wait: execution.succeeded sent -> process exit: "
            f"{', '.join(f'{x * 1000:.0f}' for x in lat)} ms "
            f"(median {statistics.median(lat) * 1000:.0f} ms) [target <= 100 ms]"
        )
    finally:
        srv.stop()
    srv = Synthetic(args.sessions, args.folders, 0.0)
    try:
        rate, taken = asyncio.run(idle_rate(srv.url, args.idle))
        print(
            f"  idle server (nothing running), stream up, {args.idle:g} s: "
            f"{rate:.1f} requests/minute, {taken} resyncs [target <= 10]"
        )
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
