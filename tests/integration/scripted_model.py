"""A tiny scripted OpenAI-compatible model server for driving a real `opencode serve` offline.

Stdlib only. It answers `POST /v1/chat/completions` (streaming SSE chunks) on 127.0.0.1 at a
random port. What it answers is decided *per request*, from the request itself, so concurrent
sessions are deterministic whatever order their requests arrive in:

1. A title request (OpenCode asks the small model for a session title; its system prompt is the
   title generator's) -> a short text answer.
2. A request whose last message is a `tool` result -> text + `stop`, so the run completes.
   (A scenario can override this with its own `after_tool` behaviour.)
3. Otherwise the *last user message that carries a marker* `[[scenario:NAME]]` or
   `[[scenario:NAME:ARG]]` picks the behaviour. No marker -> text + `stop`.

Built-in scenarios (ARG in brackets):

    text            text then stop                              (default)
    fail            HTTP 400, a non-retryable failure
    unavailable     HTTP 503 on every request (the server keeps retrying -> status `retry`)
    flaky[:N]       HTTP 503 for the first N (default 1) requests of that prompt, then text + stop
    permission[:CMD] a `bash` tool call (`shell` on V2; with `permission.bash = "ask"` a
                    permission opens)
    question        a `question` tool call (a question request opens)
    task[:CHILD]    a `task` tool call (`subagent` on V2); the child's prompt is
                    `[[scenario:CHILD]]` (default `text`);
                    CHILD may itself carry an arg with `/` e.g. `task:hang/k1` -> child `hang:k1`
    hang[:KEY]      a stream that never ends until `release(KEY)` (or the client goes away)
    stall[:KEY]     no response at all (not even headers) until `release(KEY)`, then text + stop
    slow[:SECONDS]  stream a little text, sleep SECONDS (default 2), then stop
    length          text then finish_reason `length`

Tests can also register their own behaviours with `ScriptedModel.on(name, fn)` where
`fn(request: ChatRequest) -> Reply`.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MARKER_RE = re.compile(r"\[\[scenario:([A-Za-z0-9_\-]+)(?::([^\]]*))?\]\]")
#: Seconds between the SSE comments of a held or sleeping stream. Each comment costs a 1.18.33
#: server 20-40 ms of CPU (no event comes of it): every half second, as this model once wrote
#: them, a held-open run kept 7-10 % of a core busy, and the session-long `all_states` with
#: its four held streams 20 % of a core on every worker's server for the whole tier
KEEPALIVE = 10.0
TITLE_HINTS = ("title generator", "generate a title", "thread title", "title for")


def marker(name: str, arg: str | None = None) -> str:
    """The prompt marker selecting scenario `name` (with an optional argument)."""
    return f"[[scenario:{name}]]" if arg is None else f"[[scenario:{name}:{arg}]]"


# ---------------------------------------------------------------------------------------------
# Request view


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for item in content:
            if isinstance(item, dict):
                out.append(str(item.get("text") or ""))
            else:
                out.append(str(item))
        return "\n".join(out)
    return str(content)


@dataclass
class ChatRequest:
    """One parsed chat completion request."""

    body: dict[str, Any]
    received_at: float = field(default_factory=time.time)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def tool_names(self) -> list[str]:
        out = []
        for t in self.body.get("tools") or []:
            fn = t.get("function") if isinstance(t, dict) else None
            if isinstance(fn, dict) and fn.get("name"):
                out.append(fn["name"])
        return out

    @property
    def system_text(self) -> str:
        return "\n".join(
            _content_text(m.get("content")) for m in self.messages if m.get("role") == "system"
        )

    @property
    def user_texts(self) -> list[str]:
        return [_content_text(m.get("content")) for m in self.messages if m.get("role") == "user"]

    @property
    def last_role(self) -> str | None:
        msgs = self.messages
        return msgs[-1].get("role") if msgs else None

    @property
    def is_title(self) -> bool:
        sys_text = self.system_text.lower()
        return any(h in sys_text for h in TITLE_HINTS)

    @property
    def scenario(self) -> tuple[str, str | None, str] | None:
        """(name, arg, prompt) from the last user message carrying a marker."""
        for text in reversed(self.user_texts):
            m = MARKER_RE.search(text)
            if m:
                return m.group(1), m.group(2), text
        return None

    @property
    def kind(self) -> str:
        if self.is_title:
            return "title"
        if self.last_role == "tool":
            return "after_tool"
        return "turn"


# ---------------------------------------------------------------------------------------------
# Replies


@dataclass
class Reply:
    """What to answer. Either an HTTP error (`status` != 200) or a stream of steps.

    steps: ("text", str) | ("tool", name, args_dict) | ("sleep", seconds) |
           ("wait", key) — block until release(key) | ("finish", reason)
    """

    status: int = 200
    error_body: dict[str, Any] | None = None
    stall: str | None = None  # hold the response (no headers at all) until release(stall)
    steps: list[tuple[Any, ...]] = field(default_factory=list)
    usage: dict[str, int] = field(
        default_factory=lambda: {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    )


def text_reply(text: str = "Done.", finish: str = "stop") -> Reply:
    return Reply(steps=[("text", text), ("finish", finish)])


def error_reply(status: int, message: str) -> Reply:
    return Reply(
        status=status,
        error_body={"error": {"message": message, "type": "scripted_error", "code": status}},
    )


def tool_reply(name: str, args: dict[str, Any], text: str | None = None) -> Reply:
    steps: list[tuple[Any, ...]] = []
    if text:
        steps.append(("text", text))
    steps += [("tool", name, args), ("finish", "tool_calls")]
    return Reply(steps=steps)


Behaviour = Callable[[ChatRequest], Reply]


def shell_tool(req: ChatRequest) -> str:
    """The shell tool's name as the server offers it: `shell` on V2 (2.x), `bash` on V1."""
    return "shell" if "shell" in req.tool_names and "bash" not in req.tool_names else "bash"


