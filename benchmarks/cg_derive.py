"""derive() counted in instructions (callgrind), for figures a shared machine cannot blur.

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        python benchmarks/cg_derive.py [REPO] MODE K

MODE: `cold` (K derives over fresh worlds of 10,000 sessions, no memo), `first` (the same, each
with a fresh DeriveMemo: a monitor's first derive, as production runs it) or `resync` (K derives
after a resync with 1 % changed, with the monitor's memo), and `cold0` / `first0` / `resync0`,
which build the same inputs and derive nothing. Per derive: (instructions of MODE - instructions
of MODE0) / K. With CG_GC=off the collector is off throughout (the derive alone); with
CG_GC=keep each derive's rows and memo are kept, as production keeps them, and the young
collection that follows is counted (a cold run otherwise drops its rows at once, while the
memo's are walked by the interpreter's last collection); either way the interpreter leaves
without that last collection. REPO
(default: this checkout) lets another checkout's code be counted by the same script, e.g. a
worktree of an older commit.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

args = sys.argv[1:]
repo = args.pop(0) if len(args) == 3 else str(Path(__file__).resolve().parents[1])
mode, k = args[0], int(args[1])
sys.path.insert(0, repo)
os.chdir(repo)

import gc  # noqa: E402

gc_mode = os.environ.get("CG_GC")  # None, "off" or "keep"
kept: list[object] = []

import benchmarks.bench_derive as bench  # noqa: E402

derive = getattr(bench, "derive", None) or bench.derive_server
n = 10_000
settings = bench.Settings()


def settled() -> None:
    """The inputs' heap collected and frozen: a full collection over them, which comes when it
    comes (the count of allocations since the interpreter started decides it, and that moves with
    anything, the checkout's path included), would be counted as derive's."""
    gc.collect()
    gc.freeze()
    if gc_mode == "off":
        gc.disable()


if mode.startswith(("cold", "first")):
    worlds = [bench.world(n) for _ in range(k)]
    memos = [bench.DeriveMemo() if mode.startswith("first") else None for _ in range(k)]
    settled()
    if mode in ("cold", "first"):
        for (s, j), memo in zip(worlds, memos, strict=True):
            rows = derive(s, j, bench.T0, settings, memo=memo)
            if gc_mode == "keep":
                kept.append(rows)  # (and the memo: `memos`)
            del rows
else:
    s, j = bench.world(n)
    memo = bench.DeriveMemo()
    rows = derive(s, j, bench.T0, settings, memo=memo)
    snaps = []
    for r in range(k):
        s = bench.resync(s, n // 100, r)
        snaps.append(s)
    settled()
    if mode == "resync":
        for s in snaps:
            rows = derive(s, (), bench.T0, settings, previous=rows, memo=memo)
if gc_mode is not None:
    if gc_mode == "keep":
        gc.collect(0)  # the young collection the next allocation would start
    sys.stdout.flush()
    os._exit(0)
