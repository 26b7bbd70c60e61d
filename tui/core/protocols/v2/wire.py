"""V2 (OpenCode 2.x) wire data as the shared store's facts.

The V2 server hands a monitor other shapes than V1: sessions keep their folder in `location`, an
`outcome` and `time.idle`; messages are typed (`user`, `assistant`, `idle`, ...) with an
assistant's output in `content`; questions are forms. Everything after the inputs is shared
(journal, derive, the View), so this module turns each V2 record into the record V1 names the
same fact with (a dict in V1's wire shape, parsed by the same models). Pure functions; every
field optional, as on V1.
"""

from __future__ import annotations

import math
from typing import Any

#: Session outcomes (`Session.outcome`, the transcript's `idle {outcome}`) as idle reasons
OUTCOME_REASON = {"succeeded": "completed", "failed": "error", "interrupted": "aborted"}
#: V2 tool states as V1's (a tool whose input is still streaming has not run: pending)
TOOL_STATUS = {
    "streaming": "pending",
    "running": "running",
    "completed": "completed",
    "error": "error",
}
#: Message types that are a turn of the conversation (the others are markers: idle, switches)
TURNS = frozenset({"user", "assistant"})


def num(value: Any) -> float | None:
    """A JSON number as a finite float (None: not a number, or one no float holds: a hostile
    `1e400` reads as inf, a 400-digit integer overflows)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        f = float(value)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def directory_of(raw: dict[str, Any]) -> str:
    """A V2 record's folder (`location.directory`)."""
    return _str(_dict(raw.get("location")).get("directory")) or ""


def session(raw: dict[str, Any]) -> dict[str, Any]:
    """A listed V2 Session as V1's. Its `time.updated` is the later of `updated` and `idle`
    (V2 does not move `updated` when a run ends: a session whose run ended has changed)."""
    t = _dict(raw.get("time"))
    updated = max((x for x in (num(t.get("updated")), num(t.get("idle"))) if x), default=None)
    out: dict[str, Any] = {
        "id": raw.get("id"),
        "title": raw.get("title", ""),
        "directory": directory_of(raw),
        "projectID": raw.get("projectID"),
        "parentID": raw.get("parentID"),
        "time": {"created": t.get("created", 0), "updated": updated or t.get("created", 0)},
        "cost": raw.get("cost"),
        "tokens": raw.get("tokens"),
    }
    if t.get("archived") is not None:
        out["time"]["archived"] = t.get("archived")
    return out


def error(raw: Any) -> dict[str, Any] | None:
    """A V2 error (`{type, message, status?}`) as V1's `{name, data}`: an abort is V1's
    MessageAbortedError, the rest keep their type as their name."""
    if not isinstance(raw, dict):
        return None
    kind = _str(raw.get("type")) or "UnknownError"
    data: dict[str, Any] = {}
    if isinstance(raw.get("message"), str):
        data["message"] = raw["message"]
    if num(raw.get("status")) is not None:
        data["statusCode"] = raw["status"]
    return {"name": "MessageAbortedError" if kind == "aborted" else kind, "data": data}


def error_text(raw: Any) -> str | None:
    """A V2 error in one line (its message, else its type)."""
    if not isinstance(raw, dict):
        return None
    return _str(raw.get("message")) or _str(raw.get("type"))


def tool_part(item: dict[str, Any], sid: str, mid: str, *, full: bool = False) -> dict[str, Any]:
    """An assistant's tool content item as V1's tool part; `full` (a conversation, not the
    store): with its output (V2's `state.content` text items, V1's `state.output`) and its
    `metadata` (an edit's `files[].patch`)."""
    st = _dict(item.get("state"))
    t = _dict(item.get("time"))
    state: dict[str, Any] = {"status": TOOL_STATUS.get(_str(st.get("status")) or "", "pending")}
    if isinstance(st.get("input"), dict):
        state["input"] = st["input"]
    for key in ("title", "output"):
        if isinstance(st.get(key), str):
            state[key] = st[key]
    content = st.get("content")
    if full and "output" not in state and isinstance(content, list):
        texts = [
            c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)
        ]
        if texts:
            state["output"] = "".join(texts)
    if full and isinstance(st.get("metadata"), dict):
        state["metadata"] = st["metadata"]
    if st.get("error") is not None:
        state["error"] = error_text(st.get("error")) or str(st.get("error"))[:500]
    start, end = num(t.get("ran")) or num(t.get("created")), num(t.get("completed"))
    state["time"] = {k: v for k, v in (("start", start), ("end", end)) if v}
    return {
        "id": item.get("id") or "",
        "sessionID": sid,
        "messageID": mid,
        "type": "tool",
        "tool": item.get("name"),
        "callID": item.get("id"),
        "state": state,
    }


