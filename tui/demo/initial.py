"""The deterministic initial world: every state ocwatch knows, present at once.

Built from the same world primitives the scenarios use, with timestamps set back in time
relative to `clock()`. With a fixed clock and seed the result is identical every time.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

from . import tools
from .cast import (
    ERRORS,
    INFRA,
    RETRY_MESSAGE,
    SCRIPTED_RESTART,
    SPEC_BY_ID,
    SPECS,
    WEBSHOP,
    Spec,
    reply_to,
)
from .world import Json, Run, World, random_tokens


def _edit_tokens() -> Json:
    """An edit step's tokens (fixed: the initial world's random draws stay as they were)."""
    return {"input": 2100, "output": 340, "reasoning": 0, "cache": {"read": 18000, "write": 600}}


class _Builder:
    def __init__(self, world: World, now: float, rng: random.Random, speed: float) -> None:
        self.w, self.now, self.rng, self.speed = world, now, rng, speed

    def at(self, dt: float) -> AbstractContextManager[None]:
        return self.w.at(self.now + dt)

    def begin(
        self, spec: Spec, dt: float, prompt: str | None = None, start_step: bool = True
    ) -> Run:
        with self.at(dt):
            return self.w.begin_run(
                spec.sid,
                prompt or spec.prompts[0],
                "general" if spec.parent else "build",
                start_step=start_step,
            )

    def read(self, spec: Spec, run: Run, dt: float) -> None:
        rel = self.rng.choice(spec.work.files)
        with self.at(dt):
            part = self.w.start_tool(run, "read", {"filePath": f"{spec.directory}/{rel}"})
        with self.at(dt + 2):
            self.w.finish_tool(run, part, f"<file>\n00001| // {rel}\n</file>", title=rel)
            self.w.next_step(run, random_tokens(self.rng))

    def bash(self, spec: Spec, run: Run, dt: float, index: int = 0) -> Json:
        cmd, desc, _out = spec.work.commands[index]
        with self.at(dt):
            return self.w.start_tool(run, "bash", {"command": cmd, "description": desc})

    def edit(self, spec: Spec, run: Run, dt: float) -> None:
        """An edit of the folder's first file, its diff in its metadata (no random draw: the
        rest of the world stays as it was)."""
        rel = spec.work.files[0]
        path = f"{spec.directory}/{rel}"
        old, new = tools.edit_of(rel)
        with self.at(dt):
            args = {"filePath": path, "oldString": old, "newString": new}
            part = self.w.start_tool(run, "edit", args)
        with self.at(dt + 1):
            meta = tools.edit_metadata(path, rel, old, new)
            self.w.finish_tool(run, part, "Edit applied successfully.", title=rel, metadata=meta)
            self.w.next_step(run, _edit_tokens())

    def completed(self, spec: Spec, dt: float, prompt: str | None = None) -> None:
        run = self.begin(spec, dt, prompt)
        self.read(spec, run, dt + 3)
        self.edit(spec, run, dt + 10)
        with self.at(dt + 30):
            self.w.add_text(run, reply_to(spec, run.prompt))
            self.w.complete_run(run, random_tokens(self.rng))

    # ----- one builder per initial state --------------------------------------------------
    def busy(self, spec: Spec) -> None:
        if spec.parent:  # a sub-agent searching the code
            run = self.begin(spec, -139)
            self.read(spec, run, -130)
            with self.at(-40):
                self.w.start_tool(run, "grep", {"pattern": "req.session", "path": "src"})
            return
        run = self.begin(spec, -95)
        with self.at(-90):
            self.w.add_text(run, "I'll run the test suite before touching the checkout code.")
        self.bash(spec, run, -88)

    def retry(self, spec: Spec) -> None:
        run = self.begin(spec, -17, start_step=False)  # no parts while the model is unreachable
        t = -16.0
        for attempt in range(1, 5):  # delays 2, 4, 8, 16 s: attempt 4 (at -2 s) retries in 14 s
            delay = 2.0**attempt
            due = 14.0 / self.speed if attempt == 4 else t + delay  # scenario time is scaled
            with self.at(t):
                self.w.set_retry(spec.sid, attempt, RETRY_MESSAGE, int((self.now + due) * 1000))
            t += delay
            if attempt < 4:
                with self.at(t):
                    self.w.set_status(spec.sid, {"type": "busy"})
        assert run.sid in self.w.runs

    def permission(self, spec: Spec) -> None:
        if spec.parent:  # a sub-agent that wants to edit a zone file
            run = self.begin(spec, -139)
            self.read(spec, run, -130)
            rel = "zones/shop.example.com.tf"
            path = f"{spec.directory}/{rel}"
            with self.at(-30):
                part = self.w.start_tool(
                    run,
                    "edit",
                    {"filePath": path, "oldString": "ttl = 3600", "newString": "ttl = 300"},
                    running=False,
                )
                self.w.ask_permission(
                    run,
                    part,
                    "edit",
                    [rel],
                    ["*"],
                    {
                        "filepath": path,
                        "diff": f"--- {rel}\n+++ {rel}\n-  ttl = 3600\n+  ttl = 300\n",
                    },
                )
                self.w.run_tool(run, part)
            return
        run = self.begin(spec, -70)
        self.read(spec, run, -66)
        cmd, always, desc = spec.work.asks[0]
        with self.at(-45):
            part = self.w.start_tool(
                run, "bash", {"command": cmd, "description": desc}, running=False
            )
            self.w.ask_permission(run, part, "bash", [cmd], [always], {"command": cmd})
            self.w.run_tool(run, part)

    def question(self, spec: Spec) -> None:
        run = self.begin(spec, -60)
        self.read(spec, run, -55)
        question = spec.work.questions[0]
        with self.at(-20):
            part = self.w.start_tool(run, "question", {"questions": [question]}, running=False)
            self.w.ask_question(run, part, [question])
            self.w.run_tool(run, part)

    def completed_state(self, spec: Spec) -> None:
        self.completed(spec, -330, spec.prompts[-1])

    def aborted(self, spec: Spec) -> None:
        run = self.begin(spec, -600)
        self.read(spec, run, -590)
        self.bash(spec, run, -580)
        with self.at(-420):
            self.w.abort(spec.sid)

    def error(self, spec: Spec) -> None:
        run = self.begin(spec, -200)
        self.read(spec, run, -195)
        with self.at(-150):
            self.w.fail_run(run, ERRORS[0], random_tokens(self.rng, 0.3))

    def interrupted(self, spec: Spec) -> None:
        run = self.begin(spec, -760)
        self.read(spec, run, -750)
        with self.at(-700):
            self.w.start_tool(
                run,
                "bash",
                {
                    "command": "restic backup --dry-run /srv/data",
                    "description": "Dry-run the backup",
                },
            )
            self.w.add_text(run, SCRIPTED_RESTART)
        # the server restarted here: the run died, the status map forgot the session
        self.w.runs.pop(spec.sid, None)
        self.w.status.pop(spec.sid, None)

    def stale(self, spec: Spec) -> None:
        run = self.begin(spec, -300)
        self.read(spec, run, -295)
        part = self.bash(spec, run, -280, 1)
        cmd, _desc, short = spec.work.commands[1]
        out = tools.output_of(cmd, short)
        with self.at(-200):
            self.w.finish_tool(
                run, part, out, title=cmd, metadata={"output": out, "exit": 0, "truncated": False}
            )
            self.w.next_step(run, random_tokens(self.rng))
        with self.at(-150):
            self.w.add_text(run, reply_to(spec, run.prompt))
            self.w.complete_run(run, random_tokens(self.rng), idle=False)  # status stays busy

    def subagent(self, spec: Spec) -> None:
        assert spec.child is not None
        child = SPEC_BY_ID[spec.child]
        run = self.begin(spec, -150)
        desc = child.title.split(" (@")[0]
        with self.at(-145):
            self.w.add_text(run, "I'll hand the detailed work to a sub-agent.")
        with self.at(-140):
            part = self.w.start_tool(
                run,
                "task",
                {"description": desc, "prompt": child.prompts[0], "subagent_type": "general"},
                running=False,
            )
            self.w.create_session(child.sid, child.directory, child.title, child.slug, spec.sid)
            self.w.run_tool(
                run,
                part,
                title=desc,
                metadata={"parentSessionId": spec.sid, "sessionId": child.sid},
            )
        getattr(self, child.initial)(child)


def build_initial_world(
    clock: Callable[[], float] = time.time, seed: int = 0, speed: float = 1.0
) -> World:
    """A world where every state is present at once (see `tests/unit/test_demo_server.py`).

    `speed` only scales the one future time in it: when the retrying session retries next."""
    world = World(clock)
    now = clock()
    b = _Builder(world, now, random.Random(f"initial:{seed}"), speed)
    with world.at(now - 30 * 86400):
        world.add_project(WEBSHOP)
        world.add_project(INFRA)
    for index, spec in enumerate(s for s in SPECS if s.parent is None):
        created = -(6.0 - 0.4 * index) * 3600
        with b.at(created):
            world.create_session(spec.sid, spec.directory, spec.title, spec.slug)
        for k in range(2):
            b.completed(spec, created + 600 + 1200 * k, spec.prompts[(k + 1) % len(spec.prompts)])
        state = "completed_state" if spec.initial == "completed" else spec.initial
        getattr(b, state)(spec)
    world.default_directory = WEBSHOP
    return world
