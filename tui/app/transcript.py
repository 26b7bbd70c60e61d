"""What the conversation view shows, as blocks for its `BlockLog`: each message's heading and
text, then one block per tool call (its one line; expanded, a second block with its input,
output or error and an edit's diff), then its retry, error or how it was cut off.

Text from the server is shown literally: one line at a time through `literal`, an expanded
call's sections as `tui.core.conversation.details` made them (bounded, made safe). Colours are
theme variables only.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from functools import partial

from textual.content import Content

from tui.core.conversation import (
    CallState,
    CallWord,
    Detail,
    Entry,
    Progress,
    ToolCall,
    call_state,
    details,
    progresses,
)
from tui.core.text import first_line

from . import format as fmt
from .widgets.conversation_log import Block, Indented

Part = str | tuple[str, str]
MUTED = "$foreground-muted"
CallKey = tuple[str, int]
"""A tool call: its message's id and its place among the message's calls."""

#: How a tool call's state is shown: its glyph and colour (a word says it too, beside it)
CALL_LOOK: dict[CallWord, tuple[str, str]] = {
    "completed": ("✓", "$state-idle"),
    "error": ("✗", "$state-error"),
    "rejected": ("⊘", "$state-input"),
    "denied": ("⊘", "$state-input"),
    "dismissed": ("⊘", "$state-input"),
    "running": ("…", "$state-busy"),
    "pending": ("…", "$state-busy"),
    "interrupted": ("◌", "$state-unknown"),
    "cut off": ("✗", "$state-error"),
}
FOLDED, EXPANDED = "▸", "▾"
GUTTER = Content.styled("      │ ", MUTED)
"""Drawn before each line of an expanded call (wrapped lines included)."""
REASON_CHARS = 120
"""Characters of why a call failed or was refused said on its one line."""
SECTION_TITLE = {"diff": "diff", "output": "output"}
SECTION_STYLE = {"error": "$text-error", "refused": "$state-input"}


def message_head(e: Entry, ended: Progress, now: float, first: bool) -> Content:
    """A message's heading (who, model, when, how long or how it stands) and its text."""
    when = fmt.clock_time(e.created, now)
    parts: list[Part] = [] if first else ["\n"]
    if e.role == "idle":  # V2: the run ended here
        return Content.assemble(*parts, (f"── idle ({fmt.literal(e.text)})  {when}", MUTED))
    if e.role == "user":
        parts += [("▌ you", "bold $accent"), (f"  {when}", MUTED)]
    else:
        parts.append((f"▌ {fmt.literal(e.agent or 'assistant')}", "bold $primary"))
        if e.model:
            parts.append((f" · {fmt.literal(e.model)}", MUTED))
        parts.append((f"  {when}", MUTED))
        if e.created is not None and e.completed is not None:
            parts.append((f" · {fmt.duration(e.completed - e.created)}", MUTED))
        elif ended == "writing":
            parts.append((" · writing …", "$state-busy"))
        elif ended == "interrupted":
            parts.append((" · interrupted", "$state-unknown"))
    if e.reasoning:
        parts += ["\n", (f"  (thought for {e.reasoning:,} characters)", f"{MUTED} italic")]
    for line in e.text.splitlines():
        parts += ["\n", fmt.literal(line)]
    return Content.assemble(*parts)


def message_tail(e: Entry, ended: Progress, now: float) -> Content | None:
    """What follows a message's tool calls: the retry it waits on, its error, or that its run
    ended before it was finished (None: nothing)."""
    parts: list[Part] = []
    if e.retry and ended == "writing":
        nxt = f", next {fmt.clock_time(e.retry_at, now)}" if e.retry_at else ""
        parts += ["\n", (f"↻ retry {fmt.literal(e.retry)}{nxt}", "$state-retry")]
    if e.error:
        parts += ["\n", (f"✗ {fmt.literal(e.error)}", "$state-error bold")]
    elif ended == "interrupted":
        said = "◌ interrupted: the run ended before this reply was finished"
        parts += ["\n", (said, "$state-unknown")]
    return Content.assemble(*parts[1:]) if parts else None


