"""A digest of everything a replay shows: to check that a change to the replay path leaves it
exact (the same file gives the same Views and transitions).

    python benchmarks/replay_digest.py [FILE...]    (default: every tests/fixtures/*.ndjson)

For each file it hashes, separately:
- follow: every View `watch --replay` pulls (as `status --json` prints it) with its transitions
  (as `watch --json` prints them), in order;
- step: every record applied by `Replay.step`, the View pulled after each (the whole View, its
  transitions) — for files up to --step-limit records; and the View at the end (`status`'s way);
- at: `status --json --replay FILE --at T` for T at each recorded second (files up to
  --at-limit records; larger files: at five moments).
Run it before and after a change and compare the output.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tui.cli.watch import transition_json  # noqa: E402
from tui.core import text  # noqa: E402
from tui.core.view import Changes, View  # noqa: E402
from tui.record.replay import Replay  # noqa: E402

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "tests" / "fixtures").glob("*.ndjson"))


def _view_text(view: View) -> str:
    return text.dumps(view.to_json(), indent=2) + "\n" + repr(view.servers)


def _changes_text(changes: Changes | None) -> str:
    if changes is None:
        return "-"
    return "\n".join(text.dumps(transition_json(tr)) for tr in changes.transitions)


class _Hash:
    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self.n = 0

    def add(self, *parts: Any) -> None:
        for p in parts:
            self.h.update(str(p).encode())
            self.h.update(b"\x00")
        self.n += 1

    def __str__(self) -> str:
        return f"{self.h.hexdigest()[:16]} ({self.n})"


async def _follow(path: Path) -> tuple[str, str, float, float]:
    views, transitions = _Hash(), _Hash()
    replay = Replay(path)

    def observe(view: View, changes: Changes | None) -> None:
        views.add(_view_text(view), repr(sorted(view.rows.items())))
        transitions.add(_changes_text(changes))

    await replay.follow(observe)
    return str(views), str(transitions), replay.start, replay.now


async def _step(path: Path, each: bool) -> str:
    h = _Hash()
    replay = Replay(path)
    while (await replay.step()) is not None:
        if each:
            view = replay.view()
            h.add(_view_text(view), _changes_text(replay.last_changes))
    view = replay.view()
    h.add(_view_text(view), _changes_text(replay.last_changes), repr(sorted(view.rows.items())))
    return str(h)


async def _at(path: Path, moments: list[float]) -> str:
    h = _Hash()
    for at in moments:
        replay = Replay(path)
        await replay.follow(lambda _v, _c: None, until=at)
        h.add(at, _view_text(replay.view()))
    return str(h)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--step-limit", type=int, default=5000)
    parser.add_argument("--at-limit", type=int, default=5000)
    args = parser.parse_args()
    for path in args.files or FIXTURES:
        views, transitions, start, end = asyncio.run(_follow(path))
        records = sum(1 for _ in Replay(path)._records)
        step = asyncio.run(_step(path, records <= args.step_limit))
        if records <= args.at_limit:
            moments = [start + k for k in range(int(end - start) + 2)]
        else:
            moments = [start + (end - start) * k / 4 for k in range(5)]
        at = asyncio.run(_at(path, moments))
        print(f"{path.name}: follow {views} transitions {transitions} step {step} at {at}")


if __name__ == "__main__":
    main()
