"""`ocwatch record`, and `watch --replay` (`status --replay` is in tui.cli.status; the
dashboard's replay is `ocwatch replay`, in tui.app.replay)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TextIO

from .. import __version__
from ..core import text
from ..core.client import OcwatchError
from ..core.exitcodes import ExitCode
from ..core.fleet import Fleet
from ..core.targets import Servers
from ..core.text import literal
from ..core.view import Changes, View
from .output import stop_on_signals


def run_record(
    path: Path,
    servers: Servers,
    *,
    max_size: int | None = None,
    err: TextIO | None = None,
) -> int:
    """Record until SIGINT/SIGTERM (or `max_size`): exit 0, the file ended cleanly; 1 when
    writing it failed (what came after is not in it)."""
    from ..export.serve import follow
    from ..record.writer import FLUSH_EVERY, Recorder

    err = err or sys.stderr
    settings = servers.settings
    fleet = Fleet.of_servers(servers)
    stop = asyncio.Event()
    try:
        recorder = Recorder(
            path,
            [(m.url, m.name) for m in fleet.monitors],
            settings,
            version=__version__,
            max_size=max_size,
            on_full=lambda _why: stop.set(),
        )
    except FileExistsError:
        raise OcwatchError(f"{path}: the file exists; remove it or name another") from None
    except OSError as exc:
        raise OcwatchError(f"{path}: cannot write it ({exc.strerror or exc})") from None
    for m in fleet.monitors:
        m.tap = recorder
    shown = ", ".join(literal(m.name or m.url, escapes=True) for m in fleet.monitors)
    print(
        f"ocwatch record: recording {shown} to {literal(str(path), escapes=True)} (Ctrl-C stops)",
        file=err,
        flush=True,
    )
    said: set[str] = set()
    following: set[str] = set()

    def say_progress(view: View, _changes: Changes | None) -> None:
        for s in view.servers:
            if s.error and s.error not in said:  # what could not be read, once per error
                said.add(s.error)
                print(f"ocwatch record: {literal(s.error, escapes=True)}", file=err, flush=True)
            if s.first_snapshot and s.connected and s.url not in following:
                # from here on nothing the server does escapes the file (a script may wait
                # for this line before it starts what it records)
                following.add(s.url)
                print(
                    f"ocwatch record: following {literal(s.label, escapes=True)} "
                    "(first snapshot recorded, event stream live)",
                    file=err,
                    flush=True,
                )

    async def flush_often() -> None:  # a burst then silence reaches the disk within 1 s
        while True:
            await asyncio.sleep(FLUSH_EVERY / 2)
            recorder.tick()
            if recorder.stopped and not stop.is_set():
                stop.set()  # (a write failed: the recording stopped there)

    async def main() -> None:
        stop_on_signals(stop)
        flusher = asyncio.create_task(flush_often())
        try:
            await follow(fleet, [say_progress], stop=stop)
        finally:
            flusher.cancel()

    try:
        asyncio.run(main())
    finally:
        for m in fleet.monitors:
            m.tap = None
        recorder.close()
    if recorder.stopped:
        print(f"ocwatch record: {recorder.stopped}", file=err)
    print(
        f"ocwatch record: {recorder.records:,} records, {recorder.size():,} bytes in "
        f"{literal(str(path), escapes=True)}",
        file=err,
    )
    return 1 if recorder.failed else 0


def say_notes(notes: Sequence[str], err: TextIO) -> None:
    """A replay's notes on its file (Replay.notes), a line each on `err`."""
    for note in notes:
        print(f"ocwatch: warning: {literal(note, escapes=True)}", file=err)


def run_watch_replay(
    path: Path,
    sessions: Collection[str],
    as_json: bool,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """`watch --replay FILE`: the transitions as they were, at their recorded times."""
    from ..record.replay import Replay
    from .output import pipe_safe
    from .watch import LinkNotes, transition_json, transition_text

    out = out or sys.stdout
    err = err or sys.stderr
    replay = Replay(path)
    wanted = set(sessions)
    with_server = len(replay.header.servers) > 1
    notes = LinkNotes(err)

    def observe(view: View, changes: Changes | None) -> None:
        # as live `watch` says them, once a server's first read ended (before: not read yet)
        read = [s for s in view.servers if s.first_snapshot or s.error]
        notes.say(read, view.generated_at)
        for tr in changes.transitions if changes is not None else ():
            if wanted and tr.key[1] not in wanted:
                continue
            out.write(
                (text.dumps(transition_json(tr)) if as_json else transition_text(tr, with_server))
                + "\n"
            )

    with pipe_safe():
        asyncio.run(replay.follow(observe))
        out.flush()
    say_notes(replay.notes(), err)
    servers = replay.fleet.servers()
    if not any(s.first_snapshot for s in servers):  # as live `watch`: exit 2, said why
        for s in servers:
            if s.error is None:  # (one that failed was said above)
                notes.line(s.why_unread())
        return ExitCode.USAGE
    return ExitCode.OK
