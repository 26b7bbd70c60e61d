"""The inventory file (issue 44 item 2): Prometheus's file_sd JSON read as servers to watch,
hostile files refused with a clear error while the last good list stays, and the file's
changes reaching a running fleet live."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from tui.core.config import Config, load_config, resolve_options
from tui.core.fleet import Fleet
from tui.core.inventory import MAX_BYTES, InventoryFile, parse
from tui.core.settings import Auth, Settings
from tui.core.targets import Fixed, Keeper, Target, TargetError
from tui.demo.server import DemoServer

FAST = Settings(grace=0.5, resync_interval=60)


def write(path: Path, groups: Any) -> Path:
    path.write_text(json.dumps(groups))
    return path


def refused(text: str) -> str:
    with pytest.raises(TargetError) as got:
        parse(text, env={})
    return got.value.why


def test_a_good_file_gives_its_servers_names_labels_and_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "build.pw").write_text("s3cret\n")
    inv = write(
        tmp_path / "servers.json",
        [
            {
                "targets": ["10.0.0.5:4096"],
                "labels": {
                    "name": "build",
                    "team": "infra",
                    "__scheme__": "https",
                    "__metrics_path__": "/ignored",
                    "password_file": "~/build.pw",
                    "username": "ops",
                },
            },
            {"targets": ["a.example:4096", "[::1]:4097"], "labels": {"name": "pool"}},
            {"targets": ["h:1"]},
        ],
    )
    got = InventoryFile(str(inv), env={}).read()
    assert [t.url for t in got] == [
        "https://10.0.0.5:4096",
        "http://a.example:4096",
        "http://[::1]:4097",
        "http://h:1",
    ]
    # a group of one: its name; of several: name@host:port each; none: called by its URL
    assert [t.name for t in got] == ["build", "pool@a.example:4096", "pool@[::1]:4097", ""]
    assert got[0].labels == (("team", "infra"),)  # name, credentials and __ labels are not
    assert got[0].auth == Auth("ops", "s3cret")
    assert "s3cret" not in repr(got[0])
    assert got[1].auth is None and got[0].source == "file"
    assert "group 1" in got[0].how


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[{", "not valid JSON"),
        ('{"targets": []}', "expected a JSON list"),
        ("[1]", "group 1: expected an object"),
        ('[{"targets": "h:1"}]', "targets must be a list"),
        ('[{"targets": ["h:1"], "labels": []}]', "labels must be an object"),
        ('[{"targets": ["h:1"], "lables": {}}]', "unknown key lables"),
        ('[{"targets": ["h"]}]', "target h: expected host:port (the port is required)"),
        ('[{"targets": ["u:p@h:1"]}]', "expected host:port"),
        ('[{"targets": ["h:1/x"]}]', "expected host:port"),
        ('[{"targets": ["h:99999"]}]', "expected host:port"),
        ('[{"targets": ["127.0.0.1:0"]}]', "target 127.0.0.1:0: expected host:port"),
        ('[{"targets": ["h:1", "h:1"]}]', "h:1 is listed twice"),
        ('[{"targets": ["h:1"], "labels": {"team": 3}}]', "label team must be a string, not 3"),
        ('[{"targets": ["h:1"], "labels": {"__scheme__": "ftp"}}]', "http or https, not ftp"),
        ('[{"targets": ["h:1"], "labels": {"name": "a b"}}]', "name a b: use letters"),
        ('[{"targets": ["h:1"], "labels": {"server": "x"}}]', "label server is the exporter's"),
        ('[{"targets": ["h:1"], "labels": {"te-am": "x"}}]', "label name te-am: use [a-zA-Z_]"),
        ('[{"targets": ["h:1"], "labels": {"t": "' + "x" * 257 + '"}}]', "longer than 256"),
        (
            '[{"targets": ["h:1"], "labels": {"name": "a"}}, '
            '{"targets": ["h:2"], "labels": {"name": "a"}}]',
            "group 2: two servers are named a",
        ),
        (
            '[{"targets": ["h:1"], "labels": {'
            + ", ".join(f'"l{i}": "v"' for i in range(11))
            + "}}]",
            "11 labels; at most 10",
        ),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
    ],
)
def test_a_wrong_file_is_one_clear_line(text: str, says: str) -> None:
    why = refused(text)
    assert says in why and "\n" not in why


def test_escapes_in_a_label_are_refused_and_shown_literally() -> None:
    why = refused('[{"targets": ["h:1"], "labels": {"team": "a\\u001b[31mred\\u202e"}}]')
    assert "label team has a control character" in why
    assert "\\x1b[31mred" in why and "\x1b" not in why and "\u202e" not in why
    why = refused('[{"targets": ["h:1"], "labels": {"\\u001b]0;x": "v"}}]')
    assert "\\x1b]0;x" in why and "\x1b" not in why


def test_an_inline_password_is_refused_never_used_nor_shown() -> None:
    why = refused('[{"targets": ["h:1"], "labels": {"password": "hunter2"}}]')
    assert "inline password is refused" in why and "password_file" in why
    assert "hunter2" not in why


def test_an_unreadable_password_file_says_which(tmp_path: Path) -> None:
    inv = write(
        tmp_path / "s.json", [{"targets": ["h:1"], "labels": {"password_file": "/nope/pw"}}]
    )
    with pytest.raises(TargetError) as got:
        InventoryFile(str(inv), env={}).read()
    assert "password_file /nope/pw: cannot read it (No such file or directory)" in got.value.why


def read_in_time(source: InventoryFile) -> str:
    """The error of one read, which must come back at once (a FIFO must not block it)."""
    out: list[str] = []

    def run() -> None:
        try:
            source.read()
        except TargetError as exc:
            out.append(exc.why)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "the read blocked"
    assert out, "no error"
    return out[0]


def test_a_fifo_a_device_a_folder_a_huge_file_and_yaml_are_refused_without_blocking(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert "not a regular file" in read_in_time(InventoryFile(str(fifo)))
    assert "not a regular file" in read_in_time(InventoryFile("/dev/zero"))
    assert "folder" in read_in_time(InventoryFile(str(tmp_path)))
    huge = tmp_path / "huge.json"
    huge.write_text("[" + " " * MAX_BYTES + "]")
    assert "larger than 1 MiB" in read_in_time(InventoryFile(str(huge)))
    yml = tmp_path / "servers.yml"
    yml.write_text("- targets: ['h:1']\n")
    assert "YAML is not read" in read_in_time(InventoryFile(str(yml)))
    yml.write_text('[{"targets": ["h:1"]}]')  # JSON is YAML too: a .yml file of JSON is read
    assert [t.url for t in InventoryFile(str(yml)).read()] == ["http://h:1"]
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe[]")
    assert "not UTF-8" in read_in_time(InventoryFile(str(binary)))


def test_it_is_parsed_again_only_when_its_content_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tui.core.inventory as inventory

    calls: list[str] = []
    real = inventory.parse
    monkeypatch.setattr(
        inventory, "parse", lambda text, **kw: calls.append(text) or real(text, **kw)
    )
    inv = write(tmp_path / "s.json", [{"targets": ["h:1"]}])
    source = InventoryFile(str(inv))
    first = source.read()
    assert source.read() == first and len(calls) == 1  # unchanged: not read again
    os.utime(inv, ns=(1, 1))  # touched, same content (its hash): not parsed again
    assert source.read() == first and len(calls) == 1
    write(inv, [{"targets": ["h:1"]}, {"targets": ["h:2"]}])
    assert [t.url for t in source.read()] == ["http://h:1", "http://h:2"] and len(calls) == 2


async def test_a_broken_file_keeps_the_last_good_list_and_is_said_once(tmp_path: Path) -> None:
    inv = write(tmp_path / "s.json", [{"targets": ["h:1"], "labels": {"name": "one"}}])
    notes: list[str] = []
    keeper = Keeper([InventoryFile(str(inv), every=0)], notes.append)
    assert await keeper.read_due(0)
    good = keeper.wanted()
    assert [t.name for t in good] == ["one"]
    for broken in ("[{", "x" * (MAX_BYTES + 1)):
        inv.write_text(broken)
        for now in (1, 2, 3):
            assert not await keeper.read_due(now)
            assert keeper.wanted() == good
    inv.unlink()
    os.mkfifo(inv)
    assert not await keeper.read_due(4)
    assert keeper.wanted() == good
    said = [n for n in notes if "keeping the 1 server(s)" in n]
    assert len(said) == 3, notes  # each error once, though read three times
    assert "not valid JSON" in said[0] and "larger than 1 MiB" in said[1]
    assert "not a regular file" in said[2]


def test_the_config_the_environment_and_the_flag_name_the_file(tmp_path: Path) -> None:
    inv = str(tmp_path / "s.json")
    opts = resolve_options(Config(servers_file=inv), env={})
    assert [s.path for s in opts.sources] == [inv]  # type: ignore[attr-defined]
    assert opts.urls == []  # nothing else names a server: the inventory's only, no default
    opts = resolve_options(Config(servers=["http://h:9"]), env={}, servers_file=inv)
    assert opts.urls == ["http://h:9"] and len(opts.sources) == 1  # they join the config's
    assert resolve_options(Config(discover="none"), env={}).sources == []
    config, warnings = load_config(env={"OCWATCH_SERVERS_FILE": inv})
    assert config.servers_file == inv and not warnings


def test_status_reads_the_file_once_and_says_what_it_cannot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli.main import main

    inv = write(tmp_path / "s.json", [{"targets": ["127.0.0.1:9"], "labels": {"name": "gone"}}])
    assert main(["status", "--json", "--servers-file", str(inv)]) == 2
    out = json.loads(capsys.readouterr().out)
    assert [(s["name"], s["url"]) for s in out["servers"]] == [("gone", "http://127.0.0.1:9")]
    inv.write_text('[{"targets": ["h:1"], "labels": {"team": "\\u001b[2J"}}]')
    assert main(["--servers-file", str(inv), "status", "--json"]) == 2
    err = capsys.readouterr().err
    assert "servers file" in err and "\\x1b[2J" in err and "\x1b" not in err
    with pytest.raises(SystemExit) as usage:  # refused: a command on one server
        main(["abort", "x", "--servers-file", str(inv)])
    assert usage.value.code == 2
    assert "--servers-file has no effect on `ocwatch abort`" in capsys.readouterr().err


async def until(condition: Any, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_servers_added_to_and_removed_from_the_file_come_and_go_live(tmp_path: Path) -> None:
    one, two = DemoServer(speed=400, heartbeat=0.05), DemoServer(speed=400, heartbeat=0.05)
    one.freeze()
    two.freeze()
    async with one, two:
        host_one, host_two = one.url.split("//")[1], two.url.split("//")[1]
        inv = write(tmp_path / "s.json", [{"targets": [host_one], "labels": {"name": "one"}}])
        notes: list[str] = []
        keeper = Keeper(
            [Fixed([Target("http://127.0.0.1:9")]), InventoryFile(str(inv), every=0.05)],
            notes.append,
        )
        fleet = Fleet(["http://127.0.0.1:9"], settings=FAST, keeper=keeper)
        task = asyncio.create_task(fleet.run(lambda: None))
        try:

            def servers() -> set[str]:
                return {k[0] for k in fleet.current().rows}

            await until(lambda: servers() == {one.url})
            kept = {k: r for k, r in fleet.current().rows.items()}
            first = fleet.monitor(one.url)
            write(
                inv,
                [
                    {"targets": [host_one], "labels": {"name": "one"}},
                    {"targets": [host_two], "labels": {"name": "two", "team": "infra"}},
                ],
            )
            await until(lambda: servers() == {one.url, two.url})
            info = {s.url: s for s in fleet.servers()}
            assert info[two.url].name == "two" and info[two.url].labels == (("team", "infra"),)
            assert fleet.monitor(one.url) is first  # the other kept its monitor and its rows
            again = fleet.current().rows
            assert all(again[k] == kept[k] for k in kept)
            inv.write_text("[{")  # broken: the last good list holds
            await until(lambda: any("not valid JSON" in n for n in notes))
            assert servers() == {one.url, two.url}
            write(inv, [{"targets": [host_two], "labels": {"name": "two", "team": "ops"}}])
            await until(lambda: servers() == {two.url})
            assert {s.url for s in fleet.servers()} == {"http://127.0.0.1:9", two.url}
            assert fleet.servers()[-1].labels == (("team", "ops"),)  # relabelled in place
            assert any("was taken out of the servers file" in n for n in notes)
            assert one.url in fleet.gone
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await fleet.aclose()


def test_servers_join_a_list_read_once_the_named_server_holding_its_url() -> None:
    """Servers.joined (status reads an inventory once): new URLs come after the named ones with
    their credentials and names; a URL already named, or listed twice, adds nothing."""
    from tui.core.targets import Servers

    mine, theirs = Auth("me", "p1"), Auth("them", "p2")
    servers = Servers(("http://a:1",), Settings(), mine, {"http://a:1": mine}, {"http://a:1": "a"})
    got = servers.joined(
        [
            Target("http://a:1/", auth=theirs, name="not a"),
            Target("http://b:2", auth=theirs, name="b"),
            Target("http://b:2/", auth=None, name="b again"),
            Target("http://c:3"),
        ]
    )
    assert got.urls == ("http://a:1", "http://b:2", "http://c:3")
    assert got.auths == {"http://a:1": mine, "http://b:2": theirs, "http://c:3": None}
    assert got.names == {"http://a:1": "a", "http://b:2": "b"}
    assert servers.urls == ("http://a:1",) and servers.joined([]) is servers
    fleet = Fleet.of_servers(got)
    assert [(m.url, m.name) for m in fleet.monitors] == [
        ("http://a:1", "a"),
        ("http://b:2", "b"),
        ("http://c:3", ""),
    ]
    assert "p1" not in repr(got) and "p2" not in repr(got)  # credentials never in a repr


def test_the_options_make_one_servers_value() -> None:
    opts = resolve_options(
        Config(servers=[{"url": "http://a:1", "name": "a"}]),
        auth=Auth("me", "pw"),
        env={},
        discover="none",
    )
    servers = opts.servers()
    assert servers.urls == tuple(opts.urls) and servers.settings is opts.settings
    assert servers.auth is opts.auth and dict(servers.auths) == opts.auths
    assert dict(servers.names) == opts.names and servers.sources == tuple(opts.sources)


def test_metrics_says_where_its_servers_come_from_when_none_is_named() -> None:
    """`ocwatch metrics --servers-file F` starts with no server watched yet: its first line
    said `serving URL for` and nothing (seen by hand)."""
    from tui.cli.metrics import serving
    from tui.core.targets import Servers

    source = InventoryFile("/etc/ocwatch/servers.json")
    only = Servers((), sources=(source,))
    said = serving("http://127.0.0.1:9464/metrics", Fleet([]), only)
    assert said == (
        "ocwatch metrics: serving http://127.0.0.1:9464/metrics for the servers from "
        "servers file /etc/ocwatch/servers.json"
    )
    both = Servers(("http://127.0.0.1:4096",), sources=(source,))
    said = serving("URL", Fleet.of_servers(both), both)
    assert said.endswith(
        "for http://127.0.0.1:4096, and the servers from servers file /etc/ocwatch/servers.json"
    )
    assert serving("URL", Fleet(["http://h:1"]), Servers(("http://h:1",))).endswith(
        "for http://h:1"
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [("[" * 100_000 + "]" * 100_000, "nested too deeply"), ("[" + "9" * 5000 + "]", "too long")],
)
def test_a_file_python_cannot_read_is_said_not_a_traceback(text: str, why: str) -> None:
    """A number of more digits than Python converts (a ValueError that is no JSON error) or a
    document nested too deeply: a TargetError (the keeper keeps the last good list), never a
    traceback (`status` crashed on the first, a running `watch` stopped)."""
    with pytest.raises(TargetError, match=why):
        parse(text)


@pytest.mark.parametrize("toml", ["grace = " + "1" * 5000, "servers = " + "[" * 5000 + "]" * 5000])
def test_a_config_python_cannot_read_is_a_warning_and_the_defaults(
    tmp_path: Path, toml: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(toml)
    cfg, warnings = load_config(path, env={})
    assert cfg == Config() and any("cannot read it" in w for w in warnings), warnings
