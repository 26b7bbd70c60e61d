"""Scenario scripts: one actor per session drives the world through runs, forever.

Each top-level session first *resumes* the state the initial world left it in, then loops: an
idle pause, then the next run kind of its cycle (complete, long, retry, permission, question,
error, abort, stale, restart, subagent). Sub-agent sessions are driven by their parent's `task`
tool. All waits go through the `ScenarioClock`, which `speed` scales and `freeze()` stops.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from . import tools
from .cast import (
    ERRORS,
    FOLDERS,
    PERMISSION_FEEDBACK,
    PERMISSION_REJECTED,
    QUESTION_REJECTED,
    REFUSED_REPLY,
    RETRY_FAILED,
    RETRY_MESSAGE,
    SCRIPTED_RESTART,
    SPECS,
    Spec,
    reply_to,
)
from .world import Json, Run, World, random_tokens

log = logging.getLogger(__name__)

AUTO_ANSWER = 75.0  # scenario seconds before the demo answers its own open request
IDLE_PAUSE = (25.0, 60.0)  # scenario seconds between two runs of one session


class ScenarioClock:
    """Scaled, freezable sleeping for scenario scripts."""

    def __init__(self, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self._thawed = asyncio.Event()
        self._thawed.set()
        self._frozen = asyncio.Event()

    @property
    def frozen(self) -> bool:
        return not self._thawed.is_set()

    def freeze(self) -> None:
        """Stop scenario time: every sleeper waits until `thaw()`."""
        self._thawed.clear()
        self._frozen.set()

    def thaw(self) -> None:
        """Resume scenario time; sleepers keep what remained of their sleep."""
        self._frozen = asyncio.Event()
        self._thawed.set()

    def wall(self, seconds: float) -> float:
        """Real seconds that `seconds` of scenario time take."""
        return seconds / self.speed

    async def sleep(self, seconds: float) -> None:
        remaining = self.wall(max(0.0, seconds))
        loop = asyncio.get_running_loop()
        while True:
            if self.frozen:
                await self._thawed.wait()
                continue
            if remaining <= 0:
                return
            frozen, start = self._frozen, loop.time()
            try:
                await asyncio.wait_for(frozen.wait(), remaining)
            except TimeoutError:
                return
            remaining -= loop.time() - start


class Actor:
    """Plays one session."""

    def __init__(self, director: Director, spec: Spec, rng: random.Random) -> None:
        self.director = director
        self.world = director.world
        self.spec = spec
        self.sid = spec.sid
        self.rng = rng
        self.task: asyncio.Task[Any] | None = None
        self.loop_task: asyncio.Task[None] | None = None
        self.wake = asyncio.Event()
        self.prompt_text: str | None = None

    # ----- helpers used by the scripts ----------------------------------------------------
    async def sleep(self, seconds: float) -> None:
        """Sleep about `seconds` of scenario time (±20 %)."""
        await self.director.clock.sleep(seconds * self.rng.uniform(0.8, 1.2))

    def tokens(self, scale: float = 1.0) -> Json:
        return random_tokens(self.rng, scale)

    def begin(self, prompt: str | None = None, *, start_step: bool = True) -> Run:
        agent = "general" if self.spec.parent else "build"
        text = prompt or self.rng.choice(self.spec.prompts)
        return self.world.begin_run(self.sid, text, agent, start_step=start_step)

    async def finish(self, run: Run, reply: str | None = None) -> None:
        """End a run well with `reply` (by default the script's answer to the run's prompt);
        now and then idle arrives before the final message is persisted."""
        self.world.add_text(run, reply or reply_to(self.spec, run.prompt))
        if self.rng.random() < 0.15:
            self.world.set_status(self.sid, None)
            await self.director.clock.sleep(0.5)
            self.world.complete_run(run, self.tokens(), idle=False)
        else:
            self.world.complete_run(run, self.tokens())

    async def answer(self, request_id: str, default: Callable[[], bool]) -> Any:
        """The reply to an open request; the demo answers itself after AUTO_ANSWER."""
        future = self.world.wait_reply(request_id)
        timer = asyncio.ensure_future(self.director.clock.sleep(AUTO_ANSWER))
        try:
            await asyncio.wait({future, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
        if not future.done() and not default():
            future.cancel()
        return await future

    # ----- the loop -----------------------------------------------------------------------
    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        self.task = asyncio.create_task(coro, name=f"demo:{self.sid}")
        return self.task

    def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    async def _do(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = self.spawn(coro)
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not task.cancelled() and task.exception() is not None:
            log.error("demo scenario %s failed", self.sid, exc_info=task.exception())

    async def _idle_pause(self) -> None:
        if self.prompt_text is not None:
            return
        self.wake.clear()
        waits: set[asyncio.Future[Any]] = {asyncio.ensure_future(self.wake.wait())}
        if self.spec.cycle:
            pause = self.director.clock.sleep(self.rng.uniform(*IDLE_PAUSE))
            waits.add(asyncio.ensure_future(pause))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    async def loop(self, resume: Callable[[Actor], Coroutine[Any, Any, Any]] | None) -> None:
        """Resume the initial state, then run the cycle forever."""
        if resume is not None:
            await self._do(resume(self))
        kinds, i = self.spec.cycle, self.spec.offset
        while True:
            await self._idle_pause()
            if self.prompt_text is not None:
                text, self.prompt_text = self.prompt_text, None
                if not self.running:
                    await self._do(run_complete(self, text))
            elif kinds:
                kind = kinds[i % len(kinds)]
                i += 1
                await self._do(RUNS[kind](self))


class Director:
    """Owns the actors; abort, restart and prompts from the HTTP routes go through it."""

    def __init__(
        self,
        world: World,
        *,
        speed: float = 1.0,
        seed: int = 0,
        restart_hook: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.world = world
        self.clock = ScenarioClock(speed)
        self.restart_hook = restart_hook
        self.actors = {
            s.sid: Actor(self, s, random.Random(f"{seed}:{s.sid}"))
            for s in SPECS
            if s.sid in world.sessions
        }

    def start(self) -> None:
        for actor in self.actors.values():
            resume = None if actor.spec.parent else RESUMES.get(actor.spec.initial)
            actor.loop_task = asyncio.create_task(actor.loop(resume), name=f"demo-loop:{actor.sid}")

    async def stop(self) -> None:
        tasks: list[asyncio.Task[Any]] = []
        for actor in self.actors.values():
            for task in (actor.loop_task, actor.task):
                if task is not None and not task.done():
                    task.cancel()
                    tasks.append(task)
        await asyncio.gather(*tasks, return_exceptions=True)

    def abort(self, sid: str) -> None:
        """Abort a session and, like the real server, its running sub-agents."""
        for child in self.world.children(sid):
            if child in self.world.runs or child in self.world.status:
                self.abort(child)
        actor = self.actors.get(sid)
        if actor is not None:
            actor.cancel()
        self.world.abort(sid)

    def prompt(self, sid: str, text: str) -> None:
        """A prompt from outside: the session runs it after its current run (a session a user
        made gets an actor that runs each prompt with the scripted reply, and nothing else)."""
        actor = self.actors.get(sid)
        info = self.world.sessions.get(sid)
        if actor is None and info is not None:
            directory = info["directory"] if info["directory"] in FOLDERS else next(iter(FOLDERS))
            spec = Spec(sid, directory, info["title"], info["slug"], "completed", (), (), cycle=())
            actor = self.actors[sid] = Actor(self, spec, random.Random(sid))
            actor.loop_task = asyncio.create_task(actor.loop(None), name=f"demo-loop:{sid}")
        if actor is not None:
            actor.prompt_text = text
            actor.wake.set()

    def reset(self) -> None:
        """What a restart does to the scripts: every run dies where it stands."""
        for actor in self.actors.values():
            actor.cancel()
        self.world.restart()

    async def restart(self) -> None:
        if self.restart_hook is not None:
            await self.restart_hook()
        else:
            self.reset()


# ----- steps -----------------------------------------------------------------------------
def _rel(a: Actor) -> str:
    return a.rng.choice(a.spec.work.files)


def complete_tool(a: Actor, run: Run, part: Json) -> None:
    """Finish a tool part the way its tool reports (output, title, metadata)."""
    args = part["state"].get("input") or {}
    tool = part["tool"]
    if tool == "bash":
        command = args.get("command", "")
        short = next((o for c, _d, o in a.spec.work.commands if c == command), "")
        out = tools.output_of(command, short)
        a.world.finish_tool(
            run, part, out, title=command, metadata={"output": out, "exit": 0, "truncated": False}
        )
    elif tool == "read":
        path = args.get("filePath", "")
        rel = path.removeprefix(f"{a.spec.directory}/")
        a.world.finish_tool(run, part, f"<file>\n00001| // {rel}\n</file>", title=rel)
    elif tool == "edit":
        path = args.get("filePath", "")
        rel = path.removeprefix(f"{a.spec.directory}/")
        old, new = args.get("oldString", ""), args.get("newString", "")
        meta = tools.edit_metadata(path, rel, old, new)
        a.world.finish_tool(run, part, "Edit applied successfully.", title=rel, metadata=meta)
    else:
        a.world.finish_tool(run, part, "Found 7 matches", title=str(args.get("pattern", "")))


def start_bash(a: Actor, run: Run) -> Json:
    cmd, desc, _out = a.rng.choice(a.spec.work.commands)
    return a.world.start_tool(run, "bash", {"command": cmd, "description": desc})


async def read_step(a: Actor, run: Run) -> None:
    part = a.world.start_tool(run, "read", {"filePath": f"{a.spec.directory}/{_rel(a)}"})
    await a.sleep(2)
    complete_tool(a, run, part)
    a.world.next_step(run, a.tokens())


PLAN = (
    "Read the code around the change",
    "Make the change",
    "Run the test suite",
    "Summarise what changed",
)


def advance_todos(a: Actor) -> None:
    """The agent's todo list moves one step: the item in progress is done, the next starts."""
    todos = a.world.todos.get(a.sid) or [
        {"id": f"todo{i}", "content": text, "status": "pending", "priority": "medium"}
        for i, text in enumerate(PLAN)
    ]
    todos = [dict(t) for t in todos]
    for t in todos:
        if t["status"] == "in_progress":
            t["status"] = "completed"
            break
    following = next((t for t in todos if t["status"] == "pending"), None)
    if following is not None:
        following["status"] = "in_progress"
    a.world.set_todos(a.sid, todos)


