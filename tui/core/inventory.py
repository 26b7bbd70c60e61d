"""An inventory file: the servers to watch, in Prometheus's `file_sd` format, so that one
file drives ocwatch and Prometheus (issue 44).

    [{"targets": ["10.0.0.5:4096", "10.0.0.6:4096"],
      "labels": {"name": "build", "team": "infra", "__scheme__": "https",
                 "password_file": "~/.config/ocwatch/build.pw"}}]

Each target is `host:port` (the port is required); `__scheme__` (http, the default, or https)
makes its URL. `name` names the server: a group of one target gets it as it is, a group of
several gets `name@host:port` for each. `username` and `password_file` are its credentials
(by reference only: a `password` label is refused, never used, never shown). Labels starting
with `__` are Prometheus's and otherwise ignored; every other label is an extra label of the
server (at most MAX_LABELS, names `[a-zA-Z_][a-zA-Z0-9_]*` of at most 64 characters, values
of at most 256 printable characters), served by the exporter on `ocwatch_server_labels`.

JSON only: no YAML parser is a dependency of ocwatch (Prometheus reads the same JSON file).
The file is re-read when it changes; a file that cannot be read, or says something wrong, is
a TargetError naming what (shown literally), and the Keeper keeps the last good list.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .settings import DEFAULT_USERNAME, Auth, SecretFileError, read_secret
from .targets import Note, Target, TargetError, TargetSource
from .text import literal

#: Bytes the file may hold at most
MAX_BYTES = 2**20
#: Servers the file may list at most
MAX_SERVERS = 1000
#: Extra labels a server may carry at most (each a series label of `ocwatch_server_labels`)
MAX_LABELS = 10
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
LABEL_NAME_MAX = 64
LABEL_VALUE_MAX = 256
#: A server's name (as the config's `name`): letters, digits and `_.:@-`
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]*\Z")
NAME_MAX = 64
#: Labels that say who the server is and how to log in, not extra labels
OWN = ("name", "username", "password_file")
#: Label names the exporter uses itself (an extra label may not take them)
RESERVED = ("server",)


def shown(value: object) -> str:
    """A value of the file as it is, one line, escapes visible (never interpreted)."""
    text = value if isinstance(value, str) else json.dumps(value)
    if len(text) > 80:
        text = text[:79] + "…"
    return literal(text, escapes=True)


def parse(
    text: str, *, origin: str = "inventory", env: dict[str, str] | None = None
) -> list[Target]:
    """The servers of an inventory file's text (`origin`: where it comes from, for `how`).
    TargetError (one line, the offending part shown literally) when it is not a valid one."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TargetError(
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise TargetError("not valid JSON: nested too deeply") from None
    except ValueError:  # (an integer of more digits than Python converts)
        raise TargetError("not valid JSON: a number too long to read") from None
    if not isinstance(data, list):
        raise TargetError('expected a JSON list of groups ([{"targets": [...], "labels": {...}}])')
    env = dict(os.environ) if env is None else env
    out: list[Target] = []
    names: dict[str, str] = {}
    urls: set[str] = set()
    for gi, group in enumerate(data, 1):
        where = f"group {gi}"
        if not isinstance(group, dict):
            raise TargetError(f"{where}: expected an object with targets and labels")
        for key in group:
            if key not in ("targets", "labels"):
                raise TargetError(f"{where}: unknown key {shown(key)} (only targets and labels)")
        targets = group.get("targets")
        if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
            raise TargetError(f'{where}: targets must be a list of "host:port" strings')
        labels = group.get("labels", {})
        if not isinstance(labels, dict):
            raise TargetError(f"{where}: labels must be an object of strings")
        scheme, name, auth, extra = _labels(labels, where, env)
        for target in targets:
            url = _url(scheme, target, where)
            if url in urls:
                raise TargetError(f"{where}: {shown(target)} is listed twice")
            urls.add(url)
            own = name if len(targets) == 1 or not name else f"{name}@{target}"
            if own:
                if len(own) > NAME_MAX:
                    raise TargetError(f"{where}: the name {shown(own)} is longer than {NAME_MAX}")
                if own in names:
                    raise TargetError(f"{where}: two servers are named {shown(own)}")
                names[own] = url
            out.append(Target(url, auth, own, extra, "file", f"{origin}, {where}"))
            if len(out) > MAX_SERVERS:
                raise TargetError(f"more than {MAX_SERVERS} servers")
    return out


