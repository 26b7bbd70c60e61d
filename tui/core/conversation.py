"""A session's conversation, as the dashboard shows it: user prompts, replies, each tool call
folded to one line, errors. Pure: built from `GET /session/{id}/message` answers, tolerant of
missing or odd fields, merged by message id as newer pages arrive."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .activity import ToolRun, _dict, _ms, tool_run

FIRST_PAGE = 60
"""Messages read first (the newest): the screen paints from these, the rest follow."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One message: who wrote it, when, its text, its tool calls and its error."""

    id: str
    role: str  # user | assistant | idle (V2: a run's end, its outcome in `text`)
    created: float | None
    completed: float | None = None
    agent: str | None = None
    model: str | None = None
    text: str = ""
    reasoning: int = 0
    """Characters of reasoning (shown folded)."""
    tools: tuple[ToolRun, ...] = ()
    error: str | None = None
    finish: str | None = None
    #: the retry an unfinished reply waits on ("attempt 2: overloaded", V2's transcript)
    retry: str | None = None
    retry_at: float | None = None


def _error_text(raw: Any) -> str | None:
    err = _dict(raw)
    if not err:
        return None
    name = str(err.get("name") or "Error")
    message = _dict(err.get("data")).get("message")
    return f"{name}: {message}" if isinstance(message, str) and message else name


def entry(message: Any) -> Entry | None:
    """One `{info, parts}` as an Entry (None: not a message)."""
    msg = _dict(message)
    info = _dict(msg.get("info"))
    ident = info.get("id")
    if not isinstance(ident, str):
        return None
    times = _dict(info.get("time"))
    texts: list[str] = []
    reasoning = 0
    tools: list[ToolRun] = []
    parts = msg.get("parts")
    for part in parts if isinstance(parts, list) else ():
        part = _dict(part)
        kind = part.get("type")
        text = part.get("text")
        if kind == "text" and isinstance(text, str) and not part.get("synthetic"):
            texts.append(text)
        elif kind == "reasoning" and isinstance(text, str):
            reasoning += len(text)
        elif kind == "tool":
            tools.append(tool_run(part))
    model = info.get("modelID")
    provider = info.get("providerID")
    if not isinstance(model, str):
        nested = _dict(info.get("model"))
        model, provider = nested.get("modelID"), nested.get("providerID")
    role = info.get("role")
    if role == "idle":  # V2: where a run ended, and how
        outcome = info.get("outcome")
        return Entry(
            ident, "idle", _ms(times.get("created")), text=str(outcome) if outcome else "idle"
        )
    retry = _dict(info.get("retry"))
    said = None
    if retry:
        attempt = retry.get("attempt")
        said = f"attempt {attempt if attempt is not None else '?'}"
        if isinstance(retry.get("message"), str) and retry["message"]:
            said += f": {retry['message']}"
    return Entry(
        ident,
        role if role in ("user", "assistant") else "assistant",
        _ms(times.get("created")),
        _ms(times.get("completed")),
        info["agent"] if isinstance(info.get("agent"), str) else None,
        (f"{provider}/{model}" if isinstance(provider, str) else model)
        if isinstance(model, str)
        else None,
        "\n".join(t.strip("\n") for t in texts if t.strip()),
        reasoning,
        tuple(tools),
        _error_text(info.get("error")),
        info["finish"] if isinstance(info.get("finish"), str) else None,
        said,
        _ms(retry.get("next")) if retry else None,
    )


def entries(messages: Iterable[Any]) -> list[Entry]:
    """Every message that is one, in the server's order (oldest first)."""
    return [e for e in (entry(m) for m in messages) if e is not None]


def merge(known: Sequence[Entry], newest: Sequence[Entry]) -> list[Entry]:
    """`known` with `newest` (the server's newest messages, a whole tail) laid over it: a
    message seen again replaces its old self (a reply streamed further, a tool finished), new
    ones follow; a known message inside the tail's span that the tail lacks was removed (ids
    grow with time, so the span is every id from the tail's first)."""
    if not known or not newest:
        return list(newest) if not known else list(known)
    fresh = {e.id: e for e in newest}
    first = newest[0].id
    out = [fresh.pop(e.id, e) for e in known if e.id < first or e.id in fresh]
    out += [e for e in newest if e.id in fresh]
    return out
