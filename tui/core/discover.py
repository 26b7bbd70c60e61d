"""Local discovery: this user's OpenCode servers on this machine, with no configuration.

Read from Linux's /proc, every few seconds (a TargetSource, tui.core.targets):

- the processes of this user whose command line is OpenCode's (`opencode serve`, `opencode
  web`, `opencode run`, and the TUI, `opencode` with no command: its server listens on a port
  only when started with `--port`), and the loopback TCP ports each listens on (the LISTEN
  rows of /proc/net/tcp and tcp6 whose socket is among the process's file descriptors; a
  server listening on every interface is watched at 127.0.0.1);
- V2's background service, as its `service.json` says (tui.core.service), with the password
  written there: the only credentials discovery reads. A V1 server found in /proc gets the
  password of `$OPENCODE_SERVER_PASSWORD` (or its file) only when the user set one.

Each server is named after its project folder (the process's working directory). Nothing of
another user is looked at, and only loopback addresses are used. Every read is bounded (the
processes scanned, the bytes of a command line, the descriptors of a process, the rows of the
socket tables), and a process that ends mid-scan is skipped, never an error.
"""

from __future__ import annotations

import ipaddress
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .service import listening, read_service, service_path
from .settings import Auth
from .targets import Target, TargetError

#: Seconds between two reads
EVERY = 3.0
#: /proc entries looked at, at most (every user's: the numbered ones are processes)
MAX_PROCESSES = 65536
#: Bytes read of a command line
MAX_CMDLINE = 4096
#: File descriptors of one OpenCode process looked at, at most
MAX_FDS = 4096
#: Rows of each socket table read, at most
MAX_SOCKET_ROWS = 200_000
#: Loopback ports of one process watched, at most
MAX_PORTS = 8
#: Characters of a server's name (as the config's `name`: letters, digits and `_.:@-`)
NAME_MAX = 64

#: The commands of `opencode` that serve its API (the TUI has none: `opencode [project]`)
SERVING = ("serve", "web", "run")
#: Every other command of `opencode` (they serve nothing worth watching)
OTHER = frozenset(
    [
        "acp",
        "attach",
        "auth",
        "agent",
        "completion",
        "debug",
        "export",
        "generate",
        "github",
        "import",
        "mcp",
        "models",
        "pr",
        "session",
        "stats",
        "uninstall",
        "upgrade",
    ]
)
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.:@-]+")


@dataclass(frozen=True)
class Found:
    """One OpenCode process: what it is, where it runs, which loopback ports it listens on."""

    pid: int
    kind: str  # `opencode serve`, `opencode TUI`, `V2 service`
    folder: str | None  # its working directory (None: unreadable)
    ports: tuple[tuple[str, int], ...] = ()  # (loopback host, port)


@dataclass(frozen=True)
class Look:
    """What one read looked at and found: for `ocwatch servers` and the dashboard's empty
    screen (one line per place looked, `lines()`)."""

    processes: int = 0  # processes of this user scanned
    found: tuple[Found, ...] = ()  # of them, OpenCode's
    capped: bool = False  # more processes than MAX_PROCESSES: some not looked at
    service: str = ""  # what service.json said
    default: str = ""  # the default address, when looked at
    targets: tuple[Target, ...] = field(default=(), repr=False)

    def lines(self) -> list[str]:
        procs = f"{self.processes} process{'es' if self.processes != 1 else ''} of this user"
        if self.capped:
            procs += f" (the first {MAX_PROCESSES:,} looked at)"
        if not self.found:
            line = f"/proc: {procs}, none OpenCode"
        else:
            serving = sum(bool(f.ports) for f in self.found)
            line = f"/proc: {procs}, {len(self.found)} OpenCode, {serving} listening on loopback"
            quiet = [f for f in self.found if not f.ports and f.kind == "opencode TUI"]
            if quiet:
                line += (
                    f" ({len(quiet)} TUI without a port: start it as `opencode --port 0` "
                    "to watch it)"
                )
        out = [line, self.service]
        if self.default:
            out.append(self.default)
        return out


