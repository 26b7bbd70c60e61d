"""The dashboard's options: the config file, the environment, then flags (flags win)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.app import run
from tui.cli.main import main
from tui.core.client import OcwatchError
from tui.core.config import CONFIG_MAX, AlertConfig, Config, load_config
from tui.core.discover import LocalDiscovery
from tui.core.settings import Auth

from .conftest import make_app


def test_flags_win_over_the_config() -> None:
    config = Config(
        servers=["http://h:1"],
        theme="ocwatch-light",
        grace=9.0,
        resync_interval=12.0,
        alerts=AlertConfig(bell=True),
    )
    opts = run.resolve(config, env={})
    assert opts.urls == ["http://h:1"] and opts.theme == "ocwatch-light"
    assert (opts.settings.grace, opts.settings.resync_interval) == (9.0, 12.0)
    assert (opts.alerts.bell, opts.alerts.osc9, opts.alerts.desktop) == (True, False, False)
    opts = run.resolve(
        config,
        urls=["http://flag:2"],
        grace=1.5,
        theme="ocwatch-contrast",
        osc9=True,
        desktop=True,
        env={},
    )
    assert opts.urls == ["http://flag:2"] and opts.theme == "ocwatch-contrast"
    assert (opts.settings.grace, opts.settings.resync_interval) == (1.5, 12.0)
    assert (opts.alerts.bell, opts.alerts.osc9, opts.alerts.desktop) == (True, True, True)


def test_servers_fall_back_to_the_environment_then_the_default() -> None:
    assert run.resolve(Config(), env={"OPENCODE_SERVER_URL": "http://e:3"}).urls == ["http://e:3"]
    off = Config(discover="none")
    assert run.resolve(off, env={}).urls == ["http://127.0.0.1:4096"]
    # with discovery (the default on Linux): it finds them, the default address among them
    (found,) = run.resolve(Config(), env={}, discover="local").sources
    assert isinstance(found, LocalDiscovery) and found.default == "http://127.0.0.1:4096"
    assert run.resolve(Config(), env={}, discover="local").urls == []


def test_password_file_only_without_a_password_in_the_environment(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("from-file\n")
    config = Config(password_file=str(secret))
    opts = run.resolve(config, env={})
    assert opts.auth == Auth("opencode", "from-file") and opts.notices == []
    env_auth = Auth("opencode", "from-env")
    opts = run.resolve(config, auth=env_auth, env={"OPENCODE_SERVER_PASSWORD": "from-env"})
    assert opts.auth is env_auth
    assert run.resolve(config, env={"OPENCODE_SERVER_PASSWORD": "x"}).auth is None
    missing = run.resolve(Config(password_file=str(tmp_path / "nope")), env={})
    assert missing.auth is None
    assert "cannot read it" in missing.notices[0] and "from-file" not in missing.notices[0]
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe\x00pw")
    garbled = run.resolve(Config(password_file=str(binary)), env={})
    assert garbled.auth is None and "not UTF-8" in garbled.notices[0]


def test_config_file_warnings_become_notices(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('theme = "ocwatch-light"\ngrace = "soon"\n[alerts]\nbell = true\n')
    config, warnings = load_config(path, env={})
    opts = run.resolve(config, notices=warnings, env={})
    assert opts.theme == "ocwatch-light" and opts.alerts.bell
    assert any("grace" in n for n in opts.notices)


def test_config_servers_that_cannot_be_read_are_an_error_not_the_default(
    tmp_path: Path,
) -> None:
    """One bad entry in `servers` left the whole key out, and the default (or discovery)
    was watched in its place: `status` said "no sessions", exit 0 (a hostile review). Now it is
    an error, unless --server names the servers; the demo watches none of them."""
    path = tmp_path / "config.toml"
    path.write_text(
        'servers = ["http://127.0.0.1:18801",'
        ' {url = "http://127.0.0.1:18809", pasword_file = "x"}]\n'
    )
    config, warnings = load_config(path, env={})
    assert warnings.dropped == {"servers"}
    with pytest.raises(OcwatchError, match="the config's servers cannot be read .*pasword_file"):
        run.resolve(config, notices=warnings, env={})
    named = run.resolve(config, notices=warnings, env={}, urls=["http://127.0.0.1:9"])
    assert named.urls == ["http://127.0.0.1:9"]
    run.resolve(config, notices=warnings, env={}, servers_needed=False)  # (no error)
    path.write_text('servers = ["http://127.0.0.1:18801"]\ngrace = "soon"\n')  # (not servers)
    config, warnings = load_config(path, env={})
    assert run.resolve(config, notices=warnings, env={}).urls == ["http://127.0.0.1:18801"]


def test_a_config_file_that_cannot_be_read_is_no_default_server_either(tmp_path: Path) -> None:
    """Not TOML, or past CONFIG_MAX: its servers cannot be told, so the default is not
    watched in their place (an error, unless --server names the servers)."""
    path = tmp_path / "config.toml"
    for text in ('servers = [ "http://a:1"\n', "servers = []\n" + "#" * (CONFIG_MAX + 1)):
        path.write_text(text)
        config, warnings = load_config(path, env={})
        assert warnings.dropped == {"servers"}
        with pytest.raises(OcwatchError, match="the config's servers cannot be read .*cannot read"):
            run.resolve(config, notices=warnings, env={})
        assert run.resolve(config, notices=warnings, env={}, urls=["http://127.0.0.1:9"]).urls


async def test_the_app_shows_config_notices() -> None:
    app, _ = make_app(notices=["config /x/config.toml: grace: not a number"])
    async with app.run_test() as pilot:
        await pilot.pause()
        shown = [(n.title, n.severity, n.message) for n in app._notifications]
        assert ("Config", "warning", "config /x/config.toml: grace: not a number") in shown


def test_main_passes_the_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    got: dict[str, object] = {}

    def fake(urls: object, **kwargs: object) -> int:
        got.update(kwargs, urls=urls)
        return 0

    monkeypatch.setattr(run, "run_dashboard", fake)
    assert main(["--bell", "--notify", "--grace", "2", "--theme", "ocwatch-light"]) == 0
    assert got == {
        "urls": None,
        "auth": None,
        "grace": 2.0,
        "theme": "ocwatch-light",
        "bell": True,
        "osc9": False,
        "desktop": True,
        "metrics": None,
        "read_only": False,
        "discover": None,
        "servers_file": None,
        "alert_flags": {
            "bell": True,
            "osc9": False,
            "desktop": True,
            "osc777": False,
            "osc99": False,
            "unfocused_only": False,
        },
    }
    got.clear()
    assert main(["--read-only"]) == 0 and got["read_only"] is True
    got.clear()
    assert main(["--notify-cmd", "notify me", "--webhook", "https://ntfy.sh/t", "--osc99"]) == 0
    assert got["alert_flags"] == {
        "bell": False,
        "osc9": False,
        "desktop": False,
        "osc777": False,
        "osc99": True,
        "unfocused_only": False,
        "notify_cmd": "notify me",
        "webhook": "https://ntfy.sh/t",
    }
    got.clear()
    assert main(["-s", "http://a:1", "--osc9"]) == 0
    assert got["urls"] == ["http://a:1"] and got["osc9"] is True and got["bell"] is False

    demo: dict[str, object] = {}
    monkeypatch.setattr(run, "run_demo", lambda **kw: demo.update(kw) or 0)
    assert main(["--theme", "ocwatch-light", "demo", "--bell"]) == 0
    assert demo["theme"] == "ocwatch-light" and demo["bell"] is True
    assert demo["read_only"] is False
    assert main(["demo", "--read-only"]) == 0 and demo["read_only"] is True
    assert main(["demo", "--metrics", ":9464"]) == 0
    assert demo["metrics"] == ":9464"


def test_logs_go_off_the_screen_while_the_dashboard_runs() -> None:
    """A log record written to stderr while the dashboard holds the terminal is painted over
    it (found by a review: a failed snapshot's traceback across the table). While it runs,
    records go to Textual's log; afterwards to stderr again."""
    import io
    import logging

    from tui.app.run import logs_off_the_screen

    stderr = io.StringIO()
    root = logging.getLogger()
    kept = root.handlers[:]
    root.handlers[:] = [logging.StreamHandler(stderr)]
    try:
        with logs_off_the_screen():
            logging.getLogger("tui.core.monitor").error("snapshot failed")
            assert root.handlers[0].__class__.__name__ == "TextualHandler"
        assert stderr.getvalue() == ""
        logging.getLogger("tui.core.monitor").error("after")
        assert stderr.getvalue() == "after\n"
    finally:
        root.handlers[:] = kept
