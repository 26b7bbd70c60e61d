"""The transition contract on the real server: every run kind passes through exactly its
lifecycle, in the View at every derive and in `ocwatch watch --json`, and nothing else.

One in-process Fleet derives a View after every event batch (and on a 0.2 s tick) and records,
for the sessions made here, the state every View showed (settled or not) and the transitions; one
`ocwatch watch --json` subprocess follows the same server. Each scenario then drives a real run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.cli_env import cli_env
from tui.core.fleet import Fleet
from tui.core.settings import Auth, Settings
from tui.core.view import ServerInfo

from .driver import Driver, interrupt, wait_until
from .oc_server import OpenCodeServer
from .scripted_model import ChatRequest, Reply, ScriptedModel, error_reply

State = tuple[str, str | None, bool]
IDLE: State = ("idle", None, False)
BUSY: State = ("busy", None, False)
INPUT: State = ("input", None, False)
RETRY: State = ("retry", None, False)
DONE: State = ("idle", "completed", False)
FAILED: State = ("idle", "error", False)
ABORTED: State = ("idle", "aborted", False)


def compress(states: list[State]) -> list[State]:
    out: list[State] = []
    for s in states:
        if not out or out[-1] != s:
            out.append(s)
    return out


class Watcher:
    """A Fleet in a thread of its own, recording what every derived View showed."""

    def __init__(
        self, url: str, auth: Auth | None = None, settings: Settings | None = None
    ) -> None:
        self.url = url
        self.auth = auth
        self.settings = settings or Settings()
        self.shown: dict[str, list[State]] = {}  # every View's row, settled or not
        self.settled: dict[str, list[State]] = {}  # settled rows only
        self.emitted: dict[str, list[State | None]] = {}  # transitions' `to`
        self.since: dict[str, float | None] = {}
        #: a `watch` process following the same server, whose first sight `fresh` waits for too
        self.beside: WatchProcess | None = None
        self.evidence: dict[str, set[str]] = {}  # every evidence line shown
        self.asked: dict[str, list[int]] = {}  # per View showing it waiting: requests shown
        self.derives = 0
        self._server: ServerInfo | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def start(self) -> Watcher:
        self._thread.start()
        wait_until(lambda: self.derives > 0, 60, what="the watcher's first View")
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    async def _run(self) -> None:
        fleet = Fleet([self.url], settings=self.settings, auth=self.auth)
        changed = asyncio.Event()
        task = asyncio.create_task(fleet.run(changed.set))
        try:
            await fleet.monitors[0].first_snapshot()
            while not self._stop.is_set():
                changed.clear()
                view = fleet.current()
                with self._lock:
                    self.derives += 1
                    self._server = view.servers[0]
                    for row in view.rows.values():
                        st = (row.state, row.reason, row.stale)
                        self.shown.setdefault(row.id, []).append(st)
                        if row.settled:
                            self.settled.setdefault(row.id, []).append(st)
                        self.since[row.id] = row.since
                        self.evidence.setdefault(row.id, set()).update(row.evidence)
                        if row.state == "input":
                            self.asked.setdefault(row.id, []).append(len(row.pending))
                    for tr in fleet.last_changes.transitions if fleet.last_changes else ():
                        to = tr.after
                        self.emitted.setdefault(tr.key[1], []).append(
                            None if to is None else (to.state, to.reason, to.stale)
                        )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), 0.2)
        finally:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    def seen(self, sid: str) -> bool:
        with self._lock:
            return bool(self.emitted.get(sid))

    def last(self, sid: str) -> State | None:
        with self._lock:
            got = self.emitted.get(sid)
            return got[-1] if got else None

    def wait_last(self, sid: str, state: State, timeout: float = 60) -> None:
        wait_until(
            lambda: self.last(sid) == state,
            timeout,
            what=f"{sid} settled as {state} (now {self.last(sid)})",
        )

    def server(self) -> ServerInfo:
        """The server's line of the last View (link, stream, error, counts)."""
        with self._lock:
            assert self._server is not None
            return self._server

    def lifecycle(self, sid: str) -> dict[str, list[Any]]:
        with self._lock:
            return {
                "shown": compress(self.shown.get(sid, [])),
                "settled": compress(self.settled.get(sid, [])),
                "emitted": list(self.emitted.get(sid, [])),
            }


