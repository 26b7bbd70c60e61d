"""OpenCode V2's background service, found with no set-up.

V2 runs one background service per user (`opencode serve --service`, what the `opencode` TUI
connects to) and writes its address and password to `$XDG_STATE_HOME/opencode/service.json`
(default `~/.local/state/opencode/service.json`, mode 600): `{id, version, url, pid, password}`.
OpenCode's own clients find their server there; so does ocwatch when nothing else names one.

The password read there is handled as every other: it goes to that URL only, and is never
printed, logged or recorded. A file others may read is warned about (it holds a password).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .settings import DEFAULT_USERNAME, Auth, SecretFileError, read_small


@dataclass(frozen=True)
class Service:
    """The background service as its file says: where, and with which credentials."""

    url: str
    auth: Auth | None = field(repr=False)
    path: Path
    version: str | None = None
    pid: int | None = None  # the service's process, as the file says (not checked here)


def service_path(env: Mapping[str, str]) -> Path:
    state = env.get("XDG_STATE_HOME") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".local", "state"
    )
    return Path(state) / "opencode" / "service.json"


def read_service(env: Mapping[str, str], notices: list[str]) -> Service | None:
    """The service its file names (None: no file, or one that cannot be used; why is said in
    `notices`, but for a missing file: most users run no V2 service)."""
    path = service_path(env)
    try:
        raw, mode = read_small(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        notices.append(f"{path}: cannot read it ({exc.strerror}); the V2 service is not watched")
        return None
    except SecretFileError as exc:
        notices.append(f"{path}: {exc.why}; the V2 service is not watched")
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
        url = data.get("url") if isinstance(data, dict) else None
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError("no http(s) url in it")
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        notices.append(f"{path}: not JSON; the V2 service is not watched")
        return None
    except ValueError as exc:  # (ours)
        notices.append(f"{path}: {exc}; the V2 service is not watched")
        return None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        notices.append(
            f"{path} holds the V2 service's password and others may read it (mode "
            f"{stat.S_IMODE(mode):03o}): chmod 600 it"
        )
    password = data.get("password")
    user = env.get("OPENCODE_SERVER_USERNAME") or DEFAULT_USERNAME
    auth = Auth(user, password) if isinstance(password, str) and password else None
    version = data.get("version") if isinstance(data.get("version"), str) else None
    pid = data.get("pid")
    pid = pid if isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid < 2**31 else None
    return Service(url.rstrip("/"), auth, path, version, pid)


def listening(url: str, timeout: float = 0.25) -> bool:
    """Whether something accepts connections at a loopback URL's port (a refused port answers
    at once); any other host is taken as there (it is not probed here)."""
    import ipaddress
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        return True
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
