"""Benchmark: scale over real sockets (issue 15), side by side with the floors.

    python benchmarks/bench_scale.py [--sessions 2000] [--folders 1] [--busy 0.05] [--runs 3]
                                     [--idle 20] [--skip-dashboard] [--skip-status]

Starts benchmarks/synthetic_server.py (N sessions, keep-alive, no events but heartbeats) in a
subprocess and measures, min / median / max over `runs`:

- `ocwatch status --json` wall time (a subprocess, as a script runs it), beside the floors:
  httpx alone sending the same requests (8 at a time on kept-alive connections), ocwatch's
  own reader alone (tui.core.quick, the same requests and answers parsed), and
  `curl --parallel --parallel-max 8` fetching the same URLs;
- the dashboard (the real app, headless, in this process): start to the first frame painted
  with every row, to every last message read, its RSS then, and the CPU it uses idle over
  `idle` seconds (no events), with the requests the server saw meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
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


class _Skip(Exception):
    """--skip-status: straight to the dashboard."""


def spread(xs: list[float], digits: int = 2) -> str:
    return f"{min(xs):.{digits}f} / {statistics.median(xs):.{digits}f} / {max(xs):.{digits}f} s"


class Synthetic:
    """A synthetic server (`script`: synthetic_server.py, 1.18.33's wire; or
    synthetic_v2_server.py) in a subprocess: `url`, and `stop()` its requests per route."""

    def __init__(
        self, n: int, folders: int, busy: float, script: str = "synthetic_server.py"
    ) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "benchmarks" / script),
                "--sessions",
                str(n),
                "--folders",
                str(folders),
                "--busy",
                str(busy),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        m = re.search(r"(http://\S+)", line)
        if m is None:
            raise SystemExit(f"synthetic server did not start: {line!r}")
        self.url = m.group(1)

    def stop(self) -> dict[str, int]:
        self.proc.terminate()
        assert self.proc.stdout is not None
        out = self.proc.stdout.readline()
        self.proc.wait(10)
        return json.loads(out) if out.strip() else {}


def status_wall(url: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCODE_")}
    t = time.perf_counter()
    ocwatch = shutil.which("ocwatch") or str(Path(sys.executable).parent / "ocwatch")
    subprocess.run(
        [ocwatch, "status", "--json", "--server", url],
        check=True,
        stdout=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    return time.perf_counter() - t


def urls_of(url: str) -> list[str]:
    """The requests `status` sends: health, the session pages, the project list, the maps of
    each folder, the active list, and one last message per session."""
    with httpx.Client(base_url=url) as c:
        out = [f"{url}/global/health", f"{url}/project"]
        sessions: list[dict] = []
        cursor = None
        while True:
            params = {"limit": "1000", **({"cursor": cursor} if cursor else {})}
            r = c.get("/experimental/session", params=params)
            out.append(str(r.url))
            sessions += r.json()
            cursor = r.headers.get("x-next-cursor")
            if not cursor:
                break
    folders = sorted({s["directory"] for s in sessions})
    for d in folders:
        out += [
            f"{url}/session/status?directory={d}",
            f"{url}/permission?directory={d}",
            f"{url}/question?directory={d}",
        ]
    out += [f"{url}/session/{s['id']}/message?limit=1&directory={s['directory']}" for s in sessions]
    return out


async def httpx_alone(urls: list[str]) -> float:
    t = time.perf_counter()
    limits = httpx.Limits(max_connections=8, max_keepalive_connections=8)
    async with httpx.AsyncClient(limits=limits) as c:
        it = iter(urls)

        async def worker() -> None:
            for u in it:
                json.loads((await c.get(u)).content or b"null") if u else None

        await asyncio.gather(*(worker() for _ in range(8)))
    return time.perf_counter() - t


async def reader_alone(urls: list[str]) -> float:
    """ocwatch's own reader (tui.core.quick) sending the same requests, 8 at a time, and
    parsing every answer: what the server takes to answer them to this process."""
    from tui.core.quick import QuickGet

    base = urls[0].rsplit("/global/health", 1)[0]
    t = time.perf_counter()
    quick = QuickGet(base, None, timeout=10.0, deadline=60.0, max_body=1 << 26)
    it = iter(urls)

    async def worker() -> None:
        for u in it:
            if await quick.get(u[len(base) :]) is None:
                raise SystemExit(f"the reader could not read {u}")

    try:
        await asyncio.gather(*(worker() for _ in range(8)))
    finally:
        quick.close()
    return time.perf_counter() - t


def curl_parallel(urls: list[str], *options: str) -> float | None:
    curl = shutil.which("curl")
    if curl is None:
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        for u in urls:
            f.write(f'url = "{u}"\noutput = "/dev/null"\n')
    t = time.perf_counter()
    subprocess.run(
        [curl, "-s", "--no-progress-meter", *options, "--parallel", "--parallel-max", "8"]
        + ["-K", f.name],
        check=True,
    )
    took = time.perf_counter() - t
    os.unlink(f.name)
    return took


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def dashboard(url: str, n: int, idle: float) -> tuple[float, float, float, float, float]:
    """(first frame with every row, every last message read, RSS MB then, idle CPU %, peak
    RSS MB)."""
    from benchmarks.bench_dashboard import painted_after, record_paints
    from tui.app import DashboardOptions, create_app
    from tui.app.widgets.session_table import SessionTable
    from tui.core.fleet import Fleet

    record_paints()
    t0 = time.perf_counter()
    fleet = Fleet([url], progressive=True)
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
        await asyncio.sleep(1.0)
        rss = rss_mb()
        c0, w0 = time.process_time(), time.perf_counter()
        await asyncio.sleep(idle)
        cpu = 100 * (time.process_time() - c0) / (time.perf_counter() - w0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return first, loaded, rss, cpu, peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--folders", type=int, default=1)
    ap.add_argument("--busy", type=float, default=0.05)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--idle", type=float, default=20.0)
    ap.add_argument("--skip-dashboard", action="store_true")
    ap.add_argument("--skip-status", action="store_true")
    args = ap.parse_args()
    n = args.sessions
    server = Synthetic(n, args.folders, args.busy)
    try:
        if args.skip_status:
            raise _Skip
        urls = urls_of(server.url)
        print(
            f"{n} sessions, {args.folders} folder(s), {args.busy:.0%} busy: "
            f"{len(urls)} requests for a whole snapshot"
        )
        st = [status_wall(server.url) for _ in range(args.runs)]
        hx = [asyncio.run(httpx_alone(urls)) for _ in range(args.runs)]
        rd = [asyncio.run(reader_alone(urls)) for _ in range(args.runs)]
        cu = [c for c in (curl_parallel(urls) for _ in range(args.runs)) if c is not None]
        print(f"ocwatch status --json        {spread(st)}")
        print(
            f"its reader alone, same reqs  {spread(rd)}   (status / reader "
            f"{statistics.median(st) / statistics.median(rd):.1f}x)"
        )
        print(
            f"httpx alone, same requests   {spread(hx)}   (status / httpx "
            f"{statistics.median(st) / statistics.median(hx):.1f}x)"
        )
        if cu:
            print(
                f"curl --parallel 8            {spread(cu)}   (status / curl "
                f"{statistics.median(st) / statistics.median(cu):.1f}x)"
            )
    except _Skip:
        pass
    finally:
        hits = server.stop()
    if args.skip_dashboard:
        return
    runs = []
    for _ in range(args.runs):
        server = Synthetic(n, args.folders, args.busy)
        try:
            runs.append(asyncio.run(dashboard(server.url, n, args.idle)))
        finally:
            hits = server.stop()
        print(
            f"  run: first paint {runs[-1][0]:.2f} s, all read {runs[-1][1]:.2f} s, "
            f"RSS {runs[-1][2]:.0f} MB, idle CPU {runs[-1][3]:.1f} %, "
            f"server saw {sum(hits.values())} requests"
        )
    print(f"dashboard first paint        {spread([r[0] for r in runs])}")
    print(f"dashboard every message read {spread([r[1] for r in runs])}")
    rss = [r[2] for r in runs]
    print(
        f"dashboard RSS once loaded    {min(rss):.0f} / {statistics.median(rss):.0f} / "
        f"{max(rss):.0f} MB (peak {max(r[4] for r in runs):.0f} MB)"
    )
    cpu = [r[3] for r in runs]
    print(
        f"dashboard idle CPU ({args.idle:g} s)    {min(cpu):.1f} / {statistics.median(cpu):.1f} "
        f"/ {max(cpu):.1f} % of a core"
    )


if __name__ == "__main__":
    main()
