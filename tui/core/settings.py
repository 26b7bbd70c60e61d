"""Settings shared by the core and its consumers (the config file layer fills them)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

DEFAULT_URL = "http://127.0.0.1:4096"
DEFAULT_USERNAME = "opencode"


@dataclass(frozen=True, slots=True)
class Settings:
    """Tunables of the core. Every field has a safe default."""

    grace: float = 3.0
    """Seconds a fact must hold before it counts (stale busy, unanswered prompt, interrupted)."""
    resync_interval: float = 30.0
    """Seconds between full resync snapshots, a safety net beside the event stream."""
    vouch_max_age: float = 300.0
    """Seconds at most a last message is brought up to date from the journal instead of asked
    again at a resync (a safety net for a server that saves a message and sends no event)."""
    relist_every: float = 300.0
    """Seconds at most between two reads of the session list (and the server's health and
    project folders) while the event stream vouches for what it carried: the resyncs between
    them read only the status, permission and question maps, and take the sessions from the last
    list and the events since (a safety net for a session changed with no event)."""
    light_touch_per_minute: float = 8.0
    """Requests a minute at most the periodic resyncs may ask for their maps while the event
    stream vouches for what it carried (each asks three per project folder and the active list):
    a server with more folders than resync_interval allows at that rate is resynced less often
    (four folders: every 97.5 s). 0: every resync_interval, whatever it costs."""
    reverify_per_minute: float = 1.0
    """Last messages a minute at most asked again only because they are older than
    vouch_max_age (the oldest first, at the resyncs): a light touch on a server with many
    running sessions, whose messages the stream vouches for."""
    snapshot_debounce: float = 0.15
    """Seconds to coalesce events that call for a snapshot into one."""
    snapshot_min_gap: float = 2.0
    """Seconds at most to wait after a snapshot before the next (4x its duration, capped)."""
    stall_after: float = 15.0
    """Seconds of stream silence (one missed 10 s heartbeat, plus slack) before it reads stalled
    (and a snapshot is taken: the rows may be behind)."""
    heartbeat_timeout: float = 25.0
    """Seconds of stream silence (two missed 10 s heartbeats, plus slack) before it is dead."""
    request_timeout: float = 10.0
    """Seconds for one HTTP read (and to connect)."""
    request_deadline: float = 60.0
    """Seconds for one whole HTTP request, its answer read to the end (a server that trickles
    a byte at a time cannot hold a snapshot longer)."""
    command_deadline: float = 45.0
    """Seconds a one-off read of the servers (`status`) may take in all: many answers each slow
    but within request_deadline cannot hold it for minutes (a tmux status line would pile up
    processes); past it the server is said too slow, exit 2."""
    max_event: int = 16 * 2**20
    """Bytes one event of the stream may have at most (an unterminated line is cut there)."""
    message_concurrency: int = 8
    """Parallel `GET /session/{id}/message` requests during a snapshot."""
    journal_limit: int = 5000
    """Journal entries kept at most between two snapshots (the oldest are dropped, and a snapshot
    is requested)."""


#: Bytes a password file may hold at most
SECRET_MAX = 64 * 1024


class SecretFileError(ValueError):
    """A password file that is no regular file, too large, or not UTF-8 text: `why`."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def read_small(path: str | os.PathLike[str]) -> tuple[bytes, int]:
    """The bytes of a small file that holds a secret, and its mode. Only a regular file of at
    most SECRET_MAX bytes is read: a FIFO would block for ever and /dev/zero never end (issue
    40). OSError when it cannot be opened; SecretFileError for the rest."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # (a FIFO's open returns at once)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise SecretFileError("it is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(SECRET_MAX + 1)
    finally:
        os.close(fd)
    if len(raw) > SECRET_MAX:
        raise SecretFileError(f"it is larger than {SECRET_MAX // 1024} KiB")
    return raw, mode


def read_secret(path: str) -> str:
    """The text of a password file, stripped (read_small). OSError when it cannot be opened;
    SecretFileError for the rest."""
    raw, _mode = read_small(path)
    try:
        return raw.decode("utf-8-sig").strip()  # (-sig: a Windows editor's byte order mark)
    except UnicodeDecodeError:
        raise SecretFileError("it is not UTF-8 text") from None


@dataclass(frozen=True, slots=True)
class Auth:
    """HTTP Basic credentials. The password never comes from argv and is never printed."""

    username: str
    password: str

    def __repr__(self) -> str:  # never leak the password through a repr
        return f"Auth(username={self.username!r}, password=***)"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Auth | None:
        """Read `OPENCODE_SERVER_PASSWORD`, or the file `OPENCODE_SERVER_PASSWORD_FILE` names."""
        env = dict(os.environ) if env is None else env
        password = env.get("OPENCODE_SERVER_PASSWORD")
        path = env.get("OPENCODE_SERVER_PASSWORD_FILE")
        if not password and path:
            password = read_secret(path)
        if not password:
            return None
        return cls(env.get("OPENCODE_SERVER_USERNAME") or DEFAULT_USERNAME, password)


def default_server_urls(env: dict[str, str] | None = None) -> list[str]:
    env = dict(os.environ) if env is None else env
    return [env.get("OPENCODE_SERVER_URL") or DEFAULT_URL]
