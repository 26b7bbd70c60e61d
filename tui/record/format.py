"""The recording format (docs/RECORDING.md): NDJSON, one object per line, gzip when the name
ends in `.gz`. The first line names the format and its version; every other line is a record
of what one server said, with its receive time. Reading checks every line and refuses a file it
cannot replay exactly, naming the line."""

from __future__ import annotations

import base64
import binascii
import errno
import gzip
import io
import json
import math
import os
import stat
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from ..core.client import OcwatchError
from ..core.view import iso

_DECODER = json.JSONDecoder()
_DECODE = _DECODER.decode
#: What `_DECODE` runs for the value itself (a line is one value, then its newline): called
#: alone, it skips decode()'s two whitespace matches, done in Python, on every line
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
FORMAT = "ocwatch-recording"
VERSION = 1
#: A recording of a focused fleet (`ocwatch report`'s: its snapshots read some sessions only):
#: its header names the focus, and a reader that knew no focus would replay it as a whole
#: fleet's and ask for answers never recorded, so it must refuse it (a version of its own)
FOCUSED_VERSION = 2
KINDS = ("http", "frame", "stream", "snap", "end")
#: Characters of one line read at most: a record holds an answer's body (at most the client's
#: max_body, 64 MiB) as a JSON string, escaping included; the header is far shorter. A file
#: of longer lines is no recording (a compressed one of a single line inflated to gigabytes)
MAX_LINE = 160 * 2**20
MAX_HEADER = 2**20


class RecordingError(OcwatchError):
    """A recording that cannot be read (exit code 2)."""


@dataclass(frozen=True, slots=True)
class Header:
    """The first line: what was recorded, when, by which ocwatch, with which settings."""

    created: float
    ocwatch: str
    servers: tuple[tuple[str, str], ...]  # (url, name) of each server, by index
    settings: dict[str, Any] = field(default_factory=dict)
    #: the sessions the recorded fleet looked at (with their descendants), None: every one
    focus: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "format": FORMAT,
            "version": VERSION if self.focus is None else FOCUSED_VERSION,
            "created": self.created,
            "ocwatch": self.ocwatch,
            "servers": [{"url": u, "name": n} for u, n in self.servers],
            "settings": self.settings,
        }
        if self.focus is not None:
            out["focus"] = list(self.focus)
        return out


@dataclass(frozen=True, slots=True)
class Record:
    """One line after the header. `t` is the receive time (epoch seconds), `server` an index
    into the header's servers (-1 for `end`), `kind` one of KINDS, `data` the line as read."""

    line: int
    t: float
    server: int
    kind: str
    data: dict[str, Any]


def open_text(path: Path, mode: str) -> IO[str]:
    """The file as text, through gzip when its name ends in `.gz`. Read, it must be a regular
    file: a FIFO (or a device) held the reader forever, opening it without a writer."""
    if mode.startswith("r"):
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file")
            os.set_blocking(fd, True)
            raw = os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise
        if path.suffix == ".gz":
            return io.TextIOWrapper(gzip.GzipFile(fileobj=raw), encoding="utf-8", newline="\n")
        return io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
    if path.suffix == ".gz":
        binary = gzip.GzipFile(path, mode.replace("t", "") + "b")
        return io.TextIOWrapper(binary, encoding="utf-8", newline="\n")
    return path.open(mode, encoding="utf-8", newline="\n")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


#: Epoch seconds a recording's times may take: from 1970 to the end of year 9999 (what a date
#: shows; NaN, infinities, negative or larger times crashed or hung the readers)
LAST_TIME = 253_402_300_800.0


def _moment(value: Any) -> bool:
    """Whether `value` is a time a recording may hold (epoch seconds within LAST_TIME)."""
    return _number(value) and 0 <= value < LAST_TIME


def _bounded(value: Any) -> str:
    """A value a file holds, shown in an error (its repr, bounded)."""
    return repr(value)[:60]


_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "http": {"m": (str,), "p": (str,), "q": (str,), "st": (int,), "h": (dict,)},
    "frame": {"d": (str,)},
    "stream": {"up": (bool,)},
    "snap": {"n": (int,), "begin": (bool,)},
    "end": {},
}