def _labels(
    labels: dict[Any, Any], where: str, env: dict[str, str]
) -> tuple[str, str, Auth | None, tuple[tuple[str, str], ...]]:
    """(scheme, name, credentials, extra labels) of a group's labels."""
    if "password" in labels:  # its value is never read, used nor shown
        raise TargetError(
            f"{where}: an inline password is refused; put it in a file and name the file "
            "with password_file"
        )
    for key, value in labels.items():
        if not isinstance(value, str):
            raise TargetError(f"{where}: label {shown(key)} must be a string, not {shown(value)}")
        if not value.isprintable():
            raise TargetError(
                f"{where}: label {shown(key)} has a control character: {shown(value)}"
            )
        if len(value) > LABEL_VALUE_MAX:
            raise TargetError(
                f"{where}: label {shown(key)} is longer than {LABEL_VALUE_MAX} characters"
            )
    scheme = labels.get("__scheme__", "http")
    if scheme not in ("http", "https"):
        raise TargetError(f"{where}: __scheme__ must be http or https, not {shown(scheme)}")
    name = labels.get("name", "")
    if name and not NAME.match(name):
        raise TargetError(
            f"{where}: name {shown(name)}: use letters, digits and _.:@- (a letter or digit first)"
        )
    auth = None
    if labels.get("password_file"):
        path = os.path.expanduser(labels["password_file"])
        try:
            password = read_secret(path)
        except OSError as exc:
            raise TargetError(
                f"{where}: password_file {shown(labels['password_file'])}: cannot read it "
                f"({exc.strerror or exc})"
            ) from None
        except SecretFileError as exc:
            raise TargetError(
                f"{where}: password_file {shown(labels['password_file'])}: {exc.why}"
            ) from None
        if not password:
            raise TargetError(f"{where}: password_file {shown(labels['password_file'])} is empty")
        user = labels.get("username") or env.get("OPENCODE_SERVER_USERNAME") or DEFAULT_USERNAME
        auth = Auth(user, password)
    extra: list[tuple[str, str]] = []
    for key, value in labels.items():
        if key.startswith("__") or key in OWN:
            continue
        if not LABEL_NAME.match(key) or len(key) > LABEL_NAME_MAX:
            raise TargetError(
                f"{where}: label name {shown(key)}: use [a-zA-Z_][a-zA-Z0-9_]*, at most "
                f"{LABEL_NAME_MAX} characters"
            )
        if key in RESERVED:
            raise TargetError(
                f"{where}: label {shown(key)} is the exporter's own; call it otherwise"
            )
        extra.append((key, value))
    if len(extra) > MAX_LABELS:
        raise TargetError(f"{where}: {len(extra)} labels; at most {MAX_LABELS} a server")
    return scheme, name, auth, tuple(sorted(extra))


def _url(scheme: str, target: str, where: str) -> str:
    """`scheme://host:port` of a `host:port` target, or TargetError."""
    # (a target with credentials in it is shown without them: they are never printed)
    said = "***@" + target.rsplit("@", 1)[1] if "@" in target else target
    bad = f"{where}: target {shown(said)}: expected host:port"
    if not target or not target.isprintable() or any(c in target for c in "/@?# \\"):
        raise TargetError(bad)
    try:
        parts = urlsplit(f"{scheme}://{target}")
        port = parts.port
    except ValueError:
        raise TargetError(bad) from None
    if not parts.hostname or not port:  # (port 0: no server's)
        raise TargetError(bad + " (the port is required)" if parts.hostname else bad)
    return f"{scheme}://{target}"


@dataclass
class InventoryFile:
    """A TargetSource: the servers of an inventory file, re-read when it changes (its size,
    modification time or content; the content's hash decides). Bounded (MAX_BYTES) and never
    blocking: a FIFO, a device or a folder is refused without being read."""

    path: str
    every: float = 2.0
    label: str = ""
    gone: str = "was taken out of the servers file"
    env: dict[str, str] | None = None
    _seen: tuple[int, int, int, int] | None = field(default=None, repr=False)
    _digest: bytes | None = field(default=None, repr=False)
    _result: list[Target] | TargetError | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.label = self.label or f"servers file {literal(self.path, escapes=True)}"

    def read(self) -> list[Target]:
        path = os.path.expanduser(self.path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # (a FIFO's open returns at once)
        except OSError as exc:
            self._seen = None
            raise TargetError(f"cannot read it ({exc.strerror or exc})") from None
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise TargetError("it is a folder, not a file")
            if not stat.S_ISREG(st.st_mode):
                raise TargetError("it is not a regular file (a FIFO or a device is not read)")
            if st.st_size > MAX_BYTES:
                raise TargetError(f"it is larger than {MAX_BYTES // 2**20} MiB")
            seen = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
            if seen == self._seen and self._result is not None:
                return self._last()
            with os.fdopen(fd, "rb", closefd=False) as fh:
                raw = fh.read(MAX_BYTES + 1)
        except OSError as exc:
            raise TargetError(f"cannot read it ({exc.strerror or exc})") from None
        finally:
            os.close(fd)
        if len(raw) > MAX_BYTES:
            raise TargetError(f"it is larger than {MAX_BYTES // 2**20} MiB")
        self._seen = seen
        digest = hashlib.sha256(raw).digest()
        if digest == self._digest and self._result is not None:
            return self._last()
        self._digest = digest
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self._result = TargetError("it is not UTF-8 text")
            return self._last()
        if path.endswith((".yml", ".yaml")) and not text.lstrip().startswith(("[", "{")):
            self._result = TargetError(
                "YAML is not read: write the inventory as JSON (file_sd's .json form)"
            )
            return self._last()
        try:
            self._result = parse(text, origin=self.label, env=self.env)
        except TargetError as exc:
            self._result = exc
        return self._last()

    def _last(self) -> list[Target]:
        if isinstance(self._result, TargetError):
            raise TargetError(self._result.why)
        return list(self._result or ())


def read_once(sources: Sequence[TargetSource], note: Note) -> list[Target]:
    """Every source's list once (what `status` reads: no keeper); a source that cannot say
    is noted and gives nothing."""
    out: list[Target] = []
    for source in sources:
        try:
            out.extend(source.read())
        except TargetError as exc:
            note(f"{source.label}: {exc.why}")
    return out