def call_head(
    call: ToolCall, state: CallState, directory: str, now: float, expanded: bool
) -> Content:
    """A tool call on one line: folded or not, its state's glyph, the tool, what it works on,
    how long it took (or runs), and what became of it when it did not complete (and why)."""
    mark, style = CALL_LOOK[state.word]
    parts: list[Part] = [
        (f"  {EXPANDED if expanded else FOLDED} ", MUTED),
        (mark, style),
        " ",
        (fmt.literal(call.tool), "bold"),
    ]
    summary = call.summary_in(directory)
    if summary:
        parts += [": ", fmt.literal(fmt.truncate(summary, 200))]
    if call.started is not None and call.ended is not None:
        parts.append((f"  {fmt.duration(call.ended - call.started)}", MUTED))
    elif call.started is not None and state.word == "running":
        parts.append((f"  running {fmt.duration(now - call.started)}", MUTED))
    if state.word not in ("completed", "running", "pending"):
        why = first_line(state.why) if state.word != "interrupted" else ""
        said = f"{state.word}: {fmt.truncate(why, REASON_CHARS)}" if why else state.word
        parts.append((f"  {fmt.literal(said)}", style))
    return Content.assemble(*parts)


def _detail_lines(detail: Detail) -> list[Part]:
    parts: list[Part] = []
    title = SECTION_TITLE.get(detail.section)
    if title:
        parts += [(f"── {title}", f"{MUTED} italic"), "\n"]
    style = SECTION_STYLE.get(detail.section, "")
    for line in detail.lines:
        if detail.section == "diff":
            style = (
                f"bold {MUTED}"
                if line.startswith(("+++", "---"))
                else "$text-success"
                if line.startswith("+")
                else "$text-error"
                if line.startswith("-")
                else "$text-accent"
                if line.startswith("@@")
                else ""
            )
        if detail.section == "input" and not line.startswith(" ") and ":" in line:
            key, sep, value = line.partition(":")
            parts += [(key + sep, MUTED), value, "\n"]
        else:
            parts += [(line, style) if style else line, "\n"]
    if detail.more:
        more = f"(… {detail.more:,} more line{'s' if detail.more != 1 else ''})"
        parts += [(more, f"{MUTED} italic"), "\n"]
    return parts


def call_details(call: ToolCall, state: CallState) -> Indented:
    """An expanded tool call: its sections (`details`), under a gutter."""
    parts: list[Part] = []
    for detail in details(call, state):
        parts += _detail_lines(detail)
    if not parts:
        parts = [("(nothing more: no input, no output)", f"{MUTED} italic"), "\n"]
    return Indented(Content.assemble(*parts[:-1]), GUTTER)


@dataclass(frozen=True, slots=True)
class Spot:
    """Where a tool call is: its key, its one line's block and, expanded, its details' block."""

    call: CallKey
    head: Hashable
    details: Hashable | None


@dataclass(frozen=True, slots=True)
class Layout:
    blocks: list[Block]
    calls: list[Spot]
    """Every tool call, in order."""
    ticking: bool
    """Something shown counts with the clock (a running call's time)."""


def conversation_blocks(
    items: Sequence[Entry],
    now: float,
    directory: str = "",
    *,
    active: bool = True,
    expanded: Callable[[CallKey], bool] = lambda _key: False,
) -> Layout:
    """The blocks of a conversation: per message its heading and text, one block per tool call
    (and one for its details when `expanded`), its tail; `active`: the session's run goes on
    (run_active). A block's key changes exactly when its text does (a running call's time,
    each second); its content is made only for a key the log has not laid out yet."""
    blocks: list[Block] = []
    calls: list[Spot] = []
    ticking = False
    for i, (e, ended) in enumerate(zip(items, progresses(items, active), strict=True)):
        blocks.append((("message", e, i == 0, ended), partial(message_head, e, ended, now, i == 0)))
        for n, call in enumerate(e.tools):
            state = call_state(call, ended, e.error)
            key = (e.id, n)
            opened = expanded(key)
            tick = int(now) if state.word == "running" and call.started is not None else None
            ticking = ticking or tick is not None
            head = ("call", e.id, n, call, state, opened, directory, tick)
            blocks.append((head, partial(call_head, call, state, directory, now, opened)))
            more = ("details", e.id, n, call, state) if opened else None
            if more is not None:
                blocks.append((more, partial(call_details, call, state)))
            calls.append(Spot(key, head, more))
        tail = message_tail(e, ended, now)
        if tail is not None:
            blocks.append((("tail", e.id, ended, e.error, e.retry, e.retry_at), tail))
    return Layout(blocks, calls, ticking)
