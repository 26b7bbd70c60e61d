"""Local discovery (issue 44 item 1) on a fake /proc: which processes are OpenCode's, their
loopback ports, their folders, the V2 service file, and hostile content (a huge or binary
command line, a vanished process, malformed socket rows). The lines are what 1.18.33 and
2.0.15 show in a real /proc (recorded by hand: the TUI without --port listens on nothing)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tui.core import discover
from tui.core.discover import LocalDiscovery, opencode_kind, parse_socket_row
from tui.core.settings import Auth
from tui.core.targets import Keeper, Target, TargetError

HEADER = (
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode\n"
)
UID = os.getuid()


def row(n: int, local: str, state: str, inode: int, uid: int = UID, remote: str = "") -> str:
    remote = remote or ("0" * (len(local) - 5) + ":0000")
    return (
        f"   {n}: {local} {remote} {state} 00000000:00000000 00:00000000 00000000 {uid:>5} "
        f"       0 {inode} 1 0000000000000000 100 0 0 10 0\n"
    )


class FakeProc:
    """A /proc tree under tmp_path: processes (cmdline, cwd, fd links) and socket tables."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "net").mkdir(parents=True)
        self.tcp = [HEADER]
        self.tcp6 = [HEADER]
        self.write()

    def process(
        self,
        pid: int,
        argv: list[str] | bytes,
        cwd: str | None,
        sockets: list[int] = (),  # type: ignore[assignment]
    ) -> Path:
        base = self.root / str(pid)
        (base / "fd").mkdir(parents=True)
        raw = argv if isinstance(argv, bytes) else b"\0".join(a.encode() for a in argv) + b"\0"
        (base / "cmdline").write_bytes(raw)
        if cwd is not None:
            os.symlink(cwd, base / "cwd")
        for fd, inode in enumerate([*sockets, None]):
            target = f"socket:[{inode}]" if inode is not None else "/dev/null"
            os.symlink(target, base / "fd" / str(fd + 3))
        return base

    def write(self) -> None:
        (self.root / "net" / "tcp").write_text("".join(self.tcp))
        (self.root / "net" / "tcp6").write_text("".join(self.tcp6))


V1 = "/home/me/.opencode/node_modules/.bin/opencode"
V2 = "/home/me/.opencode2/node_modules/@opencode/cli-linux-x64-baseline/bin/opencode"


@pytest.fixture
def proc(tmp_path: Path) -> FakeProc:
    return FakeProc(tmp_path / "proc")


def discovery(proc: FakeProc, tmp_path: Path, **kw: object) -> LocalDiscovery:
    env = {"HOME": "/home/me", "XDG_STATE_HOME": str(tmp_path / "state")}
    return LocalDiscovery(env, proc_root=proc.root, platform="linux", **kw)  # type: ignore[arg-type]


def test_command_lines_of_opencode() -> None:
    # what ps shows for the real 1.18.33 (the npm launcher is a symlink to the native binary)
    assert opencode_kind([V1, "serve", "--port", "0", "--hostname", "127.0.0.1"]) == (
        "opencode serve"
    )
    assert opencode_kind([V1]) == "opencode TUI"
    assert opencode_kind([V1, "--port", "0"]) == "opencode TUI"  # (0 is no command)
    assert opencode_kind([V1, "/home/me/src/app"]) == "opencode TUI"
    assert opencode_kind([V2, "serve", "--service"]) == "V2 service"
    assert opencode_kind(["node", "/usr/lib/node_modules/opencode-ai/bin/opencode", "web"]) == (
        "opencode web"
    )
    assert opencode_kind([V1, "attach", "http://127.0.0.1:4096"]) is None  # serves nothing
    assert opencode_kind([V1, "mcp", "auth"]) is None
    assert opencode_kind(["/usr/bin/python3", "-m", "opencode", "serve"]) is None
    assert opencode_kind(["/usr/bin/vim", "opencode"]) is None
    assert opencode_kind([]) is None


