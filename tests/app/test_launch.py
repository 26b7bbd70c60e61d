"""Taking the user to a session (`A` attaches OpenCode, `w` the web UI) and `--read-only`.

The attach tests run a stand-in `opencode` on PATH that writes down its argv and environment:
the server's password must reach it through the environment, never the argv, and only that
server's password."""

from __future__ import annotations

import asyncio
import base64
import json
import stat
import sys
import time
from pathlib import Path

import pytest
from textual.widgets import Footer, Static

from tui.app.app import READ_ONLY
from tui.app.launch import (
    DEFAULT_ATTACH,
    Launcher,
    LaunchError,
    attach_argv,
    check_template,
    child_env,
    web_url,
)
from tui.app.screens.detail import DetailScreen
from tui.cli.main import build_parser
from tui.core.config import Config, load_config, resolve_options
from tui.core.settings import Auth
from tui.export.deliver import Payload

from . import views
from .conftest import make_app
from .fake_actions import FakeActions
from .test_actions import BUSY, PERM, notes, open_on, settle, until

SECRET = "s3cret-for-a"
OTHER = "someone-elses-password"
A_AUTH = Auth("opencode", SECRET)


def stand_in(folder: Path, code: int = 0) -> Path:
    """An `opencode` executable that records how it was started, then exits with `code`."""
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "called.json"
    exe = folder / "opencode"
    exe.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"json.dump({{'argv': sys.argv, 'env': dict(os.environ)}}, open({str(out)!r}, 'w'))\n"
        f"sys.exit({code})\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return out


class Elsewhere:
    """An off-terminal alert sink (as notify-send, a webhook or --notify-cmd): what it got."""

    name = "elsewhere"

    def __init__(self) -> None:
        self.sent: list[Payload] = []

    def describe(self) -> str:
        return "a test sink"

    async def send(self, p: Payload) -> None:
        self.sent.append(p)


def waiting_stand_in(folder: Path, release: Path) -> Path:
    """An `opencode` that records how it was started, then runs until `release` exists (or 60
    seconds pass: exit 9): OpenCode while the user is in it."""
    out = stand_in(folder)
    exe = folder / "opencode"
    exe.write_text(
        exe.read_text().replace(
            "sys.exit(0)\n",
            "import time\n"
            "end = time.monotonic() + 60\n"
            f"while not os.path.exists({str(release)!r}):\n"
            "    if time.monotonic() > end: sys.exit(9)\n"
            "    time.sleep(0.02)\n",
        )
    )
    return out


def launcher(
    bin_dir: Path, refreshed: list[str] | None = None, auth: Auth | None = A_AUTH
) -> Launcher:
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": "/nowhere",
        "OPENCODE_SERVER_PASSWORD": OTHER,
        "OPENCODE_SERVER_USERNAME": "other-user",
    }
    return Launcher(
        DEFAULT_ATTACH,
        auth_of=lambda url: auth if url == views.A else None,
        env=env,
        refresh=(refreshed if refreshed is not None else []).append,
    )


# -- the command -----------------------------------------------------------------------------


def test_the_template_is_filled_in_and_an_empty_folder_leaves_its_flag_out() -> None:
    assert attach_argv(DEFAULT_ATTACH, "http://h:1", "ses_1", "/w/a b") == [
        "opencode",
        "attach",
        "http://h:1",
        "--session",
        "ses_1",
        "--dir",
        "/w/a b",
    ]
    assert attach_argv(DEFAULT_ATTACH, "http://h:1", "ses_1", "") == [
        "opencode",
        "attach",
        "http://h:1",
        "--session",
        "ses_1",
    ]
    # a value is one argument, never split or read by a shell
    assert attach_argv(["x", "{session}"], "u", "a; rm -rf ~", "") == ["x", "a; rm -rf ~"]


def test_a_template_with_an_unknown_field_is_refused() -> None:
    assert check_template(DEFAULT_ATTACH) is None
    problem = check_template(["opencode", "attach", "{url}", "--password", "{password}"])
    assert problem is not None and "{password}" in problem
    assert check_template([]) is not None


def test_the_child_gets_only_this_servers_credentials() -> None:
    base = {
        "PATH": "/bin",
        "OPENCODE_SERVER_PASSWORD": OTHER,
        "OPENCODE_SERVER_PASSWORD_FILE": "/x",
        "OPENCODE_SERVER_USERNAME": "u",
    }
    own = child_env(base, Auth("opencode", SECRET))
    assert own == {
        "PATH": "/bin",
        "OPENCODE_SERVER_USERNAME": "opencode",
        "OPENCODE_SERVER_PASSWORD": SECRET,
    }
    assert child_env(base, None) == {"PATH": "/bin"}  # a server with no password gets none


