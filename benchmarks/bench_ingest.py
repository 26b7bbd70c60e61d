"""Benchmark: the core's ingest path (issue 15, "a cheap ingest path").

    python benchmarks/bench_ingest.py [--frames 100000] [--busy 200] [--repeat 3]

Frames in bench_dashboard's mix (60 % streamed-token `message.part.delta`, 30 % text
`message.part.updated`, 10 % `session.status` busy repeats, for `busy` sessions, in the compact
form the server sends) go through `ServerMonitor.on_data` at full speed, with no I/O and no
derive: parser, journal (with its overflow), snapshot requests. Printed: events per second (best
of `repeat`), and the floor beside it: `json.loads` of the same frames [target >= 100,000/s].
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tui.core.monitor import ServerMonitor  # noqa: E402


def frames(n: int, busy: int) -> list[str]:
    rnd = random.Random(1)
    out = []
    for i in range(n):
        sid = f"ses_{rnd.randrange(busy):05d}"
        eid = f"evt_{i:08d}"  # (each event its own id, as a server sends them)
        r = rnd.random()
        if r < 0.6:
            payload = {
                "id": eid,
                "type": "message.part.delta",
                "properties": {
                    "sessionID": sid,
                    "messageID": "msg_2",
                    "partID": "prt_1",
                    "field": "text",
                    "delta": "tok ",
                },
            }
        elif r < 0.9:
            payload = {
                "id": eid,
                "type": "message.part.updated",
                "properties": {
                    "sessionID": sid,
                    "part": {
                        "id": "prt_1",
                        "sessionID": sid,
                        "messageID": "msg_2",
                        "type": "text",
                        "text": "streaming " * 20,
                    },
                },
            }
        else:
            payload = {
                "id": eid,
                "type": "session.status",
                "properties": {"sessionID": sid, "status": {"type": "busy"}},
            }
        out.append(
            json.dumps(
                {"directory": "/p/a", "project": "prj", "payload": payload}, separators=(",", ":")
            )
        )
    return out


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=100_000)
    ap.add_argument("--busy", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    return ap.parse_args()


def ingest(data: list[str], repeat: int, monitor: Callable[[], ServerMonitor]) -> str:
    """`data` through `monitor()`'s on_data, the best of `repeat` (and json.loads alone beside
    it), as the line to print."""
    best = floor = 0.0
    for _ in range(repeat):
        mon = monitor()
        mon._connected = True
        started = time.perf_counter()
        for d in data:
            mon.on_data(d)
        best = max(best, len(data) / (time.perf_counter() - started))
        started = time.perf_counter()
        for d in data:
            json.loads(d)
        floor = max(floor, len(data) / (time.perf_counter() - started))
    return (
        f"{best:,.0f} events/s ({1e6 / best:.1f} us/event) [target >= 100,000]; "
        f"json.loads alone: {floor:,.0f}/s ({1e6 / floor:.1f} us)"
    )


def main() -> None:
    args = arguments()
    data = frames(args.frames, args.busy)
    got = ingest(data, args.repeat, lambda: ServerMonitor("http://bench:4096"))
    print(f"ingest, {len(data):,} frames (60 % token deltas, 30 % text parts, 10 % status): {got}")


if __name__ == "__main__":
    main()