def test_socket_rows() -> None:
    # 127.0.0.1:4096 listening
    assert parse_socket_row(row(0, "0100007F:1000", "0A", 111)) == (111, "127.0.0.1", 4096, UID)
    # every interface: reached at 127.0.0.1
    assert parse_socket_row(row(1, "00000000:1001", "0A", 112)) == (112, "127.0.0.1", 4097, UID)
    # another loopback address of 127/8
    assert parse_socket_row(row(1, "0201007F:1001", "0A", 9))[1] == "127.0.1.2"  # type: ignore[index]
    # ::1 and ::
    v6_loop = "00000000000000000000000001000000:1002"
    assert parse_socket_row(row(2, v6_loop, "0A", 113)) == (113, "[::1]", 4098, UID)
    v6_any = "00000000000000000000000000000000:1003"
    assert parse_socket_row(row(3, v6_any, "0A", 114)) == (114, "[::1]", 4099, UID)
    # ::ffff:127.0.0.1
    mapped = "0000000000000000FFFF00000100007F:1004"
    assert parse_socket_row(row(4, mapped, "0A", 115)) == (115, "127.0.0.1", 4100, UID)
    # not loopback, not listening, malformed: nothing
    assert parse_socket_row(row(5, "0502000A:1000", "0A", 116)) is None  # 10.0.2.5
    assert parse_socket_row(row(6, "0100007F:1000", "01", 117)) is None  # established
    assert parse_socket_row(HEADER) is None
    assert parse_socket_row("   7: 0100007F:ZZZZ 00000000:0000 0A") is None
    assert parse_socket_row(row(8, "0100007F:10000", "0A", 118)) is None
    assert parse_socket_row(row(9, "01007F:1000", "0A", 119)) is None
    assert parse_socket_row(row(10, "XY00007F:1000", "0A", 120)) is None
    assert parse_socket_row(row(11, "0100007F:0000", "0A", 121)) is None
    assert parse_socket_row("\x00\xff garbage " * 40) is None


def test_a_v1_server_and_a_tui_are_found_with_their_folders(proc: FakeProc, tmp_path: Path) -> None:
    proc.process(101, [V1, "serve", "--port", "0"], "/home/me/src/shop", [5001, 5002, 5003])
    proc.process(102, [V1, "--port", "0"], "/home/me/src/api", [6001])
    proc.process(103, [V1], "/home/me/src/quiet", [7001])  # the TUI without --port
    proc.process(104, ["/usr/bin/bash"], "/home/me", [8001])
    proc.tcp += [
        row(0, "0100007F:A46F", "0A", 5001),  # 42095
        row(1, "0100007F:A46F", "01", 5002, remote="0100007F:B398"),  # a client of it
        row(2, "00000000:80B5", "0A", 6001),  # 32949, every interface
        row(3, "0100007F:1F90", "0A", 8001),  # bash's: not OpenCode
    ]
    proc.tcp6 += [row(0, "00000000000000000000000001000000:A46F", "0A", 5003)]  # ::1 too: once
    proc.write()
    d = discovery(proc, tmp_path, auth=Auth("opencode", "mine"))
    got = {t.url: t for t in d.read()}
    assert set(got) == {"http://127.0.0.1:42095", "http://127.0.0.1:32949"}
    shop, api = got["http://127.0.0.1:42095"], got["http://127.0.0.1:32949"]
    assert (shop.name, shop.how, shop.source) == (
        "shop",
        "opencode serve, pid 101, ~/src/shop",
        "discovered",
    )
    assert (api.name, api.how) == ("api", "opencode TUI, pid 102, ~/src/api")
    assert (shop.folder, api.folder) == ("/home/me/src/shop", "/home/me/src/api")  # (Fleet.local)
    assert shop.auth == Auth("opencode", "mine")  # the user's own password, set by the user
    assert d.last is not None
    lines = d.last.lines()
    assert lines[0].startswith("/proc: 4 processes of this user, 3 OpenCode, 2 listening")
    assert "1 TUI without a port" in lines[0]
    assert lines[1].endswith("state/opencode/service.json: absent")


def test_only_this_users_processes_and_sockets(proc: FakeProc, tmp_path: Path) -> None:
    proc.process(101, [V1, "serve"], "/srv/theirs", [5001])
    proc.tcp.append(row(0, "0100007F:1000", "0A", 5001, uid=UID + 1))  # the socket is not ours
    proc.write()
    assert discovery(proc, tmp_path).read() == []
    assert discovery(proc, tmp_path, uid=UID + 1).read() == []  # the process is not theirs
    d = discovery(proc, tmp_path, uid=UID + 1)
    d.read()
    assert d.last is not None and d.last.processes == 0


