"""`watch` lines and `wait --all`'s worst code, as scripts read them."""

from __future__ import annotations

import json

from tests.builders import SERVER, T0
from tui.cli.wait import worst
from tui.cli.watch import transition_json, transition_text
from tui.core.view import Pending, SessionRow, Transition


def srow(state: str, reason: str | None = None, title: str = "t") -> SessionRow:
    return SessionRow(
        SERVER,
        "ses_1",
        title,
        "/p",
        "ses_0",
        state,
        reason,
        False,
        ("why",),
        (Pending("permission", "per_1", "ses_1", "permission bash: ls"),)
        if state == "input"
        else (),
        T0 - 5,
        T0,
        None,
        None,
    )


def test_json_line_has_the_documented_fields():
    line = transition_json(Transition((SERVER, "ses_1"), srow("busy"), srow("input"), T0))
    assert json.loads(json.dumps(line)) == {
        "at": "2027-01-15T08:00:00.000Z",
        "server": SERVER,
        "session_id": "ses_1",
        "parent_id": "ses_0",
        "title": "t",
        "from": {"state": "busy", "reason": None, "stale": False},
        "to": {"state": "input", "reason": None, "stale": False},
        "since": "2027-01-15T07:59:55.000Z",
        "pending": [
            {
                "kind": "permission",
                "id": "per_1",
                "session_id": "ses_1",
                "summary": "permission bash: ls",
            }
        ],
        "evidence": ["why"],
    }
    first = transition_json(Transition((SERVER, "ses_1"), None, srow("busy"), T0))
    assert first["from"] is None
    gone = transition_json(Transition((SERVER, "ses_1"), srow("idle", "completed"), None, T0))
    assert (gone["to"], gone["since"], gone["pending"]) == (None, None, [])
    assert gone["from"] == {"state": "idle", "reason": "completed", "stale": False}


def test_text_line_shows_titles_literally():
    hostile = "\x1b[31mred\x1b[0m [bold]x[/]"
    line = transition_text(
        Transition((SERVER, "ses_1"), srow("busy"), srow("idle", "completed", hostile), T0),
        with_server=True,
    )
    assert "\x1b" not in line and "\\x1b[31mred" in line and "[bold]x[/]" in line
    assert "busy -> idle (completed)" in line and line.endswith(f"@{SERVER}")
    assert "new -> busy" in transition_text(
        Transition((SERVER, "ses_1"), None, srow("busy"), T0), with_server=False
    )


def test_worst_code_order():
    assert worst([0, 4, 3]) == 3
    assert worst([0, 1, 5]) == 1
    assert worst([0, 124, 1]) == 124
    assert worst([124, 2]) == 2
    assert worst([0, 0]) == 0


def test_a_readable_server_without_its_event_stream_is_said_once_and_its_return() -> None:
    """`watch` against a server whose event stream answered 429 said nothing while its lines
    came only at each resync (found by a review). After STREAM_QUIET s without a stream it
    says so, with why, once; and when it is back. A reconnect within it says nothing."""
    import io

    from tui.cli.watch import STREAM_QUIET, LinkNotes
    from tui.core.view import ServerInfo

    err = io.StringIO()
    notes = LinkNotes(err)

    def look(at: float, **info: object) -> None:
        notes.say([ServerInfo(url=SERVER, reachable=True, resync_every=30.0, **info)], at)

    look(T0, stream="connected")
    look(T0 + 1, stream="lost", stream_error="dropped")  # a reconnect, quickly done
    look(T0 + 2, stream="connected")
    assert err.getvalue() == ""
    why = "event stream answered HTTP 429"
    for t in range(3, 3 + int(STREAM_QUIET) + 5):
        look(T0 + t, stream="lost", stream_error=f"{SERVER}: {why}")
    look(T0 + 40, stream="connected")
    assert err.getvalue().splitlines() == [
        f"ocwatch watch: {SERVER}: no event stream for {STREAM_QUIET:.0f}s ({why}); changes "
        "show at each resync (every 30s) meanwhile",
        f"ocwatch watch: {SERVER}: event stream back",
    ]


