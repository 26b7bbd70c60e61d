"""Zero set-up for V2's background service (issue 39, item 3): with no `--server` and nothing
configured, ocwatch reads `$XDG_STATE_HOME/opencode/service.json` (what `opencode serve
--service` writes) and watches that server with the password written there, which it never
prints or sends elsewhere; a file others may read is warned about."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_env import cli_env

from .driver_v2 import V2Driver
from .oc_server import OpenCodeServer
from .scripted_model import ScriptedModel


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, opencode2_bin: str, scripted_model: ScriptedModel
) -> Iterator[OpenCodeServer]:
    server = OpenCodeServer(
        opencode2_bin,
        tmp_path_factory.mktemp("svc"),
        scripted_model.url,
        v2=True,
        serve_args=("--service",),
    )
    try:
        server.start()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield server
    server.stop()


def ocwatch(server: OpenCodeServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = cli_env()  # no password, no server named: only the service file says
    env["XDG_STATE_HOME"] = str(server.service_file.parents[1])
    env.pop("OPENCODE_SERVER_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "tui.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_the_service_is_found_and_read_with_its_own_password(service: OpenCodeServer) -> None:
    assert service.password
    with V2Driver(service.url, auth=service.auth, directory=str(service.project)) as d:
        sid = d.run("text")
        d.wait_outcome(sid, "succeeded")
    proc = ocwatch(service, "status", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    # (and the V1 default address, only if something listens there)
    (server,) = [s for s in data["servers"] if s["url"] == service.url]
    assert server["protocol"] == "v2" and server["reachable"], server
    got = {r["id"]: r for r in data["sessions"]}
    assert (got[sid]["state"], got[sid]["reason"]) == ("idle", "completed")
    assert service.password not in proc.stdout + proc.stderr
    proc = ocwatch(service, "wait", sid, "--timeout", "10")
    assert proc.returncode == 0, proc.stderr


def test_a_service_file_others_may_read_is_warned_about(service: OpenCodeServer) -> None:
    path: Path = service.service_file
    path.chmod(0o644)
    try:
        proc = ocwatch(service, "status")
    finally:
        path.chmod(0o600)
    assert proc.returncode == 0, proc.stderr
    assert "others may read it (mode 644): chmod 600 it" in proc.stderr
    assert service.password and service.password not in proc.stdout + proc.stderr
