"""The dashboard paints a large server's rows before their last messages are in (issue 15):
what the maps decide shows at once, the rest says `loading` in the reason column and in the
counts line, and the server bar says how far the reading is; then every row settles."""

from __future__ import annotations

import asyncio

from tests.app.test_actions import until
from tests.unit.test_progressive import T0, URL, Held, server
from tui.app import DashboardOptions, create_app
from tui.app.widgets.session_table import row_key_str
from tui.core.fleet import Fleet


def cells(app, sid: str) -> list[str]:  # type: ignore[no-untyped-def]
    table = app.main_screen.table
    return [c.plain for c in table.get_row(row_key_str((URL, sid)))]


async def test_rows_show_while_their_last_messages_load() -> None:
    api = Held(server())
    # the server's clock, not today's: its sessions are dated around T0 (2027-01-15) and,
    # read on a later day, the idle ones would be folded away as idle for over 12 h
    fleet = Fleet([URL], transport=api.transport(), progressive=True, clock=lambda: T0)
    app = create_app(fleet, DashboardOptions(server_urls=[URL], clock=lambda: T0))
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.main_screen.table
        await until(pilot, lambda: table.row_count == 7)
        assert table.row_count == 7  # every session, though no last message is read
        assert api.asked and not api.release.is_set()
        assert "loading" in cells(app, "ses_i0")
        # what needs someone first; rows that claim nothing yet last
        order = [key.split("\x1f")[1] for key in table.row_keys]
        assert order[0] == "ses_ask"
        assert set(order[-4:]) == {"ses_new", "ses_i0", "ses_i1", "ses_i2"}
        assert any("input" in c or "?" in c for c in cells(app, "ses_ask"))
        counts = str(app.main_screen.query_one("Summary").render())
        assert "loading 4" in counts  # the four that are not busy (ses_busy is, unsettled)
        await until(pilot, lambda: app.heap.frozen)
        assert not app.heap.complete  # frozen with the rows; the messages are still to come
        assert "unknown 0" in counts or "◌ 0" in counts
        bar = str(app.main_screen.query_one("ServerBar").render())
        assert "loading sessions" in bar
        api.release.set()
        await until(
            pilot,
            lambda: (
                not any(
                    "loading" in c
                    for c in (
                        *cells(app, "ses_i0"),
                        *cells(app, "ses_busy"),
                        str(app.main_screen.query_one("Summary").render()),
                    )
                )
            ),
        )
        assert "completed" in cells(app, "ses_i0")
        assert "loading" not in cells(app, "ses_busy")  # same state, busy: the cell is redrawn
        assert "loading" not in str(app.main_screen.query_one("Summary").render())
        await until(pilot, lambda: app.heap.complete)  # frozen again, the messages in
        await asyncio.sleep(0)
