"""An output that cannot be written (a full disk, `> /dev/full`; a closed stdout, `>&-`): one
line on stderr, never a traceback, and the exit code says it: `wait` keeps its outcome (its
answer is its exit code: it exited 1, "the run ended with an error", for an aborted run), a
command whose output is its answer exits 2, never 0."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from tests.cli_env import cli_env
from tui.demo.server import DemoServer

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")


@pytest.fixture(scope="module")
def demo_url() -> Iterator[str]:
    """A frozen demo server (every state, nothing moving) on a thread of its own."""
    ready = threading.Event()
    stop: list[asyncio.Event] = []
    url: list[str] = []

    async def serve() -> None:
        server = DemoServer(speed=400, heartbeat=0.05)
        server.freeze()
        async with server:
            url.append(server.url)
            stop.append(asyncio.Event())
            ready.set()
            await stop[0].wait()

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(30)
    yield url[0]
    loop.call_soon_threadsafe(stop[0].set)
    thread.join(10)


def run(args: list[str], stdout: int | None) -> subprocess.CompletedProcess[str]:
    """`ocwatch ARGS` with its stdout on `stdout` (an fd), or closed (None)."""
    if stdout is None:  # (no fd 1 at all: what `>&-` leaves, Python's sys.stdout None)
        cmd = ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "tui.cli.main", *args]
        return subprocess.run(cmd, stderr=subprocess.PIPE, text=True, env=cli_env(), timeout=60)
    return subprocess.run(
        [sys.executable, "-m", "tui.cli.main", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
        timeout=60,
    )


@pytest.mark.parametrize("closed", [False, True], ids=["full", "closed"])
def test_wait_keeps_its_outcome_when_its_line_cannot_be_written(
    demo_url: str, closed: bool
) -> None:
    with open("/dev/full", "w") as full:
        proc = run(
            ["wait", "ses_demo_terraform", "--timeout", "20", "--server", demo_url],
            None if closed else full.fileno(),
        )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 3, (proc.returncode, proc.stderr)  # aborted, as it is
    if not closed:
        assert "cannot write the output: No space left on device" in proc.stderr


@pytest.mark.parametrize("command", [["status"], ["status", "--json"], ["servers"]])
def test_a_command_whose_output_is_its_answer_exits_2_when_it_cannot_write_it(
    demo_url: str, command: list[str]
) -> None:
    with open("/dev/full", "w") as full:
        proc = run([*command, "--server", demo_url], full.fileno())
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.count("cannot write the output: No space left on device") == 1


@pytest.mark.parametrize("closed", [False, True], ids=["full", "closed"])
def test_watch_ends_with_one_line_when_its_lines_cannot_be_written(
    demo_url: str, closed: bool
) -> None:
    with open("/dev/full", "w") as full:
        proc = run(["watch", "--json", "--server", demo_url], None if closed else full.fileno())
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    said = "no standard output" if closed else "cannot write the output: No space left on device"
    assert said in proc.stderr


def test_prompt_wait_timeout_bounds_its_first_look_too() -> None:
    """`prompt --wait --timeout 1` against a server that takes connections and never answers:
    the first look is bounded by --timeout (it waited out the 10 s request timeout, then the
    45 s command deadline), and exit 2 says the prompt was not sent."""
    import socket

    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen(8)  # (connections queue; nothing is ever read or answered)
        url = f"http://127.0.0.1:{mute.getsockname()[1]}"
        proc = subprocess.run(
            [sys.executable, "-m", "tui.cli.main", "prompt", "ses_x", "hello", "--wait"]
            + ["--timeout", "1", "--server", url],
            capture_output=True,
            text=True,
            env=cli_env(),
            timeout=60,
        )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "no snapshot within 1s; the prompt was not sent" in proc.stderr
