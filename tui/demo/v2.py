"""The demo server's V2 face (`ocwatch demo --protocol v2`): the same simulated world, served as
OpenCode 2.0.15 serves it (docs/STATES.md#on-a-v2-server-2x, tests/fixtures/v2).

The world keeps V1's shapes and says what happens as V1 events; this face turns both into V2's:
the routes under `/api` (sessions with their `outcome` and `time.idle`, the server-wide active
list, permissions and forms per folder, typed transcripts newest first) and the one event stream
`/api/event` (`session.execution.*`, steps, tools, `retry.scheduled`, `permission.*`, `form.*`,
each durable one with its session's `seq`; SSE comments as heartbeats). The actions too:
`interrupt`, a permission's `decision`, a form's `answer` or its dismissal. Every V1 route answers
the web UI's HTML, as on a real V2 server.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .http import EventStream, Request, Response, json_response
from .world import QUEUE_LIMIT

if TYPE_CHECKING:
    from .scenarios import Director
    from .world import World

Json = dict[str, Any]

VERSION = "2.0.15"
_SESSION = re.compile(r"^/api/session/([^/]+)(?:/(message|interrupt|prompt))?$")
_REPLY = re.compile(r"^/api/session/([^/]+)/(permission|form)/([^/]+)(/reply)?$")
#: V1 tool names as V2's tools are called
TOOLS = {"bash": "shell", "task": "subagent"}
ABORTED = "MessageAbortedError"
#: Seconds between two heartbeat comments (2.0.15: 15)
HEARTBEAT = 15.0


def _not_found(tag: str, what: str) -> Response:
    return json_response({"_tag": tag, "message": f"{what} not found"}, 404)


class V2Face:
    """Answers V2's routes from the world, and turns its events into V2 frames."""

    def __init__(self, world: World, director: Director, heartbeat: float = HEARTBEAT) -> None:
        self.world = world
        self.director = director
        self.heartbeat = heartbeat
        self.pid = os.getpid()
        self._seq: dict[str, int] = {}  # session id -> its last durable seq
        self._subs: set[asyncio.Queue[str | None]] = set()
        self.translate = Translator(self)
        world.listeners.append(self._heard)

    # ----- the session and its transcript -------------------------------------------------
    def ending(self, sid: str) -> tuple[str | None, int | None]:
        """How the session's last run ended, as V2 says it: its outcome and when (None: running,
        never run, or refused: 2.0.15 writes no outcome after a reject or a dismissal)."""
        w = self.world
        if sid in w.status or sid in w.runs:
            return None, None
        last = next(
            (m["info"] for m in reversed(w.messages.get(sid, [])) if m["info"]["role"] != "user"),
            None,
        )
        if last is None or not last["time"].get("completed"):
            return None, None
        at = last["time"]["completed"]
        err = last.get("error")
        if err is not None:
            return ("interrupted" if err.get("name") == ABORTED else "failed"), at
        if last.get("finish") == "stop":
            return "succeeded", at
        return None, None  # ended on a refused tool

    def session(self, info: Json) -> Json:
        outcome, idle_at = self.ending(info["id"])
        t = info["time"]
        out: Json = {
            "id": info["id"],
            "projectID": info.get("projectID"),
            "title": info.get("title", ""),
            "location": {"directory": info.get("directory")},
            "agent": "build",
            "model": {"id": "claude-sonnet-4-5", "providerID": "anthropic"},
            "cost": info.get("cost", 0.0),
            "tokens": info.get("tokens"),
            "time": {"created": t.get("created"), "updated": t.get("updated")},
        }
        if info.get("parentID"):
            out["parentID"] = info["parentID"]
        if outcome is not None:
            out["outcome"] = outcome
            out["time"]["idle"] = idle_at
        return out

    def transcript(self, sid: str) -> list[Json]:
        """The session's entries, oldest first, typed as V2 types them (an `idle` entry after a
        run that ended with an outcome)."""
        out: list[Json] = []
        for entry in self.world.messages.get(sid, []):
            info = entry["info"]
            if info["role"] == "user":
                text = " ".join(p.get("text", "") for p in entry["parts"] if p["type"] == "text")
                out.append(
                    {
                        "id": info["id"],
                        "sessionID": sid,
                        "type": "user",
                        "text": text,
                        "time": {"created": info["time"]["created"]},
                    }
                )
                continue
            out.append(self._assistant(sid, entry))
        outcome, at = self.ending(sid)
        if outcome is not None:
            out.append(
                {
                    "id": f"idl_{sid[4:]}{at}",
                    "sessionID": sid,
                    "type": "idle",
                    "outcome": outcome,
                    "time": {"created": at},
                }
            )
        return out

    def _assistant(self, sid: str, entry: Json) -> Json:
        info = entry["info"]
        content: list[Json] = []
        refused = False
        for part in entry["parts"]:
            if part["type"] in ("text", "reasoning"):
                content.append({"type": part["type"], "text": part.get("text", "")})
            elif part["type"] == "tool":
                state = part["state"]
                status = {"pending": "streaming"}.get(state["status"], state["status"])
                item_state: Json = {"status": status, "input": state.get("input", {})}
                if state.get("output") is not None:
                    item_state["content"] = [{"type": "text", "text": state["output"]}]
                    item_state["output"] = state["output"]
                if state.get("title"):
                    item_state["title"] = state["title"]
                filediff = (state.get("metadata") or {}).get("filediff")
                if filediff:  # (an edit: V2 keeps its diff as metadata.files[].patch)
                    item_state["metadata"] = {
                        "files": [
                            {
                                "file": state.get("title") or filediff.get("file"),
                                "patch": filediff.get("patch"),
                                "status": "modified",
                                "additions": filediff.get("additions"),
                                "deletions": filediff.get("deletions"),
                            }
                        ]
                    }
                if state["status"] == "error":
                    why = str(state.get("error", ""))
                    refused = refused or "user" in why.lower()
                    item_state["error"] = {"type": "tool", "message": why}
                times = state.get("time", {})
                content.append(
                    {
                        "type": "tool",
                        "id": part["callID"],
                        "name": TOOLS.get(part["tool"], part["tool"]),
                        "executed": state["status"] in ("completed", "error"),
                        "state": item_state,
                        "time": {
                            k: v
                            for k, v in (
                                ("ran", times.get("start")),
                                ("completed", times.get("end")),
                            )
                            if v
                        },
                    }
                )
        out: Json = {
            "id": info["id"],
            "sessionID": sid,
            "type": "assistant",
            "agent": info.get("agent"),
            "model": {"id": info.get("modelID"), "providerID": info.get("providerID")},
            "content": content,
            "cost": info.get("cost"),
            "tokens": info.get("tokens"),
            "time": dict(info["time"]),
        }
        if info.get("finish"):
            out["finish"] = info["finish"]
        err = info.get("error")
        if err is not None:
            kind = "aborted" if err.get("name") == ABORTED else err.get("name", "unknown")
            message = (err.get("data") or {}).get("message")
            out["error"] = {"type": kind, **({"message": message} if message else {})}
        elif refused and info["time"].get("completed") and info.get("finish") != "stop":
            out["error"] = {"type": "aborted"}  # (2.0.15 after a reject or a dismissal)
        status = self.world.status.get(sid)
        if (
            status is not None
            and status.get("type") == "retry"
            and not info["time"].get("completed")
        ):
            out["retry"] = {
                "attempt": status.get("attempt"),
                "at": status.get("next"),
                "error": {"type": "provider", "message": status.get("message")},
            }
        return out

    def permission(self, req: Json) -> Json:
        tool = req.get("tool") or {}
        return {
            "id": req["id"],
            "sessionID": req["sessionID"],
            "action": TOOLS.get(req["permission"], req["permission"]),
            "resources": list(req.get("patterns") or []),
            "save": list(req.get("always") or []),
            "source": {
                "type": "tool",
                "messageID": tool.get("messageID"),
                "id": tool.get("callID"),
            },
        }

    def form(self, req: Json) -> Json:
        tool = req.get("tool") or {}
        fields = []
        for n, q in enumerate(req.get("questions") or []):
            fields.append(
                {
                    "key": f"q{n}",
                    "title": q.get("header", ""),
                    "description": q.get("question", ""),
                    "type": "multiselect" if q.get("multiple") else "string",
                    "options": [
                        {
                            "value": o["label"],
                            "label": o["label"],
                            "description": o.get("description", ""),
                        }
                        for o in q.get("options") or []
                    ],
                    "custom": q.get("custom", True) is not False,
                }
            )
        return {
            "id": req["id"],
            "sessionID": req["sessionID"],
            "title": "Questions",
            "metadata": {
                "kind": "question",
                "tool": {"messageID": tool.get("messageID"), "id": tool.get("callID")},
            },
            "fields": fields,
        }

    # ----- routes ---------------------------------------------------------------------------
    def get(self, req: Request, path: str) -> Response | EventStream | None:
        w = self.world
        if path == "/api/info":
            return json_response({"version": VERSION, "pid": self.pid, "urls": [], "paths": {}})
        if path == "/api/event":
            return EventStream(self.events(), comments=True)
        directory = req.query.get("location[directory]") or w.default_directory
        if path == "/api/session":
            listed = sorted(w.sessions.values(), key=lambda s: s["time"]["updated"])
            if req.query.get("order") != "asc":
                listed.reverse()
            start = int(req.query.get("cursor") or 0)
            limit = max(1, min(int(req.query.get("limit") or 50), 1000))
            page = listed[start : start + limit]
            more = start + limit < len(listed)
            cursor = {"previous": None, "next": str(start + limit) if more else None}
            return json_response({"data": [self.session(s) for s in page], "cursor": cursor})
        if path == "/api/session/active":
            running = {sid: {"type": "running"} for sid in w.status}
            return json_response({"data": running})
        if path == "/api/permission/request":
            data = [self.permission(r) for r in w.permissions_for(directory)]
            return json_response({"location": {"directory": directory}, "data": data})
        if path == "/api/form":
            data = [self.form(r) for r in w.questions_for(directory)]
            return json_response({"location": {"directory": directory}, "data": data})
        match = _SESSION.match(path)
        if match is None or match.group(2) in ("interrupt", "prompt"):
            return None if not path.startswith("/api/") else _not_found("NotFound", path)
        sid, sub = match.groups()
        if sid not in w.sessions:
            return _not_found("SessionNotFoundError", f"session {sid}")
        if sub == "message":
            entries = self.transcript(sid)
            if req.query.get("order", "desc") != "asc":
                entries.reverse()
            limit = int(req.query.get("limit") or 50)
            return json_response({"data": entries[:limit], "cursor": {"next": None}})
        return json_response({"data": self.session(w.sessions[sid])})

    def post(self, req: Request, path: str) -> Response | None:
        w = self.world
        if path == "/api/session":
            body = req.json() or {}
            location = body.get("location") if isinstance(body, dict) else None
            directory = location.get("directory") if isinstance(location, dict) else None
            if not isinstance(directory, str):
                raise ValueError("location.directory must be a folder")
            title = body.get("title") if isinstance(body.get("title"), str) else None
            return json_response({"data": self.session(w.new_session(directory, title))})
        match = _SESSION.match(path)
        if match is not None and match.group(2) == "prompt":
            sid = match.group(1)
            if sid not in w.sessions:
                return _not_found("SessionNotFoundError", f"session {sid}")
            body = req.json() or {}
            text = body.get("text") if isinstance(body, dict) else None
            if not isinstance(text, str):
                raise ValueError("text must be a string")
            self.director.prompt(sid, text.strip() or "Continue.")
            return Response(204)
        if match is not None and match.group(2) == "interrupt":
            sid = match.group(1)
            if sid not in w.sessions:
                return _not_found("SessionNotFoundError", f"session {sid}")
            running = sid in w.status or sid in w.runs
            self.director.abort(sid)
            return json_response({"interrupted": running})
        match = _REPLY.match(path)
        if match is None or not match.group(4):
            return None if not path.startswith("/api/") else _not_found("NotFound", path)
        _sid, kind, rid, _reply = match.groups()
        body = req.json() or {}
        if not isinstance(body, dict):
            raise ValueError("body must be a JSON object")
        if kind == "permission":
            decision = body.get("decision")
            if decision not in ("once", "always", "reject"):
                raise ValueError("decision must be once, always or reject")
            message = body.get("message") if isinstance(body.get("message"), str) else None
            ok = w.reply_permission(rid, decision, message)
            return Response(204) if ok else _not_found("PermissionNotFoundError", rid)
        answer = body.get("answer")
        request = w.questions.get(rid)
        if not isinstance(answer, dict):
            raise ValueError("answer must be an object of field values")
        if request is None:
            return _not_found("FormNotFoundError", rid)
        answers: list[list[str]] = []
        for n, _q in enumerate(request.get("questions") or []):
            got = answer.get(f"q{n}")
            answers.append([str(x) for x in got] if isinstance(got, list) else [str(got or "")])
        w.reply_question(rid, answers)
        return Response(204)

    def delete(self, path: str) -> Response | None:
        match = _REPLY.match(path)
        if match is None or match.group(2) != "form" or match.group(4):
            return None
        ok = self.world.reject_question(match.group(3))
        return Response(204) if ok else _not_found("FormNotFoundError", match.group(3))

    # ----- the event stream -----------------------------------------------------------------
    def reset(self) -> None:
        """A simulated restart: a new server process (a new `pid`), what runs forgotten."""
        self.pid += 1
        self.translate.running = set(self.world.status)
        self.translate.retrying.clear()

    def _heard(self, directory: str, payload: Json) -> None:
        """Every world event, as it is emitted: translated once, in order, sent to each
        connection (a reader that never reads is cut, as the world cuts its own)."""
        frames = self.translate(directory, payload)
        if not frames or not self._subs:
            return
        for queue in list(self._subs):
            if queue.qsize() >= QUEUE_LIMIT:
                self._subs.discard(queue)
                while not queue.empty():
                    queue.get_nowait()
                queue.put_nowait(None)
                continue
            for frame in frames:
                queue.put_nowait(frame)

    async def events(self) -> AsyncIterator[str]:
        """`server.connected`, then every world event as V2 frames; an empty string is a
        heartbeat comment every HEARTBEAT seconds (EventStream `comments`)."""
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._subs.add(queue)
        try:
            yield json.dumps({"id": "evt_connected", "type": "server.connected", "data": {}})
            while True:
                try:
                    frame = await asyncio.wait_for(queue.get(), self.heartbeat)
                except TimeoutError:
                    yield ""
                    continue
                if frame is None:
                    return
                yield frame
        finally:
            self._subs.discard(queue)

    def durable(self, sid: str) -> Json:
        seq = self._seq[sid] = self._seq.get(sid, -1) + 1
        return {"aggregateID": sid, "seq": seq, "version": 1}


