"""V2's background service file (tui.core.service, issue 39 item 3): read only when nothing else
names a server, its password for its URL only, every odd file said and never waited on."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tui.core.config import Config, resolve_options
from tui.core.service import read_service, service_path

PW = "svc-secret-pw"


def state(tmp_path: Path, data: object, mode: int = 0o600) -> dict[str, str]:
    path = tmp_path / "opencode" / "service.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    path.chmod(mode)
    return {"XDG_STATE_HOME": str(tmp_path), "HOME": str(tmp_path / "home")}


SERVICE = {"id": "x", "version": "2.0.15", "url": "http://127.0.0.1:1", "pid": 1, "password": PW}


def test_the_file_is_where_opencode_writes_it(tmp_path: Path) -> None:
    assert service_path({"HOME": "/h"}) == Path("/h/.local/state/opencode/service.json")
    assert service_path({"XDG_STATE_HOME": "/s"}) == Path("/s/opencode/service.json")


def test_with_nothing_configured_the_service_is_watched_with_its_own_password(
    tmp_path: Path,
) -> None:
    env = state(tmp_path, SERVICE)
    env["OPENCODE_SERVER_PASSWORD"] = "the-v1-password"
    opts = resolve_options(Config(discover="none"), env=env)  # (discovery: test_discover)
    assert "http://127.0.0.1:1" in opts.urls
    got = opts.auth_for("http://127.0.0.1:1")
    assert got is not None and got.password == PW and got.username == "opencode"
    for url in opts.urls:  # the service's password goes nowhere else
        if url != "http://127.0.0.1:1":
            assert (a := opts.auth_for(url)) is None or a.password != PW
    assert PW not in repr(opts) and not any(PW in n for n in opts.notices)


def test_a_named_server_or_a_config_leaves_the_file_unread(tmp_path: Path) -> None:
    env = state(tmp_path, SERVICE)
    assert resolve_options(Config(), urls=["http://h:1"], env=env).urls == ["http://h:1"]
    assert resolve_options(Config(servers=["http://c:2"]), env=env).urls == ["http://c:2"]
    env["OPENCODE_SERVER_URL"] = "http://e:3"
    assert resolve_options(Config(), env=env).urls == ["http://e:3"]


def test_no_file_says_nothing(tmp_path: Path) -> None:
    notices: list[str] = []
    assert read_service({"XDG_STATE_HOME": str(tmp_path)}, notices) is None
    assert notices == []


def test_a_file_others_may_read_is_warned_about(tmp_path: Path) -> None:
    notices: list[str] = []
    got = read_service(state(tmp_path, SERVICE, 0o644), notices)
    assert got is not None and got.auth is not None
    assert len(notices) == 1 and "chmod 600" in notices[0] and PW not in notices[0]


def test_odd_files_are_said_and_never_waited_on(tmp_path: Path) -> None:
    for data, says in (
        ("not json", "not JSON"),
        ({"url": "ftp://x"}, "no http(s) url"),
        ("x" * 100_000, "larger than 64 KiB"),
        ("[" * 5_000, "not JSON"),
    ):
        notices: list[str] = []
        assert read_service(state(tmp_path, data), notices) is None
        assert notices and says in notices[0], notices
    path = tmp_path / "opencode" / "service.json"
    path.unlink()
    os.mkfifo(path)  # a FIFO would block a plain open for ever
    notices = []
    assert read_service({"XDG_STATE_HOME": str(tmp_path)}, notices) is None
    assert "not a regular file" in notices[0]
