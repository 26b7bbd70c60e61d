"""The stream path counted in instructions (callgrind), for a ratio a shared machine cannot blur.

    python benchmarks/cg_stream.py [--events 40000] [--readers bare-v1,v1,bare-v2,v2] [REPO]

bench_stream's readers, each in a process of its own under `valgrind --tool=callgrind`, reading
bench_stream's server (a firehose over a local socket, an event a chunk) twice: `--events` events
and a tenth of them. Instructions an event: the difference of the two runs over the difference
of the events (what starting the process and importing cost falls out). Printed: each reader's
figure and each ocwatch reader's ratio to the bare reader of its protocol [issue 42: <= 2x].
The CPU time `bench_stream.py` prints follows the machine's load (its bare reader alone moves
by half between runs on a shared 2-core VM); instructions do not. REPO (default: this
checkout) lets another checkout's code be counted by the same script, e.g. a worktree of an
older commit. Needs valgrind (Debian: `valgrind`); a run of the four readers takes a few minutes.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()


def counted(repo: Path, reader: str, events: int) -> int:
    """Instructions of one reader's process reading `events` events."""
    server = subprocess.Popen(
        [sys.executable, str(HERE.parent / "bench_stream.py"), "--serve", "--events", str(events)],
        cwd=repo,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
            + [sys.executable, str(repo / "benchmarks" / "bench_stream.py")]
            + ["--read", reader, "--port", port],
            cwd=repo,
            env={**os.environ, "BENCH_STREAM_EVENTS": str(events), "PYTHONHASHSEED": "0"},
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        server.kill()
        server.wait()
    got = re.search(r"Collected : (\d+)", out.stderr)
    if got is None:
        raise SystemExit(f"callgrind counted nothing for {reader}: {out.stderr[-500:]}")
    return int(got.group(1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("repo", nargs="?", default=str(HERE.parents[1]))
    ap.add_argument("--events", type=int, default=40_000)
    ap.add_argument("--readers", default="bare-v1,v1,bare-v2,v2")
    a = ap.parse_args()
    repo = Path(a.repo).resolve()
    few = a.events // 10
    per: dict[str, float] = {}
    for reader in a.readers.split(","):
        many_i, few_i = counted(repo, reader, a.events), counted(repo, reader, few)
        per[reader] = (many_i - few_i) / (a.events - few)
        bare = per.get(f"bare-{reader[:2]}")
        ratio = f" ({per[reader] / bare:.2f}x the bare reader) [<= 2x]" if bare else ""
        print(f"{reader}: {per[reader]:,.0f} instructions an event{ratio}", flush=True)


if __name__ == "__main__":
    main()
