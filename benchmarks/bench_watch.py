"""`ocwatch watch` against a real `opencode serve` 1.18.33 (the integration tier's harness).

    python benchmarks/bench_watch.py [--runs 10] [--sessions 2000] [--idle 60]

1. Latency: `ocwatch watch --json` runs as a user runs it; for each of R runs of a scripted model
   that streams for a second, the time between the assistant message's `time.completed` (server
   clock, same machine) and the moment watch's `idle completed` line is read from its stdout
   (issue 9: median within 100 ms).
2. Cost: with N idle sessions on the server, CPU seconds over `--idle` seconds of `ocwatch watch`
   beside the dashboard's core (a Fleet whose View is derived once a second, as the dashboard's
   tick does; no Textual), both as separate processes on the same server (issue 9: no more).
Needs the pinned binary (`.opencode/node_modules/.bin/opencode`, or $OPENCODE_BIN).
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cli_env import cli_env  # noqa: E402
from tests.integration.driver import Driver, wait_until  # noqa: E402
from tests.integration.oc_server import scripted_server  # noqa: E402
from tests.procstat import cpu_s  # noqa: E402

CORE = """
import asyncio, sys, time
from tui.core.fleet import Fleet
async def main():
    fleet = Fleet([sys.argv[1]])
    task = asyncio.create_task(fleet.run(lambda: None))
    await fleet.monitors[0].first_snapshot()
    print("ready", flush=True)
    while True:
        fleet.current()
        await asyncio.sleep(1.0)
asyncio.run(main())
"""


def env() -> dict[str, str]:
    return {**cli_env(), "PYTHONPATH": str(ROOT)}


class Watch:
    def __init__(self, url: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tui.cli.main", "watch", "--json", "--server", url],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env(),
        )
        self.lines: list[tuple[float, dict[str, Any]]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.time(), json.loads(line)))

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(15)


def latency(d: Driver, watch: Watch, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        sid = d.run("slow", "1", title="watch latency")["id"]

        def printed(sid: str = sid) -> float | None:
            for at, x in list(watch.lines):
                if x["session_id"] == sid and x["to"] and x["to"]["reason"] == "completed":
                    return at
            return None

        at = wait_until(printed, 60, what="watch's completed line")
        done = d.last_assistant(sid)["info"]["time"]["completed"] / 1000.0  # type: ignore[index]
        out.append((at - done) * 1000.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--idle", type=float, default=60.0)
    args = ap.parse_args()
    with scripted_server() as srv:
        with Driver(srv.url, default_directory=str(srv.project)) as d:
            d.create_session(title="first")
            watch = Watch(srv.url)
            wait_until(lambda: watch.lines, 60, what="watch following the server")
            lat = latency(d, watch, args.runs)
            print(
                f"watch --json line after time.completed, {args.runs} runs: median "
                f"{statistics.median(lat):.0f} ms, max {max(lat):.0f} ms "
                f"({', '.join(f'{x:.0f}' for x in lat)})"
            )
            watch.stop()
            folders = [str(srv.project), str(srv.project2)]
            with ThreadPoolExecutor(8) as pool:
                list(
                    pool.map(
                        lambda i: d.create_session(directory=folders[i % 2], title=f"idle {i}"),
                        range(args.sessions),
                    )
                )
        watch = Watch(srv.url)
        core = subprocess.Popen(
            [sys.executable, "-c", CORE, srv.url], stdout=subprocess.PIPE, text=True, env=env()
        )
        assert core.stdout is not None and core.stdout.readline().strip() == "ready"
        wait_until(lambda: len(watch.lines) >= args.sessions, 120, what="watch's first lines")
        time.sleep(2)
        w0, c0 = cpu_s(watch.proc.pid), cpu_s(core.pid)
        time.sleep(args.idle)
        w1, c1 = cpu_s(watch.proc.pid), cpu_s(core.pid)
        code = watch.stop()
        core.kill()
        print(
            f"{args.sessions + args.runs + 1} sessions, idle {args.idle:g}s: watch "
            f"{w1 - w0:.2f} CPU s ({100 * (w1 - w0) / args.idle:.1f} % of a core), dashboard "
            f"core {c1 - c0:.2f} CPU s ({100 * (c1 - c0) / args.idle:.1f} %); watch exited "
            f"{code} on SIGINT"
        )


if __name__ == "__main__":
    main()
