"""Writing a recording: a Tap (tui.core.tap) that appends one line per answer, frame, stream
change and snapshot, bounded by a size, gzip'd when the name ends in `.gz`.

What is written is what the server said and nothing of what was sent: no header of any request
(so no password, cookie or token), no URL user info (a server URL cannot carry one)."""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import os
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any, cast

from ..core.fleet import Fleet
from ..core.paths import state_dir
from ..core.settings import Settings
from .format import Header

#: Seconds between two flushes to disk (a crash loses at most this much)
FLUSH_EVERY = 1.0
#: What the `end` record a full file ends with takes (it says why: ~130 bytes), kept free
_END_ROOM = 256
#: One encoder for every line (json.dumps with arguments builds a new one each call)
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def exclusive(path: Path) -> IO[bytes]:
    """A new file, created readable by its owner alone, opened once (no window in which it
    exists with looser rights, no symlink followed to an existing file)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    return os.fdopen(fd, "wb")


def parse_size(text: str) -> int:
    """`500M`, `2G`, `100k`, `1048576`: bytes (ValueError: one line saying what is wrong)."""
    units = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}
    raw = text.strip().lower().removesuffix("b").removesuffix("i")
    number, unit = (raw[:-1], raw[-1]) if raw and raw[-1] in "kmg" else (raw, "")
    try:
        value = float(number) * units[unit]
    except ValueError:
        raise ValueError(f"--max-size {text!r}: expected a size such as 500M or 2G") from None
    if value < 4096:
        raise ValueError(f"--max-size {text!r}: at least 4k")
    return int(value)


class Recorder:
    """Writes one server fleet's recording. Attach it as each monitor's `tap`; `close()` ends
    the file with an `end` record. Past `max_size` bytes on disk it stops writing (an `end`
    record says why) and calls `on_full`."""

    def __init__(
        self,
        path: Path,
        servers: Sequence[tuple[str, str]],
        settings: Settings,
        *,
        version: str,
        max_size: int | None = None,
        on_full: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
        focus: Collection[str] | None = None,
    ) -> None:
        """`focus`: the sessions the fleet's snapshots look at (Fleet.focus), named in the
        header so that a replay reads what was read, None: every session."""
        self.path = path
        self.index = {url: i for i, (url, _name) in enumerate(servers)}
        self.max_size = max_size
        self.on_full = on_full
        self.clock = clock
        self.records = 0
        #: snapshots held whole (begun and ended while recording; one in flight at the start
        #: ends unbegun, and a replay passes over it)
        self.snapshots = 0
        self._begun: set[tuple[int, int]] = set()
        self.closed = False
        self.stopped: str | None = None  # why it stopped early
        self.failed = False  # it stopped because writing failed (a full disk): not all is kept
        # a new file only, readable by its owner alone: it holds the sessions' text
        self._disk: IO[bytes] = exclusive(path)
        # gzip at level 1: a recording is written while the monitor runs, so cheap beats small
        self._gzip: gzip.GzipFile | None = None
        self._file: IO[bytes] = self._disk
        if path.suffix == ".gz":  # buffered in front: GzipFile's own write is costly per call
            self._gzip = gzip.GzipFile(fileobj=self._disk, mode="wb", compresslevel=1)
            self._file = cast(
                IO[bytes], io.BufferedWriter(cast(io.RawIOBase, self._gzip), buffer_size=1 << 16)
            )
        self._bytes = 0  # written to a plain file (a .gz's size is what reached the disk)
        self._flushed = clock()
        self._dirty = False  # written since the last flush
        header = Header(
            clock(),
            version,
            tuple(servers),
            asdict(settings),
            None if focus is None else tuple(sorted(focus)),
        )
        # (ASCII: a focus is what the user typed, which may hold a lone surrogate, an argv
        # byte that is no UTF-8; escaped, it reads back as typed)
        self._line(json.dumps(header.to_json(), separators=(",", ":")) + "\n")

    # -- Tap -------------------------------------------------------------------------------------
    def http(
        self,
        server: str,
        t: float,
        snapshot: int | None,
        method: str,
        path: str,
        query: str,
        status: int,
        headers: dict[str, str],
        body: bytes,
        refused: str | None = None,
    ) -> None:
        rec: dict[str, Any] = {
            "t": t,
            "s": self.index[server],
            "k": "http",
            "n": snapshot,
            "m": method,
            "p": path,
            "q": query,
            "st": status,
            "h": headers,
        }
        if refused is not None:
            rec["refused"] = refused
        try:
            rec["b"] = body.decode("utf-8")
        except UnicodeDecodeError:
            rec["b64"] = base64.b64encode(body).decode("ascii")
        self._write(rec)

    def frame(self, server: str, t: float, data: str) -> None:
        # the commonest record, written without a dict (the same line json.dumps would make)
        self._line(f'{{"t":{t!r},"s":{self.index[server]},"k":"frame","d":{_ENCODE(data)}}}\n')

    def stream(
        self, server: str, t: float, up: bool, why: str | None, error: str | None = None
    ) -> None:
        rec: dict[str, Any] = {"t": t, "s": self.index[server], "k": "stream", "up": up, "why": why}
        if error is not None:
            rec["error"] = error
        self._write(rec)

    def snapshot(
        self,
        server: str,
        t: float,
        number: int,
        begin: bool,
        failed: str | None = None,
        error: str | None = None,
        protocol: str | None = None,
    ) -> None:
        rec: dict[str, Any] = {
            "t": t,
            "s": self.index[server],
            "k": "snap",
            "n": number,
            "begin": begin,
        }
        if failed is not None:
            rec["failed"], rec["error"] = failed, error
        if protocol is not None:
            rec["protocol"] = protocol  # (what a reader of the file sees the server spoke)
        self._write(rec)
        if begin:
            self._begun.add((rec["s"], number))
        elif (rec["s"], number) in self._begun:
            self._begun.discard((rec["s"], number))
            self.snapshots += 1

    # -- the file --------------------------------------------------------------------------------
    def size(self) -> int:
        """Bytes on disk so far (compressed, for a .gz: what has reached the file)."""
        if self.closed:
            return self.path.stat().st_size
        if self._file is not self._disk:
            return self._disk.tell()
        return self._bytes

    def _write(self, rec: dict[str, Any]) -> None:
        self._line(_ENCODE(rec) + "\n")

    def _line(self, line: str) -> None:
        if self.closed:
            return
        raw = line.encode("utf-8")
        if (
            self.max_size is not None
            and self._file is self._disk  # (compressed: what reaches the disk is known after)
            and self._bytes + len(raw) + _END_ROOM > self.max_size
        ):  # the record would pass it: the file ends before it, at most max_size bytes
            self._full()
            return
        try:
            self._file.write(raw)
            self._bytes += len(raw)
            self.records += 1
            now = self.clock()
            if now - self._flushed >= FLUSH_EVERY:
                self._flushed = now
                self._flush()
                self._dirty = False
            else:
                self._dirty = True
        except OSError as exc:  # a full disk stops the recording, never the monitor
            self._abandon(f"writing the recording failed ({exc.strerror or exc}); it stopped there")
            return
        if self.max_size is not None and self.size() >= self.max_size:
            self._full()

    def tick(self) -> None:
        """Flush what was written since the last flush (call it every FLUSH_EVERY / 2 s): a
        burst followed by silence reaches the disk too, not only when the next record comes
        (issue 40: 40 frames, then silence, a SIGKILL 9 s later kept none of them)."""
        if self.closed or not self._dirty:
            return
        try:
            self._flushed = self.clock()
            self._flush()
            self._dirty = False
        except OSError as exc:
            self._abandon(f"writing the recording failed ({exc.strerror or exc}); it stopped there")

    def _full(self) -> None:
        self.stopped = (
            f"the recording reached --max-size ({self.max_size or 0:,} bytes); it stopped there"
        )
        self.close(self.stopped)
        if self.on_full is not None:
            self.on_full(self.stopped)

    def _flush(self) -> None:
        """What is written reaches the disk (through gzip too: a sync flush), so a crash
        loses at most FLUSH_EVERY of it."""
        self._file.flush()
        if self._gzip is not None:
            self._gzip.flush()
        self._disk.flush()

    def _abandon(self, why: str) -> None:
        self.stopped = why
        self.failed = True
        self.closed = True
        for f in (self._file, self._gzip, self._disk):
            with contextlib.suppress(OSError, ValueError):
                if f is not None:
                    f.close()
        if self.on_full is not None:
            self.on_full(why)

    def close(self, why: str = "stopped") -> None:
        """End the file (an `end` record), once."""
        if self.closed:
            return
        try:
            self._file.write((_ENCODE({"t": self.clock(), "k": "end", "why": why}) + "\n").encode())
            self.records += 1
            self.closed = True
            self._file.close()  # the gzip stream, then the file under it
        except OSError as exc:
            self._abandon(f"closing the recording failed ({exc.strerror or exc})")
            return
        if self._gzip is not None:
            self._gzip.close()
            self._disk.close()


def default_path(now: float | None = None) -> Path:
    """Where the dashboard writes a recording it starts: the state folder
    (`$XDG_STATE_HOME/ocwatch/recordings`, default `~/.local/state/...`), named by the time."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return state_dir() / "recordings" / f"ocwatch-{stamp}.ndjson.gz"