class LocalDiscovery:
    """A TargetSource: this user's OpenCode servers on this machine (module docstring)."""

    label = "discovery"
    every = EVERY
    gone = "went away (its process ended or stopped listening)"
    """What the Keeper says of a server this source no longer lists."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        auth: Auth | None = None,
        default: str | None = None,
        default_auth: Auth | None = None,
        proc_root: str | Path = "/proc",
        uid: int | None = None,
        platform: str = sys.platform,
    ) -> None:
        """`auth`: the user's own password ($OPENCODE_SERVER_PASSWORD), for the V1 servers
        found in /proc (None: they get none). `default`: an address watched too when
        something listens there (the V1 default, 127.0.0.1:4096), with `default_auth`.
        `proc_root`, `uid`, `platform`: for tests (a fake /proc)."""
        self.env = dict(os.environ if env is None else env)
        self.auth = auth
        self.default = default
        self.default_auth = default_auth
        self.root = Path(proc_root)
        self.uid = os.getuid() if uid is None and hasattr(os, "getuid") else (uid or 0)
        self.platform = platform
        self.last: Look | None = None
        """What the last read looked at (None: not read yet, or it could not run)."""
        self.error: str | None = None
        """Why the last read could not run (None: it ran)."""
        self.notices: list[str] = []
        """What was wrong with service.json at the last read (said by `lines`)."""

    def said(self) -> list[str]:
        """What the last read looked at, a line per place (empty: not read yet), or why it
        could not: for the dashboard's "no server" screen."""
        if self.error is not None:
            return [self.error]
        return self.last.lines() if self.last is not None else []

    def read(self) -> list[Target]:
        try:
            got = self._read()
        except TargetError as exc:
            self.error = exc.why
            raise
        self.error = None
        return got

    def _read(self) -> list[Target]:
        if not self.platform.startswith("linux"):
            raise TargetError(f"local discovery reads /proc: not available on {self.platform}")
        try:
            if not (self.root / "net" / "tcp").is_file():
                raise FileNotFoundError
        except OSError:
            raise TargetError(f"local discovery reads /proc: {self.root} is not readable") from None
        processes, found, capped = scan(self.root, self.uid)
        notices: list[str] = []
        service = read_service(self.env, notices)
        targets: list[Target] = []
        home = self.env.get("HOME") or None
        if service is None:
            where = _short(str(service_path(self.env)), home)
            service_line = notices[0] if notices else f"{where}: absent"
        elif service.pid is not None and not (self.root / str(service.pid)).exists():
            service_line = (
                f"{_short(str(service.path), home)}: {service.url}, pid {service.pid} not "
                "running (a stale file; not watched)"
            )
        else:
            pid = f", pid {service.pid}" if service.pid is not None else ""
            version = f" {service.version}" if service.version else ""
            service_line = f"{_short(str(service.path), home)}: {service.url} (V2{version}{pid})"
            targets.append(
                Target(
                    service.url,
                    service.auth,
                    name="v2-service",
                    source="discovered",
                    how=f"V2 service, service.json{pid}",
                )
            )
        by_port: dict[str, Found] = {}
        for f in found:
            for host, port in f.ports:
                by_port.setdefault(_url(host, port), f)
        for url, f in by_port.items():
            folder = _short(f.folder, home) if f.folder else "folder unknown"
            targets.append(
                Target(
                    url,
                    self.auth,
                    name=_name(f.folder, home),
                    source="discovered",
                    how=f"{f.kind}, pid {f.pid}, {folder}",
                    folder=(f.folder or "").removesuffix(" (deleted)"),
                )
            )
        default_line = ""
        if self.default is not None and not any(_same(t.url, self.default) for t in targets):
            if listening(self.default):
                default_line = f"{self.default}: something listens there (watched)"
                targets.append(
                    Target(
                        self.default,
                        self.default_auth,
                        source="discovered",
                        how="the default address, something listens there",
                    )
                )
            else:
                default_line = f"{self.default}: nothing listens there"
        targets = _distinct_names(_one_per_url(targets))
        self.notices = notices
        self.last = Look(
            processes, tuple(found), capped, service_line, default_line, tuple(targets)
        )
        return targets