def test_names_are_safe_and_distinct(proc: FakeProc, tmp_path: Path) -> None:
    proc.process(101, [V1, "serve"], "/home/me/a/app", [5001])
    proc.process(102, [V1, "serve"], "/home/me/b/app", [5002])
    proc.process(103, [V1, "serve"], "/home/me/my proj\x1b[31m", [5003])
    proc.process(104, [V1, "serve"], "/home/me", [5004])
    proc.tcp += [row(i, f"0100007F:{4096 + i:04X}", "0A", 5001 + i) for i in range(4)]
    proc.write()
    names = {t.url.rsplit(":", 1)[1]: t.name for t in discovery(proc, tmp_path).read()}
    assert names == {"4096": "app@4096", "4097": "app@4097", "4098": "my-proj-31m", "4099": "home"}


def test_hostile_proc_content(proc: FakeProc, tmp_path: Path) -> None:
    # a huge command line: only MAX_CMDLINE bytes are read, and it is still OpenCode's
    proc.process(101, (V1.encode() + b"\0serve\0" + b"A" * 10_000_000), "/home/me/big", [5001])
    # binary junk
    proc.process(102, bytes(range(256)) * 100, "/home/me/junk", [5002])
    # a process without a cmdline (a vanished pid: its folder is there, its files are not)
    (proc.root / "103").mkdir()
    # a process whose fd folder is gone (it ended between two reads)
    gone = proc.process(104, [V1, "serve"], "/home/me/gone", [5004])
    for link in (gone / "fd").iterdir():
        link.unlink()
    (gone / "fd").rmdir()
    # a cwd that is no absolute path (never followed), fd links of every kind
    odd = proc.process(105, [V1, "serve"], "relative/../../etc", [5005])
    os.symlink("socket:[not-a-number]", odd / "fd" / "90")
    os.symlink("socket:[99999999999999999999999]", odd / "fd" / "91")
    os.symlink("anon_inode:[eventfd]", odd / "fd" / "92")
    # non-numeric entries of /proc are no processes
    (proc.root / "self").mkdir()
    proc.tcp += [
        row(0, "0100007F:1000", "0A", 5001),
        "garbage line with \x00 nul and no fields\n",
        "   9: 0100007F:1001 00000000:0000 0A short\n",
        "x" * 100_000 + "\n",
        row(1, "0100007F:1002", "0A", 5002),
        row(2, "0100007F:1003", "0A", 5005),
    ]
    proc.tcp6.append("\n")
    proc.write()
    got = {t.url: t for t in discovery(proc, tmp_path).read()}
    assert set(got) == {"http://127.0.0.1:4096", "http://127.0.0.1:4099"}
    assert got["http://127.0.0.1:4096"].name == "big"
    assert got["http://127.0.0.1:4099"].name == "opencode"  # folder unknown
    assert got["http://127.0.0.1:4099"].how.endswith("folder unknown")


