"""StripView repaints only the lines in view that a new set of lines changed."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.strip import Strip

from tui.app.widgets.strip_view import StripView


class Lines(App[None]):
    def compose(self) -> ComposeResult:
        yield StripView(id="view")


def strips(texts: list[str]) -> list[Strip]:
    from rich.segment import Segment

    return [Strip([Segment(t.ljust(30))], 30) for t in texts]


async def test_a_line_changed_alone_is_repainted_alone() -> None:
    app = Lines()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.query_one(StripView)
        texts = [f"line {i}" for i in range(30)]
        view.show_lines(strips(texts), 30)
        await pilot.pause()
        painted: list[int] = []
        render_line = view.render_line

        def spy(y: int) -> Strip:
            painted.append(y)
            return render_line(y)

        view.render_line = spy  # type: ignore[method-assign]
        texts[3] = "line 3, changed"
        texts[25] = "line 25, changed, out of view"
        view.show_lines(strips(texts), 30)
        await pilot.pause()
        assert painted == [3]
        assert "line 3, changed" in "".join(s.text for s in view.render_line(3))
        painted.clear()
        view.scroll_to(y=20, animate=False, immediate=True)
        await pilot.pause()
        assert "line 25, changed" in "".join(s.text for s in render_line(5))
        texts[24] = "line 24, changed in view"
        view.show_lines(strips(texts), 30)
        painted.clear()
        await pilot.pause()
        assert painted == [4]  # (line 24, fifth from the top)
        painted.clear()
        view.show_lines(strips([f"other {i}" for i in range(30)]), 30)  # all of them
        await pilot.pause()
        assert len(painted) >= view.scrollable_content_region.height