def test_values_from_the_server_never_become_options_or_break_the_argv(tmp_path: Path) -> None:
    stand_in(tmp_path / "bin")
    lau = launcher(tmp_path / "bin")
    for session, folder in (
        ("--help", "/w"),
        ("ses_1", "-rf"),
        ("ses\0x", "/w"),
        ("ses_1", "/w\0"),
    ):
        with pytest.raises(LaunchError, match="cannot be passed"):
            lau.attach(views.A, session, folder)
    launch = lau.attach(views.A, "ses_1", "/w")
    assert SECRET not in repr(launch)  # its environment is not in its repr


def test_a_v2_servers_session_is_opened_with_server_and_session(tmp_path: Path) -> None:
    """Issue 39: OpenCode 2.x has no `attach`; it opens a session with `--server URL --session
    ID`. Each server's sessions are opened by its own protocol's template, each with only its
    own password in the environment."""
    stand_in(tmp_path / "bin")
    base = launcher(tmp_path / "bin")
    lau = Launcher(
        DEFAULT_ATTACH,
        auth_of=base.auth_of,
        env=base.env,
        protocol_of=lambda url: "v2" if url == views.A else "v1",
    )
    v2 = lau.attach(views.A, "ses_1", "/w")
    assert v2.argv[1:] == ("--server", views.A, "--session", "ses_1")
    assert v2.env["OPENCODE_SERVER_PASSWORD"] == SECRET
    v1 = lau.attach("http://other:1", "ses_2", "/w")
    assert v1.argv[1:3] == ("attach", "http://other:1")
    assert "OPENCODE_SERVER_PASSWORD" not in v1.env


def test_the_web_address_names_the_folder_as_opencode_does() -> None:
    url = web_url("http://127.0.0.1:4096/", "/home/me/shop?", "ses_1")
    folder = url.split("/")[3]
    assert url == f"http://127.0.0.1:4096/{folder}/session/ses_1"
    assert "=" not in folder and "+" not in folder and "/" not in folder
    assert base64.urlsafe_b64decode(folder + "=" * (-len(folder) % 4)) == b"/home/me/shop?"
    assert web_url("http://h:1", "/w", "../x?y#\x1b").endswith("/session/..%2Fx%3Fy%23%1B")


# -- A: attach -------------------------------------------------------------------------------


async def test_A_runs_opencode_attach_on_the_session_with_the_password_in_the_env(
    tmp_path: Path,
) -> None:
    called = stand_in(tmp_path / "bin")
    refreshed: list[str] = []
    app, _ = make_app(launcher=launcher(tmp_path / "bin", refreshed))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, BUSY, "A")
        await until(pilot, lambda: refreshed != [])
        seen = json.loads(called.read_text())
        row = app.view.rows[BUSY] if app.view else None
        assert row is not None
        assert seen["argv"][1:] == [
            "attach",
            views.A,
            "--session",
            "ses_busy",
            "--dir",
            row.directory,
        ]
        assert seen["env"]["OPENCODE_SERVER_PASSWORD"] == SECRET
        assert seen["env"]["OPENCODE_SERVER_USERNAME"] == "opencode"
        assert not any(SECRET in arg or OTHER in arg for arg in seen["argv"])
        assert OTHER not in json.dumps(seen["env"])
        assert refreshed == [views.A]  # what the user did there shows at once
        assert app.screen is app.main_screen
        assert not notes(app, "error")


async def test_a_server_without_a_password_gets_none_of_the_environments(tmp_path: Path) -> None:
    called = stand_in(tmp_path / "bin")
    app, _ = make_app(launcher=launcher(tmp_path / "bin", auth=None))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, BUSY, "A")
        await until(pilot, called.exists)
        await until(pilot, lambda: not app.handed_over)
        env = json.loads(called.read_text())["env"]
        assert "OPENCODE_SERVER_PASSWORD" not in env and "OPENCODE_SERVER_USERNAME" not in env


async def test_A_from_the_detail_view_and_a_failing_exit_is_said(tmp_path: Path) -> None:
    called = stand_in(tmp_path / "bin", code=3)
    app, _ = make_app(launcher=launcher(tmp_path / "bin"))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, PERM, "enter")
        await pilot.press("A")
        await until(pilot, lambda: any("exited with code 3" in n for n in notes(app, "warning")))
        assert "ses_perm" in json.loads(called.read_text())["argv"]


async def test_without_opencode_installed_A_says_how_to_get_it(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    lau = Launcher(DEFAULT_ATTACH, env={"PATH": str(tmp_path / "empty")})
    app, _ = make_app(launcher=lau)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, BUSY, "A")
        await pilot.pause()
        errors = notes(app, "error")
        assert errors and "not installed" in errors[0] and "attach_command" in errors[0]


