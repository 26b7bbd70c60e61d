"""Benchmark: opening the conversation of a 500-message session (issue 12: first screen under
300 ms).

    python benchmarks/bench_conversation.py [--messages 500] [--repeat 20]

The real app (headless, Textual's test driver) on a fixed View; the messages come from an
in-process Peek (no HTTP: what the server costs is its own), 500 messages of prompts, two-line
replies and tool calls. Measured from the key press (`m`) to the first frame painted with the
newest page on screen, and to the frame with every message, p50 / p95 / max.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from textual import events

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_dashboard import painted_after, pct, record_paints  # noqa: E402

from tests.app import views  # noqa: E402
from tests.app.fake_peek import ChatPeek, chat  # noqa: E402
from tui.app import DashboardOptions, create_app  # noqa: E402
from tui.app.screens.conversation import ConversationScreen  # noqa: E402
from tui.core.source import StaticSource  # noqa: E402


async def run(n: int, repeat: int) -> None:
    record_paints()
    source = StaticSource(views.every_state(), views.history())
    app = create_app(
        source, DashboardOptions(clock=views.clock, server_urls=[views.A], peek=ChatPeek(chat(n)))
    )
    first: list[float] = []
    whole: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.main_screen.table.select_key((views.A, "ses_busy"))
        await pilot.pause()
        for _ in range(repeat):
            t0 = time.perf_counter()
            app.post_message(events.Key("m", "m"))  # as the terminal driver would
            while not isinstance(app.screen, ConversationScreen):
                await asyncio.sleep(0.001)
            screen = app.screen
            while not (screen.query("BlockLog") and screen.body.line_count):  # first lines
                await asyncio.sleep(0.001)
            first.append((await painted_after(time.perf_counter()) - t0) * 1000)
            while not (screen.loaded_all and screen.body.complete):
                await asyncio.sleep(0.001)
            whole.append((await painted_after(time.perf_counter()) - t0) * 1000)
            assert len(screen.items) == n
            await pilot.press("escape")
            await pilot.pause(0.05)
    print(
        f"conversation of {n} messages, {repeat} openings: first screen p50 "
        f"{pct(first, 50):.0f} ms, p95 {pct(first, 95):.0f} ms, max {max(first):.0f} ms; "
        f"every message p50 {pct(whole, 50):.0f} ms, p95 {pct(whole, 95):.0f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    asyncio.run(run(a.messages, a.repeat))


if __name__ == "__main__":
    main()
