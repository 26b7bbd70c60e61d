"""`ocwatch status`: every session's state printed once, as a table, JSON or a tmux status line;
`status --replay FILE [--at TIME]` prints the View of a recording the same way."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..core import text, words
from ..core.exitcodes import ExitCode
from ..core.text import literal
from ..core.view import View, count_states, loaded, waiting_requests
from .output import pipe_safe, render_table, say

if TYPE_CHECKING:
    from ..core.fleet import Fleet
    from ..core.targets import Servers


def _progress_line(fleet: Fleet, stream: TextIO) -> Callable[[], None]:
    """On a terminal: one self-erasing line saying how far the first snapshots have loaded (cut
    to the terminal's width: a wrapped line would not erase)."""
    try:
        width = os.get_terminal_size(stream.fileno()).columns - 1
    except (OSError, ValueError):
        width = 79

    def show() -> None:
        parts = [
            f"{literal(s.url, escapes=True)} {loaded(s.loading)}"
            for s in fleet.servers()
            if s.loading is not None
        ]
        text = "ocwatch: loading sessions of " + ", ".join(parts) if parts else ""
        if len(text) > width:
            text = text[: max(0, width - 1)] + "…"
        stream.write("\r\x1b[K" + text)
        stream.flush()

    return show


def run_status(servers: Servers, *, form: str = "table") -> int:
    """Print the View once. Exit 0, or 2 when any server could not be read. The servers'
    `sources` (an inventory file) are read once, their servers beside the named ones; one that
    cannot be read is said, and the command exits 2 after printing what it could read."""
    from ..core.fleet import Fleet
    from ..core.inventory import read_once

    unread: list[str] = []

    def said(why: str) -> None:
        unread.append(why)
        say("", why)

    fleet = Fleet.of_servers(servers.joined(read_once(servers.sources, said)))
    progress = _progress_line(fleet, sys.stderr) if sys.stderr.isatty() and form != "tmux" else None
    try:
        view = asyncio.run(fleet.snapshot_once(progress))
    finally:
        if progress is not None:
            sys.stderr.write("\r\x1b[K")
    code = print_view(view, form)
    return ExitCode.USAGE if unread else code


def tmux_line(view: View) -> str:
    """One short line for a tmux status bar: what needs someone first (the requests waiting
    for input, each once; stale, retrying, unknown rows), then the busy rows, and the servers
    that cannot be read; tmux style codes colour it. Only counts: no server text reaches the
    status bar."""
    counts = count_states(view.rows.values())
    parts = []
    waiting = waiting_requests(view.rows.values()) if counts["input"] else 0
    glyph_of = words.STATE_GLYPH
    for glyph, n, colour in (
        (glyph_of["input"], waiting, "yellow"),
        (words.STALE_GLYPH, counts["stale"], "red"),
        (glyph_of["retry"], counts["retry"], "magenta"),
        (glyph_of["unknown"], counts["unknown"], "colour245"),
        (glyph_of["busy"], counts["busy"] - counts["stale"], "cyan"),
    ):
        if n:
            parts.append(f"#[fg={colour}]{glyph} {n}#[default]")
    down = sum(not s.reachable for s in view.servers)
    if down:
        parts.append(f"#[fg=red,bold]{words.DOWN_GLYPH} {down} down#[default]")
    return " ".join(parts) if parts else f"{glyph_of['idle']} idle"


def print_view(view: View, form: str) -> int:
    """Print a View as `status` does (`form`: table, json or tmux); 0, or 2 when a server
    could not be read (said on stderr, with the records skipped as malformed)."""
    with pipe_safe():
        if form == "json":
            print(text.dumps(view.to_json(), indent=2))
        elif form == "tmux":
            print(tmux_line(view))
        else:
            print(render_table(view, view.generated_at))
    bad = [s for s in view.servers if not s.reachable]
    for s in bad:
        # (no error and no snapshot: not read yet, e.g. a recording's moment before its first)
        say("", s.why_unread())
    partial = [s for s in view.servers if s.reachable and s.malformed]
    for s in partial:  # what could not be read is said, never passed over as nothing
        examples = ", ".join(s.malformed_examples)
        say(
            "",
            f"{s.url}: skipped {s.malformed} malformed record"
            f"{'s' if s.malformed != 1 else ''} ({examples}"
            f"{', ...' if s.malformed > len(s.malformed_examples) else ''})",
        )
    return ExitCode.USAGE if bad or partial else ExitCode.OK


def run_status_replay(path: Path, at: str | None, form: str) -> int:
    """`status --replay FILE [--at TIME]`: the View as it was (exit as `status` would have)."""
    from ..record.format import after_the_end, parse_time
    from ..record.replay import Replay
    from .record import say_notes

    replay = Replay(path)
    moment = parse_time(at, replay.header.created) if at is not None else None
    asyncio.run(replay.follow(lambda _v, _c: None, until=moment))
    if at is not None and moment is not None and moment > replay.last_at and replay.peek() is None:
        raise after_the_end(at.strip(), replay.last_at)
    say_notes(replay.notes(), sys.stderr)
    return print_view(replay.view(), form)
