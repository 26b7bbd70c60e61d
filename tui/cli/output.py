"""Plain-text rendering for the CLI: literal titles, aligned columns, no colour dependence."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import unicodedata
from collections.abc import Iterator
from typing import TextIO

from ..core import words
from ..core.text import MORE_LINES, literal
from ..core.view import SessionRow, View, attention_rank, duration


class _Output:
    lost: str | None = None
    """Why the standard output could not be written (None: it could), for `main` to exit by."""


OUTPUT = _Output()


@contextlib.contextmanager
def pipe_safe() -> Iterator[None]:
    """Output to a pipe whose reader may stop early (`ocwatch status | head -1`): the rest of the
    output is dropped quietly and the command keeps the exit code it decided. An output that
    cannot be written for another reason (a full disk: `> /dev/full`) is said on stderr once,
    and noted in OUTPUT.lost (a command whose output is its answer then exits 2, not 0); a
    closed one (`>&-`: no sys.stdout) takes nothing and says nothing."""
    try:
        yield
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        _to_devnull()
    except OSError as exc:
        if OUTPUT.lost is None:
            OUTPUT.lost = exc.strerror or type(exc).__name__
            say("", f"cannot write the output: {OUTPUT.lost}")
        _to_devnull()


def _to_devnull() -> None:
    """stdout is gone: point it at /dev/null so the interpreter's last flush is quiet too."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def say(prefix: str, text: str, file: TextIO | None = None) -> None:
    """One diagnostic line on stderr (or `file`), the one way the commands write one:
    `ocwatch PREFIX: TEXT`, the prefix naming the command (`wait`; "" for what the program as a
    whole says: `ocwatch: TEXT`), the text made literal (a server's words can carry escapes and
    newlines: they are shown as characters, on this one line)."""
    head = f"ocwatch {prefix}" if prefix else "ocwatch"
    print(f"{head}: {literal(text, escapes=True)}", file=file or sys.stderr, flush=True)


def tree_order(rows: list[SessionRow]) -> list[tuple[int, SessionRow]]:
    """Rows ordered as a tree (children under their parent), with depth. A row no root reaches
    (its parents form a cycle, or it is its own parent) is shown at the top level with what hangs
    under it, as the dashboard does: every row is shown once."""
    by_key = {(r.server, r.id): r for r in rows}
    kids: dict[tuple[str, str], list[SessionRow]] = {}
    roots: list[SessionRow] = []
    for r in rows:
        pk = (r.server, r.parent_id) if r.parent_id else None
        if pk is not None and pk in by_key:
            kids.setdefault(pk, []).append(r)
        else:
            roots.append(r)
    order = lambda r: (attention_rank(r), r.server, r.directory, -(r.updated or 0), r.id)  # noqa: E731
    out: list[tuple[int, SessionRow]] = []
    seen: set[tuple[str, str]] = set()

    def walk(tops: list[SessionRow]) -> None:
        stack = [(0, r) for r in sorted(tops, key=order, reverse=True)]
        while stack:
            depth, r = stack.pop()
            if r.key in seen:
                continue
            seen.add(r.key)
            out.append((depth, r))
            for c in sorted(kids.get(r.key, []), key=order, reverse=True):
                stack.append((depth + 1, c))

    walk(roots)
    if len(seen) < len(by_key):  # rows in a parent cycle: each cycle from its first row
        for r in sorted((r for r in rows if r.key not in seen), key=order):
            if r.key not in seen:
                walk([r])
    return out


def render_table(view: View, now: float | None = None) -> str:
    now = time.time() if now is None else now
    lines: list[str] = []
    for s in view.servers:
        # an unreachable server's error goes to stderr once (run_status), not here as well
        health = "reachable" if s.reachable else "NOT OPENCODE" if s.foreign else "UNREACHABLE"
        named = f"{s.name} ({s.url})" if s.name else s.url
        proto = f"  OpenCode {s.protocol.upper()}" if s.protocol else ""
        lines.append(
            literal(f"server {named}{proto}  version {s.version or '?'}  {health}", escapes=True)
        )
    rows = list(view.rows.values())
    if not rows:
        if all(s.reachable for s in view.servers):
            lines.append("no sessions")
        return "\n".join(lines)
    header = ("STATE", "FOR", "ID", "TITLE", "FOLDER", "DETAIL")
    table: list[tuple[str, ...]] = [header]
    for depth, r in tree_order(rows):
        detail = ""
        if r.pending:
            detail = literal(r.pending[0].summary, escapes=True)
        elif r.stale or r.state == "unknown" or r.reason in ("error",):
            detail = literal(r.evidence[0] if r.stale or not r.error else r.error, escapes=True)
        elif r.state == "retry" and r.retry_message:
            detail = literal(r.retry_message, escapes=True)
        title = (words.indent(depth) + ("└ " if depth else "")) + literal(
            r.title or "(untitled)", escapes=True
        )
        held = duration(now - r.since if r.since else None, unknown="-")
        table.append(
            (
                words.line(r),
                held,
                literal(r.id, escapes=True),
                _clip(title, 40),
                _clip(literal(_folder(r.directory), escapes=True), 24),
                _clip_detail(detail, 60),
            )
        )
    widths = [max(_cells(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        lines.append(
            "  ".join(c + " " * (w - _cells(c)) for c, w in zip(row, widths, strict=True)).rstrip()
        )
    return "\n".join(lines)


def _cells(text: str) -> int:
    """The columns `text` takes in a terminal: wide (East Asian wide or full-width, most emoji)
    characters two, combining marks none (text already through `literal`: no controls)."""
    if text.isascii():
        return len(text)
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def _folder(path: str) -> str:
    parts = [p for p in path.rstrip("/").split("/") if p]
    return "/".join(parts[-2:]) if parts else path


def _clip_detail(text: str, width: int) -> str:
    """As `_clip`, but a summary that hides lines keeps saying how many however it is cut
    (`bash: echo cle… (+1 line)`): the hidden lines are what a person must not miss."""
    more = MORE_LINES.search(text) if _cells(text) > width else None
    if more is not None and width - len(more.group(0)) >= 6:
        return _clip(text[: more.start()], width - len(more.group(0))) + more.group(0)
    return _clip(text, width)


def _clip(text: str, width: int) -> str:
    """`text` in at most `width` columns, cut with an ellipsis."""
    if _cells(text) <= width:
        return text
    out, used = [], 0
    for c in text:
        w = _cells(c)
        if used + w > width - 1:
            break
        out.append(c)
        used += w
    return "".join(out) + "…"


def stop_on_signals(stop: asyncio.Event) -> None:
    """SIGINT and SIGTERM set `stop` (a long-running command then ends cleanly, exit 0);
    call it from inside the running loop."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
