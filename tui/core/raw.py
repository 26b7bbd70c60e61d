"""What the server said about one session, raw: its recent events as received and its entries in
the current snapshot (the detail view's "Raw" section, for developers debugging a state)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from .snapshot import Snapshot

#: Raw frames a monitor keeps (those it used: noise and malformed ones are not kept), and the
#: bytes kept of each (a tool's output repeated in every part update can be megabytes)
KEPT = 2000
KEPT_BYTES = 4096


def about(data: str, session_id: str) -> bool:
    """Whether a raw frame is about the session (its id appears in it, as a JSON value)."""
    return f'"{session_id}"' in data


def _type_of(data: str) -> str:
    """The event type of a frame that does not parse (cut short when it was kept)."""
    at = data.find('"type":')
    if at < 0:
        return "?"
    rest = data[at + 7:].lstrip()
    return rest[1:rest.find('"', 1)] if rest.startswith('"') and '"' in rest[1:] else "?"


@dataclass(frozen=True, slots=True)
class RawFacts:
    """`events`: (receive time, event type, its properties as compact JSON), oldest first;
    `snapshot_at` and `entries`: the session's lines in the current snapshot."""

    events: tuple[tuple[float, str, str], ...]
    snapshot_at: float | None
    entries: tuple[str, ...]


def raw_facts(session_id: str, frames: Iterable[tuple[float, str]],
              snapshot: Snapshot | None, limit: int = 20) -> RawFacts:
    """The last `limit` kept frames about the session (its id appears in them as a value),
    and its snapshot entries: status, open requests, the last message."""
    mine = [(t, data) for t, data in frames if about(data, session_id)][-limit:]
    events = []
    for t, data in mine:
        try:
            frame = json.loads(data)
            payload = frame.get("payload", frame) if isinstance(frame, dict) else {}
            etype = str(payload.get("type", "?")) if isinstance(payload, dict) else "?"
            props = payload.get("properties", {}) if isinstance(payload, dict) else {}
            shown = json.dumps(props, separators=(",", ":"), ensure_ascii=False)
        except (ValueError, AttributeError, RecursionError):  # cut at KEPT_BYTES, or odd
            etype, shown = _type_of(data), data
        events.append((t, etype, shown))
    entries: list[str] = []
    if snapshot is not None:
        st = snapshot.status.get(session_id)
        entries.append(f"status map: {st.type if st is not None else 'absent (idle or unknown)'}"
                       + (f", attempt {st.attempt}" if st is not None and st.attempt else ""))
        if session_id in snapshot.active:
            entries.append("listed by /api/session/active")
        for p in snapshot.permissions.values():
            if p.session_id == session_id:
                entries.append(f"permission {p.id}: {p.permission} {' '.join(p.patterns)}")
        for q in snapshot.questions.values():
            if q.session_id == session_id:
                entries.append(f"question {q.id}: {len(q.questions)} question(s)")
        msg = snapshot.messages.get(session_id)
        if msg is None:
            entries.append("last message: none")
        else:
            i = msg.info
            done = "completed" if i.time.completed is not None else "not completed"
            extra = f", finish {i.finish}" if i.finish else ""
            extra += f", error {i.error.name}" if i.error is not None else ""
            tools = [f"{p.tool} {p.state.status}" for p in msg.parts
                     if p.type == "tool" and p.state is not None]
            extra += f", tools: {', '.join(tools)}" if tools else ""
            entries.append(f"last message {i.id}: {i.role}, {done}{extra}")
    return RawFacts(tuple(events), snapshot.started_at if snapshot else None, tuple(entries))