def scan(root: Path, uid: int) -> tuple[int, list[Found], bool]:
    """(processes of `uid` scanned, the OpenCode ones with their loopback ports, capped)."""
    processes = 0
    capped = False
    candidates: list[tuple[int, str, str | None, set[int]]] = []
    for i, pid in enumerate(_pids(root)):
        if i >= MAX_PROCESSES:
            capped = True
            break
        base = root / str(pid)
        try:
            if base.stat().st_uid != uid:
                continue
            processes += 1
            kind = opencode_kind(_cmdline(base / "cmdline"))
            if kind is None:
                continue
            folder = _readlink(base / "cwd")
            inodes = _socket_inodes(base / "fd")
        except OSError:  # it ended mid-scan (FileNotFoundError, ...), or is not ours to read
            continue
        candidates.append((pid, kind, folder, inodes))
    if not candidates:
        return processes, [], capped
    wanted = set().union(*(c[3] for c in candidates))
    ports = listening_ports(root, uid, wanted) if wanted else {}
    found = []
    for pid, kind, folder, inodes in candidates:
        own = sorted({ports[i] for i in inodes if i in ports}, key=lambda hp: (hp[1], hp[0]))
        seen_ports: set[int] = set()
        kept: list[tuple[str, int]] = []
        for host, port in own:  # one address per port: 127.0.0.1 before [::1]
            if port not in seen_ports and len(kept) < MAX_PORTS:
                seen_ports.add(port)
                kept.append((host, port))
        found.append(Found(pid, kind, folder, tuple(kept)))
    return processes, found, capped


def _pids(root: Path) -> Iterator[int]:
    try:
        with os.scandir(root) as entries:
            for entry in entries:
                if entry.name.isdigit():
                    yield int(entry.name)
    except OSError:
        return


def _cmdline(path: Path) -> list[str]:
    with path.open("rb") as fh:
        raw = fh.read(MAX_CMDLINE)
    return [a.decode("utf-8", errors="replace") for a in raw.split(b"\0") if a][:64]


def _readlink(path: Path) -> str | None:
    try:
        target = os.readlink(path)
    except OSError:
        return None
    return target[:4096] if target.startswith("/") else None


def _socket_inodes(fd_dir: Path) -> set[int]:
    inodes: set[int] = set()
    with os.scandir(fd_dir) as entries:
        for i, entry in enumerate(entries):
            if i >= MAX_FDS:
                break
            try:
                target = os.readlink(entry.path)
            except OSError:  # closed meanwhile
                continue
            if target.startswith("socket:[") and target.endswith("]"):
                number = target[8:-1]
                if number.isdigit() and len(number) < 20:
                    inodes.add(int(number))
    return inodes


def opencode_kind(argv: list[str]) -> str | None:
    """What an OpenCode process is from its command line (`opencode serve`, `opencode TUI`,
    `V2 service`), or None: not OpenCode, or a command of it that serves nothing."""
    if argv and os.path.basename(argv[0]) in ("node", "bun", "nodejs") and len(argv) > 1:
        argv = argv[1:]  # a launcher script run by its interpreter
    if not argv or os.path.basename(argv[0]) not in ("opencode", "opencode.exe", ".opencode"):
        return None
    args = argv[1:]
    command = next((a for a in args if a in SERVING or a in OTHER), None)
    if command is None:
        return "opencode TUI"
    if command not in SERVING:
        return None
    if command == "serve" and "--service" in args:
        return "V2 service"
    return f"opencode {command}"


def listening_ports(root: Path, uid: int, inodes: set[int]) -> dict[int, tuple[str, int]]:
    """Socket inode -> (host, port) of the loopback TCP sockets of `uid` in LISTEN state among
    `inodes` (every interface: as 127.0.0.1 or [::1])."""
    return {
        inode: (host, port)
        for inode, host, port, owner in _listening(root)
        if inode in inodes and owner == uid
    }


