"""Benchmarks against a real `opencode serve` 1.18.33 (the integration tier's harness).

    python benchmarks/bench_real_server.py [--sessions 2000] [--runs 5]

1. Requests per resync: a server holding N idle sessions (two project folders); the first snapshot
   and a second one with nothing changed (issue 2: bounded, not one per session).
2. `wait` latency: for R runs of a scripted model that streams for a second, the time between the
   assistant message's `time.completed` (server clock, same machine) and `wait` returning
   (issue 2: median under 300 ms).
3. The touch of one `ocwatch wait SID --timeout 0` on that server of N sessions (as a script runs
   it: a process of its own), beside `ocwatch status --json`, which reads every session: its
   requests (counted by a proxy), its time and the server's CPU (median of R); and of one
   `ocwatch report SID --for 0` (a bug report's capture), which reads the same as `wait`.
Needs the pinned binary (`.opencode/node_modules/.bin/opencode`, or $OPENCODE_BIN).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.driver import Driver  # noqa: E402
from tests.integration.fault_proxy import FaultProxy  # noqa: E402
from tests.integration.oc_server import scripted_server  # noqa: E402
from tests.procstat import cpu_s  # noqa: E402
from tui.cli.wait import wait_for  # noqa: E402
from tui.core.client import Client  # noqa: E402
from tui.core.settings import Settings  # noqa: E402
from tui.core.snapshot import MessageCache, fetch_snapshot  # noqa: E402


async def resync_cost(url: str) -> tuple[int, int, float, float, int]:
    cache = MessageCache()
    async with Client(url) as client:
        t = time.perf_counter()
        first = await fetch_snapshot(client, cache, clock=time.time)
        t1 = time.perf_counter() - t
        t = time.perf_counter()
        second = await fetch_snapshot(client, cache, clock=time.time)
        t2 = time.perf_counter() - t
    return first.requests, second.requests, t1, t2, len(second.sessions)


def wait_latency(d: Driver, url: str) -> float:
    sid = d.run("slow", "1", title="latency")["id"]
    d.wait_status(sid, "busy")
    ready = threading.Event()
    box: dict[str, object] = {}

    def go() -> None:
        box["res"] = asyncio.run(
            wait_for(sid, url, auth=None, settings=Settings(), timeout=60, on_ready=ready.set)
        )
        box["at"] = time.time()

    th = threading.Thread(target=go)
    th.start()
    th.join(90)
    code = box["res"][0]  # type: ignore[index]
    assert code == 0, box
    done = d.last_assistant(sid)["info"]["time"]["completed"] / 1000.0  # type: ignore[index]
    return (box["at"] - done) * 1000.0  # type: ignore[operator]


def touch(url: str, server_pid: int, args: list[str], runs: int) -> str:
    """An `ocwatch` command's requests (one run through a counting proxy), then its time and
    the server's CPU (median of `runs`, straight to the server)."""
    command = [sys.executable, "-m", "tui.cli.main", *args]
    with FaultProxy(url) as proxy:
        subprocess.run([*command, "--server", proxy.url], capture_output=True, timeout=300)
        asked = sum(proxy.asked.values())
    times, cpus = [], []
    for _ in range(runs):
        c, t = cpu_s(server_pid), time.perf_counter()
        subprocess.run([*command, "--server", url], capture_output=True, timeout=300)
        times.append(time.perf_counter() - t)
        cpus.append(cpu_s(server_pid) - c)
    return (
        f"{asked} requests, {statistics.median(times):.2f} s, the server's CPU "
        f"{statistics.median(cpus):.2f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with scripted_server() as srv:
        with Driver(srv.url, default_directory=str(srv.project)) as d:
            lat = [wait_latency(d, srv.url) for _ in range(args.runs)]
            print(
                f"wait latency after time.completed, {args.runs} runs: "
                f"median {statistics.median(lat):.0f} ms, max {max(lat):.0f} ms "
                f"({', '.join(f'{x:.0f}' for x in lat)})"
            )
            folders = [str(srv.project), str(srv.project2)]
            t = time.perf_counter()
            with ThreadPoolExecutor(8) as pool:
                list(
                    pool.map(
                        lambda i: d.create_session(directory=folders[i % 2], title=f"idle {i}"),
                        range(args.sessions),
                    )
                )
            print(f"created {args.sessions} sessions in {time.perf_counter() - t:.1f}s")
            one = d.sessions(directory=folders[0])[0]["id"]
        first, second, t1, t2, n = asyncio.run(resync_cost(srv.url))
        print(
            f"snapshot of {n} sessions: first {first} requests ({t1:.2f}s), "
            f"resync with nothing changed {second} requests ({t2:.2f}s)"
        )
        assert srv.proc is not None
        pid = srv.proc.pid
        wait_one = touch(srv.url, pid, ["wait", one, "--timeout", "0"], args.runs)
        status = touch(srv.url, pid, ["status", "--json"], args.runs)
        report = touch(srv.url, pid, ["report", one, "--for", "0"], args.runs)
        print(f"one `ocwatch wait SID --timeout 0` on {n} sessions: {wait_one}")
        print(f"one `ocwatch status --json` beside it: {status}")
        print(f"one `ocwatch report SID --for 0`: {report}")


if __name__ == "__main__":
    main()