class WatchProcess:
    """`ocwatch watch --json` as a user runs it, its lines read as they come."""

    def __init__(self, url: str, password: str | None = None) -> None:
        env = cli_env(password)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tui.cli.main", "watch", "--json", "--server", url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(json.loads(line))

    def of(self, sid: str) -> list[dict[str, Any]]:
        return [x for x in list(self.lines) if x["session_id"] == sid]

    def stop(self) -> tuple[int, str]:
        code = interrupt(self.proc, 15)
        self._reader.join(5)
        assert self.proc.stderr is not None
        return code, self.proc.stderr.read()


@pytest.fixture(scope="module")
def followers(oc_server: OpenCodeServer) -> Iterator[tuple[Watcher, WatchProcess]]:
    watcher = Watcher(oc_server.url).start()
    proc = watcher.beside = WatchProcess(oc_server.url)
    with Driver(oc_server.url, auth=oc_server.auth, default_directory=str(oc_server.project)) as d:
        sentinel = d.create_session(title="lifecycle sentinel")["id"]
        wait_until(
            lambda: proc.of(sentinel) or proc.proc.poll() is not None,
            60,
            what="watch following the server",
        )
    yield watcher, proc
    watcher.stop()
    code, err = proc.stop()
    assert code == 0, err


def _flaky_then_slow(model: ScriptedModel) -> None:
    """`flakyslow`: 503 twice, then a reply that streams for a second (so busy shows)."""

    def behave(r: ChatRequest) -> Reply:
        key = "flakyslow|" + (r.scenario[2] if r.scenario else "")
        if model.count(key) <= 2:
            return error_reply(503, "scripted overload, try again later")
        return Reply(
            steps=[
                ("text", "Recovered"),
                ("sleep", 1.0),
                ("text", " after retry."),
                ("finish", "stop"),
            ]
        )

    model.on("flakyslow", behave)


def fresh(oc: Driver, watcher: Watcher, title: str) -> str:
    """A new session, once the watcher has seen it settled idle (no messages yet)."""
    sid = oc.create_session(title=title)["id"]
    watcher.wait_last(sid, IDLE)
    seen_beside(watcher, sid)
    return sid


def seen_beside(watcher: Watcher, sid: str) -> None:
    """Until the `watch` process beside the watcher printed the new session too: it is a
    monitor of its own, and a prompt sent before it saw the session idle makes its first sight
    busy (seen in a CI run: `None -> busy`, where the in-process watcher had shown idle)."""
    beside = watcher.beside
    if beside is not None:
        wait_until(lambda: beside.of(sid), 30, what=f"watch printing {sid}")


def check(
    watcher: Watcher,
    proc: WatchProcess,
    sid: str,
    want: list[State],
    also: Callable[[list[dict[str, Any]]], None] | None = None,
) -> None:
    """Every View showed exactly `want` (repeats dropped), and so did the transitions and
    `watch --json` (first line `from` null)."""
    # `watch` prints the settled changes between the Views it derives: a busy that turned into
    # a permission at once may fall between two of them (seen once under a parallel CI run);
    # every other state must be printed, in order (the watcher below checks every View)
    brief = [s for i, s in enumerate(want) if not (s == BUSY and want[i + 1 : i + 2] == [INPUT])]
    wait_until(
        lambda: [tuple(x["to"].values()) for x in proc.of(sid) if x["to"]] in (want, brief),
        30,
        what=f"watch printing {want} for {sid} (got {proc.of(sid)})",
    )
    got = watcher.lifecycle(sid)
    assert got["shown"] == want, got
    assert got["settled"] == want, got
    assert got["emitted"] == want, got
    with watcher._lock:
        asked = watcher.asked.get(sid, [])
    assert all(asked), f"a View showed {sid} waiting with nothing asked: {asked}"
    lines = proc.of(sid)
    assert lines[0]["from"] is None
    for a, b in zip(lines, lines[1:], strict=False):
        assert b["from"] == a["to"]
    if also is not None:
        also(lines)