def _listening(root: Path) -> Iterator[tuple[int, str, int, int]]:
    """(inode, loopback host, port, uid) of each loopback TCP socket in LISTEN state, from
    `root`'s net/tcp and net/tcp6 (at most MAX_SOCKET_ROWS rows of each; one not there: none)."""
    for name in ("tcp", "tcp6"):
        try:
            with (root / "net" / name).open("r", encoding="ascii", errors="replace") as fh:
                for i, line in enumerate(fh):
                    if i > MAX_SOCKET_ROWS:
                        break
                    row = parse_socket_row(line[:512])
                    if row is not None:
                        yield row
        except OSError:
            continue


#: Where the sockets are listed (tests point it at a fake one)
PROC = Path("/proc")


def port_owners(port: int, root: Path | None = None) -> set[int]:
    """The users (uids) whose loopback TCP sockets listen on `port` (none: nobody's, or no
    /proc to tell: not Linux)."""
    return {owner for _inode, _host, at, owner in _listening(root or PROC) if at == port}


def parse_socket_row(line: str) -> tuple[int, str, int, int] | None:
    """(inode, loopback host, port, uid) of one LISTEN row of /proc/net/tcp{,6}; None for any
    other row (a header, another state, an address that is not loopback, a malformed one)."""
    parts = line.split()
    if len(parts) < 10 or parts[3] != "0A":
        return None
    address, _, port_hex = parts[1].partition(":")
    try:
        port = int(port_hex, 16)
        uid = int(parts[7])
        inode = int(parts[9])
        raw = bytes.fromhex(address)
    except ValueError:
        return None
    if not 0 < port < 65536 or len(port_hex) != 4:
        return None
    if len(raw) == 4:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.IPv4Address(raw[::-1])
    elif len(raw) == 16:  # four 32-bit words, each in the host's (little-endian) order
        words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
        ip = ipaddress.IPv6Address(words)
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
    else:
        return None
    if ip.is_unspecified:  # every interface: reached on loopback too
        host = "127.0.0.1" if ip.version == 4 else "[::1]"
    elif ip.is_loopback:
        host = str(ip) if ip.version == 4 else f"[{ip}]"
    else:
        return None
    return inode, host, port, uid


def _url(host: str, port: int) -> str:
    return f"http://{host}:{port}"


def _same(a: str, b: str) -> bool:
    from .client import OcwatchError, normalize_url

    try:
        return normalize_url(a) == normalize_url(b)
    except OcwatchError:
        return a == b


def _name(folder: str | None, home: str | None) -> str:
    """A server's name from its project folder: the folder's last part, in the characters a
    name may hold (`my app` -> `my-app`); `home` for the home folder."""
    if not folder:
        return "opencode"
    folder = folder.removesuffix(" (deleted)").rstrip("/")
    if home and folder == home.rstrip("/"):
        return "home"
    base = os.path.basename(folder) or "root"
    name = _NOT_NAME.sub("-", base).strip("-._:@")[:NAME_MAX]
    return name or "opencode"


def _short(path: str, home: str | None) -> str:
    """A path for people: `~/src/app` under the home folder (cut at 200 characters)."""
    home = (home or "").rstrip("/")
    if home and (path == home or path.startswith(home + "/")):
        path = "~" + path[len(home) :]
    return path if len(path) <= 200 else path[:199] + "…"


def _distinct_names(targets: list[Target]) -> list[Target]:
    """Two servers of folders of one name: each named `name@port`."""
    from dataclasses import replace
    from urllib.parse import urlsplit

    counts: dict[str, int] = {}
    for t in targets:
        if t.name:
            counts[t.name] = counts.get(t.name, 0) + 1
    out = []
    for t in targets:
        if t.name and counts[t.name] > 1:
            port = urlsplit(t.url).port
            t = replace(t, name=f"{t.name[: NAME_MAX - 6]}@{port}")
        out.append(t)
    return out


def _one_per_url(targets: list[Target]) -> list[Target]:
    """The first target of each URL (the service's file before its process)."""
    from .client import OcwatchError, normalize_url

    seen: set[str] = set()
    out = []
    for t in targets:
        try:
            key = normalize_url(t.url)
        except OcwatchError:
            continue  # (a service.json's URL that is not one: nothing to watch)
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out
