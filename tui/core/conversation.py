"""A session's conversation, as the dashboard shows it: user prompts, replies, each tool call
folded to one line (and, expanded, its input, output or error and an edit's diff), errors.
Pure: built from `GET /session/{id}/message` answers, tolerant of missing or odd fields, merged
by message id as newer pages arrive; what a message and a tool call became when their run
ended (`progress`, `call_state`) is decided here too, from the message and the session's state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .activity import ToolRun, _dict, _ms, tool_run
from .text import dumps, first_line, lines_of, literal

FIRST_PAGE = 60
"""Messages read first (the newest): the screen paints from these, the rest follow."""
MAX_LINES = 200
"""Lines of one section of an expanded tool call (its input, output, error or diff) shown at
most; how many more there are is said."""
MAX_CHARS = 500
"""Characters of one such line shown at most; how many more there are is said."""
#: Tools whose input is a command, shown as its lines
COMMAND_TOOLS = frozenset({"bash", "shell"})
#: An edit's input fields that its diff shows better
DIFF_SHOWS = frozenset({"oldString", "newString", "patchText"})


@dataclass(frozen=True, slots=True)
class ToolCall(ToolRun):
    """A tool call as the conversation shows it: its one line (ToolRun) and what expanding
    it shows, as the server sent it (bounded and made safe by `details`)."""

    call_id: str = ""
    input: tuple[tuple[str, str], ...] = ()
    """The input's fields, each value as text (a string as it is, anything else as JSON)."""
    output: str | None = None
    error: str | None = None
    diff: str | None = None
    """An edit's unified diff (V1 `metadata.diff`, V2 `metadata.files[].patch`)."""


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return dumps(value, indent=2)
    return dumps(value)


def _diff(meta: Mapping[str, Any]) -> str | None:
    """The diff a tool's metadata holds: V1 edit's `diff` (or `filediff.patch`), V2's (and a
    patch tool's) `files[].patch` or `files[].diff`, joined."""
    if isinstance(meta.get("diff"), str) and meta["diff"].strip():
        return str(meta["diff"])
    patch = _dict(meta.get("filediff")).get("patch")
    if isinstance(patch, str) and patch.strip():
        return patch
    files = meta.get("files")
    found = [
        text
        for f in (files if isinstance(files, list) else ())
        for text in (_dict(f).get("patch") or _dict(f).get("diff"),)
        if isinstance(text, str) and text.strip()
    ]
    return "\n".join(t.rstrip("\n") for t in found) + "\n" if found else None


def tool_call(part: Mapping[str, Any]) -> ToolCall:
    """A tool part (V1's shape; V2's as `wire.tool_part(full=True)` makes it) as a ToolCall."""
    run = tool_run(part)
    state = _dict(part.get("state"))
    meta = _dict(state.get("metadata"))
    args = state.get("input")
    fields = (
        tuple((str(k), _value_text(v)) for k, v in args.items()) if isinstance(args, dict) else ()
    )
    output = state.get("output")
    if not isinstance(output, str):  # (a running bash streams its output here)
        output = meta.get("output") if isinstance(meta.get("output"), str) else None
    error = state.get("error")
    if isinstance(error, dict):
        error = _error_text(error)
    call_id = part.get("callID") or part.get("id")
    command = _dict(args).get("command")
    summary = run.summary
    if run.tool in COMMAND_TOOLS and isinstance(command, str) and command.strip():
        summary = first_line(command)  # (its first line and how many more, never run together)
    return ToolCall(
        run.tool,
        summary,
        run.status,
        run.started,
        run.ended,
        call_id if isinstance(call_id, str) else "",
        fields,
        output,
        error if isinstance(error, str) else (None if error is None else str(error)),
        _diff(meta),
    )


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
    tools: tuple[ToolCall, ...] = ()
    error: str | None = None
    finish: str | None = None
    #: the retry an unfinished reply waits on ("attempt 2: overloaded", V2's transcript)
    retry: str | None = None
    retry_at: float | None = None
    aborted: bool = False
    """Its error is an abort (MessageAbortedError): the user stopped the run."""


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
    tools: list[ToolCall] = []
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
            tools.append(tool_call(part))
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
        _dict(info.get("error")).get("name") == "MessageAbortedError",
    )


