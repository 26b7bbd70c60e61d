"""Benchmark: derive() over N sessions in a realistic mix of states (median of repeated runs).

    python benchmarks/bench_derive.py [N ...]      # default: 1000 2500 5000 10000

Target (issue 2): under 50 ms for 10,000 sessions, linear in sessions.

Five figures:
- cold: the first derive over a freshly built world (new Session and Message objects for every
  repetition, built outside the timer), so no per-object state can flatter it;
- first, as production runs it: the same, with a fresh DeriveMemo (ServerStore always passes
  its memo, so a monitor's first derive is this one, not the cold one);
- after a resync, as the monitor derives it: a new Snapshot over the same Session and Message
  objects (MessageCache and sessions_from reuse those of unchanged sessions), 1% of sessions with
  a new last message, the previous rows alive and passed, with the monitor's DeriveMemo;
- the same without a memo: every row derived again (the worst case after a resync);
- warm: as the monitor derives between snapshots, with a memo, 1% of sessions touched by events.
"""

from __future__ import annotations

import dataclasses
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.builders import (  # noqa: E402
    T0,
    assistant,
    busy,
    entries,
    permission,
    retry,
    session,
    snap,
    status_event,
    user,
)
from tui.core.derive import DeriveMemo, derive_server  # noqa: E402
from tui.core.gcpause import gc_paused  # noqa: E402
from tui.core.journal import Journal  # noqa: E402
from tui.core.models import SessionStatus  # noqa: E402
from tui.core.settings import Settings  # noqa: E402


def world(n: int):
    sessions, status, messages, perms = [], {}, {}, []
    for i in range(n):
        sid = f"ses_{i:06d}"
        parent = f"ses_{i - 1:06d}" if i % 10 == 9 else None
        sessions.append(session(sid, parent=parent, directory=f"/p/{i % 7}"))
        kind = i % 8
        if kind == 0:
            status[sid] = busy()
            messages[sid] = assistant("msg_2", sid, created=T0 - 30, tools=("running",))
        elif kind == 1:
            status[sid] = retry()
            messages[sid] = user("msg_1", sid, created=T0 - 30)
        elif kind == 2:
            status[sid] = busy()
            messages[sid] = assistant(
                "msg_2", sid, created=T0 - 60, completed=T0 - 50, finish="stop"
            )
        elif kind == 3:
            perms.append(permission(f"per_{i}", sid))
            status[sid] = busy()
        elif kind == 4:
            messages[sid] = assistant(
                "msg_2", sid, created=T0 - 90, completed=T0 - 80, error="APIError"
            )
        elif kind == 5:
            messages[sid] = assistant("msg_2", sid, created=T0 - 900)
        else:
            messages[sid] = assistant(
                "msg_2", sid, created=T0 - 90, completed=T0 - 80, finish="stop"
            )
    s = snap(sessions, status=status, messages=messages, permissions=perms)
    j = entries(*[status_event(f"ses_{i:06d}", "busy", T0 - 1) for i in range(0, n, 50)])
    return s, j


def derive(*args, **kwargs):
    """derive_server() as the monitor calls it: with the cyclic GC paused (ServerMonitor.rows)."""
    with gc_paused():
        return derive_server(*args, **kwargs)


def timed(run) -> list:
    """[what run() returned, the seconds it took], starting from a collected heap (the garbage of
    building the inputs is not derive's; the collection derive's own allocations cause is)."""
    gc.collect()
    t = time.perf_counter()
    out = run()
    return [out, time.perf_counter() - t]


def measure(n: int, repeat: int = 15, memo: bool = False) -> float:
    """Cold: each repetition derives over a world built just before (outside the timer); with
    `memo`, as the monitor's first derive: with a fresh DeriveMemo and no previous rows."""
    settings = Settings()
    derive(*world(n), T0, settings, memo=DeriveMemo() if memo else None)  # warm up the code
    times = []
    for _ in range(repeat):
        s, j = world(n)
        keep = DeriveMemo() if memo else None
        times.append(timed(lambda: derive(s, j, T0, settings, memo=keep))[1])  # noqa: B023
    return statistics.median(times) * 1000


def resync(s, changed: int, r: int):
    """A new Snapshot as a resync of `s` gives it (MessageCache and sessions_from reuse the
    objects of unchanged sessions; status entries are parsed again), `changed` sessions with a
    new last message, taken a little later (every session's claim or quiet time moves)."""
    n = len(s.sessions)
    messages = dict(s.messages)
    for i in range(changed):
        sid = f"ses_{(r * changed + i) % n:06d}"
        messages[sid] = assistant("msg_3", sid, created=T0 - 5, completed=T0 - 4, finish="stop")
    status = {sid: SessionStatus.parse(e.to_wire()) for sid, e in s.status.items()}
    return dataclasses.replace(
        s,
        sessions=dict(s.sessions),
        status=status,
        messages=messages,
        started_at=s.started_at + 0.01,
    )


def measure_resync(n: int, memo: bool, repeat: int = 15) -> float:
    """After a resync (1% of sessions changed), with the previous rows alive as the monitor keeps
    them; with the monitor's memo, or re-deriving every row."""
    s, j = world(n)
    settings = Settings()
    keep = DeriveMemo() if memo else None
    rows = derive(s, j, T0, settings, memo=keep)
    times = []
    for r in range(repeat):
        s = resync(s, max(1, n // 100), r)
        rows, elapsed = timed(
            lambda s=s, rows=rows: derive(s, (), T0, settings, previous=rows, memo=keep)
        )
        times.append(elapsed)
    return statistics.median(times) * 1000


def measure_warm(n: int, changed: int, repeat: int = 15) -> float:
    """As the monitor derives: with a memo, `changed` sessions touched by events in between."""
    s, _j = world(n)
    journal = Journal(limit=10**6)
    settings = Settings()
    memo = DeriveMemo()
    rows = derive(s, journal.facts(), T0, settings, memo=memo)
    times = []
    for r in range(repeat):
        for i in range(changed):
            journal.add(status_event(f"ses_{(r * changed + i) % n:06d}", "busy", T0))
        t = time.perf_counter()
        rows = derive(s, journal.facts(), T0, settings, previous=rows, memo=memo)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 2500, 5000, 10000]
    for n in sizes:
        # interleaved, so that a shared machine's drift moves both figures alike
        cold, first = measure(n), measure(n, memo=True)
        print(
            f"derive() {n:>6} sessions, cold:  {cold:7.1f} ms median  "
            f"({cold / n * 1000:.2f} us/session)"
        )
        print(
            f"derive() {n:>6} sessions, first with a fresh memo (what production runs): "
            f"{first:7.1f} ms median ({first / cold:.2f}x cold)"
        )
    for n in sizes:
        ms = measure_resync(n, memo=True)
        print(
            f"derive() {n:>6} sessions, after a resync (1% changed), monitor's memo: "
            f"{ms:6.1f} ms median"
        )
    for n in sizes:
        ms = measure_resync(n, memo=False)
        print(
            f"derive() {n:>6} sessions, after a resync (1% changed), every row again: "
            f"{ms:6.1f} ms median"
        )
    for n in sizes:
        ms = measure_warm(n, max(1, n // 100))
        print(
            f"derive() {n:>6} sessions, warm (memo, 1% touched since the last): {ms:6.1f} ms median"
        )