class FleetRecording:
    """Starts and stops a recording of a live Fleet's monitors (the dashboard's R key)."""

    def __init__(self, fleet: Fleet, version: str) -> None:
        self.fleet = fleet
        self.version = version
        self.recorder: Recorder | None = None

    @property
    def active(self) -> bool:
        return self.recorder is not None and not self.recorder.closed

    def start(self, path: Path | None = None) -> Path:
        """Start recording to `path` (default: default_path()); OSError when it cannot."""
        path = path or default_path()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        monitors = self.fleet.monitors
        self.recorder = recorder = Recorder(
            path,
            [(m.url, m.name) for m in monitors],
            self.fleet.settings,
            version=self.version,
            focus=self.fleet.focus,  # (the dashboard's: None)
        )
        now = recorder.clock()
        for m in monitors:
            m.tap = recorder
            if m.info().connected:  # the stream is up already: say so, as a replay starts
                recorder.stream(m.url, now, True, None)  # from it
            # the file starts with a whole snapshot, every last message read again (a replay
            # starts with nothing cached: it must be asked what a fresh monitor asks)
            m.read_everything_again()
        return path

    def stop(self) -> Recorder | None:
        """Stop and close the file; the recorder (its path, records, size), or None."""
        recorder, self.recorder = self.recorder, None
        for m in self.fleet.monitors:
            m.tap = None
        if recorder is not None:
            recorder.close()
        return recorder

    def tick(self) -> None:
        """Flush what the recording wrote since its last flush (the dashboard calls it every
        half second)."""
        if self.recorder is not None:
            self.recorder.tick()

    def status(self) -> str | None:
        """`● REC ocwatch-....ndjson.gz · 1.2 MB · 12,345 records`, or None when not recording
        (a recording that stopped at its size says so)."""
        rec = self.recorder
        if rec is None:
            return None
        if rec.closed:
            return f"recording stopped: {rec.stopped or 'closed'}"
        size = rec.size()
        shown = f"{size / 2**20:.1f} MB" if size >= 2**20 else f"{size // 1024} KB"
        return f"● REC {rec.path.name} · {shown} · {rec.records:,} records"