def read(path: Path, cut: list[str] | None = None) -> tuple[Header, Iterator[Record]]:
    """The header, and the records one by one (each checked as it is read). Raises
    RecordingError naming the file and the line.

    A file cut short at its end (the recorder killed: its last line cut, a compressed file
    that ends early) raises too, unless `cut` is given: then the records end with the last
    whole line, and `cut` gets a line saying where the file ends and what was read of it (what
    the recorder wrote before it was killed replays as it would have: a recording is read in
    order, so what came after the cut can change nothing before it)."""
    try:
        handle = open_text(path, "rt")
        first = handle.readline(MAX_HEADER + 1)
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise RecordingError(f"{path}: cannot read it ({_why(exc)})") from None
    header = _header(path, first)
    return header, _records(path, handle, len(header.servers), cut)


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, EOFError):
        return "the compressed file ends early (cut short?)"
    if isinstance(exc, UnicodeDecodeError):
        return "it is not UTF-8 text"
    return str(exc) or type(exc).__name__


def _header(path: Path, first: str) -> Header:
    try:
        data = json.loads(first)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RecordingError(
            f"{path}:1: not an ocwatch recording (the first line must name the format {FORMAT!r})"
        )
    version = data.get("version")
    if version not in (VERSION, FOCUSED_VERSION) or isinstance(version, bool):
        raise RecordingError(
            f"{path}:1: recording format version {version!r} is "
            f"not one this ocwatch reads (it reads versions {VERSION} and {FOCUSED_VERSION})"
        )
    focus = data.get("focus") if version == FOCUSED_VERSION else None
    if version == FOCUSED_VERSION and (
        not isinstance(focus, list) or not all(isinstance(sid, str) and sid for sid in focus)
    ):
        raise RecordingError(
            f"{path}:1: a recording of version {FOCUSED_VERSION} must name the sessions it "
            "looked at (its focus: a list of session ids)"
        )
    servers = data.get("servers")
    if (
        not isinstance(servers, list)
        or not all(isinstance(s, dict) and isinstance(s.get("url"), str) for s in servers)
        or not (_number(data.get("created")))
    ):
        raise RecordingError(f"{path}:1: the header lacks its servers or creation time")
    if not servers:
        raise RecordingError(f"{path}:1: the header names no server (nothing was recorded)")
    if not _moment(data["created"]):
        raise RecordingError(
            f"{path}:1: the header's creation time {_bounded(data['created'])} is no "
            "time a recording has (epoch seconds, 1970 to 9999)"
        )
    got = data.get("settings")
    settings: dict[str, Any] = got if isinstance(got, dict) else {}
    return Header(
        float(data["created"]),
        str(data.get("ocwatch", "?")),
        tuple((s["url"], str(s.get("name") or "")) for s in servers),
        settings,
        None if focus is None else tuple(focus),
    )


def _records(path: Path, handle: IO[str], servers: int, cut: list[str] | None) -> Iterator[Record]:
    number = 1
    with handle:
        while True:
            try:
                line = handle.readline(MAX_LINE + 1)
            except (OSError, EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError) as exc:
                ends = _stops_short(exc)
                if cut is None or ends is None:
                    raise RecordingError(
                        f"{path}:{number + 1}: cannot read it ({_why(exc)})"
                    ) from None
                cut.append(_cut_note(path, number + 1, ends, number))
                return
            if not line:
                return
            number += 1
            if len(line) > MAX_LINE:
                raise RecordingError(
                    f"{path}:{number}: a line longer than {MAX_LINE // 2**20} MiB; not an "
                    "ocwatch recording's"
                )
            if line[-1] != "\n":
                why = "the last line is cut short"
                if cut is None:
                    raise RecordingError(
                        f"{path}:{number}: {why} (the recording did not end cleanly)"
                    )
                cut.append(_cut_note(path, number, why, number - 1))
                return
            yield _record(path, number, line, servers)


def _stops_short(exc: BaseException) -> str | None:
    """How a read error says the file stops short at its end (a killed recorder), or None: it
    is another error (a corrupt file)."""
    if isinstance(exc, EOFError):  # (gzip: the compressed stream stops short)
        return "the compressed file ends early"
    if isinstance(exc, UnicodeDecodeError) and exc.reason == "unexpected end of data":
        return "the last line is cut short"  # (inside a character)
    return None


def notes_of(path: Path, cut: list[str], ended: bool) -> list[str]:
    """What a reader says of a file read to its end: where it is cut short (read() cut), else
    whether it lacks its `end` record (`ended`: it has one)."""
    if cut or ended:
        return list(cut)
    return [
        f"{path}: no end record (the recorder did not end cleanly): what came after its last "
        "record is not in the file"
    ]


def _cut_note(path: Path, number: int, why: str, whole: int) -> str:
    return (
        f"{path}:{number}: {why} (the recorder did not end cleanly): replayed up to line "
        f"{whole}, what came after is not in the file"
    )


def _a(kind: object) -> str:
    return f"{'an' if kind in ('http', 'end') else 'a'} {kind}"