class Translator:
    """The world's V1 events as V2 frames (one for the face: each event translated once)."""

    def __init__(self, face: V2Face) -> None:
        self.face = face
        self.world = face.world
        self.running: set[str] = set(face.world.status)
        self.retrying: set[str] = set()
        self.errors: dict[str, Json] = {}  # session id -> its run's session.error
        self.refused: set[str] = set()
        self.titles = {sid: s.get("title") for sid, s in self.world.sessions.items()}
        self.started: set[str] = set()  # assistant messages whose step.started went out
        self.tools: dict[str, str] = {}  # call id -> its last status sent

    def __call__(self, directory: str, payload: Json) -> list[str]:
        etype, p = payload.get("type"), payload.get("properties") or {}
        out: list[tuple[str, Json, bool]] = []  # (type, data, durable)
        sid = p.get("sessionID")
        if not isinstance(sid, str):  # (every event of the world's that matters names one)
            return []
        if etype == "session.created":
            info = p["info"]
            self.titles[sid] = info.get("title")
            data = {
                "sessionID": sid,
                "title": info.get("title", ""),
                "location": {"directory": info.get("directory")},
            }
            if info.get("parentID"):
                data["parentID"] = info["parentID"]
            out.append(("session.created", data, True))
        elif etype == "session.updated":
            title = p["info"].get("title")
            if title != self.titles.get(sid):
                self.titles[sid] = title
                out.append(("session.renamed", {"sessionID": sid, "title": title}, True))
        elif etype == "session.deleted":
            out.append(("session.deleted", {"sessionID": sid}, True))
        elif etype == "session.error":
            self.errors[sid] = p.get("error") or {}
        elif etype == "session.status":
            out += self._status(sid, p.get("status") or {})
        elif etype == "message.updated":
            out += self._message(sid, p["info"])
        elif etype == "message.part.updated":
            out += self._part(sid, p["part"])
        elif etype == "permission.asked":
            out.append(("permission.asked", self.face.permission(p), False))
        elif etype == "permission.replied":
            if p.get("reply") == "reject":
                self.refused.add(sid)
            out.append(("permission.replied", dict(p), False))
        elif etype == "question.asked":
            out.append(("form.created", {"form": self.face.form(p)}, False))
        elif etype == "question.replied":
            answer = {
                f"q{n}": a[0] if len(a) == 1 else a for n, a in enumerate(p.get("answers") or [])
            }
            out.append(
                ("form.replied", {"id": p["requestID"], "sessionID": sid, "answer": answer}, False)
            )
        elif etype == "question.rejected":
            self.refused.add(sid)
            out.append(("form.cancelled", {"id": p["requestID"], "sessionID": sid}, False))
        frames = []
        now = self.world.now()
        for n, (kind, data, durable) in enumerate(out):
            f: Json = {
                "id": f"evt_{payload.get('id', 'x')[4:]}{n}",
                "created": now,
                "type": kind,
                "data": data,
                "location": {"directory": directory},
            }
            owner = data.get("sessionID")
            if durable and isinstance(owner, str):
                f["durable"] = self.face.durable(owner)
            frames.append(json.dumps(f, separators=(",", ":")))
        return frames

    def _status(self, sid: str, status: Json) -> list[tuple[str, Json, bool]]:
        kind = status.get("type")
        if kind == "retry":
            self.retrying.add(sid)
            started = (
                []
                if sid in self.running
                else [("session.execution.started", {"sessionID": sid}, True)]
            )
            self.running.add(sid)
            return [
                *started,
                (
                    "session.retry.scheduled",
                    {
                        "sessionID": sid,
                        "attempt": status.get("attempt"),
                        "at": status.get("next"),
                        "error": {"type": "provider", "message": status.get("message")},
                    },
                    True,
                ),
            ]
        if kind == "busy":
            if sid not in self.running:
                self.running.add(sid)
                self.errors.pop(sid, None)
                self.refused.discard(sid)
                return [("session.execution.started", {"sessionID": sid}, True)]
            if sid in self.retrying:
                self.retrying.discard(sid)
                return [("session.text.started", {"sessionID": sid}, False)]
            return []
        if sid not in self.running:  # idle again (V1 says it twice after an error)
            return []
        self.running.discard(sid)
        self.retrying.discard(sid)
        err = self.errors.pop(sid, None)
        if err is not None and err.get("name") == ABORTED:
            return [("session.execution.interrupted", {"sessionID": sid, "reason": "user"}, True)]
        if err is not None:
            message = (err.get("data") or {}).get("message") or err.get("name")
            return [
                (
                    "session.execution.failed",
                    {"sessionID": sid, "error": {"type": err.get("name"), "message": message}},
                    True,
                )
            ]
        if sid in self.refused:  # 2.0.15 ends a refused run so
            self.refused.discard(sid)
            return [
                ("session.execution.interrupted", {"sessionID": sid, "reason": "shutdown"}, True)
            ]
        return [("session.execution.succeeded", {"sessionID": sid}, True)]

    def _message(self, sid: str, info: Json) -> list[tuple[str, Json, bool]]:
        if info.get("role") != "assistant":
            return []
        mid = info["id"]
        out: list[tuple[str, Json, bool]] = []
        if mid not in self.started:
            self.started.add(mid)
            out.append(
                ("session.step.started", {"sessionID": sid, "assistantMessageID": mid}, True)
            )
        if info["time"].get("completed"):
            self.started.discard(mid)
            data: Json = {
                "sessionID": sid,
                "assistantMessageID": mid,
                "finish": info.get("finish"),
                "cost": info.get("cost"),
                "tokens": info.get("tokens"),
            }
            err = info.get("error")
            if err is not None:
                kind = "aborted" if err.get("name") == ABORTED else err.get("name")
                data["error"] = {"type": kind, "message": (err.get("data") or {}).get("message")}
                out.append(("session.step.failed", data, True))
            else:
                out.append(("session.step.ended", data, True))
        return out

    def _part(self, sid: str, part: Json) -> list[tuple[str, Json, bool]]:
        if part.get("type") != "tool":
            return []
        call, status = part["callID"], part["state"]["status"]
        if self.tools.get(call) == status:
            return []
        self.tools[call] = status
        data: Json = {
            "sessionID": sid,
            "assistantMessageID": part.get("messageID"),
            "id": call,
            "name": TOOLS.get(part["tool"], part["tool"]),
        }
        if status == "pending":
            return [("session.tool.input.started", data, True)]
        data["input"] = part["state"].get("input", {})
        if status == "running":
            return [("session.tool.called", data, True)]
        self.tools.pop(call, None)
        if status == "completed":
            return [("session.tool.success", data, True)]
        data["error"] = {"type": "tool", "message": str(part["state"].get("error", ""))}
        return [("session.tool.failed", data, True)]