def message(raw: dict[str, Any], sid: str = "", *, full: bool = False) -> dict[str, Any] | None:
    """A V2 transcript entry as V1's `{info, parts}`; None for an entry that is not a turn
    (an `idle` marker, a switch of agent or model, ...); `full`: its tool parts with their
    output and metadata (tool_part)."""
    kind = raw.get("type")
    if not isinstance(kind, str) or kind not in TURNS:  # (an object or a list: unhashable)
        return None
    mid = raw.get("id")
    sid = _str(raw.get("sessionID")) or sid
    t = _dict(raw.get("time"))
    times: dict[str, Any] = {"created": t.get("created", 0)}
    if kind == "user":
        part: dict[str, Any] = {"id": f"{mid}:0", "type": "text"}
        if isinstance(raw.get("text"), str):
            part["text"] = raw["text"]
        return {
            "info": {"id": mid, "sessionID": sid, "role": "user", "time": times},
            "parts": [part],
        }
    if t.get("completed") is not None:
        times["completed"] = t["completed"]
    model = _dict(raw.get("model"))
    info: dict[str, Any] = {
        "id": mid,
        "sessionID": sid,
        "role": "assistant",
        "time": times,
        "finish": raw.get("finish"),
        "cost": raw.get("cost"),
        "tokens": raw.get("tokens"),
        "modelID": model.get("id"),
        "providerID": model.get("providerID"),
        "agent": raw.get("agent"),
    }
    err = error(raw.get("error"))
    if err is not None:
        info["error"] = err
    parts: list[dict[str, Any]] = []
    content = raw.get("content")
    for n, item in enumerate(content if isinstance(content, list) else ()):
        if not isinstance(item, dict):
            continue
        if item.get("type") == "tool":
            parts.append(tool_part(item, sid, str(mid), full=full))
        else:
            part = {"id": f"{mid}:{n}", "type": item.get("type") or "text"}
            if isinstance(item.get("text"), str):
                part["text"] = item["text"]
            parts.append(part)
    return {"info": info, "parts": parts}


def retry_of(raw: dict[str, Any]) -> dict[str, Any] | None:
    """The retry an unfinished assistant entry waits on, as V1's retry status (None: none)."""
    if raw.get("type") != "assistant" or _dict(raw.get("time")).get("completed") is not None:
        return None
    retry = raw.get("retry")
    if not isinstance(retry, dict):
        return None
    return {
        "type": "retry",
        "attempt": retry.get("attempt"),
        "message": error_text(retry.get("error")),
        "next": retry.get("at"),
    }


def permission(raw: dict[str, Any]) -> dict[str, Any]:
    """A V2 permission request (`action`, `resources`, `save`, `source`) as V1's."""
    source = _dict(raw.get("source"))
    return {
        "id": raw.get("id"),
        "sessionID": raw.get("sessionID"),
        "permission": raw.get("action") or "",
        # (the strings of each list: one odd entry dropped the whole request, and a session
        # waiting on it read busy)
        "patterns": _strings(raw.get("resources")),
        "always": _strings(raw.get("save")),
        "metadata": {"source": source.get("type")} if source.get("type") else {},
        "tool": {"messageID": source.get("messageID"), "callID": source.get("id")},
    }


def _strings(raw: Any) -> list[str]:
    """The strings of a list (anything else: none)."""
    return [x for x in raw if isinstance(x, str)] if isinstance(raw, list) else []


def form(raw: dict[str, Any]) -> dict[str, Any]:
    """A V2 form (a question, an MCP elicitation, a plugin's prompt: any kind) as V1's question
    request, one question per field, so that what is asked is said whatever its kind."""
    meta = _dict(raw.get("metadata"))
    tool = _dict(meta.get("tool"))
    title = _str(raw.get("title")) or ""
    questions: list[dict[str, Any]] = []
    fields = raw.get("fields")
    for f in fields if isinstance(fields, list) else ():
        if not isinstance(f, dict):
            continue
        opts = f.get("options")
        questions.append(
            {
                "question": _str(f.get("description")) or _str(f.get("title")) or title,
                "header": _str(f.get("title")) or title,
                "options": [
                    {
                        "label": _str(o.get("label")) or str(o.get("value", "")),
                        "description": _str(o.get("description")) or "",
                    }
                    for o in (opts if isinstance(opts, list) else ())
                    if isinstance(o, dict)
                ],
                "multiple": f.get("type") == "multiselect",
                "custom": f.get("custom") is not False,
            }
        )
    if not questions:  # a form of no field (a URL to open, say) still asks something
        kind = _str(meta.get("kind")) or "form"
        questions.append({"question": title or kind, "header": kind})
    return {
        "id": raw.get("id"),
        "sessionID": raw.get("sessionID"),
        "questions": questions,
        "tool": {"messageID": tool.get("messageID"), "callID": tool.get("id")},
    }


def cut_by_shutdown(raw: dict[str, Any]) -> bool:
    """Whether an assistant entry is a step the server aborted without the user: its error is
    `aborted` and none of its tool calls was refused by the user (2.0.15 words a refusal "The
    user declined ..." / "The user dismissed ..."; a stop "... because the location shut
    down"). With no idle marker after it, the server stopped mid-run (a user's interrupt leaves
    a marker, a refusal its words)."""
    if raw.get("type") != "assistant" or _dict(raw.get("error")).get("type") != "aborted":
        return False
    content = raw.get("content")
    for item in content if isinstance(content, list) else ():
        if isinstance(item, dict) and item.get("type") == "tool":
            why = error_text(_dict(item.get("state")).get("error")) or ""
            if "the user" in why.lower():
                return False
    return True
