"""Benchmark: how long `ocwatch wait` and `ocwatch status` take to exit once they have printed
their answer (issue 15: "`wait` exits when it knows"; target: exit <= 20 ms after deciding).

    python benchmarks/bench_exit.py [--runs 15]

Runs each command as a user runs it, against the built-in simulated server (`tui.demo.server`,
real HTTP on loopback), and times from the first line it prints to the process's exit. Prints
min / median / max per command.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cli_env import cli_env  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def after_print(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    """(milliseconds from the first printed line to the exit, exit code)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli.main", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    printed = time.monotonic()
    code = proc.wait(60)
    return (time.monotonic() - printed) * 1000, code


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tui.demo.server", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen(url + "/session", timeout=1) as r:
                    sid = json.load(r)[0]["id"]
                break
            except OSError:
                time.sleep(0.1)
        env = {**cli_env(), "PYTHONPATH": str(ROOT)}
        for name, argv in (
            ("wait --timeout 0", ["wait", sid, "--server", url, "--timeout", "0"]),
            ("status --json", ["status", "--json", "--server", url]),
        ):
            times = [after_print(argv, env)[0] for _ in range(a.runs)]
            print(
                f"{name:18} printed -> exited: min {min(times):5.1f}  median "
                f"{statistics.median(times):5.1f}  max {max(times):5.1f} ms ({a.runs} runs)"
            )
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