async def edit_step(a: Actor, run: Run) -> None:
    advance_todos(a)
    rel = _rel(a)
    old, new = tools.edit_of(rel)
    part = a.world.start_tool(
        run,
        "edit",
        {"filePath": f"{a.spec.directory}/{rel}", "oldString": old, "newString": new},
    )
    await a.sleep(4)
    complete_tool(a, run, part)
    a.world.next_step(run, a.tokens())


async def busy_phase(a: Actor, run: Run, seconds: float) -> str:
    """A long-running tool finishes, then the run completes."""
    await a.sleep(seconds)
    for part in list(run.open_tools.values()):
        complete_tool(a, run, part)
    a.world.next_step(run, a.tokens())
    await a.sleep(3)
    await a.finish(run)
    return "completed"


async def retry_phase(a: Actor, run: Run, attempt: int) -> str:
    """503-style retries with growing delays (busy between attempts, the assistant message has
    no parts yet); then the model answers (mostly) or the run fails."""
    last = a.rng.randint(attempt + 1, attempt + 3)
    clock = a.director.clock
    while True:
        delay = min(2.0**attempt, 20.0)
        a.world.set_retry(
            a.sid, attempt, RETRY_MESSAGE, a.world.now() + int(clock.wall(delay) * 1000)
        )
        await clock.sleep(delay)
        a.world.set_status(a.sid, {"type": "busy"})
        if attempt >= last:
            break
        attempt += 1
        await clock.sleep(0.2)
    await a.sleep(1)
    if a.rng.random() < 0.25:
        a.world.fail_run(run, RETRY_FAILED)
        return "error"
    a.world.start_step(run)
    await a.sleep(2)
    await a.finish(run)
    return "completed"


