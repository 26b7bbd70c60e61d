"""Many servers (issue 44 item 4): the header stays one line, the sessions are grouped by
server (counted, each server folds), and the servers view puts first the ones that need
attention (unreachable, snapshots failing, drift)."""

from __future__ import annotations

import pytest
from textual.geometry import Size

from tui.app.screens.servers import ServerPanel, ServersScreen
from tui.app.tree import is_group
from tui.app.widgets.server_bar import ServerBar

from . import views
from .conftest import make_app
from .test_actions import until


async def test_many_servers_one_header_line_grouped_by_server_worst_first() -> None:
    view = views.fleet()
    app, _ = make_app(view, server_urls=[s.url for s in view.servers])
    async with app.run_test(size=(160, 40)) as pilot:
        t = app.main_screen.table
        await until(pilot, lambda: any(is_group(ln.key) for ln in t.lines))
        bar = app.main_screen.query_one("#servers")
        said = str(bar.render())
        assert "\n" not in said.strip()
        assert "4 connected" in said and "1 unreachable" in said and "1 failing" in said
        assert "first: build-5" in said and "5 servers" in said
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: "failing snapshots" not in str(bar.render()))
        narrow = str(bar.render())
        assert "\n" not in narrow.strip() and len(narrow.strip()) <= 78 and "build-5" in narrow
        heads = [ln for ln in t.lines if is_group(ln.key)]
        assert len(heads) == 3  # the servers with sessions, one line each
        assert t.grouped_by() == "server"
        await pilot.press("c")
        await until(pilot, lambda: all(is_group(ln.key) for ln in t.lines))
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, ServersScreen))
        await until(pilot, lambda: len(app.screen.query(ServerPanel)) == 5)
        order = [p.url for p in app.screen.query(ServerPanel)]
        assert order[:3] == ["http://build-5:4096", "http://build-4:4096", "http://build-2:4096"]


async def test_a_few_servers_keep_a_line_each_and_no_grouping() -> None:
    app, _ = make_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        said = str(app.main_screen.query_one("#servers").render())
        assert said.count("\n") == 1  # two servers, two lines
        assert app.main_screen.table.grouped_by() == "none"


async def test_the_fleet_header_before_the_bar_is_laid_out_is_the_one_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first View can come before the header is laid out (a loaded machine): it is cut to
    the width the header will have, not the whole screen's, or the first paint differs from
    every later one (a snapshot at 80 columns caught the wide words under load)."""
    view = views.fleet()
    urls = [s.url for s in view.servers]
    app, _ = make_app(view, server_urls=urls)
    async with app.run_test(size=(80, 24)) as pilot:
        bar = app.main_screen.query_one(ServerBar)
        await until(pilot, lambda: app.view is not None and bar.size.width > 0)
        app.pull()  # (shown with the laid-out width)
        laid_out = bar._shown
        assert laid_out is not None and "first: build-5" in laid_out[0]
        with monkeypatch.context() as m:
            m.setattr(ServerBar, "size", property(lambda self: Size(0, 0)))  # not laid out
            bar._shown = None
            bar.show(app.view, app.now, urls)
        assert bar._shown == laid_out


async def test_the_servers_view_says_the_servers_that_left() -> None:
    """A server that went away (discovery) or was taken out of a servers file is said in the
    servers view with when and why, the latest first (the toast is gone in seconds); its words
    (a folder's name, from the machine) are shown literally."""
    from tui.app import DashboardOptions, create_app
    from tui.core.source import StaticSource

    source = StaticSource(views.every_state(), views.history())
    shop = "http://127.0.0.1:34251"
    source.gone = {  # type: ignore[attr-defined]
        shop: (
            views.NOW - 30,
            f"shop {shop} (opencode TUI, pid 8, ~/[bold]shop[/]) went away (its process ended)",
        ),
        "http://10.0.0.5:4096": (views.NOW - 90, "was taken out of the servers file"),
    }
    app = create_app(source, DashboardOptions(clock=views.clock, server_urls=[views.A, views.B]))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, ServersScreen))
        await until(pilot, lambda: len(app.screen.query("#servers-gone")) == 1)
        said = str(app.screen.query_one("#servers-gone").render())
        lines = said.splitlines()
        assert lines[0] == "Gone (2)"
        assert "~/[bold]shop[/]) went away" in lines[1] and shop in lines[1]  # the latest first
        assert lines[2].endswith("http://10.0.0.5:4096 was taken out of the servers file")
        assert len(app.screen.query(ServerPanel)) == 2  # the watched servers' panels stay


async def test_the_servers_view_moves_its_panels_and_never_remounts_them_all() -> None:
    """Servers coming and going (discovery) and the attention order moving: the panels of the
    servers that stay are moved, not mounted again (mounting them all left the view blank for
    seconds on a loaded machine, seen by hand), and the order is the attention order."""
    from dataclasses import replace

    view = views.fleet()
    app, source = make_app(view, server_urls=[s.url for s in view.servers])
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, ServersScreen))
        await until(pilot, lambda: len(app.screen.query(ServerPanel)) == 5)
        before = {p.url: p for p in app.screen.query(ServerPanel)}
        by_url = {s.url: s for s in view.servers}
        up = replace(by_url["http://build-5:4096"], reachable=True, error=None, connected=True)
        new = replace(up, url="http://build-6:4096", name="build-6")
        servers = tuple(
            up if s.url == up.url else s for s in view.servers if s.url != "http://build-3:4096"
        ) + (new,)
        rows = {k: r for k, r in view.rows.items() if r.server != "http://build-3:4096"}
        source.set(replace(view, servers=servers, rows=rows))
        await until(
            pilot,
            lambda: (
                [p.url for p in app.screen.query(ServerPanel)]
                == [
                    "http://build-4:4096",  # snapshots failing: first
                    "http://build-2:4096",  # drifting
                    "http://build-1:4096",
                    "http://build-5:4096",
                    "http://build-6:4096",
                ]
            ),
        )
        after = {p.url: p for p in app.screen.query(ServerPanel)}
        assert all(after[u] is before[u] for u in after if u in before)  # moved, the same
        await until(pilot, lambda: after["http://build-6:4096"].is_mounted)
