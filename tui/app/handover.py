"""Opening a session in OpenCode beside the dashboard, in a tmux window or pane, so that the
dashboard keeps watching (its monitors, alerts and exporter never stop while the user works).

The command and its environment (which holds the server's password) reach the new window
through a FIFO in a private folder, never through an argument of `tmux` (argv is visible to
every user of the machine): `tmux new-window -- python -m tui.app.handover FIFO` starts this
module there, which reads them, removes the FIFO and its folder, and becomes the command
(`execvpe`). Nothing is written to disk.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

#: Seconds the dashboard waits for the new window to take the command before it gives up
TAKE_WITHIN = 15.0
#: How the command is opened inside tmux (the config's `attach_in`)
PLACES = ("tmux-window", "tmux-split", "terminal")


def tmux_argv(place: str, fifo: str, title: str) -> list[str]:
    """The tmux command that opens a window (or a pane beside the dashboard) running this
    module on `fifo`; no secret in it."""
    run = [sys.executable, "-m", "tui.app.handover", fifo]
    if place == "tmux-split":
        return ["tmux", "split-window", "-h", "--", *run]
    return ["tmux", "new-window", "-n", title[:30] or "opencode", "--", *run]


def offer(argv: Sequence[str], env: Mapping[str, str]) -> tuple[str, threading.Thread]:
    """A FIFO in a fresh private folder, and a thread that hands `argv` and `env` to whoever
    opens it for reading first (within TAKE_WITHIN; then the FIFO and its folder are removed
    unread)."""
    folder = tempfile.mkdtemp(prefix="ocwatch-attach-")  # (0700)
    fifo = os.path.join(folder, "handover")
    os.mkfifo(fifo, 0o600)
    payload = json.dumps({"argv": list(argv), "env": dict(env)}).encode()

    def hand() -> None:
        deadline = time.monotonic() + TAKE_WITHIN
        try:
            while True:
                try:
                    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO: no reader yet
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        return
                    time.sleep(0.05)
            try:
                os.set_blocking(fd, True)
                view = memoryview(payload)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    thread = threading.Thread(target=hand, name="ocwatch-handover", daemon=True)
    thread.start()
    return fifo, thread


def take(fifo: str) -> tuple[list[str], dict[str, str]]:
    """Read what `offer` hands over (and remove the FIFO: it is for one reader)."""
    with open(fifo, "rb") as fh:
        data = json.loads(fh.read(16 * 2**20))
    with_folder = Path(fifo).parent
    shutil.rmtree(with_folder, ignore_errors=True)
    argv, env = data["argv"], data["env"]
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        raise ValueError("no command handed over")
    return argv, {str(k): str(v) for k, v in env.items()}


def main(args: Sequence[str]) -> int:
    """In the new tmux window: take the command and become it."""
    if len(args) != 1:
        print("usage: python -m tui.app.handover FIFO", file=sys.stderr)
        return 2
    try:
        argv, env = take(args[0])
    except (OSError, ValueError, KeyError) as exc:
        print(f"ocwatch: nothing to open here ({exc})", file=sys.stderr)
        return 2
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        print(f"ocwatch: cannot run {argv[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    return 0  # (never: exec replaced this process)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