# ---------------------------------------------------------------------------------------------
# The server


class _QuietServer(ThreadingHTTPServer):
    """A server that says nothing when a client drops its connection (a test killing an
    OpenCode server mid-request: socketserver printed the reset's traceback into the run's
    output); any other error is reported as before."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class ScriptedModel:
    """The scripted model. `url` is the OpenAI base URL (ends with `/v1`)."""

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []
        self._lock = threading.Lock()
        self._counters: dict[str, int] = {}
        self._releases: dict[str, threading.Event] = {}
        self._stopping = threading.Event()
        self._behaviours: dict[str, Behaviour] = {}
        self.title_text = "Scripted session"
        self._install_builtins()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> ScriptedModel:
        model = self

        class Handler(_Handler):
            scripted = model

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="scripted-model", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            for ev in self._releases.values():
                ev.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ----------------------------------------------------------------------------
    def on(self, name: str, behaviour: Behaviour) -> None:
        """Register (or replace) scenario `name`."""
        self._behaviours[name] = behaviour

    def release(self, key: str = "") -> None:
        """End every `hang:KEY` stream (and let future ones with that key finish at once)."""
        self._event(key).set()

    def _event(self, key: str) -> threading.Event:
        with self._lock:
            ev = self._releases.get(key)
            if ev is None:
                ev = self._releases[key] = threading.Event()
                if self._stopping.is_set():
                    ev.set()
            return ev

    def count(self, key: str) -> int:
        """Increment and return how many times `key` was seen (1 on the first call)."""
        with self._lock:
            n = self._counters.get(key, 0) + 1
            self._counters[key] = n
            return n

    def requests_for(self, name: str) -> list[ChatRequest]:
        with self._lock:
            reqs = list(self.requests)
        return [r for r in reqs if r.scenario and r.scenario[0] == name]

    def decide(self, req: ChatRequest) -> Reply:
        with self._lock:
            self.requests.append(req)
        if req.kind == "title":
            return text_reply(self.title_text)
        sc = req.scenario
        name, arg, prompt = sc if sc else ("text", None, "")
        if req.kind == "after_tool":
            custom = self._behaviours.get(f"{name}.after_tool")
            if custom:
                return custom(req)
            return text_reply(f"Tool finished ({name}).")
        behaviour = self._behaviours.get(name)
        if behaviour is None:
            return text_reply(f"Unknown scenario {name!r}; answering with text.")
        return behaviour(req)

    def _install_builtins(self) -> None:
        def arg_of(req: ChatRequest) -> str | None:
            return req.scenario[1] if req.scenario else None

        def prompt_of(req: ChatRequest) -> str:
            return req.scenario[2] if req.scenario else ""

        self.on("text", lambda r: text_reply(arg_of(r) or "All done, the task is complete."))
        self.on("length", lambda r: text_reply("Truncated answer", finish="length"))
        self.on("fail", lambda r: error_reply(400, "scripted bad request: invalid model input"))
        self.on("unavailable", lambda r: error_reply(503, "scripted overload, try again later"))

        def flaky(r: ChatRequest) -> Reply:
            n = int(arg_of(r) or 1)
            if self.count("flaky|" + prompt_of(r)) <= n:
                return error_reply(503, "scripted overload, try again later")
            return text_reply("Recovered after retry.")

        self.on("flaky", flaky)
        self.on(
            "permission",
            lambda r: tool_reply(
                shell_tool(r),
                {"command": arg_of(r) or "echo scripted", "description": "Run a scripted command"},
                text="I will run a command.",
            ),
        )
        self.on(
            "question",
            lambda r: tool_reply(
                "question",
                {
                    "questions": [
                        {
                            "question": "Which colour should I use?",
                            "header": "Colour",
                            "options": [
                                {"label": "Red", "description": "A warm colour"},
                                {"label": "Blue", "description": "A cool colour"},
                            ],
                        }
                    ]
                },
            ),
        )

        def task(r: ChatRequest) -> Reply:
            child = arg_of(r) or "text"
            child_name, _, child_arg = child.partition("/")
            if "subagent" in r.tool_names:  # V2 (2.x): `subagent {description, prompt, agent}`
                return tool_reply(
                    "subagent",
                    {
                        "description": "Scripted sub-task",
                        "prompt": f"Sub-agent work {marker(child_name, child_arg or None)}",
                        "agent": "general",
                    },
                    text="Delegating to a sub-agent.",
                )
            return tool_reply(
                "task",
                {
                    "description": "Scripted sub-task",
                    "prompt": f"Sub-agent work {marker(child_name, child_arg or None)}",
                    "subagent_type": "general",
                },
                text="Delegating to a sub-agent.",
            )

        self.on("task", task)
        self.on(
            "todo",
            lambda r: tool_reply(
                "todowrite",
                {
                    "todos": [
                        {
                            "content": "Read the failing test",
                            "status": "completed",
                            "priority": "high",
                        },
                        {"content": "Fix the parser", "status": "in_progress", "priority": "high"},
                        {"content": "Run the suite", "status": "pending", "priority": "medium"},
                    ]
                },
                text="Planning the work.",
            ),
        )
        self.on(
            "hang",
            lambda r: Reply(
                steps=[("text", "Working on it"), ("wait", arg_of(r) or ""), ("finish", "stop")]
            ),
        )
        self.on(
            "stall",
            lambda r: Reply(stall=arg_of(r) or "", steps=[("text", "Late"), ("finish", "stop")]),
        )
        self.on(
            "slow",
            lambda r: Reply(
                steps=[
                    ("text", "Thinking slowly"),
                    ("sleep", float(arg_of(r) or 2)),
                    ("text", " and done."),
                    ("finish", "stop"),
                ]
            ),
        )


class _Handler(BaseHTTPRequestHandler):
    scripted: ScriptedModel
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.startswith("/_control/release"):
            # out-of-process control: POST /_control/release?key=KEY
            from urllib.parse import parse_qs, urlparse

            key = parse_qs(urlparse(self.path).query).get("key", [""])[0]
            self.scripted.release(key)
            self._json(200, {"released": key})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "bad json"}})
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": "not found"}})
            return
        reply = self.scripted.decide(ChatRequest(body))
        if reply.stall is not None:
            ev = self.scripted._event(reply.stall)
            while not ev.wait(0.5):
                if self.scripted._stopping.is_set():
                    return
        if reply.status != 200:
            with contextlib.suppress(OSError):
                self._json(reply.status, reply.error_body or {"error": {"message": "error"}})
            return
        try:
            if body.get("stream"):
                self._stream(reply, body)
            else:
                self._plain(reply, body)
        except OSError:  # the client went away (abort, server killed)
            self.close_connection = True

    # -- helpers --------------------------------------------------------------------------------
    def _json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _plain(self, reply: Reply, body: dict[str, Any]) -> None:
        text = "".join(s[1] for s in reply.steps if s[0] == "text")
        tool_calls = [
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": s[1], "arguments": json.dumps(s[2])},
            }
            for s in reply.steps
            if s[0] == "tool"
        ]
        finish = next((s[1] for s in reply.steps if s[0] == "finish"), "stop")
        msg: dict[str, Any] = {"role": "assistant", "content": text}
        if tool_calls:
            msg["tool_calls"] = tool_calls
        self._json(
            200,
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                "usage": reply.usage,
            },
        )

    def _stream(self, reply: Reply, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        model_name = body.get("model", "fake")
        created = int(time.time())
        tool_index = 0

        def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
            obj: dict[str, Any] = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model_name,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            if usage is not None:
                obj["usage"] = usage
            return b"data: " + json.dumps(obj).encode() + b"\n\n"

        try:
            self._send(chunk({"role": "assistant", "content": ""}))
            for step in reply.steps:
                kind = step[0]
                if kind == "text":
                    # a few deltas, like a real model
                    words = step[1].split(" ")
                    for i, w in enumerate(words):
                        self._send(chunk({"content": w if i == 0 else " " + w}))
                elif kind == "tool":
                    args = json.dumps(step[2])
                    self._send(
                        chunk(
                            {
                                "tool_calls": [
                                    {
                                        "index": tool_index,
                                        "id": f"call_{uuid.uuid4().hex[:12]}",
                                        "type": "function",
                                        "function": {"name": step[1], "arguments": args},
                                    }
                                ]
                            }
                        )
                    )
                    tool_index += 1
                elif kind == "sleep":
                    self._idle(float(step[1]), None)
                elif kind == "wait":
                    self._idle(None, self.scripted._event(step[1]))
                elif kind == "finish":
                    self._send(chunk({}, finish=step[1]))
            # usage chunk (choices empty, as OpenAI sends with stream_options.include_usage)
            usage_obj = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model_name,
                "choices": [],
                "usage": reply.usage,
            }
            self._send(b"data: " + json.dumps(usage_obj).encode() + b"\n\n")
            self._send(b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
            return

    def _send(self, data: bytes) -> None:
        if data:
            self.wfile.write(data)
            self.wfile.flush()

    def _idle(self, seconds: float | None, event: threading.Event | None) -> None:
        """Sleep (or wait for `event`), looking every half second whether the model stops, and
        writing an SSE comment every `KEEPALIVE` seconds so a vanished client is noticed."""
        now = time.monotonic()
        deadline = None if seconds is None else now + seconds
        beat = now + KEEPALIVE
        while True:
            if self.scripted._stopping.is_set():
                raise BrokenPipeError("model stopping")
            step = 0.5
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                step = min(step, left)
            if event is not None and event.wait(step):
                return
            if event is None:
                time.sleep(step)
            if time.monotonic() >= beat:
                beat += KEEPALIVE
                self._send(b": keep-alive\n\n")