async def permission_phase(a: Actor, run: Run, part: Json, request_id: str) -> str:
    """Wait for the reply: once/always → the tool runs and the run completes; reject → the
    run ends as the real server ends it (tool part error, finish `tool-calls`, no error)."""

    def default() -> bool:
        return a.world.reply_permission(request_id, "once")

    reply, message = await a.answer(request_id, default)
    if reply == "reject" and message:
        # the real server hands the message to the model as feedback and the run goes on
        a.world.fail_tool(run, part, f"{PERMISSION_FEEDBACK}{message}")
        a.world.next_step(run, a.tokens())
        await a.sleep(3)
        await a.finish(run, REFUSED_REPLY)
        return "completed"
    if reply == "reject":  # the real server: tool part error, finish tool-calls, no error
        a.world.fail_tool(run, part, PERMISSION_REJECTED)
        a.world.end_refused(run, a.tokens(0.3))
        return "refused"
    await a.sleep(4)
    complete_tool(a, run, part)
    a.world.next_step(run, a.tokens())
    await a.sleep(3)
    await a.finish(run)
    return "completed"


async def question_phase(a: Actor, run: Run, part: Json, request_id: str) -> str:
    """Wait for the answer: answered → the run completes; dismissed → ends like a reject."""
    questions = part["state"]["input"]["questions"]

    def default() -> bool:
        answers = [[q["options"][0]["label"]] for q in questions]
        return a.world.reply_question(request_id, answers)

    kind, answers = await a.answer(request_id, default)
    if kind == "rejected":  # the real server: tool part error, finish tool-calls, no error
        a.world.fail_tool(run, part, QUESTION_REJECTED)
        a.world.end_refused(run, a.tokens(0.3))
        return "refused"
    pairs = ", ".join(
        f'"{q["question"]}"="{", ".join(ans)}"' for q, ans in zip(questions, answers, strict=False)
    )
    a.world.finish_tool(
        run,
        part,
        f"User has answered your questions: {pairs}. You can now "
        "continue with the user's answers in mind.",
        title="Asked 1 question",
        metadata={"answers": answers, "truncated": False},
    )
    a.world.next_step(run, a.tokens())
    await a.sleep(5)
    await a.finish(run)
    return "completed"


