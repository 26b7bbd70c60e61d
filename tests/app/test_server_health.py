"""The header says when a stream went silent (a heartbeat missed), before it is dropped."""

from __future__ import annotations

from tui.app.widgets.server_bar import health, server_line
from tui.core.view import ServerInfo

T = 1_800_000_000.0


def test_a_silent_stream_reads_stalled_in_the_header():
    up = ServerInfo("http://x", reachable=True, connected=True, snapshot_at=T, stream="connected",
                    last_event_at=T)
    assert health(up) == "connected"
    silent = ServerInfo("http://x", reachable=True, connected=True, snapshot_at=T,
                        stream="stalled", last_event_at=T - 20)
    assert health(silent) == "stalled"
    line = server_line(silent, T).plain
    assert line.startswith("◐ stalled") and "last event 20s ago" in line
    assert health(ServerInfo("http://x", reachable=True, connected=False, snapshot_at=T,
                             stream="lost")) == "reconnecting"
