"""Drive a real `opencode serve` over its raw HTTP API (sync httpx) and wait on conditions.

Nothing here imports ocwatch: the harness asserts on the server's own API, so it can check ocwatch.

    d = Driver(server.url, auth=server.auth, default_directory=str(server.project))
    s = d.run("permission")                      # create a session + prompt_async with a marker
    req = d.wait_permission(s["id"])             # polls GET /permission?directory=... until open
    d.reply_permission(req["id"], "once")
    d.wait_assistant_completed(s["id"])

Every `wait_*` polls with a short interval up to a deadline and raises `WaitTimeout` (an
AssertionError) describing the last observation. No bare sleeps.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from tests.recorded import frame_session

try:  # both import styles: as a package module (tests.integration.driver) or a plain module
    from .scripted_model import ScriptedModel, marker
except ImportError:  # pragma: no cover
    from scripted_model import ScriptedModel, marker  # type: ignore[no-redef]

T = TypeVar("T")
DEFAULT_TIMEOUT = 60.0
POLL = 0.1


class WaitTimeout(AssertionError):
    pass


def wait_until(
    fn: Callable[[], T | None],
    timeout: float = DEFAULT_TIMEOUT,
    interval: float = POLL,
    what: str = "",
) -> T:
    """Call `fn` until it returns something truthy; return that. Exceptions from `fn` count as
    'not yet' (the last one is reported on timeout)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            value = fn()
            if value:
                return value
            last = value
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as exc:
            last = exc
        if time.monotonic() >= deadline:
            raise WaitTimeout(
                f"timed out after {timeout}s waiting for {what or fn!r}; last={last!r}"
            )
        time.sleep(interval)


