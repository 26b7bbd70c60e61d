"""Fixtures for integration tests against a real `opencode serve` driven by a scripted model.

Binary: `$OPENCODE_BIN`, else `node_modules/.bin/opencode` at the repo root, else `opencode` on
PATH. None found -> the tests are skipped, or fail when `$CI` is set.

Fixtures (one server per test session, shared; tests must only assert on their own sessions):
    scripted_model     ScriptedModel (session)
    opencode_bin       path of the binary (session)
    oc_server          OpenCodeServer, no password (session): .url .project .project2 .auth
    oc_server_auth     OpenCodeServer with OPENCODE_SERVER_PASSWORD set (session, started lazily)
    oc                 Driver for oc_server, default directory = project folder (function)
    oc_auth            Driver for oc_server_auth with the right Basic auth (function)
    events             EventRecorder on oc_server's /global/event, started (function)
    all_states         AllStates: one session in every state on oc_server (session; cleaned up)
    private_server     a server of the test's own (function), for kill / restart
    opencode2_bin      path of the pinned V2 binary (2.0.15) (session)
    oc2_server         OpenCodeServer of V2, with its password (session)
    oc2                V2Driver for oc2_server (function)
Every test in this folder is marked `integration`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from .driver import AllStates, Driver, EventRecorder, cleanup_states, make_all_states
from .driver_v2 import V2Driver
from .oc_server import OpenCodeServer, find_opencode2_bin, find_opencode_bin
from .scripted_model import ScriptedModel

HERE = Path(__file__).resolve().parent


#: Files whose tests are dealt into this many xdist groups, in order (each a run of
#: neighbouring tests, so those sharing a module fixture mostly stay together): their time is
#: in their tests' waits on real runs, not in starting servers, and one worker running them
#: all would be the last to finish. Each worker starts the servers and fixtures it needs.
SPLIT = {"test_v2": 2, "test_ocwatch_cli": 2}


@pytest.hookimpl(tryfirst=True)  # before xdist's, which reads the groups off the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = [(item, Path(str(item.fspath)).resolve()) for item in items]
    ours = [(item, path) for item, path in ours if path.is_relative_to(HERE)]
    counts = Counter(path.stem for _, path in ours)
    seen: Counter[str] = Counter()
    for item, path in ours:
        item.add_marker(pytest.mark.integration)
        # a file's tests on one worker (`--dist loadgroup`): its servers start once
        group, parts = path.stem, SPLIT.get(path.stem, 1)
        if parts > 1:
            group += f"-{seen[path.stem] * parts // counts[path.stem]}"
        seen[path.stem] += 1
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def opencode_bin() -> str:
    path = find_opencode_bin()
    if path is None:
        msg = (
            "opencode binary not found: set $OPENCODE_BIN, or install the pinned server "
            "(npm install opencode-ai@1.18.33) at the repo root, or put `opencode` on PATH"
        )
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture(scope="session")
def scripted_model() -> Iterator[ScriptedModel]:
    model = ScriptedModel().start()
    yield model
    model.stop()


def _server(
    tmp_path_factory: pytest.TempPathFactory,
    opencode_bin: str,
    model: ScriptedModel,
    name: str,
    password: str | None = None,
) -> Iterator[OpenCodeServer]:
    root = tmp_path_factory.mktemp(name)
    server = OpenCodeServer(opencode_bin, root, model.url, password=password)
    try:
        server.start()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def oc_server(
    tmp_path_factory: pytest.TempPathFactory, opencode_bin: str, scripted_model: ScriptedModel
) -> Iterator[OpenCodeServer]:
    yield from _server(tmp_path_factory, opencode_bin, scripted_model, "oc")


@pytest.fixture(scope="session")
def oc_password() -> str:
    return "pw-" + secrets.token_hex(8)


@pytest.fixture(scope="session")
def oc_server_auth(
    tmp_path_factory: pytest.TempPathFactory,
    opencode_bin: str,
    scripted_model: ScriptedModel,
    oc_password: str,
) -> Iterator[OpenCodeServer]:
    yield from _server(tmp_path_factory, opencode_bin, scripted_model, "ocauth", oc_password)


@pytest.fixture
def oc(oc_server: OpenCodeServer) -> Iterator[Driver]:
    with Driver(oc_server.url, auth=oc_server.auth, default_directory=str(oc_server.project)) as d:
        yield d


@pytest.fixture
def oc_auth(oc_server_auth: OpenCodeServer) -> Iterator[Driver]:
    with Driver(
        oc_server_auth.url, auth=oc_server_auth.auth, default_directory=str(oc_server_auth.project)
    ) as d:
        yield d


@pytest.fixture
def events(oc_server: OpenCodeServer) -> Iterator[EventRecorder]:
    rec = EventRecorder(oc_server.url, auth=oc_server.auth).start()
    yield rec
    rec.stop()


@pytest.fixture(scope="session")
def all_states(oc_server: OpenCodeServer, scripted_model: ScriptedModel) -> Iterator[AllStates]:
    with Driver(oc_server.url, auth=oc_server.auth, default_directory=str(oc_server.project)) as d:
        st = make_all_states(d, str(oc_server.project), str(oc_server.project2))
        yield st
        cleanup_states(d, scripted_model, st)


@pytest.fixture
def private_server(opencode_bin: str, scripted_model: ScriptedModel) -> Iterator[OpenCodeServer]:
    root = Path(tempfile.mkdtemp(prefix="ocwatch-it-private-"))
    srv = OpenCodeServer(opencode_bin, root, scripted_model.url).start()
    yield srv
    srv.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def opencode2_bin() -> str:
    path = find_opencode2_bin()
    if path is None:
        msg = (
            "the V2 opencode binary was not found: set $OPENCODE2_BIN, or install the pinned "
            "server (the README's test command: @opencode/cli-linux-x64-baseline@2.0.15 under "
            ".opencode2)"
        )
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path


def start_v2(binary: str, root: Path, model: ScriptedModel) -> OpenCodeServer:
    """A V2 server of its own under `root` (its password made up), started."""
    server = OpenCodeServer(binary, root, model.url, v2=True)
    try:
        return server.start()
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def oc2_server(
    tmp_path_factory: pytest.TempPathFactory, opencode2_bin: str, scripted_model: ScriptedModel
) -> Iterator[OpenCodeServer]:
    server = start_v2(opencode2_bin, tmp_path_factory.mktemp("oc2"), scripted_model)
    yield server
    server.stop()


@pytest.fixture
def oc2(oc2_server: OpenCodeServer) -> Iterator[V2Driver]:
    with V2Driver(oc2_server.url, auth=oc2_server.auth, directory=str(oc2_server.project)) as d:
        yield d
