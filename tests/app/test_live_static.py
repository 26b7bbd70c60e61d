"""Status lines repaint only on change, but always get the height their lines need."""

from __future__ import annotations

from tui.app.widgets.server_bar import ServerBar, server_line
from tui.core.view import ServerInfo, View

from . import views
from .conftest import make_app
from .test_actions import pulled

T0 = views.NOW


def servers(error: str) -> tuple[ServerInfo, ...]:
    return (
        ServerInfo(
            url=views.A, reachable=False, error=error, last_event_at=T0 - 9, snapshot_at=T0 - 100
        ),
        ServerInfo(
            url=views.B, version="1.0", reachable=True, connected=True, last_event_at=T0 - 59
        ),
    )


async def bar_height(shown_at: float, started_at: float, error: str) -> int:
    clock = [started_at]
    view = View(T0, servers(error), views.every_state().rows)
    app, source = make_app(view)
    app.clock = lambda: clock[0]
    async with app.run_test(size=(80, 24)) as pilot:
        await pulled(pilot, app, view)
        if shown_at != started_at:
            clock[0] = shown_at
            later = View(T0, servers(error), view.rows)
            source.set(later)
            await pulled(pilot, app, later)  # (and laid out: a pause ends with the layout)
        return app.screen.query_one(ServerBar).region.height


async def test_a_line_that_starts_to_wrap_grows_the_bar_though_the_total_length_holds() -> None:
    error = "E"
    while server_line(servers(error)[0], T0).cell_length < 78:  # the bar's width at 80 columns
        error += "x"
    before = [server_line(s, T0).plain for s in servers(error)]
    after = [server_line(s, T0 + 1).plain for s in servers(error)]
    # a second later one line grows ("10s ago": it wraps) and the other shrinks ("1m ago")
    assert sum(map(len, before)) == sum(map(len, after)) and before != after
    assert await bar_height(T0, T0, error) == 2
    assert await bar_height(T0 + 1, T0, error) == await bar_height(T0 + 1, T0 + 1, error) == 3
