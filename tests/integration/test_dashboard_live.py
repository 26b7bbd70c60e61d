"""The dashboard on a real `opencode serve` shows what `ocwatch status --json` says."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

from tests.cli_env import cli_env
from tui.app import DashboardOptions, create_app
from tui.app.actions import FleetActions
from tui.app.widgets.session_table import row_key_str
from tui.core.fleet import Fleet

from .driver import AllStates, Driver
from .oc_server import OpenCodeServer


def status_json(url: str) -> dict:
    env = cli_env()
    proc = subprocess.run(
        [sys.executable, "-m", "tui.cli.main", "status", "--json", "--server", url],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


async def test_the_table_shows_the_states_status_json_reports(
    oc_server: OpenCodeServer, all_states: AllStates, oc: Driver
):
    all_states.still_retrying(oc)  # (the server gives a retrying run up after a while)
    want = {r["id"]: r for r in status_json(oc_server.url)["sessions"]}
    ids = set(all_states.ids().values())
    fleet = Fleet([oc_server.url])
    app = create_app(
        fleet, DashboardOptions(server_urls=[oc_server.url], actions=FleetActions(fleet))
    )
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.main_screen.table
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60

        def shown() -> dict[str, tuple[str, str]]:
            out = {}
            for sid in ids:
                key = row_key_str((oc_server.url, sid))
                try:
                    cells = table.get_row(key)
                except Exception:  # not on screen yet
                    continue
                out[sid] = (str(cells[0]), str(cells[1]))
            return out

        while len(shown()) < len(ids):
            assert loop.time() < deadline, "the sessions never all showed"
            await pilot.pause(0.1)
        for sid, (state_cell, reason_cell) in shown().items():
            view_row = app.view.find(sid)[0]
            # the table shows the app's View ...
            assert view_row.state in state_cell, (sid, state_cell, view_row.state)
            if view_row.reason:
                assert view_row.reason in reason_cell, (sid, reason_cell, view_row.reason)
            # ... and the View agrees with `status --json`, taken moments before. Between two
            # attempts a retrying session reads busy for a moment (retry -> busy -> retry on
            # 1.18.33), so that one session may have moved between the two readings.
            row = want[sid]
            got = (view_row.state, view_row.reason, view_row.stale)
            if sid == all_states.retry:
                assert row["state"] in ("retry", "busy")
                if got[0] not in ("retry", "busy"):  # the server gave the run up meanwhile
                    status = (await asyncio.to_thread(oc.status_map, all_states.directory)).get(sid)
                    assert got[0] == "idle" and (status or {}).get("type") in (None, "idle")
            else:
                assert got == (row["state"], row["reason"], row["stale"]), sid
