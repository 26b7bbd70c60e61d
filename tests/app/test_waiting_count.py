"""The count of what waits for input (issue 41 item 10): a sub-agent's one request shows on its
own row and, rolled up, on its parent's; the header and `status --format tmux` count it once (the
requests waiting, by id), not once per row that shows it."""

from __future__ import annotations

from tests.builders import SERVER, T0, assistant, busy, permission, question, session, snap
from tui.app.widgets.summary import counts_line
from tui.cli.status import tmux_line
from tui.core.derive import derive_server
from tui.core.settings import Settings
from tui.core.view import ServerInfo, View, waiting_requests


def view_of(*, permissions=(), questions=(), sessions=None) -> View:  # type: ignore[no-untyped-def]
    sessions = sessions or [session("p"), session("c", parent="p")]
    s = snap(
        sessions,
        status={x.id: busy() for x in sessions},
        messages={
            x.id: assistant(f"m{x.id}", x.id, created=T0 - 10, tools=("running",)) for x in sessions
        },
        permissions=list(permissions),
        questions=list(questions),
    )
    rows = derive_server(s, (), T0, Settings())
    return View(T0, (ServerInfo(url=SERVER, reachable=True),), dict(rows))


def test_a_sub_agents_one_request_counts_once() -> None:
    view = view_of(permissions=[permission("per_1", "c")])
    assert [r.state for r in view.rows.values()] == ["input", "input"]  # both rows show it
    assert waiting_requests(view.rows.values()) == 1
    assert "? input 1 (2 rows) " in counts_line(view).plain  # the rows add up to the total
    assert tmux_line(view) == "#[fg=yellow]? 1#[default]"


def test_each_request_counts_whoever_shows_it() -> None:
    """Two asks of the child and one of the parent: three, not the five the rows show."""
    view = view_of(
        permissions=[permission("per_1", "c"), permission("per_2", "p")],
        questions=[question("que_1", "c")],
    )
    assert waiting_requests(view.rows.values()) == 3
    assert "? input 3 (2 rows) " in counts_line(view).plain
    assert tmux_line(view) == "#[fg=yellow]? 3#[default]"


def test_nothing_waiting_counts_none() -> None:
    view = view_of()
    assert waiting_requests(view.rows.values()) == 0
    assert "? input 0 " in counts_line(view).plain
    assert tmux_line(view) == "#[fg=cyan]● 2#[default]"


def test_one_request_per_row_says_no_rows() -> None:
    view = view_of(permissions=[permission("per_1", "p")], sessions=[session("p"), session("q")])
    line = counts_line(view).plain
    assert "? input 1  " in line and "rows)" not in line


def test_short_of_room_the_rows_go_before_the_total() -> None:
    view = view_of(permissions=[permission("per_1", "c")])
    wide = counts_line(view).plain
    assert "(2 rows)" in wide and wide.endswith("2 total")
    narrower = counts_line(view, width=len(wide) - 1).plain
    assert "rows" not in narrower and narrower.endswith("2 total")


def test_two_requests_on_one_row_say_one_row() -> None:
    view = view_of(
        permissions=[permission("per_1", "p"), permission("per_2", "p")], sessions=[session("p")]
    )
    assert "? input 2 (1 row)  " in counts_line(view).plain
