"""Follow the demo's cycle for a while and report what the transition contract let through.

    python benchmarks/demo_transitions.py --minutes 15 [--speed 1]

Runs the built-in simulated server and a Fleet on it (as `ocwatch demo` does), derives the View
every 0.25 s and after every event batch, and prints: transitions by (from, to), how many went
through `unknown` for less than 5 s (a false intermediate state), the drift counter with its
examples, and the server restarts the demo staged (each one is a real outage: one drift at most).
Bounded: it stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tui.core.fleet import Fleet  # noqa: E402
from tui.core.settings import Settings  # noqa: E402
from tui.demo.server import DemoServer  # noqa: E402


def word(row) -> str:  # type: ignore[no-untyped-def]
    if row is None:
        return "-"
    return row.state + (f"/{row.reason}" if row.reason else "") + (" STALE" if row.stale else "")


async def main(minutes: float, speed: float) -> int:
    async with DemoServer(speed=speed) as server:
        fleet = Fleet([server.url], settings=Settings())
        changed = asyncio.Event()
        task = asyncio.create_task(fleet.run(changed.set))
        pairs: Counter[tuple[str, str]] = Counter()
        entered_unknown: dict[tuple[str, str], float] = {}
        brief_unknown = 0
        end = time.monotonic() + minutes * 60
        next_report = time.monotonic() + 60
        while time.monotonic() < end:
            changed.clear()
            view = fleet.current()
            for tr in fleet.last_changes.transitions if fleet.last_changes else ():
                if tr.before is None or tr.after is None:
                    continue
                pairs[(word(tr.before), word(tr.after))] += 1
                if tr.after.state == "unknown":
                    entered_unknown[tr.key] = view.generated_at
                elif (
                    tr.key in entered_unknown
                    and view.generated_at - entered_unknown.pop(tr.key) < 5
                ):
                    brief_unknown += 1
            if time.monotonic() >= next_report:
                next_report += 60
                info = view.servers[0]
                print(
                    f"{time.strftime('%H:%M:%S')} drift {info.drift_count} "
                    f"transitions {sum(pairs.values())} restarts {server.restarts}",
                    flush=True,
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), 0.25)
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        info = fleet.current().servers[0]
        print(
            f"\nafter {minutes:g} min at speed {speed:g}: {sum(pairs.values())} transitions, "
            f"{brief_unknown} through a brief unknown (< 5 s), drift {info.drift_count}, "
            f"server restarts staged {server.restarts}"
        )
        for ex in info.drift_examples:
            print("  drift:", ex)
        for (a, b), n in pairs.most_common():
            print(f"  {n:4d}  {a} -> {b}")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=15.0)
    ap.add_argument("--speed", type=float, default=1.0)
    a = ap.parse_args()
    sys.exit(asyncio.run(main(a.minutes, a.speed)))
