"""Hostile text in the real dashboard, as a terminal receives it (issue 10).

The dashboard runs as a user runs it (`ocwatch --osc9 --notify`) in a pseudo-terminal against
tests/hostile.py, whose sessions, permission and error texts carry terminal escapes, C1
controls, bidi overrides, Rich markup and a lone surrogate. Every byte the dashboard writes is
captured: the injected sequences never reach the terminal raw, the texts are shown literally,
and an alert for such a session (OSC 9, and `notify-send`, faked on PATH to record its
arguments) carries no control either. Before issue 10 the notify-send path crashed the app.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_env import cli_env
from tests.hostile import HostileServer, json_answer, session

#: a minute ago (ms): the dashboard folds rows idle for over 12 h, and a fixed date here made the
#: idle titles show only while their last messages loaded (a race once the date was 12 h old)
T0 = int(time.time() * 1000) - 60_000
#: What the titles try to do to the terminal, and what must never reach it raw.
INJECTED = [
    b"\x1b]0;pwned",
    b"\x1b[31mRED",
    b"\x1bP+q",
    b"\xc2\x9b7m",
    b"\xe2\x80\xae",
    b"\x1b[7mINV",
    b"\xe2\x80\x8b",
]
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def sessions_json() -> str:
    """The session list, written by hand where json.dumps would refuse (a lone surrogate)."""
    items = [
        session("ses_osc", title="\x1b]0;pwned\x07 \x1b[31mRED", updated=T0),
        session("ses_bidi", title="H\u202egnp.exe", updated=T0),
        session("ses_markup", title="[bold]markup[/] \x1bP+q\x1b\\ c\x9b7m", updated=T0),
        session("ses_zw", title="zero\u200bwidth", updated=T0),
        session("ses_run", title="RUN \x1b[7mINV bell\x07 cr\rX", updated=T0),
    ]
    surrogate = (
        '{"id": "ses_surr", "title": "SURR\\ud800", "directory": "/tmp/p", '
        f'"time": {{"created": {T0}, "updated": {T0}}}}}'
    )
    return json.dumps(items)[:-1] + ", " + surrogate + "]"


def errored(sid: str) -> list[dict]:
    return [
        {
            "info": {
                "id": "msg_2",
                "sessionID": sid,
                "role": "assistant",
                "time": {"created": T0 + 1000, "completed": T0 + 2000},
                "error": {"name": "APIError", "data": {"message": "boom \x1b[7mINV \u202eevil"}},
            },
            "parts": [],
        }
    ]


class Terminal:
    """A process on a pseudo-terminal of a given size; every byte it writes is kept."""

    def __init__(self, argv: list[str], env: dict[str, str], size: tuple[int, int]) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        # the size is the terminal's: COLUMNS and LINES would override it (a pytest-xdist
        # worker has them set to 80x24, where the titles are cut short)
        env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
        self.proc = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
        os.close(slave)
        self.out = bytearray()

    def read_until(self, cond: bytes | re.Pattern[bytes], timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if (cond in self.out) if isinstance(cond, bytes) else cond.search(self.out):
                return True
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self.out += os.read(self.master, 65536)
                except OSError:  # the process ended
                    return False
        return False

    def close(self) -> int:
        try:
            os.write(self.master, b"q")
            self.read_until(b"\x00never", 3)
            return self.proc.wait(10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(5)
            os.close(self.master)


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    srv = HostileServer().start()
    srv.sessions = sessions_json()
    srv.routes["/session/status"] = json_answer({"ses_run": {"type": "busy"}})
    srv.routes["/permission"] = json_answer(
        [
            {
                "id": "per_1",
                "sessionID": "ses_osc",
                "permission": "bash",
                "patterns": ["rm -rf \x1b[7mINV /\u202e"],
                "metadata": {"command": "rm\x9b7m"},
                "always": [],
                "tool": {"messageID": "m", "callID": "c"},
            }
        ]
    )
    yield srv
    srv.stop()


def test_hostile_titles_reach_the_terminal_as_text_and_alerts_carry_no_control(
    hostile: HostileServer, tmp_path: Path
):
    calls = tmp_path / "notify-send.calls"
    fake = tmp_path / "bin" / "notify-send"
    fake.parent.mkdir()
    fake.write_text(
        '#!/bin/sh\nfor a in "$@"; do printf \'%s\\0\' "$a"; done >> '
        f"'{calls}'\nprintf '\\n' >> '{calls}'\n"
    )
    fake.chmod(0o755)
    env = {
        **cli_env(),
        "TERM": "xterm-256color",
        "COLORTERM": "truecolor",
        "PATH": f"{fake.parent}:{os.environ['PATH']}",
        "OCWATCH_RESYNC": "1",
        "PYTHONIOENCODING": "utf-8",
    }
    term = Terminal(
        [sys.executable, "-m", "tui.cli.main", "--server", hostile.url, "--osc9", "--notify"],
        env,
        (160, 40),
    )
    try:
        assert term.read_until(b"markup", 60), bytes(term.out[-2000:])
        # every hostile title painted (each row comes as its snapshot's messages do)
        for shown in ("\u241b]0;pwned\u2407 \u241b[31mRED", "H\ufffdgnp.exe"):
            assert term.read_until(shown.encode(), 60), bytes(term.out[-3000:])
        # the run ends in an error whose message is hostile too: an alert is sent
        hostile.routes["/session/status"] = json_answer({})
        hostile.messages["ses_run"] = errored("ses_run")
        assert term.read_until(re.compile(rb"\x1b\]9;ocwatch: RUN[^\x07]*\x07"), 30), bytes(
            term.out[-2000:]
        )
        code = term.close()
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
    out = bytes(term.out)
    assert b"Traceback" not in out, out[-3000:]
    assert code == 0
    for raw in INJECTED:
        assert raw not in out, raw
    screen = out.decode("utf-8", errors="strict")  # a lone surrogate never reaches it
    assert "[bold]markup[/]" in screen  # Rich markup shown as typed, not applied
    # controls as their pictures, the invisible and the reordering as U+FFFD, in place
    assert "\u241b]0;pwned\u2407 \u241b[31mRED" in screen and "H\ufffdgnp.exe" in screen
    assert "SURR\ufffd" in screen and "zero\ufffdwidth" in screen
    # every OSC the app wrote: the window title is never the injected one; the OSC 9
    # alert is plain text (no ESC, no C1, no BEL inside, no bidi)
    for m in re.finditer(rb"\x1b\](\d+);([^\x07\x1b]*)(\x07|\x1b\\)", out):
        assert b"pwned" not in m.group(2) or m.group(1) == b"9"
        if m.group(1) == b"9":
            text = m.group(2).decode()
            assert not UNSAFE.search(text), text
            assert text.startswith("ocwatch: RUN ") and "error" in text
    args = [a for line in calls.read_bytes().split(b"\n") if line for a in line.split(b"\0") if a]
    assert args, "notify-send was not run"
    for a in args:
        assert not UNSAFE.search(a.decode("utf-8", errors="strict")), a
    assert any(a.startswith(b"RUN ") and b"boom" in a for a in args), args
