"""Local discovery against real servers started here (issue 44 item 1): a V1 `opencode serve`
on a random port is found in /proc and named after its folder, a V2 `serve --service` through
its service.json with its own password; a server stopped mid-run is said gone and its rows
leave. (Other OpenCode servers of this machine's user may be found too: only ours are looked
at.) The V1 TUI's server is tested on a recorded /proc (tests/unit/test_discover.py): 1.18.33's
TUI listens on no port without `--port`, and running it needs a terminal (tmux is not
installed by .ci/run)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_env import cli_env
from tui.core.discover import LocalDiscovery
from tui.core.fleet import Fleet
from tui.core.targets import Keeper, Target

from .driver import Driver
from .oc_server import OpenCodeServer
from .scripted_model import ScriptedModel

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@pytest.fixture
def v1(opencode_bin: str, scripted_model: ScriptedModel) -> Iterator[OpenCodeServer]:
    root = Path(tempfile.mkdtemp(prefix="ocwatch-it-discover-"))
    srv = OpenCodeServer(opencode_bin, root, scripted_model.url).start()
    yield srv
    srv.stop()


@pytest.fixture
def service(
    tmp_path: Path, opencode2_bin: str, scripted_model: ScriptedModel
) -> Iterator[OpenCodeServer]:
    srv = OpenCodeServer(
        opencode2_bin, tmp_path / "v2", scripted_model.url, v2=True, serve_args=("--service",)
    )
    try:
        srv.start()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield srv
    srv.stop()


def ocwatch(*args: str, state: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = cli_env()
    env.pop("OCWATCH_DISCOVER")  # the default: nothing names a server, discovery is on
    env.pop("OPENCODE_SERVER_URL", None)
    if state is not None:
        env["XDG_STATE_HOME"] = str(state)
    return subprocess.run(
        [sys.executable, "-m", "tui.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_a_v1_server_is_found_with_its_folder_and_a_v2_service_with_its_password(
    v1: OpenCodeServer, service: OpenCodeServer
) -> None:
    assert v1.proc is not None and service.proc is not None
    state = service.service_file.parents[1]
    proc = ocwatch("servers", "--json", state=state)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    by_url = {s["url"]: s for s in data["servers"]}
    mine = by_url[v1.url]
    port = v1.url.rsplit(":", 1)[1]
    assert mine["found"] == "discovered"
    assert mine["name"] in ("alpha", f"alpha@{port}")  # (another alpha of this machine's)
    assert mine["how"].startswith(f"opencode serve, pid {v1.proc.pid}, ")
    assert mine["how"].endswith(str(v1.project))
    theirs = by_url[service.url]
    assert (theirs["name"], theirs["found"]) == ("v2-service", "discovered")
    assert theirs["how"] == f"V2 service, service.json, pid {service.proc.pid}"
    looked = data["sources"][0]["looked"]
    assert looked[0].startswith("/proc: ") and "OpenCode" in looked[0]
    assert f"{service.url} (V2 2.0.15, pid {service.proc.pid})" in looked[1]
    assert service.password and service.password not in proc.stdout + proc.stderr

    # and status reads both, the service with its own password (the V1 server needs none)
    with Driver(v1.url, default_directory=str(v1.project)) as d:
        sid = d.run("text")["id"]
    proc = ocwatch("status", "--json", state=state)
    data = json.loads(proc.stdout)
    servers = {s["url"]: s for s in data["servers"]}
    for srv, protocol in ((v1, "v1"), (service, "v2")):
        got = servers[srv.url]
        assert got["reachable"] and got["protocol"] == protocol, (got, proc.stderr, srv.tail())
    assert sid in {r["id"] for r in data["sessions"]}
    assert service.password not in proc.stdout + proc.stderr


def test_a_server_stopped_mid_run_is_said_gone_and_its_rows_leave(v1: OpenCodeServer) -> None:
    with Driver(v1.url, default_directory=str(v1.project)) as d:
        sid = d.run("text")["id"]
    discovery = LocalDiscovery(cli_env())

    class Ours:
        """Discovery, keeping only this test's server (others of this machine's are not ours)."""

        label, every, gone = discovery.label, 0.2, discovery.gone

        def read(self) -> list[Target]:
            return [t for t in discovery.read() if t.url == v1.url]

    notes: list[str] = []
    keeper = Keeper([Ours()], notes.append)

    async def scenario() -> None:
        fleet = Fleet([], keeper=keeper)
        task = asyncio.create_task(fleet.run(lambda: None))
        try:
            await until(lambda: (v1.url, sid) in fleet.current().rows)
            assert any(n.startswith("watching alpha") and v1.url in n for n in notes), notes
            v1.stop()
            await until(lambda: (v1.url, sid) not in fleet.current().rows)
            assert fleet.monitors == []
            assert v1.url in fleet.gone
            gone = [n for n in notes if "went away" in n]
            assert len(gone) == 1 and v1.url in gone[0] and "opencode serve, pid" in gone[0]
            assert gone[0].endswith("not watched any more")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())


async def until(cond: object, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


def test_two_servers_of_one_storage_show_each_session_once_from_the_one_running_it(
    opencode_bin: str, scripted_model: ScriptedModel
) -> None:
    """Two OpenCode processes of one user (two TUIs, or serves, in two projects) read one
    storage: each lists both projects' sessions, and only the one running a session knows
    it is asking. Each session is shown once, from the server running it (seen by hand: the
    other server's copy said `unknown (interrupted)` beside the real permission)."""
    root = Path(tempfile.mkdtemp(prefix="ocwatch-it-shared-"))
    shop = OpenCodeServer(opencode_bin, root, scripted_model.url)
    blog = OpenCodeServer(opencode_bin, root, scripted_model.url)  # the same HOME and XDG
    blog.project = blog.project2
    discovery = LocalDiscovery(cli_env())

    class Ours:
        label, every, gone = discovery.label, 0.2, discovery.gone

        def read(self) -> list[Target]:
            return [t for t in discovery.read() if t.url in (shop.url, blog.url)]

    try:
        shop.start()
        blog.start()
        with Driver(shop.url, default_directory=str(shop.project)) as d:
            done = d.run("text")["id"]
        with Driver(blog.url, default_directory=str(blog.project)) as d:
            asking = d.run("permission", "echo shared")["id"]
            d.wait_status(asking)

        async def scenario() -> None:
            fleet = Fleet([], keeper=Keeper([Ours()]))
            task = asyncio.create_task(fleet.run(lambda: None))
            try:
                await until(lambda: fleet.local.keys() == {shop.url, blog.url})
                await until(lambda: (blog.url, asking) in fleet.current().rows)
                await until(lambda: fleet.current().rows[(blog.url, asking)].state == "input")
                # (while a copy is still loading, another server's may be shown meanwhile)
                want = sorted([(shop.url, done), (blog.url, asking)])

                def shown() -> list[tuple[str, str]]:
                    return sorted(k for k in fleet.current().rows if k[1] in (done, asking))

                try:
                    await until(lambda: shown() == want)
                except AssertionError:
                    rows, got = fleet.current().rows, shown()
                    states = {k: (rows[k].state, rows[k].reason) for k in got}
                    raise AssertionError(f"shown {got} {states}, want {want}") from None
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

        asyncio.run(scenario())
    finally:
        blog.stop()
        shop.stop()