def test_completed_then_a_second_prompt(oc: Driver, followers):
    watcher, proc = followers
    sid = fresh(oc, watcher, "lifecycle completed")
    oc.prompt(sid, "first", "text")
    watcher.wait_last(sid, DONE)
    oc.prompt(sid, "second", "text")  # to an idle, completed session: no `unknown` between
    oc.wait_assistant_completed(sid)
    wait_until(
        lambda: watcher.lifecycle(sid)["emitted"] == [IDLE, BUSY, DONE, BUSY, DONE],
        60,
        what="the second run's completion",
    )
    check(watcher, proc, sid, [IDLE, BUSY, DONE, BUSY, DONE])


def test_error(oc: Driver, followers):
    watcher, proc = followers
    sid = fresh(oc, watcher, "lifecycle error")
    oc.prompt(sid, "x", "fail")
    watcher.wait_last(sid, FAILED)
    check(watcher, proc, sid, [IDLE, BUSY, FAILED])


def test_aborted(oc: Driver, scripted_model: ScriptedModel, followers):
    watcher, proc = followers
    sid = fresh(oc, watcher, "lifecycle aborted")
    oc.prompt(sid, "x", "hang", "lifecycle-abort")
    watcher.wait_last(sid, BUSY)
    oc.abort(sid)
    watcher.wait_last(sid, ABORTED)
    scripted_model.release("lifecycle-abort")
    check(watcher, proc, sid, [IDLE, BUSY, ABORTED])


@pytest.mark.parametrize(
    ("reply", "message", "want"),
    [
        ("once", None, [IDLE, BUSY, INPUT, BUSY, DONE]),
        ("reject", None, [IDLE, BUSY, INPUT, ABORTED]),
        # the message goes to the model as feedback, and the run goes on to complete
        ("reject", "use printf", [IDLE, BUSY, INPUT, BUSY, DONE]),
    ],
)
def test_permission(
    oc: Driver, followers, reply: str, message: str | None, want: list[State]
) -> None:
    watcher, proc = followers
    title = f"lifecycle permission {reply}" + (" with a message" if message else "")
    sid = fresh(oc, watcher, title)
    oc.prompt(sid, "x", "permission", f"echo lifecycle-{reply}-{bool(message)}")
    req = oc.wait_permission(sid)
    watcher.wait_last(sid, INPUT)
    oc.reply_permission(req["id"], reply, message=message, directory=oc.dir_of(sid))
    watcher.wait_last(sid, want[-1])
    check(watcher, proc, sid, want)
    if message:  # no View called the run ending
        with watcher._lock:
            assert not any("the run is ending" in e for e in watcher.evidence.get(sid, ())), sid


@pytest.mark.parametrize("answer", ["answered", "dismissed"])
def test_question(oc: Driver, followers, answer: str):
    watcher, proc = followers
    sid = fresh(oc, watcher, f"lifecycle question {answer}")
    oc.prompt(sid, f"x {answer}", "question")
    req = oc.wait_question(sid)
    watcher.wait_last(sid, INPUT)
    if answer == "answered":
        oc.reply_question(req["id"], [["Blue"]], directory=oc.dir_of(sid))
        watcher.wait_last(sid, DONE)
        want = [IDLE, BUSY, INPUT, BUSY, DONE]
    else:
        oc.reject_question(req["id"], directory=oc.dir_of(sid))
        watcher.wait_last(sid, ABORTED)
        want = [IDLE, BUSY, INPUT, ABORTED]

    def pending_named(lines: list[dict[str, Any]]) -> None:
        asked = next(x for x in lines if x["to"]["state"] == "input")
        assert asked["pending"][0]["kind"] == "question"
        assert "Which colour" in asked["pending"][0]["summary"]

    check(watcher, proc, sid, want, pending_named)


def test_retry_then_success(oc: Driver, scripted_model: ScriptedModel, followers):
    """1.18.33 reads retry, busy (for the next attempt), retry, busy...: one retry episode."""
    _flaky_then_slow(scripted_model)
    watcher, proc = followers
    sid = fresh(oc, watcher, "lifecycle retry")
    oc.prompt(sid, "lifecycle retry", "flakyslow")
    watcher.wait_last(sid, DONE, timeout=90)
    check(watcher, proc, sid, [IDLE, BUSY, RETRY, BUSY, DONE])


