"""The recordings in tests/fixtures/, written by `ocwatch record` against the real server
(tests/integration/record_fixtures.py), read the way tests need them: a scenario's event frames
as they arrived, and the bodies of the answers its snapshots got."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from tui.record.format import Record, read

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@functools.cache
def manifest() -> dict[str, Any]:
    """Per recording: the sessions the scenario made (`{id: role}`), request ids, notes."""
    data: dict[str, Any] = json.loads((FIXTURES / "manifest.json").read_text())
    return data


def session(name: str, role: str = "main") -> str:
    """The id of the session that played `role` in recording `name`."""
    return next(k for k, v in manifest()[name]["sessions"].items() if v == role)


@functools.cache
def read_records(path: Path) -> tuple[Record, ...]:
    """Every record of a recording file (checked by the same reader `ocwatch replay` uses)."""
    _header, records = read(path)
    return tuple(records)


def records(name: str) -> tuple[Record, ...]:
    return read_records(FIXTURES / f"{name}.ndjson")


def frame_session(frame: dict[str, Any]) -> str | None:
    """The session a `GET /global/event` frame is about, or None (connect, heartbeat, ...)."""
    payload = frame.get("payload") or {}
    if payload.get("type") == "sync":
        sync = payload.get("syncEvent") or {}
        return (sync.get("data") or {}).get("sessionID") or sync.get("aggregateID")
    props = payload.get("properties") or {}
    return props.get("sessionID") or (props.get("info") or {}).get("sessionID")


def frames(name: str, *, after_reconnect: bool = False) -> list[str]:
    """The event frames of recording `name`, exactly as received, that are about its scenario's
    sessions or about no session; `after_reconnect`: only those after the stream came up again
    (the recording of a server restart)."""
    mine = set(manifest()[name]["sessions"])
    out: list[str] = []
    ups = 0
    for rec in records(name):
        if rec.kind == "stream" and rec.data["up"]:
            ups += 1
            if after_reconnect and ups >= 2:
                out.clear()
        if rec.kind != "frame":
            continue
        text = rec.data["d"]
        sid = frame_session(json.loads(text))
        if sid is None or sid in mine:
            out.append(text)
    assert not after_reconnect or ups >= 2, f"{name}: the stream never came up again"
    return out


def answer(name: str, path: str, *, query: str | None = None) -> Any:
    """The JSON body of the first answer to `GET path` (its query containing `query`) that
    recording `name` holds."""
    for rec in records(name):
        d = rec.data
        if rec.kind == "http" and d["p"] == path and (query is None or query in d["q"]):
            assert d["st"] == 200, (path, d["st"])
            return json.loads(d["b"])
    raise LookupError(f"{name}: no answer to GET {path} ({query or 'any query'})")


def last_message(name: str, role: str) -> dict[str, Any]:
    """The last message (with its parts) of the all-states session in state `role`, as the
    first snapshot read it."""
    (msg,) = answer(name, f"/session/{session(name, role)}/message")
    assert isinstance(msg, dict)
    return msg