async def test_A_without_a_live_server_says_so() -> None:
    app, _ = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, BUSY, "A")
        assert any("needs a live server" in n for n in notes(app, "warning"))


# -- w: the web UI ---------------------------------------------------------------------------


async def test_w_without_a_browser_shows_and_copies_the_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("tui.app.app.has_graphical_browser", lambda _env: False)
    app, _ = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, BUSY, "w")
        row = app.view.rows[BUSY] if app.view else None
        assert row is not None
        url = web_url(views.A, row.directory, "ses_busy")
        assert app.clipboard == url
        assert any(url in n and "copied" in n for n in notes(app))


# -- --read-only ----------------------------------------------------------------------------


async def test_read_only_offers_no_action_and_says_so(tmp_path: Path) -> None:
    called = stand_in(tmp_path / "bin")
    fake = FakeActions()
    app, _ = make_app(actions=fake, read_only=True, launcher=launcher(tmp_path / "bin"))
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        banner = str(app.main_screen.query_one("#banner", Static).render())
        assert "read-only" in banner
        footer = app.main_screen.query_one(Footer)
        shown = " ".join(str(key.render()) for key in footer.query("FooterKey"))
        assert "Filter" in shown
        assert not any(word in shown for word in ("Respond", "Abort", "Attach"))
        # every key that is off says so when pressed, on the table and in the detail view
        for key, press in ((PERM, "r"), (PERM, "A"), (BUSY, "a"), (BUSY, "p")):
            before = len(notes(app))
            await open_on(pilot, app, key, press)
            await settle(pilot, app)
            assert notes(app)[before:] == [READ_ONLY], press
            assert not app.screen.is_modal
        await open_on(pilot, app, PERM, "enter")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen))
        shown = " ".join(str(key.render()) for key in app.screen.query("FooterKey"))
        assert "Messages" in shown
        assert not any(word in shown for word in ("Respond", "Abort", "Attach"))
        for press in ("r", "a", "A"):
            before = len(notes(app))
            await pilot.press(press)
            await until(pilot, lambda n=before: len(notes(app)) > n)
            assert notes(app)[before:] == [READ_ONLY], press
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.main_screen)
        palette = [c.title for c in app.get_system_commands(app.main_screen)]
        assert "Open the selected session in the web UI" in palette  # reading stays
        assert not [
            t
            for t in palette
            if t.startswith(("Abort", "Respond", "Open the selected session in OpenCode"))
        ]
        assert fake.calls == [] and not called.exists()
        assert app.screen is not None and not app.screen.is_modal


def test_read_only_from_the_flag_the_config_and_the_environment(tmp_path: Path) -> None:
    assert build_parser().parse_args(["--read-only"]).read_only is True
    assert build_parser().parse_args(["demo", "--read-only"]).read_only is True
    assert build_parser().parse_args([]).read_only is False
    assert resolve_options(Config(), env={}, read_only=True).read_only
    assert resolve_options(Config(read_only=True), env={}).read_only
    assert not resolve_options(Config(), env={}).read_only
    path = tmp_path / "c.toml"
    path.write_text("read_only = false\n")
    for value, want in (("1", True), ("yes", True), ("0", False), ("false", False)):
        config, _ = load_config(path, env={"OCWATCH_READ_ONLY": value})
        assert config.read_only is want


# -- A inside tmux: beside the dashboard, which keeps watching (issue 41 item 2) --------------


def fake_tmux(folder: Path) -> Path:
    """A `tmux` that records its argv, then runs what follows `--` (as tmux runs it in the new
    window: here, at once, in the background)."""
    out = folder / "tmux.argv"
    exe = folder / "tmux"
    exe.write_text(
        f"#!{sys.executable}\n"
        "import json, subprocess, sys\n"
        f"json.dump(sys.argv, open({str(out)!r}, 'w'))\n"
        "cmd = sys.argv[sys.argv.index('--') + 1 :]\n"
        "subprocess.Popen(cmd, start_new_session=True)\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return out


async def test_A_inside_tmux_opens_a_window_and_the_password_never_reaches_an_argv(
    tmp_path: Path,
) -> None:
    bin_dir = tmp_path / "bin"
    called = stand_in(bin_dir)
    tmux_argv = fake_tmux(bin_dir)
    base = launcher(bin_dir)
    env = {**(base.env or {}), "TMUX": "/tmp/tmux-1000/default,1,0"}
    lau = Launcher(DEFAULT_ATTACH, auth_of=base.auth_of, env=env)
    app, _ = make_app(launcher=lau)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, BUSY, "A")
        await settle(pilot, app)
        assert app.screen is app.main_screen  # never handed over: it keeps watching
        assert any("new tmux window" in n for n in notes(app))
        await until(pilot, called.exists)
    argv = json.loads(tmux_argv.read_text())
    assert argv[1] == "new-window" and "tui.app.handover" in argv
    assert not any(SECRET in a for a in argv)
    seen = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # (the stand-in writes its file as it starts)
        try:
            seen = json.loads(called.read_text())
            break
        except ValueError:
            await asyncio.sleep(0.05)
    assert seen["argv"][1:3] == ["attach", views.A]
    assert seen["env"]["OPENCODE_SERVER_PASSWORD"] == SECRET  # through the FIFO, its env only
    assert not any(SECRET in a for a in seen["argv"])
    fifo = Path(argv[-1])
    assert not fifo.exists() and not fifo.parent.exists()  # nothing left behind


