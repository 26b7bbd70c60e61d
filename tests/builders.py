"""Builders for wire objects, snapshots and events in unit tests (times in epoch seconds)."""

from __future__ import annotations

from typing import Any

from tui.core.events import Event
from tui.core.journal import Entry
from tui.core.models import Message, PermissionRequest, QuestionRequest, Session, SessionStatus
from tui.core.snapshot import Snapshot

SERVER = "http://test"
T0 = 1_800_000_000.0  # a fixed "now" base


def session(
    sid: str,
    *,
    parent: str | None = None,
    directory: str = "/p/a",
    title: str = "",
    updated: float = T0 - 100,
) -> Session:
    raw: dict[str, Any] = {
        "id": sid,
        "title": title or f"title {sid}",
        "directory": directory,
        "time": {"created": (updated - 50) * 1000, "updated": updated * 1000},
    }
    if parent:
        raw["parentID"] = parent
    return Session.parse(raw)


def assistant(
    mid: str,
    sid: str,
    *,
    created: float,
    completed: float | None = None,
    finish: str | None = None,
    error: str | None = None,
    tools: tuple[str, ...] = (),
    cost: float | None = None,
) -> Message:
    """An assistant message; `tools` lists tool part statuses (pending/running/completed)."""
    info: dict[str, Any] = {
        "id": mid,
        "sessionID": sid,
        "role": "assistant",
        "time": {"created": created * 1000},
    }
    if completed is not None:
        info["time"]["completed"] = completed * 1000
    if finish is not None:
        info["finish"] = finish
    if error is not None:
        info["error"] = {"name": error, "data": {"message": f"{error} happened"}}
    if cost is not None:
        info["cost"] = cost
    parts = [
        {
            "id": f"prt_{mid}_{i}",
            "sessionID": sid,
            "messageID": mid,
            "type": "tool",
            "tool": "bash",
            "callID": f"call{i}",
            "state": {"status": st},
        }
        for i, st in enumerate(tools)
    ]
    return Message.parse({"info": info, "parts": parts})


def user(mid: str, sid: str, *, created: float) -> Message:
    return Message.parse(
        {
            "info": {
                "id": mid,
                "sessionID": sid,
                "role": "user",
                "time": {"created": created * 1000},
            },
            "parts": [],
        }
    )


def busy() -> SessionStatus:
    return SessionStatus(type="busy")


def retry(attempt: int = 2, message: str = "overloaded", next_: float = T0 + 5) -> SessionStatus:
    return SessionStatus(type="retry", attempt=attempt, message=message, next=next_ * 1000)


def permission(rid: str, sid: str, command: str = "git push") -> PermissionRequest:
    return PermissionRequest.parse(
        {
            "id": rid,
            "sessionID": sid,
            "permission": "bash",
            "patterns": [command],
            "metadata": {"command": command},
            "always": [f"{command.split()[0]} *"],
        }
    )


def question(rid: str, sid: str, text: str = "Which database?") -> QuestionRequest:
    return QuestionRequest.parse(
        {
            "id": rid,
            "sessionID": sid,
            "questions": [
                {
                    "question": text,
                    "header": "DB",
                    "options": [
                        {"label": "Postgres", "description": ""},
                        {"label": "SQLite", "description": ""},
                    ],
                }
            ],
        }
    )


def snap(
    sessions: list[Session],
    *,
    status: dict[str, SessionStatus] | None = None,
    messages: dict[str, Message | None] | None = None,
    permissions: list[PermissionRequest] = (),  # type: ignore[assignment]
    questions: list[QuestionRequest] = (),  # type: ignore[assignment]
    active: frozenset[str] = frozenset(),
    started_at: float = T0 - 1,
    journal_seq: int = 0,
) -> Snapshot:
    messages = messages or {}
    return Snapshot(
        server=SERVER,
        started_at=started_at,
        sessions={s.id: s for s in sessions},
        status=dict(status or {}),
        permissions={p.id: p for p in permissions},
        questions={q.id: q for q in questions},
        messages={s.id: messages.get(s.id) for s in sessions},
        active=active,
        version="test",
        journal_seq=journal_seq,
    )


def event(etype: str, props: dict[str, Any], at: float, directory: str | None = "/p/a") -> Event:
    return Event(etype, props, directory, at)


def entries(*events: Event, start: int = 0) -> list[Entry]:
    return [Entry(start + i, e) for i, e in enumerate(events)]


def status_event(sid: str, type_: str, at: float, **extra: Any) -> Event:
    return event("session.status", {"sessionID": sid, "status": {"type": type_, **extra}}, at)


def message_event(msg: Message, at: float) -> Event:
    return event(
        "message.updated", {"sessionID": msg.info.session_id, "info": msg.info.to_wire()}, at
    )