async def stale_phase(a: Actor) -> None:
    """The status map keeps saying busy for a while, then a late idle arrives."""
    await a.sleep(a.rng.uniform(60, 120))
    if a.sid in a.world.status and a.sid not in a.world.runs:
        a.world.set_status(a.sid, None)


async def subagent_phase(
    a: Actor, run: Run, part: Json, child: Actor, coro: Coroutine[Any, Any, Any]
) -> str:
    """The parent's `task` tool runs while the child session works."""
    task = child.spawn(coro)
    try:
        await asyncio.wait({task})
    except asyncio.CancelledError:
        task.cancel()
        raise
    if task.cancelled():
        outcome = "aborted"
    elif task.exception() is not None:
        outcome = "error"
    else:
        outcome = task.result() or "completed"
    if outcome in ("completed", "refused"):
        texts = [
            p.get("text", "")
            for p in child.world.messages[child.sid][-1]["parts"]
            if p["type"] == "text"
        ]
        result = texts[-1] if texts else "Done."
        a.world.finish_tool(
            run,
            part,
            f'<task id="{child.sid}" state="completed">\n'
            f"<task_result>\n{result}\n</task_result>\n</task>",
        )
    else:
        a.world.fail_tool(run, part, f"Sub-agent {child.sid} ended: {outcome}")
    a.world.next_step(run, a.tokens())
    await a.sleep(3)
    await a.finish(run)
    return "completed"


# ----- runs --------------------------------------------------------------------------------
async def run_complete(a: Actor, prompt: str | None = None) -> str:
    run = a.begin(prompt)
    await a.sleep(2)
    a.world.add_text(run, "Let me look at the code first.")
    await read_step(a, run)
    await edit_step(a, run)
    start_bash(a, run)
    return await busy_phase(a, run, 6)


async def run_long(a: Actor) -> str:
    run = a.begin()
    await a.sleep(2)
    start_bash(a, run)
    return await busy_phase(a, run, a.rng.uniform(45, 90))


async def run_retry(a: Actor) -> str:
    run = a.begin(start_step=False)
    await a.sleep(1)
    return await retry_phase(a, run, 1)


async def run_permission(a: Actor) -> str:
    run = a.begin()
    await a.sleep(3)
    cmd, always, desc = a.rng.choice(a.spec.work.asks)
    part = a.world.start_tool(run, "bash", {"command": cmd, "description": desc}, running=False)
    request = a.world.ask_permission(run, part, "bash", [cmd], [always], {"command": cmd})
    a.world.run_tool(run, part)
    return await permission_phase(a, run, part, request["id"])


async def run_question(a: Actor) -> str:
    run = a.begin()
    await a.sleep(3)
    question = a.rng.choice(a.spec.work.questions)
    part = a.world.start_tool(run, "question", {"questions": [question]}, running=False)
    request = a.world.ask_question(run, part, [question])
    a.world.run_tool(run, part)
    return await question_phase(a, run, part, request["id"])


async def run_error(a: Actor) -> str:
    run = a.begin()
    await a.sleep(2)
    await read_step(a, run)
    await a.sleep(3)
    a.world.fail_run(run, a.rng.choice(ERRORS), a.tokens(0.3))
    return "error"


async def run_abort(a: Actor) -> str:
    """The user gives up on a long command (like pressing Esc in the TUI)."""
    run = a.begin()
    await a.sleep(2)
    start_bash(a, run)
    await a.sleep(a.rng.uniform(10, 25))
    a.world.abort(a.sid)
    return "aborted"


async def run_stale(a: Actor) -> str:
    run = a.begin()
    await a.sleep(2)
    await read_step(a, run)
    await a.sleep(3)
    a.world.add_text(run, reply_to(a.spec, run.prompt))
    a.world.complete_run(run, a.tokens(), idle=False)
    await stale_phase(a)
    return "completed"


