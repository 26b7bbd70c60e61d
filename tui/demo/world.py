"""The simulated server's state (sessions, messages, status map, requests) and its events.

Every mutation is synchronous and emits the events a real `opencode serve` 1.18.33 sends, in the
order recorded from one (the recordings in `tests/fixtures/`), to every subscriber of the global
stream, with the `sync` duplicate for persisted changes. Frames are serialized when emitted, so
later mutations never leak into them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

VERSION = "1.18.33-demo"
SESSION_VERSION = "1.18.33"
MAX_MESSAGES = 60
QUEUE_LIMIT = 10_000

ABORTED: dict[str, Any] = {
    "name": "MessageAbortedError",
    "data": {"message": "Aborted"},
}

Json = dict[str, Any]


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def zero_tokens() -> Json:
    """An empty token count in wire shape."""
    return {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}


def with_total(tokens: Json) -> Json:
    """Token count as messages and step-finish parts carry it (with `total`)."""
    cache = tokens.get("cache", {})
    total = (
        tokens.get("input", 0)
        + tokens.get("output", 0)
        + tokens.get("reasoning", 0)
        + cache.get("read", 0)
        + cache.get("write", 0)
    )
    return {"total": total, **tokens}


def add_tokens(into: Json, more: Json) -> None:
    """Add `more` to `into` (both wire-shaped token counts)."""
    for key in ("input", "output", "reasoning"):
        into[key] = into.get(key, 0) + more.get(key, 0)
    cache = into.setdefault("cache", {"read": 0, "write": 0})
    for key in ("read", "write"):
        cache[key] = cache.get(key, 0) + more.get("cache", {}).get(key, 0)


def random_tokens(rng: random.Random, scale: float = 1.0) -> Json:
    """A plausible token count for one assistant step."""

    def n(lo: int, hi: int) -> int:
        return int(rng.randint(lo, hi) * scale)

    return {
        "input": n(600, 4000),
        "output": n(120, 900),
        "reasoning": n(0, 400),
        "cache": {"read": n(8000, 42000), "write": n(0, 2500)},
    }


def token_cost(tokens: Json) -> float:
    """Dollar cost of a token count at a typical frontier-model price."""
    cache = tokens.get("cache", {})
    micro = (
        tokens.get("input", 0) * 3
        + (tokens.get("output", 0) + tokens.get("reasoning", 0)) * 15
        + cache.get("read", 0) * 0.3
        + cache.get("write", 0) * 3.75
    )
    return round(micro / 1e6, 6)


@dataclass(slots=True)
class Frame:
    """One emitted event: its folder, the global-stream frame and the bare payload (JSON)."""

    directory: str
    text: str
    payload: str


@dataclass(slots=True)
class Run:
    """A run in progress: the prompt, the current assistant step and its open tool parts."""

    sid: str
    agent: str
    user_id: str
    message: Json
    open_tools: dict[str, Json] = field(default_factory=dict)
    inputs: dict[str, Json] = field(default_factory=dict)  # of pending tool parts
    prompt: str = ""  # what the user asked (the script's reply answers it)


class World:
    """All state of the simulated server. `clock()` returns epoch seconds."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.default_directory = ""
        self.projects: dict[str, Json] = {}
        self.sessions: dict[str, Json] = {}
        self.messages: dict[str, list[Json]] = {}
        self.status: dict[str, Json] = {}
        self.permissions: dict[str, Json] = {}
        self.questions: dict[str, Json] = {}
        self.todos: dict[str, list[Json]] = {}
        """`GET /session/{id}/todo`: what a session's agent wrote with its todo tool."""
        self.runs: dict[str, Run] = {}
        self._seq: dict[str, int] = {}
        self._ids = 0
        self._at: float | None = None
        self._subs: set[asyncio.Queue[Frame | None]] = set()
        #: told every event as it is emitted, subscribed or not (folder, payload): the V2 face
        #: (tui.demo.v2) translates each one once, in order
        self.listeners: list[Callable[[str, Json], None]] = []
        self._waiters: dict[str, asyncio.Future[Any]] = {}
        self._answered: dict[str, Any] = {}

    # ----- time and ids -------------------------------------------------------------------
    def now(self) -> int:
        """Epoch milliseconds (the override set by `at()` when inside it)."""
        return int((self._at if self._at is not None else self.clock()) * 1000)

    @contextlib.contextmanager
    def at(self, seconds: float) -> Iterator[None]:
        """Make `now()` return `seconds` (epoch) inside the block: for building history."""
        saved, self._at = self._at, seconds
        try:
            yield
        finally:
            self._at = saved

    def new_id(self, prefix: str) -> str:
        """A fresh id as OpenCode makes them (`msg_` + 12 hex digits of the creation time in ms
        times 0x1000 plus a counter, cut to 48 bits, + 14 characters), so it carries when it was
        made; the tail is `demo` and the count, e.g. `msg_2314e0864001demo0000000042`."""
        self._ids += 1
        stamp = (self.now() * 0x1000 + self._ids % 0x1000) % (1 << 48)
        return f"{prefix}_{stamp:012x}demo{self._ids:010d}"

    # ----- subscribers and emission -------------------------------------------------------
    def subscribe(self) -> asyncio.Queue[Frame | None]:
        """A queue receiving every frame emitted from now on (`None` means: stream closed)."""
        queue: asyncio.Queue[Frame | None] = asyncio.Queue()
        self._subs.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Frame | None]) -> None:
        self._subs.discard(queue)

    def close_subscribers(self) -> None:
        """End every subscription (each queue gets `None`)."""
        for queue in list(self._subs):
            queue.put_nowait(None)
        self._subs.clear()

    def project_id(self, directory: str) -> str:
        project = self.projects.get(directory)
        return project["id"] if project else "global"

    def emit(
        self, directory: str, type_: str, properties: Json, *, sync: str | None = None
    ) -> None:
        """Send one event; with `sync` (an aggregate id) also its `sync` duplicate."""
        event_id = self.new_id("evt")
        self._publish(directory, {"id": event_id, "type": type_, "properties": properties})
        if sync is not None:  # same id as the plain event; seq counts from 0 per aggregate
            seq = self._seq[sync] = self._seq.get(sync, -1) + 1
            sync_event = {
                "id": event_id,
                "type": f"{type_}.1",
                "seq": seq,
                "aggregateID": sync,
                "data": properties,
            }
            self._publish(directory, {"type": "sync", "syncEvent": sync_event, "id": event_id})

    def _publish(self, directory: str, payload: Json) -> None:
        for listen in self.listeners:
            listen(directory, payload)
        if not self._subs:
            return
        frame = {"directory": directory, "project": self.project_id(directory), "payload": payload}
        item = Frame(directory, _dumps(frame), _dumps(payload))
        for queue in list(self._subs):
            if queue.qsize() >= QUEUE_LIMIT:  # a reader that never reads: cut it
                self._subs.discard(queue)
                while not queue.empty():
                    queue.get_nowait()
                queue.put_nowait(None)
            else:
                queue.put_nowait(item)

    def _emit_session(self, sid: str, type_: str = "session.updated") -> None:
        info = self.sessions[sid]
        self.emit(info["directory"], type_, {"sessionID": sid, "info": info}, sync=sid)

    def _emit_message(self, sid: str, info: Json) -> None:
        self.emit(
            self.sessions[sid]["directory"],
            "message.updated",
            {"sessionID": sid, "info": info},
            sync=sid,
        )

    def _emit_part(self, sid: str, part: Json) -> None:
        self.emit(
            self.sessions[sid]["directory"],
            "message.part.updated",
            {"sessionID": sid, "part": part, "time": self.now()},
            sync=sid,
        )

    # ----- projects and sessions ----------------------------------------------------------
    def add_project(self, directory: str) -> Json:
        """Register a project folder (its id is a stable 40-hex digest, like a root commit)."""
        now = self.now()
        project = {
            "id": hashlib.sha1(directory.encode()).hexdigest(),
            "worktree": directory,
            "vcs": "git",
            "time": {"created": now, "updated": now},
            "sandboxes": [],
        }
        self.projects[directory] = project
        self.default_directory = self.default_directory or directory
        return project

    def create_session(
        self, sid: str, directory: str, title: str, slug: str, parent_id: str | None = None
    ) -> Json:
        """Create a session in a known project folder (emits `session.created`)."""
        now = self.now()
        info: Json = {
            "id": sid,
            "slug": slug,
            "projectID": self.project_id(directory),
            "directory": directory,
            "path": "",
            "title": title,
            "version": SESSION_VERSION,
            "time": {"created": now, "updated": now},
            "cost": 0.0,
            "tokens": zero_tokens(),
        }
        if parent_id is not None:
            info["parentID"] = parent_id
        self.sessions[sid] = info
        self.messages[sid] = []
        self._emit_session(sid, "session.created")
        return info

    def new_session(self, directory: str, title: str | None) -> Json:
        """A session a user made (ocwatch's `N`, `ocwatch prompt --new`): in any absolute
        folder, a project of its own when the world has none there."""
        if not directory.startswith("/"):
            raise ValueError("directory must be an absolute path")
        if directory not in self.projects:
            self.add_project(directory)
        sid = self.new_id("ses")
        return self.create_session(sid, directory, title or "New session", sid.removeprefix("ses_"))

    def touch(self, sid: str) -> None:
        self.sessions[sid]["time"]["updated"] = self.now()
        self._emit_session(sid)

    def _diff(self, sid: str) -> None:
        """`session.diff`: noise a client must skip (the real server sends it after runs)."""
        self.emit(self.sessions[sid]["directory"], "session.diff", {"sessionID": sid, "diff": []})

    def children(self, sid: str) -> list[str]:
        return [s for s, info in self.sessions.items() if info.get("parentID") == sid]

    # ----- status ---------------------------------------------------------------------------
    def set_status(self, sid: str, status: Json | None) -> None:
        """Set a non-idle status, or (None) go idle: `session.status idle` + `session.idle`."""
        directory = self.sessions[sid]["directory"]
        if status is None or status.get("type") == "idle":
            self.status.pop(sid, None)
            self.emit(directory, "session.status", {"sessionID": sid, "status": {"type": "idle"}})
            self.emit(directory, "session.idle", {"sessionID": sid})
            return
        self.status[sid] = status
        self.emit(directory, "session.status", {"sessionID": sid, "status": status})

    def set_todos(self, sid: str, todos: list[Json]) -> None:
        """The agent's todo list (its todo tool), as `todo.updated` announces it."""
        self.todos[sid] = todos
        self.emit(
            self.sessions[sid]["directory"], "todo.updated", {"sessionID": sid, "todos": todos}
        )

    def set_retry(self, sid: str, attempt: int, message: str, next_ms: int) -> None:
        self.set_status(
            sid, {"type": "retry", "attempt": attempt, "message": message, "next": next_ms}
        )

    # ----- messages and parts -------------------------------------------------------------
    def _append(self, sid: str, entry: Json) -> None:
        entries = self.messages[sid]
        entries.append(entry)
        del entries[:-MAX_MESSAGES]

    def _part(self, sid: str, entry: Json, part: Json) -> Json:
        part = {
            "id": self.new_id("prt"),
            "sessionID": sid,
            "messageID": entry["info"]["id"],
            **part,
        }
        entry["parts"].append(part)
        self._emit_part(sid, part)
        return part

    def _assistant(self, run: Run) -> Json:
        info = {
            "id": self.new_id("msg"),
            "sessionID": run.sid,
            "role": "assistant",
            "time": {"created": self.now()},
            "parentID": run.user_id,
            "modelID": "claude-sonnet-4-5",
            "providerID": "anthropic",
            "mode": run.agent,
            "agent": run.agent,
            "path": {
                "cwd": self.sessions[run.sid]["directory"],
                "root": self.sessions[run.sid]["directory"],
            },
            "cost": 0.0,
            "tokens": zero_tokens(),
        }
        entry: Json = {"info": info, "parts": []}
        self._append(run.sid, entry)
        self._emit_message(run.sid, info)
        return entry

    def begin_run(
        self, sid: str, prompt: str, agent: str = "build", *, start_step: bool = True
    ) -> Run:
        """A user prompt: user message, status busy, the first assistant message and (unless
        `start_step` is False, as while retrying) its `step-start` part."""
        now = self.now()
        user: Json = {
            "id": self.new_id("msg"),
            "sessionID": sid,
            "role": "user",
            "time": {"created": now},
            "agent": agent,
            "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"},
        }
        entry: Json = {"info": user, "parts": []}
        self._append(sid, entry)
        self._emit_message(sid, user)
        self._part(sid, entry, {"type": "text", "text": prompt})
        self.touch(sid)
        self.set_status(sid, {"type": "busy"})
        run = Run(sid, agent, user["id"], {}, prompt=prompt)
        run.message = self._assistant(run)
        self.touch(sid)
        self.runs[sid] = run
        if start_step:
            self.start_step(run)
        return run

    def start_step(self, run: Run) -> None:
        """The model starts answering: status busy, `step-start` part."""
        self.set_status(run.sid, {"type": "busy"})
        self._part(run.sid, run.message, {"type": "step-start"})

    def add_text(self, run: Run, text: str) -> Json:
        now = self.now()
        return self._part(
            run.sid, run.message, {"type": "text", "text": text, "time": {"start": now, "end": now}}
        )

    def start_tool(
        self,
        run: Run,
        tool: str,
        input_: Json,
        *,
        title: str | None = None,
        metadata: Json | None = None,
        running: bool = True,
    ) -> Json:
        """A tool call: part `pending`, then (unless `running` is False) `running`."""
        call_id = self.new_id("call")
        part = self._part(
            run.sid,
            run.message,
            {
                "type": "tool",
                "tool": tool,
                "callID": call_id,
                "state": {"status": "pending", "input": {}, "raw": ""},
            },
        )
        run.inputs[call_id] = input_  # the wire shows `{}` until the part is running
        run.open_tools[call_id] = part
        if running:
            self.run_tool(run, part, title=title, metadata=metadata)
        return part

    def run_tool(
        self, run: Run, part: Json, *, title: str | None = None, metadata: Json | None = None
    ) -> None:
        """Part `pending` → `running` (after a permission or question was asked, if any)."""
        state: Json = {
            "status": "running",
            "input": run.inputs.pop(part["callID"], part["state"]["input"]),
        }
        if title is not None:
            state["title"] = title
        if metadata is not None:
            state["metadata"] = metadata
        state["time"] = {"start": self.now()}
        part["state"] = state
        self._emit_part(run.sid, part)

    def finish_tool(
        self,
        run: Run,
        part: Json,
        output: str,
        *,
        title: str | None = None,
        metadata: Json | None = None,
    ) -> None:
        state = part["state"]
        start = state.get("time", {}).get("start", self.now())
        part["state"] = {
            "status": "completed",
            "input": state.get("input", {}),
            "output": output,
            "metadata": {**state.get("metadata", {}), **(metadata or {})},
            "title": title if title is not None else state.get("title", ""),
            "time": {"start": start, "end": self.now()},
        }
        run.open_tools.pop(part["callID"], None)
        self._emit_part(run.sid, part)

    def fail_tool(self, run: Run, part: Json, error: str) -> None:
        state = part["state"]
        start = state.get("time", {}).get("start", self.now())
        part["state"] = {
            "status": "error",
            "input": state.get("input", {}),
            "error": error,
            "time": {"start": start, "end": self.now()},
        }
        if state.get("metadata"):
            part["state"]["metadata"] = state["metadata"]
        run.open_tools.pop(part["callID"], None)
        self._emit_part(run.sid, part)

    def _account(self, run: Run, tokens: Json | None) -> None:
        """Put the step's tokens and cost on the message and add them to the session."""
        info = run.message["info"]
        tokens = tokens or zero_tokens()
        info["cost"] = token_cost(tokens)
        info["tokens"] = with_total(tokens)
        session = self.sessions[run.sid]
        session["cost"] = round(session["cost"] + info["cost"], 6)
        add_tokens(session["tokens"], tokens)

    def _finish_step(self, run: Run, tokens: Json | None, finish: str) -> None:
        """`step-finish` part, `message.updated` with `finish`, then again with `completed`."""
        info = run.message["info"]
        self._account(run, tokens)
        self._part(
            run.sid,
            run.message,
            {
                "type": "step-finish",
                "reason": finish,
                "tokens": info["tokens"],
                "cost": info["cost"],
            },
        )
        info["finish"] = finish
        self._emit_message(run.sid, info)
        info["time"]["completed"] = self.now()
        self._emit_message(run.sid, info)

    def next_step(self, run: Run, tokens: Json | None = None) -> None:
        """End the current step with `tool-calls`; the next assistant message starts."""
        self._finish_step(run, tokens, "tool-calls")
        self.set_status(run.sid, {"type": "busy"})
        run.message = self._assistant(run)
        self.touch(run.sid)
        self.start_step(run)

    def complete_run(self, run: Run, tokens: Json | None = None, *, idle: bool = True) -> None:
        """End the run with finish `stop`, then status busy, idle, `session.idle`.
        `idle=False` leaves the status map saying busy (the stale-busy bug), or is used when
        the caller already sent idle (idle before the final message was persisted)."""
        self.runs.pop(run.sid, None)
        self._finish_step(run, tokens, "stop")
        if idle:
            self.set_status(run.sid, {"type": "busy"})
            self.set_status(run.sid, None)
        self.touch(run.sid)
        self._diff(run.sid)

    def end_refused(self, run: Run, tokens: Json | None = None) -> None:
        """A refused tool (rejected permission, dismissed question; its part already `error`):
        the step ends with `tool-calls`, no message error, and the session goes idle."""
        self.runs.pop(run.sid, None)
        self._finish_step(run, tokens, "tool-calls")
        self.set_status(run.sid, None)
        self.touch(run.sid)
        self._diff(run.sid)

    def fail_run(
        self,
        run: Run,
        error: Json,
        tokens: Json | None = None,
        *,
        tool_error: str = "Tool execution aborted",
    ) -> None:
        """End the run with an error, in the real order: `session.error`, status idle,
        `session.idle`, open tools errored, `message.updated` with completed time and error,
        then status idle and `session.idle` once more."""
        self.runs.pop(run.sid, None)
        directory = self.sessions[run.sid]["directory"]
        self.emit(directory, "session.error", {"sessionID": run.sid, "error": error})
        self.set_status(run.sid, None)
        for part in list(run.open_tools.values()):
            self.fail_tool(run, part, tool_error)
        info = run.message["info"]
        self._account(run, tokens)
        info["error"] = error
        info["time"]["completed"] = self.now()
        self._emit_message(run.sid, info)
        self.set_status(run.sid, None)
        self.touch(run.sid)

    def abort(self, sid: str) -> None:
        """`POST /session/{id}/abort`: end the run with MessageAbortedError, drop its requests."""
        self._drop_requests(sid)
        run = self.runs.get(sid)
        if run is not None:
            self.fail_run(run, ABORTED)
        elif sid in self.status:
            self.set_status(sid, None)

    # ----- permissions and questions ------------------------------------------------------
    def ask_permission(
        self,
        run: Run,
        part: Json,
        permission: str,
        patterns: list[str],
        always: list[str],
        metadata: Json | None = None,
    ) -> Json:
        request: Json = {
            "id": self.new_id("per"),
            "sessionID": run.sid,
            "permission": permission,
            "patterns": patterns,
            "metadata": metadata or {},
            "always": always,
            "tool": {"messageID": run.message["info"]["id"], "callID": part["callID"]},
        }
        self.permissions[request["id"]] = request
        self.emit(self.sessions[run.sid]["directory"], "permission.asked", request)
        return request

    def ask_question(self, run: Run, part: Json, questions: list[Json]) -> Json:
        request: Json = {
            "id": self.new_id("que"),
            "sessionID": run.sid,
            "questions": questions,
            "tool": {"messageID": run.message["info"]["id"], "callID": part["callID"]},
        }
        self.questions[request["id"]] = request
        self.emit(self.sessions[run.sid]["directory"], "question.asked", request)
        return request

    def reply_permission(self, request_id: str, reply: str, message: str | None = None) -> bool:
        """Answer a permission; False when it is not open."""
        request = self.permissions.pop(request_id, None)
        if request is None:
            return False
        sid = request["sessionID"]
        self.emit(
            self.sessions[sid]["directory"],
            "permission.replied",
            {"sessionID": sid, "requestID": request_id, "reply": reply},
        )
        self._resolve(request_id, (reply, message))
        return True

    def reply_question(self, request_id: str, answers: list[list[str]]) -> bool:
        """Answer a question; False when it is not open."""
        request = self.questions.pop(request_id, None)
        if request is None:
            return False
        sid = request["sessionID"]
        self.emit(
            self.sessions[sid]["directory"],
            "question.replied",
            {"sessionID": sid, "requestID": request_id, "answers": answers},
        )
        self._resolve(request_id, ("answered", answers))
        return True

    def reject_question(self, request_id: str) -> bool:
        """Dismiss a question; False when it is not open."""
        request = self.questions.pop(request_id, None)
        if request is None:
            return False
        sid = request["sessionID"]
        self.emit(
            self.sessions[sid]["directory"],
            "question.rejected",
            {"sessionID": sid, "requestID": request_id},
        )
        self._resolve(request_id, ("rejected", None))
        return True

    def _drop_requests(self, sid: str) -> None:
        for request_id, request in list(self.permissions.items()):
            if request["sessionID"] == sid:
                self.reply_permission(request_id, "reject")
        for request_id, request in list(self.questions.items()):
            if request["sessionID"] == sid:
                self.reject_question(request_id)

    def wait_reply(self, request_id: str) -> asyncio.Future[Any]:
        """A future resolved with the answer to a request (at once if already answered)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if request_id in self._answered:
            future.set_result(self._answered.pop(request_id))
        else:
            self._waiters[request_id] = future
        return future

    def _resolve(self, request_id: str, answer: Any) -> None:
        future = self._waiters.pop(request_id, None)
        if future is None:
            self._answered[request_id] = answer
        elif not future.done():
            future.set_result(answer)

    # ----- restart --------------------------------------------------------------------------
    def restart(self) -> None:
        """Simulated restart: streams end, the status map, runs and open requests are forgotten;
        messages of interrupted runs stay as persisted (never completed)."""
        self.close_subscribers()
        self.status.clear()
        self.permissions.clear()
        self.questions.clear()
        self.runs.clear()
        for future in self._waiters.values():
            future.cancel()
        self._waiters.clear()
        self._answered.clear()

    # ----- reads ----------------------------------------------------------------------------
    def session_list(self) -> list[Json]:
        """Every session, most recently updated first."""
        return sorted(self.sessions.values(), key=lambda s: s["time"]["updated"], reverse=True)

    def _in(self, sid: str, directory: str) -> bool:
        info = self.sessions.get(sid)
        return info is not None and info["directory"] == directory

    def status_for(self, directory: str) -> Json:
        return {sid: st for sid, st in self.status.items() if self._in(sid, directory)}

    def permissions_for(self, directory: str) -> list[Json]:
        return [r for r in self.permissions.values() if self._in(r["sessionID"], directory)]

    def questions_for(self, directory: str) -> list[Json]:
        return [r for r in self.questions.values() if self._in(r["sessionID"], directory)]

    def last_messages(self, sid: str, limit: int | None = None) -> list[Json]:
        entries = self.messages.get(sid, [])
        return entries[-limit:] if limit else list(entries)
