"""Benchmark: what `ocwatch status` costs before it reads anything (issue 11: the status path's
import under 150 ms), beside its floors.

    python benchmarks/bench_import.py [--runs 15]

Each figure is the wall time of a fresh interpreter (min / median / max over `runs`), with byte
code cached as an installed package has it:

- `python -c pass`: the interpreter alone;
- the libraries `status` stands on, imported alone (asyncio, pydantic and its dataclasses,
  platformdirs; httpx only when an answer is not a clean one, or the stream or an action needs
  it; pydantic-settings only when there is a config file or variable): the floor no code of
  ours can go under;
- `import tui.cli.main`: the command line with the whole status path.

The two import rows end with `os._exit(0)`, as `ocwatch` itself ends (tui.cli.main.entry):
a plain exit would add the interpreter's teardown (freeing pydantic's schemas: ~50 ms), which
no command pays;
- `ocwatch status --json` against a synthetic server with 10 sessions (real sockets): start,
  read, print and exit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_scale import Synthetic  # noqa: E402

DEPS = "import asyncio, pydantic, pydantic.dataclasses, platformdirs"
EXIT = "; import os; os._exit(0)"


def wall(argv: list[str], env: dict[str, str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith("OPENCODE_")
    }
    env["PYTHONPATH"] = str(ROOT)
    py = sys.executable
    subprocess.run([py, "-c", "import tui.cli.main"], env=env, check=True)  # cache byte code
    server = Synthetic(10, 1, 0.2)
    try:
        rows = [
            ("interpreter alone (python -c pass)", [py, "-c", "pass"]),
            ("the libraries alone (floor)", [py, "-c", DEPS + EXIT]),
            ("import tui.cli.main", [py, "-c", "import tui.cli.main" + EXIT]),
            (
                "ocwatch status --json, 10 sessions",
                [py, "-m", "tui.cli.main", "status", "--json", "--server", server.url],
            ),
        ]
        for label, argv in rows:
            ms = [t * 1000 for t in wall(argv, env, args.runs)]
            print(f"{label:38} {min(ms):4.0f} / {statistics.median(ms):4.0f} / {max(ms):4.0f} ms")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