async def run_restart(a: Actor) -> str:
    """A long command, then the whole server restarts under it."""
    run = a.begin()
    await a.sleep(2)
    a.world.start_tool(
        run,
        "bash",
        {"command": "restic backup --dry-run /srv/data", "description": "Dry-run the backup"},
    )
    a.world.add_text(run, SCRIPTED_RESTART)  # (said, so that no one takes it for a fault)
    await a.sleep(a.rng.uniform(15, 30))
    await a.director.restart()
    return "interrupted"


async def child_run(c: Actor) -> str:
    """A sub-agent's run; the one whose initial state is `permission` asks to edit a file."""
    run = c.begin()
    await c.sleep(2)
    await read_step(c, run)
    if c.spec.initial == "permission":
        rel = _rel(c)
        path = f"{c.spec.directory}/{rel}"
        part = c.world.start_tool(
            run,
            "edit",
            {"filePath": path, "oldString": "ttl = 3600", "newString": "ttl = 300"},
            running=False,
        )
        request = c.world.ask_permission(
            run,
            part,
            "edit",
            [rel],
            ["*"],
            {"filepath": path, "diff": f"--- {rel}\n+++ {rel}\n-  ttl = 3600\n+  ttl = 300\n"},
        )
        c.world.run_tool(run, part)
        return await permission_phase(c, run, part, request["id"])
    c.world.start_tool(run, "grep", {"pattern": "req.session", "path": "src"})
    return await busy_phase(c, run, c.rng.uniform(20, 40))


async def run_subagent(a: Actor) -> str:
    assert a.spec.child is not None
    child = a.director.actors[a.spec.child]
    run = a.begin()
    await a.sleep(2)
    a.world.add_text(run, "I'll hand the detailed work to a sub-agent.")
    desc = child.spec.title.split(" (@")[0]
    part = a.world.start_tool(
        run,
        "task",
        {"description": desc, "prompt": child.spec.prompts[0], "subagent_type": "general"},
        title=desc,
        metadata={"parentSessionId": a.sid, "sessionId": child.sid},
    )
    return await subagent_phase(a, run, part, child, child_run(child))


RUNS: dict[str, Callable[[Actor], Coroutine[Any, Any, Any]]] = {
    "complete": run_complete,
    "long": run_long,
    "retry": run_retry,
    "permission": run_permission,
    "question": run_question,
    "error": run_error,
    "abort": run_abort,
    "stale": run_stale,
    "restart": run_restart,
    "subagent": run_subagent,
}


# ----- resuming the initial world ----------------------------------------------------------
async def resume_busy(a: Actor) -> str | None:
    run = a.world.runs.get(a.sid)
    return await busy_phase(a, run, a.rng.uniform(30, 60)) if run else None


async def resume_retry(a: Actor) -> str | None:
    run, status = a.world.runs.get(a.sid), a.world.status.get(a.sid)
    if run is None or status is None or status.get("type") != "retry":
        return None
    clock = a.director.clock
    await clock.sleep(max(0.0, status["next"] / 1000 - a.world.clock()) * clock.speed)
    return await retry_phase(a, run, int(status["attempt"]) + 1)


async def resume_permission(a: Actor) -> str | None:
    run = a.world.runs.get(a.sid)
    for request in list(a.world.permissions.values()):
        if run and request["sessionID"] == a.sid and request["tool"]["callID"] in run.open_tools:
            part = run.open_tools[request["tool"]["callID"]]
            return await permission_phase(a, run, part, request["id"])
    return None


async def resume_question(a: Actor) -> str | None:
    run = a.world.runs.get(a.sid)
    for request in list(a.world.questions.values()):
        if run and request["sessionID"] == a.sid and request["tool"]["callID"] in run.open_tools:
            part = run.open_tools[request["tool"]["callID"]]
            return await question_phase(a, run, part, request["id"])
    return None


async def resume_stale(a: Actor) -> None:
    await stale_phase(a)


async def resume_subagent(a: Actor) -> str | None:
    run = a.world.runs.get(a.sid)
    if run is None or a.spec.child is None:
        return None
    part = next((p for p in run.open_tools.values() if p["tool"] == "task"), None)
    if part is None:
        return None
    child = a.director.actors[a.spec.child]
    return await subagent_phase(a, run, part, child, RESUMES[child.spec.initial](child))


RESUMES: dict[str, Callable[[Actor], Coroutine[Any, Any, Any]]] = {
    "busy": resume_busy,
    "retry": resume_retry,
    "permission": resume_permission,
    "question": resume_question,
    "stale": resume_stale,
    "subagent": resume_subagent,
}