def test_snapshots_failing_while_the_stream_beats_are_said_once_and_their_return() -> None:
    """Issue 40: 150 s of HTTP 500 on every REST route while the stream beat: `watch` said
    nothing. After STREAM_QUIET s of failing snapshots it says so, with why, once; and when a
    snapshot succeeds again."""
    import io

    from tui.cli.watch import STREAM_QUIET, LinkNotes
    from tui.core.view import ServerInfo

    err = io.StringIO()
    notes = LinkNotes(err)
    why = "GET /session/status: HTTP 500 Internal Server Error"
    failing = {"error": f"{SERVER} {why}", "error_since": T0}
    for t in range(int(STREAM_QUIET) + 5):
        notes.say([ServerInfo(url=SERVER, reachable=True, stream="connected", **failing)], T0 + t)
    notes.say([ServerInfo(url=SERVER, reachable=True, stream="connected")], T0 + 30)
    assert err.getvalue().splitlines() == [
        f"ocwatch watch: {SERVER}: snapshots failing for {STREAM_QUIET:.0f}s ({why}); the event "
        "stream still carries changes, nothing checks them against the server",
        f"ocwatch watch: {SERVER}: snapshots succeed again",
    ]


def test_a_row_whose_server_left_is_not_said_deleted():
    gone = Transition((SERVER, "ses_1"), srow("idle", "completed"), None, T0)
    assert "idle (completed) -> deleted" in transition_text(gone, True)
    left = transition_text(gone, True, left=True)
    assert "idle (completed) -> not watched (its server left)" in left and "deleted" not in left
    assert transition_json(gone, left=True)["server_left"] is True
    assert "server_left" not in transition_json(gone)


async def test_watch_says_servers_that_leave_an_inventory_left_and_names_each_line_s_server():
    """Seen by hand: `watch --servers-file` printed `idle (completed) -> deleted` for every
    session of a server taken out of the file (none was deleted), and its lines never said
    which server once a second one was added (it had one at start)."""
    import asyncio
    import io

    from tests.unit.test_fleet_membership import FAST, Listed
    from tui.cli.watch import watch
    from tui.core.targets import Servers, Target
    from tui.demo.server import DemoServer

    one = DemoServer(speed=400, heartbeat=0.05)
    one.freeze()
    async with one:
        listed = Listed(Target(one.url, name="one", source="file"))
        out, err = io.StringIO(), io.StringIO()
        stop = asyncio.Event()
        servers = Servers((), settings=FAST, sources=(listed,))
        task = asyncio.create_task(watch(servers, out=out, err=err, stop=stop))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while "new -> " not in out.getvalue():
            assert loop.time() < deadline and not task.done(), err.getvalue()
            await asyncio.sleep(0.02)
        listed.targets = []
        while "not watched (its server left)" not in out.getvalue():
            assert loop.time() < deadline and not task.done(), err.getvalue()
            await asyncio.sleep(0.02)
        stop.set()
        assert await task == 0
    lines = out.getvalue().splitlines()
    assert lines and all(line.endswith(f"@{one.url}") for line in lines)
    assert not any("deleted" in line for line in lines)


def test_wait_says_a_session_whose_server_left_is_not_unknown():
    """Seen by hand: `wait --servers-file` on a busy session whose server was taken out of the
    file said `unknown session ... on` the other server."""
    from tui.cli.wait import Awaited, _look
    from tui.core.exitcodes import ExitCode
    from tui.core.view import ServerInfo, View

    other = "http://127.0.0.1:4097"
    out = Awaited("ses_1", row=srow("busy"))
    _look(out, View(T0, (ServerInfo(url=other, reachable=True),), {}), T0, lambda url: None)
    assert out.code == ExitCode.USAGE
    assert out.message == f"its server {SERVER} is no longer watched"
    never = Awaited("ses_2")
    _look(never, View(T0, (ServerInfo(url=other, reachable=True),), {}), T0, lambda url: None)
    assert never.message == f"unknown session ses_2 on {other}"
