"""What one session is doing: the end of its last reply, the tool running now, its todos, model,
agent, tokens, context use and cost.

Read lazily for the session the user has selected, never for every session on a resync: the
View says *which state* a session is in; this says *what it is doing there*. `activity_from` is
pure (the messages, todos and model limits as the server sent them, tolerant of missing or odd
fields); `fetch_activity` asks one server for them with a handful of bounded requests.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from .client import BadResponse, Client, NotFound
from .text import first_line

MESSAGE_LIMIT = 40
"""Messages read per look (the newest): enough for the last reply, the running tool and the
token split of the recent work."""
REPLY_LINES = 6
REPLY_CHARS = 600
SUMMARY_CHARS = 120


@dataclass(frozen=True, slots=True)
class ToolRun:
    """One tool call: its name, a one-line summary of its input, status and times (epoch s)."""

    tool: str
    summary: str
    status: str
    started: float | None = None
    ended: float | None = None

    def brief(self) -> str:
        """`bash: npm test`."""
        return f"{self.tool}: {self.summary}" if self.summary else self.tool

    def summary_in(self, directory: str) -> str:
        """The summary for one line: a path inside the session's folder shown relative to it,
        a command of several lines as its first and how many more (text.first_line)."""
        prefix = directory.rstrip("/") + "/"
        if directory and self.summary.startswith(prefix):
            return first_line(self.summary[len(prefix) :])
        return first_line(self.summary)


@dataclass(frozen=True, slots=True)
class TodoItem:
    content: str
    status: str  # pending | in_progress | completed | cancelled


@dataclass(frozen=True, slots=True)
class TokenSplit:
    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.reasoning + self.cache_read + self.cache_write

    def __add__(self, other: TokenSplit) -> TokenSplit:
        return TokenSplit(
            self.input + other.input,
            self.output + other.output,
            self.reasoning + other.reasoning,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
        )


@dataclass(frozen=True, slots=True)
class Activity:
    """What a session is doing, as read at `fetched_at` (epoch s)."""

    session_id: str
    fetched_at: float
    reply: str = ""
    """The end of the last assistant reply, plain text, at most REPLY_LINES lines."""
    reply_at: float | None = None
    running: tuple[ToolRun, ...] = ()
    """Tool calls not finished (pending or running), oldest first."""
    last_tool: ToolRun | None = None
    """The newest tool call, finished or not."""
    todos: tuple[TodoItem, ...] | None = None
    """None: the server keeps no todos for it (or has no todo route)."""
    model: str | None = None
    agent: str | None = None
    tokens: TokenSplit = TokenSplit()
    """Summed over the messages read (all of them unless `more`)."""
    context: int | None = None
    """Tokens of the last step (what the next request carries): an estimate of context use."""
    context_limit: int | None = None
    """The model's context window, from the server's provider config (None: not found)."""
    messages: int = 0
    more: bool = False
    """The session has more messages than were read (counts and tokens are of the newest)."""
    cost: float = 0.0
    error: str | None = None
    """Why nothing could be read (the server's one-line error)."""
    reply_before_prompt: bool = False
    """The last reply came before the newest prompt: it is an earlier run's, not this one's."""

    @property
    def context_share(self) -> float | None:
        """Context use as a share of the model's window (0..1+), when both are known."""
        if self.context is None or not self.context_limit:
            return None
        return self.context / self.context_limit


def _num(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value) if 0 <= value < 2**53 else 0


def _ms(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 2**53:
        return None
    return value / 1000.0


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def token_split(raw: Any) -> TokenSplit:
    """A message's `tokens` object (`{input, output, reasoning, cache: {read, write}}`)."""
    tokens = _dict(raw)
    cache = _dict(tokens.get("cache"))
    return TokenSplit(
        _num(tokens.get("input")),
        _num(tokens.get("output")),
        _num(tokens.get("reasoning")),
        _num(cache.get("read")),
        _num(cache.get("write")),
    )


def one_line(text: str, limit: int = SUMMARY_CHARS) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


#: The input field that says what a tool call is about, by tool
SUMMARY_FIELDS = {
    "bash": ("command",),
    "edit": ("filePath",),
    "write": ("filePath",),
    "read": ("filePath",),
    "patch": ("filePath",),
    "glob": ("pattern",),
    "grep": ("pattern",),
    "list": ("path",),
    "webfetch": ("url",),
    "task": ("description",),
    "todowrite": (),
}


def tool_summary(tool: str, state: Mapping[str, Any]) -> str:
    """One line saying what a tool call works on: `npm test`, `src/app.py`; the tool's own
    title when it has one and no known field does."""
    args = _dict(state.get("input"))
    for name in SUMMARY_FIELDS.get(
        tool, ("command", "filePath", "path", "pattern", "url", "description", "query")
    ):
        value = args.get(name)
        if isinstance(value, str) and value.strip():
            return one_line(value)
    if tool == "todowrite":
        todos = args.get("todos")
        return f"{len(todos) if isinstance(todos, list) else 0} todos"
    if tool == "question":
        questions = args.get("questions")
        first = questions[0] if isinstance(questions, list) and questions else None
        text = first.get("question") if isinstance(first, dict) else None
        if isinstance(text, str) and text.strip():
            return one_line(text)
    title = state.get("title")
    if isinstance(title, str) and title.strip():
        return one_line(title)
    for value in args.values():
        if isinstance(value, str) and value.strip():
            return one_line(value)
    return ""


def tool_run(part: Mapping[str, Any]) -> ToolRun:
    state = _dict(part.get("state"))
    times = _dict(state.get("time"))
    tool = str(part.get("tool") or "tool")
    return ToolRun(
        tool,
        tool_summary(tool, state),
        str(state.get("status") or "pending"),
        _ms(times.get("start")),
        _ms(times.get("end")),
    )


def reply_end(text: str, lines: int = REPLY_LINES, chars: int = REPLY_CHARS) -> str:
    """The last `lines` non-blank lines of a reply, at most `chars` characters."""
    kept = [line.rstrip() for line in text.strip().splitlines() if line.strip()][-lines:]
    out = "\n".join(kept)
    return out if len(out) <= chars else "…" + out[-(chars - 1) :]


def model_limits(providers: Any) -> dict[tuple[str, str], int]:
    """`(provider, model) -> context window` from `GET /config/providers`
    (`{"providers": [{"id", "models": {id: {"limit": {"context"}}}}]}`)."""
    out: dict[tuple[str, str], int] = {}
    listed = _dict(providers).get("providers")
    for provider in listed if isinstance(listed, list) else ():
        provider = _dict(provider)
        pid = provider.get("id")
        models = _dict(provider.get("models"))
        if not isinstance(pid, str):
            continue
        for mid, model in models.items():
            context = _num(_dict(_dict(model).get("limit")).get("context"))
            if context > 0:
                out[(pid, str(mid))] = context
    return out


def todo_items(raw: Any) -> tuple[TodoItem, ...] | None:
    if not isinstance(raw, list):
        return None
    return tuple(
        TodoItem(one_line(str(t.get("content") or ""), 200), str(t.get("status") or "pending"))
        for t in raw
        if isinstance(t, dict)
    )


def activity_from(
    session_id: str,
    messages: Sequence[Any],
    *,
    fetched_at: float,
    todos: Any = None,
    limits: Mapping[tuple[str, str], int] | None = None,
    limit: int = MESSAGE_LIMIT,
    error: str | None = None,
) -> Activity:
    """What the newest `messages` (`[{info, parts}]`, oldest first, as the server lists them)
    say the session is doing. Pure."""
    reply, reply_at = "", None
    prompted = False  # a prompt came after the last reply
    written: Any = None  # the todo list of the newest todowrite call
    last_tool: ToolRun | None = None
    model = agent = None
    tokens = TokenSplit()
    context: int | None = None
    context_limit: int | None = None
    cost = 0.0
    entries = [m for m in messages if isinstance(m, dict)]
    for message in entries:
        info = _dict(message.get("info"))
        if info.get("role") != "assistant":
            prompted = prompted or info.get("role") == "user"
            continue
        split = token_split(info.get("tokens"))
        tokens = tokens + split
        c = info.get("cost")
        if isinstance(c, int | float) and not isinstance(c, bool) and 0 <= c < 1e12:
            cost += float(c)
        if split.total:
            context = split.total
            provider, mid = info.get("providerID"), info.get("modelID")
            if isinstance(provider, str) and isinstance(mid, str):
                context_limit = (limits or {}).get((provider, mid))
        if isinstance(info.get("modelID"), str):
            provider = info.get("providerID")
            model = (
                f"{provider}/{info['modelID']}" if isinstance(provider, str) else info["modelID"]
            )
        if isinstance(info.get("agent"), str):
            agent = info["agent"]
        text = []
        parts = message.get("parts")
        for part in parts if isinstance(parts, list) else ():
            part = _dict(part)
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("text"), str) and not part.get("synthetic"):
                text.append(part["text"])
            elif kind == "tool":
                last_tool = tool_run(part)
                if part.get("tool") == "todowrite":
                    written = _dict(_dict(part.get("state")).get("input")).get("todos")
        if "".join(text).strip():
            reply = reply_end("\n".join(text))
            reply_at = _ms(_dict(info.get("time")).get("created"))
            prompted = False
    # only the newest assistant message's open tools are running now
    newest = next(
        (m for m in reversed(entries) if _dict(m.get("info")).get("role") == "assistant"), {}
    )
    parts = newest.get("parts")
    running = [
        run
        for run in (
            tool_run(_dict(p))
            for p in (parts if isinstance(parts, list) else ())
            if _dict(p).get("type") == "tool"
        )
        if run.status in ("pending", "running")
    ]
    listed, whole = todo_items(todos), todo_items(written)
    if whole is not None and (listed is None or len(whole) > len(listed)):
        listed = whole  # servers that keep only the open todos: the list as the agent wrote it
    return Activity(
        session_id,
        fetched_at,
        reply,
        reply_at,
        tuple(running),
        last_tool,
        listed,
        model,
        agent,
        tokens,
        context,
        context_limit,
        len(entries),
        len(entries) >= limit,
        cost,
        error,
        bool(reply) and prompted,
    )


async def _optional(client: Client, path: str, params: dict[str, Any] | None) -> Any:
    """A route some servers lack (404, or the web UI's HTML): None."""
    try:
        return await client.request("GET", path, params=params)
    except (NotFound, BadResponse):
        return None


async def fetch_limits(client: Client) -> dict[tuple[str, str], int]:
    """The context windows of the server's models (empty when it does not say)."""
    return model_limits(await _optional(client, "/config/providers", None))


async def fetch_activity(
    client: Client,
    session_id: str,
    directory: str | None,
    *,
    limits: Mapping[tuple[str, str], int] | None = None,
    limit: int = MESSAGE_LIMIT,
    clock: Any = time.time,
) -> Activity:
    """Read what one session is doing: its newest `limit` messages and its todos (two
    bounded requests). OcwatchError when the messages cannot be read."""
    messages = await client.messages(session_id, limit=limit, directory=directory)
    params = {"directory": directory} if directory else None
    todos = await _optional(client, f"/session/{quote(session_id, safe='')}/todo", params)
    return activity_from(
        session_id, messages, fetched_at=clock(), todos=todos, limits=limits, limit=limit
    )


def summarize_todos(todos: Iterable[TodoItem]) -> tuple[int, int, TodoItem | None]:
    """(done, total, the one in progress) — cancelled ones count as neither."""
    items = [t for t in todos if t.status != "cancelled"]
    done = sum(t.status == "completed" for t in items)
    now = next((t for t in items if t.status == "in_progress"), None)
    return done, len(items), now