def test_retry_then_aborted(oc: Driver, followers):
    """A run aborted while it waits to retry: 1.18.33 completes its assistant message with no
    finish, no error and no output, and sends no session.error (found by a review: it read
    `completed`, and `wait` exited 0)."""
    watcher, proc = followers
    sid = fresh(oc, watcher, "lifecycle retry aborted")
    oc.prompt(sid, "x", "unavailable", "lifecycle-retry-abort")
    watcher.wait_last(sid, RETRY, timeout=60)
    oc.abort(sid)
    watcher.wait_last(sid, ABORTED)
    check(watcher, proc, sid, [IDLE, BUSY, RETRY, ABORTED])


def test_a_shell_command_reads_completed(oc: Driver, followers):
    """A shell command the user runs (`!cmd`, POST /session/{id}/shell) leaves an assistant
    message with no finish, but its completed tool part: completed, not aborted (found by a
    review of the rule above)."""
    watcher, proc = followers
    sid = fresh(oc, watcher, "lifecycle shell")
    oc.post(
        f"/session/{sid}/shell", {"agent": "build", "command": "echo hi"}, directory=oc.dir_of(sid)
    )
    watcher.wait_last(sid, DONE)
    assert watcher.lifecycle(sid)["settled"][-1] == DONE


def test_parent_with_a_sub_agent(oc: Driver, followers):
    watcher, proc = followers
    sid = fresh(oc, watcher, "lifecycle parent")
    oc.prompt(sid, "x", "task", "slow/1")
    child = oc.wait_child(sid)["id"]
    watcher.wait_last(sid, DONE, timeout=90)
    watcher.wait_last(child, DONE, timeout=30)
    check(watcher, proc, sid, [IDLE, BUSY, DONE])
    # the child is created, then prompted: it may be seen idle (no messages) first
    got = watcher.lifecycle(child)["emitted"]
    assert got in ([IDLE, BUSY, DONE], [BUSY, DONE]), got
    assert watcher.lifecycle(child)["shown"] == got


def test_two_monitors_started_apart_agree_on_time_in_state(
    oc: Driver, oc_server: OpenCodeServer, scripted_model: ScriptedModel, followers
):
    """A busy run, a session waiting for input and a completed one: a monitor started 5 s
    after the first gives every row the same `since` (within 1 s)."""
    watcher, _proc = followers
    busy = oc.run("hang", "lifecycle-since")["id"]
    asking = oc.run("permission", "echo lifecycle-since")["id"]
    done = oc.run("text")["id"]
    oc.wait_permission(asking)
    oc.wait_completed_idle(done)
    for sid, st in ((busy, BUSY), (asking, INPUT), (done, DONE)):
        watcher.wait_last(sid, st)
    time.sleep(5)  # (more than the 1 s agreement asked, and than a second's rounding)
    late = Watcher(oc_server.url).start()
    try:
        for sid, st in ((busy, BUSY), (asking, INPUT), (done, DONE)):
            late.wait_last(sid, st)
            a, b = watcher.since[sid], late.since[sid]
            assert a is not None and b is not None and abs(a - b) <= 1.0, (sid, a, b)
    finally:
        late.stop()
        scripted_model.release("lifecycle-since")
        with contextlib.suppress(Exception):
            oc.abort(asking)


def test_watch_started_during_a_retry_prints_no_busy_between_attempts(
    oc: Driver, scripted_model: ScriptedModel, oc_server: OpenCodeServer
) -> None:
    """A run retrying before `watch` starts: its first snapshot reads the retry, then the
    server reads busy while each next attempt is under way. One retry, no busy between (found
    by a review: retry -> busy -> retry at the first attempt after `watch` started)."""
    sid = oc.run("unavailable", "watch-late", title="retry seen first by a snapshot")["id"]
    oc.wait_status(sid, "retry")

    def attempts() -> int:
        return sum(
            r.scenario[1] == "watch-late" for r in scripted_model.requests_for("unavailable")
        )

    proc = WatchProcess(oc_server.url)
    try:
        wait_until(lambda: proc.of(sid), 60, what="watch printing the retrying session")
        seen = attempts()
        wait_until(lambda: attempts() > seen, 60, what="an attempt while watch follows")
        time.sleep(1.0)  # the attempt failed: retry again
        lines = proc.of(sid)
    finally:
        oc.abort(sid)
        code, err = proc.stop()
    assert code == 0, err
    assert [(x["from"], x["to"]["state"]) for x in lines] == [(None, "retry")], lines