def entries(messages: Iterable[Any]) -> list[Entry]:
    """Every message that is one, in the server's order (oldest first). A message listed twice
    (a malformed answer) is one entry, as it was said last, in its first place: as `merge`
    lays a message seen again over its old self."""
    out: dict[str, Entry] = {}
    for m in messages:
        e = entry(m)
        if e is not None:
            out[e.id] = e  # (a key already there keeps its place)
    return list(out.values())


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


# -- how a message and its tool calls ended ----------------------------------------------------

Progress = Literal["writing", "done", "aborted", "failed", "interrupted"]
"""What became of a message: still being written; done; stopped by the user (an abort);
failed (an error); or interrupted (its run ended without finishing it: the server stopped or
crashed, or the run went on without it)."""

#: Session states in which a run goes on (the View's states)
ACTIVE_STATES = frozenset({"busy", "retry", "input"})


def run_active(state: str | None, settled: bool = True) -> bool:
    """Whether the session's run may still write its newest message: its row says busy,
    retrying or waiting for input, or its facts are still arriving (an unsettled row keeps its
    last state: an idle said before the final message is saved is not yet the end), or there
    is no row to ask (nothing is claimed then)."""
    return state is None or state in ACTIVE_STATES or not settled


def progress(e: Entry, *, latest: bool, active: bool) -> Progress:
    """What became of message `e`: `latest` when it is the newest reply of the conversation,
    `active` when the session's run goes on (`run_active`). A reply that never completed is
    being written only while both hold; otherwise its run ended without it (interrupted)."""
    if e.role != "assistant":
        return "done"
    if e.error:
        return "aborted" if e.aborted else "failed"
    if e.completed is not None:
        return "done"
    return "writing" if latest and active else "interrupted"


def progresses(items: Sequence[Entry], active: bool) -> list[Progress]:
    """`progress` of each message (the newest reply is the last assistant message)."""
    last = next((i for i in range(len(items) - 1, -1, -1) if items[i].role == "assistant"), -1)
    return [progress(e, latest=i == last, active=active) for i, e in enumerate(items)]


CallWord = Literal[
    "completed",
    "error",
    "rejected",
    "denied",
    "dismissed",
    "running",
    "pending",
    "interrupted",
    "cut off",
]


@dataclass(frozen=True, slots=True)
class CallState:
    """What became of a tool call (`word`) and why, in the server's words (`why`)."""

    word: CallWord
    why: str | None = None


#: The server's words for a refused tool call (V1 1.18.33 and V2 2.0.15, seen on real servers)
_REJECTED = "The user rejected permission to use this specific tool call"
_FEEDBACK = " with the following feedback: "
_DENIED = "The user has specified a rule which prevents you from using this specific tool call"
_DECLINED = "The user declined this tool call"  # V2: a permission rejected
_DISMISSED = "The user dismissed this question"
#: V1's words for a tool call an abort stopped
_ABORTED_TOOL = "Tool execution aborted"


def refusal(error: str | None) -> CallState | None:
    """A tool call's error that says the user refused it: rejected (with the user's message
    when they gave one), denied by a permission rule, a question dismissed; None: another
    error."""
    if not error:
        return None
    text = error.strip()
    if text.startswith(_REJECTED):
        rest = text[len(_REJECTED) :]
        why = rest[len(_FEEDBACK) :].strip() if rest.startswith(_FEEDBACK) else ""
        return CallState("rejected", why or None)
    if text.startswith(_DECLINED):
        return CallState("rejected")
    if text.startswith(_DENIED):
        return CallState("denied", "a permission rule forbids it")
    if text.startswith(_DISMISSED):
        return CallState("dismissed")
    return None


def call_state(call: ToolRun, ended: Progress, message_error: str | None = None) -> CallState:
    """What became of a tool call of a message that came to `ended` (`progress`): a call
    left pending or running by a run that ended is no longer running, it was interrupted (or
    cut off by the message's error, `message_error`)."""
    error = call.error if isinstance(call, ToolCall) else None
    if call.status == "completed":
        return CallState("completed")
    if call.status == "error":
        refused = refusal(error)
        if refused is not None:
            return refused
        if error and error.strip() == _ABORTED_TOOL:
            return CallState("interrupted", "the run was aborted")
        return CallState("error", error)
    if ended == "writing":
        return CallState("running" if call.status == "running" else "pending")
    if ended == "failed":
        return CallState("cut off", message_error)
    if ended == "aborted":
        return CallState("interrupted", "the run was aborted")
    return CallState("interrupted", "the run ended before it finished")


