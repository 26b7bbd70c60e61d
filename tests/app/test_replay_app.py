"""`ocwatch replay`: the dashboard driven by a recording says it is a replay and of what, plays,
pauses and seeks from its keys, and has no actions."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from tests.unit.test_recording import record_a_run
from tui.app import create_app
from tui.record.replay import ReplaySource


async def test_the_replay_dashboard(tmp_path: Path) -> None:
    path = tmp_path / "run.ndjson"
    await record_a_run(path)
    source = ReplaySource(path, speed=1000)
    app = create_app(source, clock=source.clock, server_urls=["http://test:4096"], replay=source)
    notes: list[str] = []
    app.notify = lambda message, **kw: notes.append(message)  # type: ignore[method-assign]
    async with app.run_test(size=(100, 30)) as pilot:
        bar = app.main_screen.query_one("#replay", Static)

        async def until(what: str) -> None:
            for _ in range(200):
                await pilot.pause(0.02)
                if what in str(bar.render()):
                    return
            raise AssertionError(f"{what!r} not in {bar.render()}")

        await until("replay of run.ndjson")
        await until("ended")
        assert {k[1]: r.state for k, r in app.view.rows.items()} == {  # type: ignore[union-attr]
            "ses_1": "idle", "ses_2": "input"}
        await pilot.press("r")  # on the first row: no actions in a replay
        await pilot.pause(0.05)
        assert any("replay of a recording" in n for n in notes), notes
        await pilot.press("p")
        await until("paused")
        await pilot.press("less_than_sign")  # back to the start (paused: it stays there)
        await until("+0s")
        await pilot.press("question_mark")
        await pilot.pause(0.1)
        help_text = "\n".join(str(w.render()) for w in app.screen.query(Static))
        assert "Pause/play" in help_text and "run.ndjson" in help_text
