"""Alerts fire once per real transition, rate limited; the config file is forgiving."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.builders import SERVER, T0, assistant, busy, permission, session, snap
from tui.core.alerts import Alert, Alerter, alerts_for, osc9, terminal_sinks
from tui.core.config import AlertConfig, load_config
from tui.core.derive import derive_server
from tui.core.settings import Settings
from tui.core.view import View
from tui.core.view import transitions as settled_changes

S = Settings()


def transitions(before, after):
    """The settled transitions from View `before` (every row taken as settled) to `after`."""
    base = settled_changes(None, before).settled if before is not None else None
    found = settled_changes(base, after)
    return found.transitions + found.asks


def view(snapshot, now=T0):
    return View(now, (), derive_server(snapshot, (), now, S))


def busy_v():
    return view(
        snap(
            [session("s1")],
            status={"s1": busy()},
            messages={"s1": assistant("m1", "s1", created=T0 - 5)},
        )
    )


def input_v(rid="per_1"):
    return view(snap([session("s1")], status={"s1": busy()}, permissions=[permission(rid, "s1")]))


def done_v(error=None, now=T0 + 1):
    m = assistant("m1", "s1", created=T0 - 5, completed=T0, finish="stop", error=error)
    return view(snap([session("s1")], messages={"s1": m}), now)


def test_only_changes_alert_not_first_sight():
    assert alerts_for(transitions(None, input_v())) == []
    got = alerts_for(transitions(busy_v(), input_v()))
    assert [a.kind for a in got] == ["input"]
    assert "git push" in got[0].text


def test_idle_twice_gives_one_alert():
    a, b = busy_v(), done_v()
    again = done_v(now=T0 + 2)  # a second idle: same state
    kinds = [x.kind for x in alerts_for(transitions(a, b))]
    kinds += [x.kind for x in alerts_for(transitions(b, again))]
    assert kinds == ["completed"]


def test_error_and_abort_kinds():
    assert alerts_for(transitions(busy_v(), done_v("APIError")))[0].kind == "error"
    assert alerts_for(transitions(busy_v(), done_v("MessageAbortedError")))[0].kind == "aborted"


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_alerter_dedupes_same_episode_and_rate_limits():
    clock = Clock()
    got: list[Alert] = []
    al = Alerter(
        AlertConfig(on=["input", "completed"], min_interval=10, max_per_minute=2),
        [got.append],
        clock,
    )
    b, i = busy_v(), input_v()
    al.feed(transitions(b, i))
    clock.t = 1
    al.feed(transitions(b, i))  # the same request again (e.g. flapping): deduped
    assert len(got) == 1 and al.suppressed == 1
    clock.t = 20
    al.feed(transitions(b, input_v("per_2")))  # a new request after min_interval: alerts
    assert len(got) == 2
    clock.t = 40
    al.feed(transitions(b, done_v()))  # third within a minute: over max_per_minute
    assert len(got) == 2 and al.suppressed == 2


def test_kinds_not_configured_do_not_fire():
    got: list[Alert] = []
    al = Alerter(AlertConfig(on=["error"]), [got.append], Clock())
    al.feed(transitions(busy_v(), done_v()))
    assert got == []


def test_bell_and_osc9_are_written_once_per_transition():
    out: list[str] = []
    cfg = AlertConfig(bell=True, osc9=True, on=["input"])
    al = Alerter(cfg, terminal_sinks(cfg, out.append), Clock())
    b, i = busy_v(), input_v()
    al.feed(transitions(b, i))
    al.feed(transitions(i, i))  # nothing changed
    assert out.count("\a") == 1
    assert len([x for x in out if x.startswith("\x1b]9;")]) == 1


def test_osc9_strips_control_characters_from_titles():
    v = input_v()
    row = replace(next(iter(v.rows.values())), title="evil\x07\x1b]9;pwned\x1b\\")
    a = alerts_for(transitions(busy_v(), View(T0, (), {(SERVER, "s1"): row})))[0]
    seq = osc9(a)
    assert seq.startswith("\x1b]9;") and seq.endswith("\x07")
    assert "\x1b" not in seq[1:-1] and "\x07" not in seq[:-1]


def test_config_file_env_and_bad_values(tmp_path):
    p = tmp_path / "config.toml"
    p.write_text(
        'servers = ["http://a:1"]\ngrace = 5\ntheme = "ocwatch-light"\n'
        '[alerts]\nbell = true\non = ["input", "stale"]\n'
    )
    cfg, warns = load_config(p, env={})
    assert warns == []
    assert cfg.servers == ["http://a:1"] and cfg.settings().grace == 5
    assert cfg.alerts.bell and cfg.alerts.on == ["input", "stale"]
    cfg, _ = load_config(p, env={"OCWATCH_GRACE": "7", "OCWATCH_SERVERS": "http://b:2,http://c:3"})
    assert cfg.grace == 7 and cfg.servers == ["http://b:2", "http://c:3"]

    p.write_text('grace = "soon"\ntheme = "x"\npassword = "hunter2"\n[alerts]\non = ["nope"]\n')
    cfg, warns = load_config(p, env={})
    assert cfg.theme == "x" and cfg.grace == 3.0  # valid keys kept, invalid ones reported
    assert any("grace" in w for w in warns) and any("password" in w for w in warns)
    assert not any("hunter2" in w for w in warns)

    p.write_text("this is [not toml")
    cfg, warns = load_config(p, env={})
    assert cfg.servers == [] and "cannot read" in warns[0]

    # a bad key of [alerts] leaves its others: a typo in `on` dropped the webhook, and the
    # alerts a metrics exporter was to send went nowhere (a hostile review)
    p.write_text('[alerts]\non = ["input", "eror"]\nwebhook = "https://hooks.example/x"\n')
    cfg, warns = load_config(p, env={})
    assert cfg.alerts.webhook == "https://hooks.example/x" and any("alerts.on" in w for w in warns)


def test_the_environment_is_checked_as_the_file_is(tmp_path: Path) -> None:
    """A variable over the file, an empty one unset, an invalid one said and ignored (the
    file's value kept), and only the documented variables read."""
    p = tmp_path / "config.toml"
    p.write_text('grace = 5\nresync_interval = 20\ntheme = "ocwatch-light"\nrequest_deadline = 9\n')
    cfg, warns = load_config(
        p,
        env={
            "OCWATCH_GRACE": "-1",
            "OCWATCH_RESYNC": "soon",
            "OCWATCH_THEME": "",
            "OCWATCH_REQUEST_DEADLINE": "99",
            "OCWATCH_SERVERS": " , ",
        },
    )
    assert (cfg.grace, cfg.resync_interval, cfg.theme) == (5, 20, "ocwatch-light")
    assert cfg.request_deadline == 9 and cfg.servers == []
    assert (
        len(warns) == 2
        and warns[0].startswith("$OCWATCH_GRACE='-1' (")
        and warns[1] == ("$OCWATCH_RESYNC='soon' is not a number; ignored")
    )
    p.write_text('servers = ["http://a:1"]\n')
    assert load_config(p, env={"OCWATCH_SERVERS": " , "})[0].servers == []  # set, to none


def test_the_documented_config_example_is_a_valid_config(tmp_path: Path) -> None:
    """Every key the example of docs/CONFIGURATION.md shows is one the config accepts, with a
    valid value."""
    import re

    doc = Path(__file__).resolve().parents[2] / "docs" / "CONFIGURATION.md"
    block = re.search(r"```toml\n(servers = .*?)```", doc.read_text(encoding="utf-8"), re.S)
    assert block is not None
    path = tmp_path / "config.toml"
    path.write_text(block.group(1), encoding="utf-8")
    config, warnings = load_config(path, env={})
    assert warnings == []
    assert config.attach_command[:2] == ["opencode", "attach"] and config.read_only is False


def _asked_at(t: float) -> str:
    """A permission id that says it was asked at `t` (as OpenCode's ids carry their time)."""
    return f"per_{(int(t * 1000) * 0x1000) % (1 << 48):012x}abcdefghijklmn"


def test_a_session_first_seen_asking_something_new_alerts() -> None:
    """Issue 41: a session created and asking while nobody watched its start (the user was in
    OpenCode) never alerted, its first sight being no change. Asked since the alerts began, it
    does; asked before (what the dashboard found waiting when it started), it does not."""
    fresh = alerts_for(transitions(None, input_v(_asked_at(T0 - 1))), asked_since=T0 - 2)
    assert [a.kind for a in fresh] == ["input"] and "git push" in fresh[0].text
    old = alerts_for(transitions(None, input_v(_asked_at(T0 - 60))), asked_since=T0 - 2)
    assert old == []
    assert alerts_for(transitions(None, done_v()), asked_since=T0 - 2) == []  # only asks
    sent: list[Alert] = []
    alerter = Alerter(AlertConfig(), [sent.append], lambda: 0.0, started_at=T0 - 2)
    alerter.feed(transitions(None, input_v(_asked_at(T0 - 1))))
    assert [a.kind for a in sent] == ["input"]