def interrupt(proc: subprocess.Popen[str], patience: float) -> int:
    """Stop an `ocwatch` process as Ctrl-C does (SIGINT), killed if it has not ended within
    `patience` seconds; its exit code."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(patience)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def is_json_response(r: httpx.Response) -> bool:
    return "json" in r.headers.get("content-type", "")


class Driver:
    """Raw API helper bound to one server. Remembers each created session's directory so calls
    about a session go to the right project instance (`?directory=`)."""

    def __init__(
        self,
        base_url: str,
        auth: tuple[str, str] | None = None,
        default_directory: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.auth = auth
        self.default_directory = default_directory
        self.client = httpx.Client(base_url=self.base_url, auth=auth, timeout=timeout)
        self.dirs: dict[str, str] = {}

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Driver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- raw --------------------------------------------------------------------------------------
    def _params(self, directory: str | None, params: dict[str, Any] | None) -> dict[str, Any]:
        p = {k: v for k, v in (params or {}).items() if v is not None}
        d = directory or self.default_directory
        if d and "directory" not in p:
            p["directory"] = d
        return p

    def request(
        self,
        method: str,
        path: str,
        *,
        directory: str | None = None,
        params: dict[str, Any] | None = None,
        json_body: Any = None,
        expect: int | tuple[int, ...] | None = (200, 204),
    ) -> httpx.Response:
        r = self.client.request(
            method, path, params=self._params(directory, params), json=json_body
        )
        if expect is not None:
            ok = (expect,) if isinstance(expect, int) else expect
            if r.status_code not in ok:
                raise AssertionError(f"{method} {path} -> {r.status_code}: {r.text[:500]}")
        return r

    def get(self, path: str, directory: str | None = None, **params: Any) -> Any:
        r = self.request("GET", path, directory=directory, params=params)
        if not is_json_response(r):
            raise AssertionError(f"GET {path} answered non-JSON ({r.headers.get('content-type')})")
        return r.json()

    def get_global(self, path: str, **params: Any) -> Any:
        """GET without any implicit `?directory=`."""
        r = self.client.get(path, params={k: v for k, v in params.items() if v is not None})
        r.raise_for_status()
        return r.json()

    def post(self, path: str, body: Any = None, directory: str | None = None, **params: Any) -> Any:
        r = self.request("POST", path, directory=directory, params=params, json_body=body)
        if r.status_code == 204 or not r.content:
            return None
        return r.json() if is_json_response(r) else r.text

    def dir_of(self, session_id: str) -> str | None:
        return self.dirs.get(session_id) or self.default_directory

    # -- sessions ---------------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        return self.get_global("/global/health")

    def sessions(self, directory: str | None = None, **params: Any) -> list[dict[str, Any]]:
        """GET /session (with the driver's default directory unless `directory` is given)."""
        return self.get("/session", directory=directory, **params)

    def session(self, session_id: str) -> dict[str, Any]:
        return self.get(f"/session/{session_id}", directory=self.dir_of(session_id))

    def create_session(
        self, directory: str | None = None, title: str | None = None, parent_id: str | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if title:
            body["title"] = title
        if parent_id:
            body["parentID"] = parent_id
        info = self.post("/session", body, directory=directory)
        self.dirs[info["id"]] = info.get("directory") or directory or self.default_directory or ""
        return info

    def prompt(
        self,
        session_id: str,
        text: str = "",
        scenario: str | None = None,
        arg: str | None = None,
    ) -> None:
        """POST /session/{id}/prompt_async (204). `scenario`/`arg` append a marker to `text`."""
        if scenario:
            text = f"{text} {marker(scenario, arg)}".strip()
        self.post(
            f"/session/{session_id}/prompt_async",
            {"parts": [{"type": "text", "text": text or "Hello"}]},
            directory=self.dir_of(session_id),
        )

    def run(
        self,
        scenario: str = "text",
        arg: str | None = None,
        directory: str | None = None,
        text: str | None = None,
        title: str | None = None,
    ) -> dict[str, Any]:
        """Create a session and prompt it with a scenario marker. Returns the Session."""
        info = self.create_session(directory=directory, title=title)
        self.prompt(info["id"], text or f"Please do the {scenario} thing", scenario, arg)
        return info

    def abort(self, session_id: str) -> Any:
        return self.post(f"/session/{session_id}/abort", directory=self.dir_of(session_id))

    def children(self, session_id: str) -> list[dict[str, Any]]:
        return self.get(f"/session/{session_id}/children", directory=self.dir_of(session_id))

    def messages(self, session_id: str, limit: int | None = None) -> list[dict[str, Any]]:
        return self.get(
            f"/session/{session_id}/message", directory=self.dir_of(session_id), limit=limit
        )

    def last_assistant(self, session_id: str, limit: int = 5) -> dict[str, Any] | None:
        for m in reversed(self.messages(session_id, limit=limit)):
            if m["info"].get("role") == "assistant":
                return m
        return None

    # -- per-directory maps -----------------------------------------------------------------------
    def status_map(self, directory: str | None = None) -> dict[str, Any]:
        return self.get("/session/status", directory=directory)

    def permissions(self, directory: str | None = None) -> list[dict[str, Any]]:
        return self.get("/permission", directory=directory)

    def questions(self, directory: str | None = None) -> list[dict[str, Any]]:
        return self.get("/question", directory=directory)

    def status_of(self, session_id: str) -> dict[str, Any] | None:
        return self.status_map(self.dir_of(session_id)).get(session_id)

    # -- replies ----------------------------------------------------------------------------------
    def reply_permission(
        self,
        request_id: str,
        reply: str = "once",
        message: str | None = None,
        directory: str | None = None,
    ) -> Any:
        body: dict[str, Any] = {"reply": reply}
        if message is not None:
            body["message"] = message
        return self.post(f"/permission/{request_id}/reply", body, directory=directory)

    def reply_question(
        self, request_id: str, answers: list[list[str]], directory: str | None = None
    ) -> Any:
        return self.post(f"/question/{request_id}/reply", {"answers": answers}, directory=directory)

    def reject_question(self, request_id: str, directory: str | None = None) -> Any:
        return self.post(f"/question/{request_id}/reject", directory=directory)

    # -- waits ------------------------------------------------------------------------------------
    def wait_status(
        self, session_id: str, kind: str = "busy", timeout: float = DEFAULT_TIMEOUT
    ) -> dict[str, Any]:
        """Until the status map of the session's directory shows `kind` (busy|retry) for it."""

        def check() -> dict[str, Any] | None:
            st = self.status_of(session_id)
            return st if st and st.get("type") == kind else None

        return wait_until(check, timeout, what=f"status {kind} for {session_id}")

    def wait_absent(self, session_id: str, timeout: float = DEFAULT_TIMEOUT) -> bool:
        """Until the session is absent from (or idle in) its directory's status map."""

        def check() -> bool:
            st = self.status_of(session_id)
            return st is None or st.get("type") == "idle"

        return wait_until(check, timeout, what=f"{session_id} absent from status map")

    def wait_permission(self, session_id: str, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            return next(
                (
                    p
                    for p in self.permissions(self.dir_of(session_id))
                    if p["sessionID"] == session_id
                ),
                None,
            )

        return wait_until(check, timeout, what=f"permission open for {session_id}")

    def wait_question(self, session_id: str, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            return next(
                (
                    q
                    for q in self.questions(self.dir_of(session_id))
                    if q["sessionID"] == session_id
                ),
                None,
            )

        return wait_until(check, timeout, what=f"question open for {session_id}")

    def wait_assistant(
        self,
        session_id: str,
        pred: Callable[[dict[str, Any]], bool] = lambda m: True,
        timeout: float = DEFAULT_TIMEOUT,
        what: str = "assistant message",
    ) -> dict[str, Any]:
        """Until the last assistant message (`{"info", "parts"}`) satisfies `pred`."""

        def check() -> dict[str, Any] | None:
            m = self.last_assistant(session_id)
            return m if m is not None and pred(m) else None

        return wait_until(check, timeout, what=f"{what} of {session_id}")

    def wait_assistant_completed(
        self, session_id: str, finish: str | None = "stop", timeout: float = DEFAULT_TIMEOUT
    ) -> dict[str, Any]:
        """Until the last assistant message has `time.completed` (and `finish` when given)."""

        def pred(m: dict[str, Any]) -> bool:
            info = m["info"]
            if not info.get("time", {}).get("completed"):
                return False
            return finish is None or info.get("finish") == finish

        return self.wait_assistant(session_id, pred, timeout, f"completed ({finish}) assistant")

    def wait_assistant_error(
        self, session_id: str, name: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> dict[str, Any]:
        def pred(m: dict[str, Any]) -> bool:
            err = m["info"].get("error")
            return bool(err) and (name is None or err.get("name") == name)

        return self.wait_assistant(session_id, pred, timeout, f"assistant error {name}")

    def wait_completed_idle(
        self, session_id: str, finish: str | None = "stop", timeout: float = DEFAULT_TIMEOUT
    ) -> dict[str, Any]:
        """The run is over: last assistant completed and the session absent from the status map."""
        m = self.wait_assistant_completed(session_id, finish, timeout)
        self.wait_absent(session_id, timeout)
        return m

    def wait_child(self, parent_id: str, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """Until the parent has a child session; returns the first child."""

        def check() -> dict[str, Any] | None:
            kids = self.children(parent_id)
            if kids:
                self.dirs.setdefault(kids[0]["id"], self.dir_of(parent_id) or "")
                return kids[0]
            return None

        return wait_until(check, timeout, what=f"child of {parent_id}")

    def wait_tool(
        self,
        session_id: str,
        tool: str,
        status: str | tuple[str, ...] = "running",
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        """Until the last assistant message has a `tool` part of `tool` in `status`."""
        wanted = (status,) if isinstance(status, str) else status

        def pred(m: dict[str, Any]) -> bool:
            return any(
                p.get("type") == "tool"
                and p.get("tool") == tool
                and p.get("state", {}).get("status") in wanted
                for p in m["parts"]
            )

        return self.wait_assistant(session_id, pred, timeout, f"{tool} tool {wanted}")


# ---------------------------------------------------------------------------------------------
# Event stream recorder


@dataclass
class Frame:
    received: float
    raw: str  # the `data:` payload exactly as sent
    obj: Any

    @property
    def payload(self) -> dict[str, Any]:
        return self.obj.get("payload", {}) if isinstance(self.obj, dict) else {}

    @property
    def type(self) -> str:
        return self.payload.get("type", "")

    @property
    def session_id(self) -> str | None:
        return frame_session(self.obj) if isinstance(self.obj, dict) else None


class EventRecorder:
    """Reads `GET /global/event` (or `/event`) in a thread and keeps every `data:` frame.

    Uses a raw socket so `stop()` can interrupt a blocked read at once.
    """

    def __init__(
        self, base_url: str, path: str = "/global/event", auth: tuple[str, str] | None = None
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = httpx.URL(self.base_url + path)
        self.auth = auth
        self.frames: list[Frame] = []
        self.non_data: list[str] = []
        self.status_code: int | None = None
        self.headers: dict[str, str] = {}
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()
        self._connected = threading.Event()
        self._probe = "ocwatch-probe-" + uuid.uuid4().hex
        self._probed = threading.Event()
        self.error: BaseException | None = None

    def start(self, timeout: float = 20.0) -> EventRecorder:
        """Connect, and return once every event the server publishes after this call will be
        recorded."""
        self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
        self._thread.start()
        wait_until(lambda: self._connected.is_set() or self.error, timeout, what="SSE connect")
        if self.error:
            raise self.error
        wait_until(
            lambda: self.frames or self.error or self._stopped.is_set(),
            timeout,
            what="first SSE frame",
        )
        if self.status_code == 200 and not self._stopped.is_set():
            self._prove_subscribed(timeout)
        return self

    def _prove_subscribed(self, timeout: float) -> None:
        """The server sends `server.connected` before it subscribes the stream to its bus (the
        stream is that frame, then the bus: an event published in between is never sent; a
        loaded machine widens the gap), so a toast of our own is published, again every half
        second, until the stream carries one. The toasts are not recorded."""
        deadline = time.monotonic() + timeout
        with httpx.Client(base_url=self.base_url, auth=self.auth, timeout=timeout) as client:
            while True:
                r = client.post("/tui/show-toast", json={"message": self._probe, "variant": "info"})
                r.raise_for_status()
                if self._probed.wait(0.5):
                    return
                if self.error:
                    raise self.error
                if self._stopped.is_set() or time.monotonic() >= deadline:
                    raise WaitTimeout(f"the event stream never carried a toast of ours: {self.url}")

    def stop(self) -> None:
        self._stopped.set()
        sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> EventRecorder:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        import base64

        try:
            host, port = self.url.host, self.url.port or 80
            sock = socket.create_connection((host, port), timeout=10)
            sock.settimeout(None)
            self._sock = sock
            target = self.url.raw_path.decode()
            lines = [
                f"GET {target} HTTP/1.1",
                f"Host: {host}:{port}",
                "Accept: text/event-stream",
                "Cache-Control: no-cache",
                "Connection: close",
            ]
            if self.auth:
                tok = base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
                lines.append(f"Authorization: Basic {tok}")
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
            f = sock.makefile("rb")
            status = f.readline().decode("latin-1").split()
            self.status_code = int(status[1]) if len(status) > 1 else None
            chunked = False
            while True:
                h = f.readline().decode("latin-1").strip()
                if not h:
                    break
                k, _, v = h.partition(":")
                self.headers[k.strip().lower()] = v.strip()
                if k.strip().lower() == "transfer-encoding" and "chunked" in v.lower():
                    chunked = True
            self._connected.set()
            if self.status_code != 200:
                return
            for line in self._lines(f, chunked):
                if line.startswith("data:"):
                    raw = line[6:] if line.startswith("data: ") else line[5:]
                    try:
                        obj = json.loads(raw)
                    except ValueError:
                        obj = None
                    if self._is_probe(obj):
                        self._probed.set()
                        continue
                    with self._lock:
                        self.frames.append(Frame(time.time(), raw, obj))
                elif line:
                    with self._lock:
                        self.non_data.append(line)
        except OSError as exc:
            if not self._stopped.is_set():
                self.error = exc
        finally:
            self._stopped.set()

    def _is_probe(self, obj: Any) -> bool:
        """Whether a frame is one of `_prove_subscribed`'s toasts (`/global/event` wraps the
        event in `payload`, `/event` does not)."""
        if not isinstance(obj, dict):
            return False
        event = obj.get("payload", obj)
        props = event.get("properties") if isinstance(event, dict) else None
        return isinstance(props, dict) and props.get("message") == self._probe

    @staticmethod
    def _lines(f: Any, chunked: bool) -> Any:
        buf = b""

        def chunks() -> Any:
            if not chunked:
                while True:
                    data = f.read1(65536)
                    if not data:
                        return
                    yield data
            else:
                while True:
                    size_line = f.readline()
                    if not size_line:
                        return
                    size = int(size_line.strip().split(b";")[0] or b"0", 16)
                    if size == 0:
                        return
                    data = f.read(size)
                    f.readline()  # CRLF
                    yield data

        for data in chunks():
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                yield line.rstrip(b"\r").decode("utf-8", "replace")

    # -- queries ----------------------------------------------------------------------------------
    def snapshot(self) -> list[Frame]:
        with self._lock:
            return list(self.frames)

    def mark(self) -> int:
        """Index to pass as `since` to only look at frames received after this call."""
        with self._lock:
            return len(self.frames)

    def find(self, pred: Callable[[Frame], bool], since: int = 0) -> list[Frame]:
        return [f for f in self.snapshot()[since:] if pred(f)]

    def wait_for(
        self,
        pred: Callable[[Frame], bool],
        timeout: float = DEFAULT_TIMEOUT,
        since: int = 0,
        what: str = "",
    ) -> Frame:
        def check() -> Frame | None:
            hits = self.find(pred, since)
            return hits[0] if hits else None

        return wait_until(check, timeout, what=what or "event frame")

    def wait_event(
        self,
        type_: str,
        session_id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        since: int = 0,
        extra: Callable[[Frame], bool] = lambda f: True,
    ) -> Frame:
        return self.wait_for(
            lambda f: (
                f.type == type_ and (session_id is None or f.session_id == session_id) and extra(f)
            ),
            timeout,
            since,
            what=f"{type_} for {session_id}",
        )

    def for_sessions(self, ids: set[str], since: int = 0) -> list[Frame]:
        """Frames about these sessions, plus frames that carry no session (connect, heartbeat)."""
        return [f for f in self.snapshot()[since:] if f.session_id is None or f.session_id in ids]


# ---------------------------------------------------------------------------------------------
# Every state at once


@dataclass
class AllStates:
    """Sessions in every state at once (ids), and the open requests."""

    key: str
    directory: str
    directory2: str
    completed: str = ""
    failed: str = ""
    aborted: str = ""
    permission: str = ""
    question: str = ""
    retry: str = ""
    busy: str = ""
    parent: str = ""
    child: str = ""
    second_folder: str = ""
    fresh: str = ""
    permission_request: dict[str, Any] = field(default_factory=dict)
    question_request: dict[str, Any] = field(default_factory=dict)

    STATES = (
        "completed",
        "failed",
        "aborted",
        "permission",
        "question",
        "retry",
        "busy",
        "parent",
        "child",
        "second_folder",
        "fresh",
    )

    def ids(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in self.STATES}

    def still_retrying(self, d: Driver, timeout: float = 90.0) -> str:
        """The retrying session, started again when the server gave up on the old one (it
        retries a 503 for a minute or two, then fails the run: a long test session outlives
        it)."""
        st = d.status_of(self.retry)
        if not st or st.get("type") not in ("retry", "busy"):
            self.retry = d.run("unavailable", directory=self.directory, title="state retry")["id"]
            d.wait_status(self.retry, "retry", timeout=timeout)
        return self.retry

    def hang_key(self, what: str) -> str:
        return f"{self.key}-{what}"


def make_all_states(d: Driver, directory: str, directory2: str, timeout: float = 90.0) -> AllStates:
    """Create, concurrently, one session in each state and wait until each is observably there:

    completed (text+stop, idle) · failed (HTTP 400, APIError) · aborted (MessageAbortedError) ·
    permission (bash ask open) · question (open) · retry (503, status retry) · busy (stream held
    open) · parent (task tool running) with child (its sub-agent session, busy, stream held open) ·
    second_folder (busy, held open, in `directory2`) · fresh (no messages).

    Held-open streams use hang keys `states.hang_key("busy"|"child"|"second"|"aborted")`;
    call `cleanup_states` afterwards to settle everything.
    """
    st = AllStates(key=uuid.uuid4().hex[:8], directory=directory, directory2=directory2)
    st.completed = d.run("text", directory=directory, title="state completed")["id"]
    st.failed = d.run("fail", directory=directory, title="state failed")["id"]
    st.aborted = d.run("hang", st.hang_key("aborted"), directory=directory, title="state aborted")[
        "id"
    ]
    st.permission = d.run("permission", directory=directory, title="state permission")["id"]
    st.question = d.run("question", directory=directory, title="state question")["id"]
    st.retry = d.run("unavailable", directory=directory, title="state retry")["id"]
    st.busy = d.run("hang", st.hang_key("busy"), directory=directory, title="state busy")["id"]
    st.parent = d.run(
        "task", "hang/" + st.hang_key("child"), directory=directory, title="state parent"
    )["id"]
    st.second_folder = d.run(
        "hang", st.hang_key("second"), directory=directory2, title="state second folder"
    )["id"]
    st.fresh = d.create_session(directory=directory, title="state fresh")["id"]

    d.wait_completed_idle(st.completed, timeout=timeout)
    d.wait_assistant_error(st.failed, "APIError", timeout=timeout)
    d.wait_absent(st.failed, timeout=timeout)
    st.permission_request = d.wait_permission(st.permission, timeout=timeout)
    st.question_request = d.wait_question(st.question, timeout=timeout)
    d.wait_status(st.retry, "retry", timeout=timeout)
    d.wait_status(st.busy, "busy", timeout=timeout)
    d.wait_status(st.second_folder, "busy", timeout=timeout)
    st.child = d.wait_child(st.parent, timeout=timeout)["id"]
    d.wait_status(st.child, "busy", timeout=timeout)
    d.wait_tool(st.parent, "task", "running", timeout=timeout)
    # aborted: once its stream is open (busy with an assistant message), abort it
    d.wait_status(st.aborted, "busy", timeout=timeout)
    d.wait_assistant(st.aborted, timeout=timeout)
    d.abort(st.aborted)
    d.wait_assistant_error(st.aborted, "MessageAbortedError", timeout=timeout)
    d.wait_absent(st.aborted, timeout=timeout)
    return st


def cleanup_states(d: Driver, model: ScriptedModel, st: AllStates, timeout: float = 60.0) -> None:
    """Settle every session of `st`: answer requests, abort/release the held-open runs, and wait
    until none of them is in its directory's status map. Best effort, never raises on replies."""
    for what in ("busy", "child", "second", "aborted"):
        model.release(st.hang_key(what))
    for call in (
        lambda: d.reply_permission(st.permission_request["id"], "reject", directory=st.directory),
        lambda: d.reject_question(st.question_request["id"], directory=st.directory),
    ):
        try:
            if st.permission_request or st.question_request:
                call()
        except (AssertionError, KeyError, httpx.HTTPError):
            pass
    for sid in (
        st.retry,
        st.busy,
        st.parent,
        st.child,
        st.second_folder,
        st.permission,
        st.question,
    ):
        if sid:
            with contextlib.suppress(AssertionError, httpx.HTTPError):
                d.abort(sid)
    for sid in st.ids().values():
        if sid:
            d.wait_absent(sid, timeout=timeout)