def _value(line: str) -> Any:
    """The line's JSON value, as `_DECODE(line)` gives it (ValueError, RecursionError when it
    is not one): a line as the writer writes them, `{...}` then its newline, read by the scanner
    alone; any other, and any error, by `_DECODE`."""
    if line[:1] == "{":
        try:
            data, end = _SCAN(line, 0)
        except (StopIteration, ValueError, RecursionError):
            pass
        else:
            if end == len(line) - 1:  # then only the newline (`_records` checked it) is left
                return data
    return _DECODE(line)


def _record(path: Path, number: int, line: str, servers: int) -> Record:
    try:
        data = _value(line)
    except (ValueError, RecursionError):
        raise RecordingError(f"{path}:{number}: not a JSON object (a corrupt line)") from None
    # the common case first, checked in one expression: an event frame
    if (
        type(data) is dict
        and data.get("k") == "frame"
        and type(data.get("d")) is str
        and type(t := data.get("t")) is float
        and 0 <= t < LAST_TIME
        and type(s := data.get("s")) is int
        and 0 <= s < servers
    ):
        return Record(number, t, s, "frame", data)
    where = f"{path}:{number}"
    if not isinstance(data, dict):
        raise RecordingError(f"{where}: not a JSON object (a corrupt line)")
    kind, t, server = data.get("k"), data.get("t"), data.get("s", -1)
    if kind not in KINDS:
        raise RecordingError(f"{where}: unknown record kind {kind!r}")
    if not _number(t):
        raise RecordingError(f"{where}: {_a(kind)} record without its time")
    if not _moment(t):
        raise RecordingError(
            f"{where}: {_a(kind)} record at {_bounded(t)}, no time a recording has "
            "(epoch seconds, 1970 to 9999)"
        )
    if kind != "end" and not (isinstance(server, int) and 0 <= server < servers):
        raise RecordingError(f"{where}: {_a(kind)} record of no server of the header")
    for name, types in _FIELDS[kind].items():
        if not isinstance(data.get(name), types):
            raise RecordingError(f"{where}: {_a(kind)} record without a valid {name!r}")
    if kind == "http":
        _check_http(where, data)
    assert isinstance(t, int | float) and isinstance(kind, str)
    return Record(number, float(t), int(server), kind, data)


def _check_http(where: str, data: dict[str, Any]) -> None:
    """An answer's status (an HTTP status, 100 to 599), headers (text to text) and body (text,
    or base64 that decodes) as the replay hands them to the client's checks (a bad one was a
    traceback there, or a status of -1 taken for an answer)."""
    status = data["st"]
    if isinstance(status, bool) or not 100 <= status <= 599:
        raise RecordingError(f"{where}: an http record whose status {_bounded(status)} is none")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in data["h"].items()):
        raise RecordingError(f"{where}: an http record whose headers are not text")
    if not isinstance(data.get("b", ""), str):
        raise RecordingError(f"{where}: an http record whose body is not text")
    if "b64" in data:
        body = data["b64"]
        try:
            if not isinstance(body, str):
                raise ValueError
            base64.b64decode(body, validate=True)
        except (ValueError, binascii.Error):
            raise RecordingError(f"{where}: an http record whose body is not base64") from None


def parse_time(value: str, start: float | None = None, end: float | None = None) -> float:
    """A moment of a recording: ISO 8601 (`2026-12-01T16:40:00Z`), epoch seconds, or `+SECONDS`
    after its start (`start`). OcwatchError when it is none of these, or outside the recording
    (before `start`, after `end`: its last record)."""
    value = value.strip()
    bad = OcwatchError(
        f"{value!r}: expected a time such as 2026-12-01T16:40:00Z, epoch "
        "seconds, or +SECONDS after the recording's start"
    )
    number: float | None = None
    try:
        if value.startswith("+"):
            if start is None:
                raise ValueError
            number = start + float(value[1:])
        else:
            number = float(value)
    except ValueError:
        pass
    if number is None:
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.astimezone()  # a local time, as the user reads clocks
            number = moment.timestamp()
        except (ValueError, OverflowError, OSError):
            raise bad from None
    if not math.isfinite(number) or not 0 <= number < 253_402_300_800:  # up to year 9999
        raise bad
    if start is not None and number < start:  # nothing was recorded then: said, not guessed
        raise OcwatchError(f"{value!r}: before the recording starts ({iso(start)})")
    if end is not None and number > end:
        raise after_the_end(value, end)
    return number


def after_the_end(value: str, end: float) -> OcwatchError:
    """A moment past a recording's last record: what it says of the time after is a guess."""
    return OcwatchError(f"{value!r}: after the recording ends ({iso(end)})")
