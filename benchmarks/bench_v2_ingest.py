"""Benchmark: ingest of V2 (OpenCode 2.x) frames (issue 38: >= 100k events/s).

    python benchmarks/bench_v2_ingest.py [--frames 100000] [--busy 200] [--repeat 3]

Real 2.0.15 frames (tests/fixtures/v2, captured from the real server) in a busy stream's mix:
60 % streamed text (`session.text.delta`), 30 % the frames of whole runs in the order the
server sent them (steps, tools, asks, ends, catalog noise), 10 % `session.execution.started`
repeats, each for one of `busy` sessions, go through `ServerMonitor.on_data` of a monitor
reading V2, at full speed, no I/O, no derive. Printed: events per second (best of `repeat`),
and `json.loads` of the same frames beside it.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_ingest import arguments, ingest  # noqa: E402
from tui.core.monitor import ServerMonitor  # noqa: E402
from tui.core.protocols import V2  # noqa: E402


def frames(n: int, busy: int) -> list[str]:
    rnd = random.Random(1)
    runs = []
    for path in sorted((ROOT / "tests" / "fixtures" / "v2").glob("*.json")):
        fx = json.loads(path.read_text())
        runs.append((fx["session_id"], [d for _, d in fx["frames"]]))
    deltas = [d for _, fr in runs for d in fr if '"session.text.delta"' in d] or [
        '{"id":"evt_x","created":1,"type":"session.text.delta","data":{"sessionID":"S",'
        '"assistantMessageID":"msg_1","ordinal":0,"delta":"tok "}}'
    ]
    out: list[str] = []
    seq = 0
    while len(out) < n:
        sid = f"ses_{rnd.randrange(busy):05d}bench"
        r = rnd.random()
        if r < 0.6:
            out.append(rnd.choice(deltas).replace(runs[0][0], sid))
        elif r < 0.9:  # the next frame of the runs, in the order the server sent them
            old, run = runs[seq % len(runs)]
            out.append(run[(seq // len(runs)) % len(run)].replace(old, sid))
            seq += 1
        else:
            out.append(
                json.dumps(
                    {
                        "id": "evt_x",
                        "created": 1,
                        "type": "session.execution.started",
                        "data": {"sessionID": sid},
                    },
                    separators=(",", ":"),
                )
            )
    return out[:n]


def main() -> None:
    args = arguments()
    data = frames(args.frames, args.busy)

    def monitor() -> ServerMonitor:
        mon = ServerMonitor("http://bench:4096")
        mon.use(V2)
        return mon

    got = ingest(data, args.repeat, monitor)
    print(
        f"V2 ingest, {len(data):,} real 2.0.15 frames (60 % text deltas, 30 % whole runs, "
        f"10 % execution.started): {got}"
    )


if __name__ == "__main__":
    main()