# -- an expanded tool call ---------------------------------------------------------------------

Section = Literal["input", "command", "diff", "output", "error", "refused"]


@dataclass(frozen=True, slots=True)
class Detail:
    """One section of an expanded tool call: its lines, safe to show (`literal`: no markup
    read, no control left, each at most MAX_CHARS characters and saying what it cut), and
    how many lines more there are (`more`)."""

    section: Section
    lines: tuple[str, ...]
    more: int = 0


def _bounded(lines: Sequence[str], max_lines: int, max_chars: int) -> tuple[tuple[str, ...], int]:
    out: list[str] = []
    for line in lines[:max_lines]:
        line = line.expandtabs(4)
        if len(line) > max_chars:
            line = f"{line[:max_chars]}… (+{len(line) - max_chars:,} characters)"
        out.append(literal(line))
    return tuple(out), max(0, len(lines) - max_lines)


def _section(
    section: Section, lines: Sequence[str], max_lines: int, max_chars: int
) -> Detail | None:
    if not lines:
        return None
    shown, more = _bounded(lines, max_lines, max_chars)
    return Detail(section, shown, more)


def _diff_lines(diff: str) -> list[str]:
    """A unified diff's lines without the `Index:` and `====` lines (the `---`/`+++` lines
    name the file)."""
    return [
        line
        for line in lines_of(diff)
        if not line.startswith("Index: ") and not (line.startswith("====") and not line.strip("="))
    ]


def details(
    call: ToolCall,
    state: CallState,
    *,
    max_lines: int = MAX_LINES,
    max_chars: int = MAX_CHARS,
) -> list[Detail]:
    """What an expanded tool call shows, section by section, each bounded and made safe:
    its input (a command as its lines, other fields as `key: value` lines, a value of several
    lines under its key; an edit's old and new text left to its diff), the diff, the output
    (`(no output)` when it is empty), the error, or why it was refused or interrupted."""
    out: list[Detail | None] = []
    lines: list[str] = []
    fields = call.input
    if call.diff:
        fields = tuple((k, v) for k, v in fields if k not in DIFF_SHOWS)
    if call.tool in COMMAND_TOOLS:
        command = dict(fields).get("command")
        if command is not None:
            cmd = lines_of(command) or [""]
            out.append(
                _section(
                    "command", [f"$ {cmd[0]}", *(f"  {c}" for c in cmd[1:])], max_lines, max_chars
                )
            )
            fields = tuple((k, v) for k, v in fields if k != "command")
    for key, value in fields:
        value_lines = lines_of(value)
        if len(value_lines) > 1:
            lines += [f"{key}:", *(f"  {v}" for v in value_lines)]
        else:
            lines.append(f"{key}: {value_lines[0] if value_lines else ''}")
    out.append(_section("input", lines, max_lines, max_chars))
    if call.diff:
        out.append(_section("diff", _diff_lines(call.diff), max_lines, max_chars))
    if call.output is not None:
        said = lines_of(call.output)
        if not said and call.status == "completed":
            said = ["(no output)"]
        out.append(_section("output", said, max_lines, max_chars))
    if state.word in ("rejected", "denied", "dismissed"):
        reason = {
            "rejected": "rejected by the user",
            "denied": "denied: a permission rule forbids it",
            "dismissed": "dismissed by the user",
        }[state.word]
        given = lines_of(state.why) if state.word == "rejected" else []
        said = [f"{reason}: {given[0]}", *given[1:]] if given else [reason]
        out.append(_section("refused", said, max_lines, max_chars))
    elif state.word == "error":
        out.append(_section("error", lines_of(state.why) or ["(no message)"], max_lines, max_chars))
    elif state.word == "interrupted":
        stopped = f"interrupted: {state.why}" if state.why else "interrupted"
        out.append(_section("error", [stopped], 1, max_chars))
    elif state.word == "cut off":
        out.append(
            _section("error", [f"cut off: {state.why or 'the run failed'}"], max_lines, max_chars)
        )
    return [d for d in out if d is not None]
