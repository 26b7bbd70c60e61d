"""What the server said about one session, raw: its recent events as received and its entries in
the current snapshot (the detail view's "Raw" section, for developers debugging a state)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from .journal import Facts, active_after, merge_message
from .models import PermissionRequest
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
    rest = data[at + 7 :].lstrip()
    return rest[1 : rest.find('"', 1)] if rest.startswith('"') and '"' in rest[1:] else "?"


@dataclass(frozen=True, slots=True)
class RawFacts:
    """`events`: (receive time, event type, its properties as compact JSON), oldest first;
    `snapshot_at` and `entries`: the session's lines in the current snapshot; `sources`: where
    each fact derive read comes from, `(fact, source, when)` (see fact_sources)."""

    events: tuple[tuple[float, str, str], ...]
    snapshot_at: float | None
    entries: tuple[str, ...]
    sources: tuple[tuple[str, str, float | None], ...] = ()


def fact_sources(
    session_id: str, snapshot: Snapshot | None, facts: Facts | None
) -> tuple[tuple[str, str, float | None], ...]:
    """Where each input of the session's row comes from: an event seen after the snapshot
    began (it wins: derive reads the journal over the snapshot) or the snapshot's answer to a
    route, with the receive time of the event or the snapshot's time. `(fact, source, when)`:
    `("status busy", "event session.status", 1796..)`, `("last message msg_1",
    "snapshot GET /session/{id}/message", 1796..)`."""
    out: list[tuple[str, str, float | None]] = []
    at = snapshot.started_at if snapshot is not None else None
    f = facts or Facts()
    if session_id in f.sessions:
        out.append(("session info", "event session.updated", f.touched.get(session_id)))
    elif snapshot is not None and session_id in snapshot.sessions:
        out.append(("session info", "snapshot session list", at))
    status = f.status.get(session_id)
    if status is not None:
        label = status.status.type if status.status is not None else "idle (absent)"
        out.append((f"status {label}", "event session.status", status.at))
    elif snapshot is not None:
        st = snapshot.status.get(session_id)
        out.append(
            (
                f"status {st.type if st is not None else 'absent'}",
                "snapshot GET /session/status",
                at,
            )
        )
    if snapshot is not None and active_after(snapshot.active, f, session_id):
        out.append(("status running", "snapshot GET /api/session/active", at))
    newest = f.messages.get(session_id)
    snap_msg = snapshot.messages.get(session_id) if snapshot is not None else None
    last = merge_message(snap_msg, f, session_id)  # (the one derive reads)
    if last is not None and newest is not None and last.info is newest[0]:
        out.append((f"last message {last.info.id}", "event message.updated", newest[1]))
    elif last is not None:
        out.append((f"last message {last.info.id}", "snapshot GET /session/{id}/message", at))
    parts = sum(len(v) for k, v in f.parts.items() if k[0] == session_id)
    if parts:
        out.append(
            (
                f"{parts} part(s) of its messages",
                "event message.part.updated",
                f.touched.get(session_id),
            )
        )
    error = f.errors.get(session_id)
    if error is not None:
        out.append((f"error {error.error.name}", "event session.error", error.at))
    requests: list[tuple[str, str, str, float | None]] = [  # (kind, id, source, when)
        (
            "permission" if isinstance(a.request, PermissionRequest) else "question",
            rid,
            "event",
            a.at,
        )
        for rid, a in f.asked.items()
        if a.request.session_id == session_id
    ]
    if snapshot is not None:
        requests += [
            ("permission", r.id, "snapshot", at)
            for r in snapshot.permissions.values()
            if r.session_id == session_id and r.id not in f.asked
        ]
        requests += [
            ("question", r.id, "snapshot", at)
            for r in snapshot.questions.values()
            if r.session_id == session_id and r.id not in f.asked
        ]
    for kind, rid, source, when in requests:
        out.append(
            (
                f"{kind} {rid}",
                f"event {kind}.asked" if source == "event" else f"snapshot GET /{kind}",
                when,
            )
        )
        if rid in f.answered:
            out.append(
                (
                    f"{kind} {rid} answered",
                    "event permission.replied"
                    if kind == "permission"
                    else "event question.replied or .rejected",
                    f.answered[rid],
                )
            )
    if snapshot is not None and snapshot.protocol == "v2":
        return tuple((fact, V2_SOURCES.get(src, src), when) for fact, src, when in out)
    return tuple(out)


#: The sources above as a V2 server gives them (its events become the journal's V1 ones:
#: tui.core.protocols.v2.events; its status map is made from the active list and transcripts)
V2_SOURCES = {
    "event session.updated": "event session.created",
    "event session.status": "event session.execution.* or session.retry.scheduled",
    "snapshot GET /session/status": "snapshot GET /api/session/active and the transcript's tail",
    "event message.updated": "event session.step.* or session.inbox.enqueued",
    "snapshot GET /session/{id}/message": "snapshot GET /api/session/{id}/message",
    "event message.part.updated": "event session.tool.*",
    "event session.error": "event session.execution.failed",
    "snapshot GET /permission": "snapshot GET /api/permission/request",
    "snapshot GET /question": "snapshot GET /api/form",
    "event question.asked": "event form.created",
    "event question.replied or .rejected": "event form.replied or .cancelled",
}


def raw_facts(
    session_id: str,
    frames: Iterable[tuple[float, str]],
    snapshot: Snapshot | None,
    limit: int = 20,
    facts: Facts | None = None,
) -> RawFacts:
    """The last `limit` kept frames about the session (its id appears in them as a value),
    its snapshot entries (status, open requests, the last message), and where each fact comes
    from (`facts`: the journal's fold)."""
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
        entries.append(
            f"status map: {st.type if st is not None else 'absent (idle or unknown)'}"
            + (f", attempt {st.attempt}" if st is not None and st.attempt else "")
        )
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
            tools = [
                f"{p.tool} {p.state.status}"
                for p in msg.parts
                if p.type == "tool" and p.state is not None
            ]
            extra += f", tools: {', '.join(tools)}" if tools else ""
            entries.append(f"last message {i.id}: {i.role}, {done}{extra}")
    return RawFacts(
        tuple(events),
        snapshot.started_at if snapshot else None,
        tuple(entries),
        fact_sources(session_id, snapshot, facts),
    )
