"""Benchmark: parsing what a snapshot fetches, and what the parsed objects weigh.

    python benchmarks/bench_parse.py [N]      # default: 10000

Parses N sessions (copies of a recorded real session listing, each with its own id) and N last
messages (copies of recorded real messages, completed and with tool parts), as fetch_snapshot does,
and reports the median time of each and the memory the parsed objects hold (tracemalloc).
"""

from __future__ import annotations

import copy
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.recorded import answer, last_message  # noqa: E402
from tui.core.models import Message, Session  # noqa: E402


def payloads(n: int) -> tuple[list[dict], list[dict]]:
    sessions = answer("all_states", "/experimental/session")
    messages = [last_message("all_states", role) for role in ("completed", "parent", "failed")]
    raw_s, raw_m = [], []
    for i in range(n):
        s = copy.deepcopy(sessions[i % len(sessions)])
        s["id"] = f"ses_{i:06d}"
        raw_s.append(s)
        m = copy.deepcopy(messages[i % len(messages)])
        m["info"]["sessionID"] = s["id"]
        raw_m.append(m)
    return raw_s, raw_m


def timed(fn, items: list[dict], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        out = [fn(x) for x in items]
        times.append(time.perf_counter() - t)
        del out
    return statistics.median(times) * 1000


def weight(fn, items: list[dict]) -> float:
    gc.collect()
    tracemalloc.start()
    out = [fn(x) for x in items]
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del out
    return held / 1e6


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    raw_s, raw_m = payloads(n)
    for label, fn, items in (
        ("sessions", Session.parse, raw_s),
        ("last messages", Message.parse, raw_m),
    ):
        print(
            f"parse {n} {label}: {timed(fn, items):6.1f} ms median, "
            f"{weight(fn, items):5.1f} MB held"
        )