def test_bounds(proc: FakeProc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc.process(101, [V1, "serve"], "/home/me/app", list(range(9000, 9020)))
    proc.tcp += [row(i, f"0100007F:{5000 + i:04X}", "0A", 9000 + i) for i in range(20)]
    proc.write()
    monkeypatch.setattr(discover, "MAX_FDS", 10)
    assert len(discovery(proc, tmp_path).read()) == discover.MAX_PORTS
    monkeypatch.setattr(discover, "MAX_FDS", 5)
    assert len(discovery(proc, tmp_path).read()) < 5
    monkeypatch.setattr(discover, "MAX_SOCKET_ROWS", 2)
    assert len(discovery(proc, tmp_path).read()) <= 2
    for pid in range(200, 230):
        proc.process(pid, ["/bin/sleep"], "/")
    monkeypatch.setattr(discover, "MAX_PROCESSES", 10)
    d = discovery(proc, tmp_path)
    d.read()
    assert d.last is not None and d.last.capped and d.last.processes <= 10
    assert "the first 10 looked at" in d.last.lines()[0]


def service_file(tmp_path: Path, **data: object) -> Path:
    path = tmp_path / "state" / "opencode" / "service.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    path.chmod(0o600)
    return path


def test_the_v2_service_with_its_own_password(proc: FakeProc, tmp_path: Path) -> None:
    proc.process(301, [V2, "serve", "--service"], "/home/me", [5301])
    proc.process(302, [V1, "serve"], "/home/me/app", [5302])
    proc.tcp += [row(0, "0100007F:C0DE", "0A", 5301), row(1, "0100007F:1000", "0A", 5302)]
    proc.write()
    url = f"http://127.0.0.1:{0xC0DE}"
    service_file(tmp_path, url=url, pid=301, password="v2-secret", version="2.0.15")
    d = discovery(proc, tmp_path)  # no password of the user's
    got = {t.url: t for t in d.read()}
    assert len(got) == 2  # the service once: its file's entry, not its process's
    assert got[url].auth == Auth("opencode", "v2-secret")
    assert (got[url].name, got[url].how) == ("v2-service", "V2 service, service.json, pid 301")
    assert got["http://127.0.0.1:4096"].auth is None  # the service's password is its own
    assert d.last is not None and f"{url} (V2 2.0.15, pid 301)" in d.last.lines()[1]
    assert "v2-secret" not in repr(got) + "".join(d.last.lines())


def test_a_stale_service_file_is_not_watched(proc: FakeProc, tmp_path: Path) -> None:
    service_file(tmp_path, url="http://127.0.0.1:49374", pid=4242, password="x")
    d = discovery(proc, tmp_path)
    assert d.read() == []
    assert d.last is not None and "pid 4242 not running" in d.last.lines()[1]
    service_file(tmp_path, url="ftp://nope")
    d.read()
    assert "no http(s) url" in d.last.lines()[1]


def test_elsewhere_it_says_so_once(tmp_path: Path) -> None:
    d = LocalDiscovery({}, platform="darwin")
    with pytest.raises(TargetError, match="reads /proc: not available on darwin"):
        d.read()
    with pytest.raises(TargetError, match="is not readable"):
        LocalDiscovery({}, proc_root=tmp_path / "nothing", platform="linux").read()


class Members:
    def __init__(self) -> None:
        self.urls: list[str] = []

    def reconcile(
        self, targets: list[Target], why: Callable[[str], str] | None = None
    ) -> tuple[list[str], list[str]]:
        wanted = [t.url for t in targets]
        added = [u for u in wanted if u not in self.urls]
        removed = [u for u in self.urls if u not in wanted]
        self.urls = wanted
        return added, removed


def test_a_server_that_ends_is_said_gone(proc: FakeProc, tmp_path: Path) -> None:
    """The Keeper says it in discovery's words, with its name and how it was found."""
    base = proc.process(101, [V1, "serve"], "/home/me/shop", [5001])
    proc.tcp.append(row(0, "0100007F:1000", "0A", 5001))
    proc.write()
    notes: list[str] = []
    keeper = Keeper([discovery(proc, tmp_path)], notes.append)
    fleet = Members()
    clock = [0.0]

    async def once(done: Callable[[], bool]) -> None:
        """The keeper at work until `done` (a generous deadline: a loaded machine)."""
        task = asyncio.create_task(keeper.keep(fleet, lambda: clock[0]))
        deadline = time.monotonic() + 30
        while not done() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        task.cancel()

    asyncio.run(once(lambda: bool(notes)))
    assert fleet.urls == ["http://127.0.0.1:4096"]
    assert notes == ["watching shop http://127.0.0.1:4096 (opencode serve, pid 101, ~/shop)"]
    for link in (base / "fd").iterdir():
        link.unlink()
    (base / "cmdline").unlink()  # the process ended
    clock[0] = 10.0
    asyncio.run(once(lambda: not fleet.urls))
    assert fleet.urls == []
    assert notes[-1] == (
        "shop http://127.0.0.1:4096 (opencode serve, pid 101, ~/shop) went away (its process "
        "ended or stopped listening): not watched any more"
    )


def test_ocwatch_servers_says_what_it_watches_and_how_it_was_found(
    proc: FakeProc, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli.servers import run_servers

    proc.process(101, [V1, "serve"], "/home/me/src/shop", [5001])
    proc.tcp.append(row(0, "0100007F:A46F", "0A", 5001))
    proc.write()
    d = discovery(proc, tmp_path)
    named = "http://10.0.0.5:4096"
    assert run_servers([named], origins={named: "config"}, names={named: "build"}, sources=[d]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["NAME", "URL", "FOUND", "BY"]
    assert out[1].split() == ["build", named, "config"]
    assert out[2].split(None, 2) == [
        "shop",
        "http://127.0.0.1:42095",
        "discovered: opencode serve, pid 101, ~/src/shop",
    ]
    assert out[4] == "Local discovery looked at (every 3 s):"
    assert out[5].startswith("  /proc: 1 process of this user, 1 OpenCode, 1 listening")
    assert out[6].endswith("opencode/service.json: absent")
    assert run_servers([], origins={}, names={}, sources=[d], as_json=True) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["servers"] == [
        {
            "url": "http://127.0.0.1:42095",
            "name": "shop",
            "found": "discovered",
            "how": "opencode serve, pid 101, ~/src/shop",
        }
    ]
    assert data["sources"][0]["source"] == "discovery" and data["sources"][0]["error"] is None


def test_ocwatch_servers_says_what_it_looked_at_and_exits_2_when_it_cannot(
    proc: FakeProc, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli.servers import run_servers

    proc.process(101, ["/usr/bin/bash"], "/home/me", [])
    assert run_servers([], origins={}, names={}, sources=[discovery(proc, tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("No server to watch.\n")
    assert "/proc: 1 process of this user, none OpenCode" in out
    assert "service.json: absent" in out
    elsewhere = LocalDiscovery({}, platform="darwin")
    assert run_servers([], origins={}, names={}, sources=[elsewhere]) == 2
    got = capsys.readouterr()
    assert "discovery: local discovery reads /proc: not available on darwin" in got.err


def test_ocwatch_servers_refuses_a_url_with_a_password_as_every_command_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`servers` printed a named URL as given, a password in it too (`--server`, $OCWATCH_SERVERS,
    the config), and exited 0 for URLs every other command refuses; an inventory target with
    credentials was echoed whole in its error."""
    from tui.cli.servers import run_servers
    from tui.core.inventory import InventoryFile

    bad = ["http://opencode:s3cretPW@127.0.0.1:1", "ftp://x"]
    good = "http://127.0.0.1:4096"
    for as_json in (False, True):
        code = run_servers([*bad, good], origins={}, names={}, sources=[], as_json=as_json)
        got = capsys.readouterr()
        assert code == 2 and "s3cretPW" not in got.out + got.err
        assert "invalid server URL 'http://***@127.0.0.1:1'" in got.err
        if as_json:  # (the list holds the good one; the sources say what was refused)
            data = json.loads(got.out)
            assert [x["url"] for x in data["servers"]] == [good]
            assert len([r for r in data["sources"] if r["error"]]) == 2
        else:
            assert good in got.out and "ftp://x" not in got.out
    inventory = tmp_path / "servers.json"
    inventory.write_text(json.dumps([{"targets": ["opencode:InvSecret@127.0.0.1:47120"]}]))
    assert run_servers([], origins={}, names={}, sources=[InventoryFile(str(inventory))]) == 2
    got = capsys.readouterr()
    assert "InvSecret" not in got.out + got.err and "target ***@127.0.0.1:47120" in got.err


def test_on_by_default_only_when_nothing_names_a_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from tui.core.config import Config, resolve_options

    monkeypatch.setattr("sys.platform", "linux")
    me = Auth("opencode", "mine")

    def found(config: Config, **kw: object) -> list[LocalDiscovery]:
        opts = resolve_options(config, env=kw.pop("env", {}), **kw)  # type: ignore[arg-type]
        return [s for s in opts.sources if isinstance(s, LocalDiscovery)]

    (d,) = found(Config(), auth=me)
    assert d.auth == me and d.default == "http://127.0.0.1:4096"  # the user's own password
    assert found(Config(), urls=["http://h:1"]) == []
    assert found(Config(servers=["http://h:1"])) == []
    assert found(Config(), env={"OPENCODE_SERVER_URL": "http://h:1"}) == []
    assert found(Config(servers_file="/x.json")) == []
    assert found(Config(), discover="none") == []
    assert found(Config(discover="none")) == []
    # local: beside the servers named (without the default address)
    (d,) = found(Config(servers=["http://h:1"]), discover="local")
    assert d.default is None
    (d,) = found(Config(discover="local"), urls=["http://h:1"])
    monkeypatch.setattr("sys.platform", "darwin")
    assert found(Config()) == []  # auto: off where /proc is not
    assert len(found(Config(), discover="local")) == 1  # asked for: it says it cannot
