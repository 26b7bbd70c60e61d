"""Why a server cannot be read is said one way (ServerInfo.why_unread), by every command:
`status`, `watch` (live and replayed), `wait`, `report` and the exporter's log."""

from __future__ import annotations

import io

import pytest

from tui.cli import report, status, wait, watch
from tui.cli.metrics import server_log
from tui.core.client import OcwatchError
from tui.core.view import ServerInfo, View

URL = "http://127.0.0.1:4096"
REFUSED = f"{URL}: cannot connect (connection refused)"
NEVER = ServerInfo(URL)  # no error, no snapshot: the first look has not ended
LOST = ServerInfo(URL, first_snapshot=True, snapshot_at=1.0)  # read, down, no error said
FAILED = ServerInfo(URL, error=REFUSED, error_since=1.0)


def test_the_one_sentence() -> None:
    assert NEVER.why_unread() == f"{URL}: not read yet"
    assert LOST.why_unread() == f"{URL}: unreachable"
    assert FAILED.why_unread() == REFUSED  # (the monitor's error names the URL)


@pytest.mark.parametrize("server", [NEVER, LOST, FAILED], ids=["never", "lost", "failed"])
def test_every_command_says_it_the_same(
    server: ServerInfo, capsys: pytest.CaptureFixture[str]
) -> None:
    said = server.why_unread()
    view = View(2.0, (server,), {})
    assert status.print_view(view, "tmux") == 2
    assert capsys.readouterr().err == f"ocwatch: {said}\n"
    err = io.StringIO()
    watch.LinkNotes(err).say(view.servers, 2.0)
    assert err.getvalue() == f"ocwatch watch: {said}\n"
    out = wait.Awaited("ses_1")
    wait._unreadable(out, [server], 2.0, lambda url: None)
    assert out.message == said
    with pytest.raises(OcwatchError) as got:
        report._row_of(view, "ses_1")
    assert str(got.value) == said


def test_the_exporter_log_says_it_without_the_url_it_names() -> None:
    err = io.StringIO()
    server_log(err)(View(2.0, (FAILED,), {}), None)
    assert err.getvalue() == f"ocwatch metrics: {URL}: cannot connect (connection refused)\n"
