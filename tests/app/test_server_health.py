"""The header says when a stream went silent (a heartbeat missed), before it is dropped."""

from __future__ import annotations

from tui.app.widgets.server_bar import health, server_line
from tui.core.view import ServerInfo

T = 1_800_000_000.0


def test_a_silent_stream_reads_stalled_in_the_header():
    up = ServerInfo(
        "http://x",
        reachable=True,
        connected=True,
        snapshot_at=T,
        stream="connected",
        last_event_at=T,
    )
    assert health(up) == "connected"
    silent = ServerInfo(
        "http://x",
        reachable=True,
        connected=True,
        snapshot_at=T,
        stream="stalled",
        last_event_at=T - 20,
    )
    assert health(silent) == "stalled"
    line = server_line(silent, T).plain
    assert line.startswith("◐ stalled") and "last event 20s ago" in line
    assert (
        health(
            ServerInfo("http://x", reachable=True, connected=False, snapshot_at=T, stream="lost")
        )
        == "reconnecting"
    )


def test_the_servers_view_says_how_the_stream_was_last_lost_after_it_is_back():
    """A fault that passed is still said: how many reconnects, when and why the stream was last
    lost (its text shown literally), while the stream is connected again."""
    from tui.app.screens.servers import server_fields

    back = ServerInfo(
        "http://x",
        reachable=True,
        connected=True,
        snapshot_at=T,
        stream="connected",
        last_event_at=T,
        reconnects=2,
        stream_drop=(T - 5, "http://x: event larger than 16 MiB [b]x[/b]; refused"),
    )
    text = server_fields(back, [], T)["event stream"].plain
    assert "2 reconnects · last lost" in text
    assert "event larger than 16 MiB [b]x[/b]; refused" in text and "http://x:" not in text
    never = ServerInfo(
        "http://x",
        reachable=True,
        connected=True,
        snapshot_at=T,
        stream="connected",
        last_event_at=T,
    )
    assert "reconnect" not in server_fields(never, [], T)["event stream"].plain


def test_a_v2_server_says_its_protocol_in_the_header_and_the_servers_view():
    from tui.app.screens.servers import server_fields

    v2 = ServerInfo(
        "http://x",
        reachable=True,
        connected=True,
        snapshot_at=T,
        stream="connected",
        last_event_at=T,
        version="2.0.15",
        protocol="v2",
    )
    assert "v2.0.15  OpenCode V2" in server_line(v2, T).plain
    assert server_fields(v2, [], T)["url"].plain == "http://x · OpenCode V2 2.0.15"
    v1 = ServerInfo("http://x", reachable=True, version="1.18.33", protocol="v1")
    assert "OpenCode" not in server_line(v1, T).plain
    assert server_fields(v1, [], T)["url"].plain == "http://x"


def test_the_header_says_snapshots_fail_while_the_stream_beats():
    """Issue 40: the header read "● connected · last event now" through 150 s of HTTP 500."""
    failing = ServerInfo(
        "http://x",
        reachable=True,
        connected=True,
        snapshot_at=T,
        stream="connected",
        last_event_at=T,
        error="http://x GET /session/status: HTTP 500",
    )
    line = server_line(failing, T).plain
    assert line.startswith("● connected") and "snapshots failing: " in line
    assert "HTTP 500" in line
