"""One huge server text does not hang the dashboard (issue 40: a 10 MB title took 30 s to show
and 13 s a key, the details pane wrapping all of it at every repaint): every server text is cut
to a display size before it is laid out; `status --json` keeps it whole."""

from __future__ import annotations

from dataclasses import replace

from tui.app import format as fmt
from tui.core.view import View

from . import views
from .conftest import make_app

#: (4 MB: enough to show nothing lays it out whole, whose wrapping took seconds a key; the
#: suite's later tests measure this process's memory, so not the 64 MB tried by hand)
BIG = "/" + "x" * 4_000_000


def test_a_shown_text_is_cut_and_says_how_much_more() -> None:
    shown = fmt.literal(BIG)
    assert len(shown) < fmt.SHOWN_MAX + 40
    assert shown.endswith(f"… (+{len(BIG) - fmt.SHOWN_MAX:,} characters)")
    assert fmt.literal("short") == "short"
    cut = fmt.truncate(BIG, 30)
    assert len(cut) == 30 and cut.endswith("…")
    assert fmt.truncate_ask("bash: " + BIG, 30).endswith("…")


async def test_the_dashboard_lays_out_no_huge_field() -> None:
    v = views.every_state()
    rows = {
        k: replace(r, title=BIG, directory=BIG, error=BIG, evidence=(BIG, *r.evidence))
        for k, r in v.rows.items()
    }
    app, _ = make_app(View(v.generated_at, v.servers, rows))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.main_screen.pane.display
        assert 0 < len(app.main_screen.pane.text) < 40_000
        await pilot.press("down")
        await pilot.pause()
        assert len(app.main_screen.pane.text) < 40_000
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen is not app.main_screen  # the help painted