def test_where_A_opens() -> None:
    inside, outside = {"TMUX": "x", "PATH": "/bin"}, {"PATH": "/bin"}
    assert Launcher(env=inside).place() == "tmux-window"
    assert Launcher(env=outside).place() == "terminal"
    assert Launcher(env=inside, attach_in="tmux-split").place() == "tmux-split"
    assert Launcher(env=inside, attach_in="terminal").place() == "terminal"
    assert Launcher(env=outside, attach_in="tmux-window").place() == "terminal"


def test_help_marks_the_keys_that_are_off_and_lists_each_key_once() -> None:
    on, _ = make_app(actions=FakeActions())
    off, _ = make_app(actions=FakeActions(), read_only=True)
    for app, note in ((on, ""), (off, " (off: read-only)")):
        sessions = dict(app.help_groups())["Sessions"]
        keys = [k for k, _ in sessions]
        assert len(keys) == len(set(keys)), keys  # the `off` stand-ins are not listed
        said = dict(sessions)
        assert said["r"] == "Respond" + note and said["a"] == "Abort" + note
        assert said["s"] == "Sort"  # reading keys are never off


def test_the_demo_greeting_offers_only_keys_that_work() -> None:
    from tui.app.run import demo_greeting

    live = demo_greeting("http://127.0.0.1:1", read_only=False)
    assert "press r to answer" in live and "p to send a prompt" in live
    wall = demo_greeting("http://127.0.0.1:1", read_only=True)
    assert "read-only" in wall
    assert not any(f"press {k} " in wall or f" {k} to " in wall for k in "rapA")


def test_fold_idle_after_from_the_config_and_the_environment(tmp_path: Path) -> None:
    assert resolve_options(Config(), env={}).fold_idle_after == 12 * 3600
    assert resolve_options(Config(fold_idle_after=0), env={}).fold_idle_after == 0
    config, warnings = load_config(tmp_path / "none.toml", env={"OCWATCH_FOLD_IDLE_AFTER": "60"})
    assert not warnings and resolve_options(config, env={}).fold_idle_after == 60
    app, _ = make_app(fold_idle_after=60)
    assert app.main_screen.fold_after == 60


async def test_while_opencode_has_the_terminal_the_dashboard_keeps_watching(
    tmp_path: Path,
) -> None:
    """Issue 41: `A` outside tmux hands the terminal over without stopping the app: while the
    stand-in OpenCode runs, new Views are taken in, a session that starts asking is marked
    unread, the alerts that go elsewhere (a desktop notification, a webhook, a command) are
    delivered, and the alerts that would write to the terminal are held back; once it exits
    the dashboard is back and the next alert rings."""
    from tui.core.config import AlertConfig
    from tui.export.deliver import Deliverer

    from .test_alerts import DONE, later, spy

    release = tmp_path / "release"
    called = waiting_stand_in(tmp_path / "bin", release)
    lau = launcher(tmp_path / "bin")
    lau.attach_in = "terminal"
    sink = Elsewhere()
    app, source = make_app(
        launcher=lau,
        alerts=AlertConfig(bell=True),
        deliverer=Deliverer([sink], lambda _text: None),
    )
    written = spy(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, app, BUSY, "A")
        await until(pilot, lambda: called.exists() and app.handed_over)
        asking = later(
            source.current(),
            1,
            ses_done={"state": "input", "reason": None, "pending": (views.PERMISSION,)},
        )
        source.set(asking)
        await until(pilot, lambda: app.view is not None and app.view.rows[DONE].state == "input")
        await until(pilot, lambda: DONE in app.unread)
        await until(
            pilot, lambda: [(p.kind, p.session_id) for p in sink.sent] == [("input", DONE[1])]
        )
        assert app.handed_over  # delivered while OpenCode has the terminal
        assert written == []  # nothing written to a terminal OpenCode has
        release.touch()
        await until(pilot, lambda: not app.handed_over)
        source.set(later(asking, 1, ses_busy={"state": "idle", "reason": "error"}))
        await until(pilot, lambda: written == ["BEL"])
