"""`DemoServer`: a simulated `opencode serve` on a loopback port, for `ocwatch demo` and tests.

It speaks the wire format of a real 1.18.33 server (routes, shapes, event order, as recorded in
`tests/fixtures/`) so ocwatch runs through its production client code. Like the real server,
`GET /session` lists one project folder (`?directory=`, else the server's own folder) and
`GET /experimental/session` lists every folder. Run it alone with
`python -m tui.demo.server [--port N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import contextlib
import hmac
import itertools
import json
import os
import re
import time
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any
from urllib.parse import unquote

from .http import EventStream, HttpServer, Request, Response, html_response, json_response
from .initial import build_initial_world
from .scenarios import Director
from .v2 import V2Face
from .world import VERSION, World

HTML_PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>OpenCode</title></head>
<body><div id="root"></div><script type="module" src="/assets/index.js"></script></body>
</html>
"""

_SESSION = re.compile(r"^/session/([^/]+)(/message|/children|/todo|/abort|/prompt_async)?$")
PROVIDERS = {
    "providers": [
        {
            "id": "anthropic",
            "name": "Anthropic",
            "models": {
                "claude-sonnet-4-5": {
                    "id": "claude-sonnet-4-5",
                    "providerID": "anthropic",
                    "name": "Claude Sonnet 4.5",
                    "limit": {"context": 200000, "output": 64000},
                }
            },
        }
    ],
    "default": {"anthropic": "claude-sonnet-4-5"},
}
"""`GET /config/providers`: the one model the demo's agents use, with its context window."""
_REQUEST = re.compile(r"^/(permission|question)/([^/]+)/(reply|reject)$")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _not_found(kind: str, request_id: str) -> Response:
    tag = "PermissionNotFoundError" if kind == "permission" else "QuestionNotFoundError"
    label = "Permission" if kind == "permission" else "Question"
    return json_response(
        {
            "_tag": tag,
            "requestID": request_id,
            "message": f"{label} request not found: {request_id}",
        },
        404,
    )


def _bad_request(message: str) -> Response:
    return json_response({"name": "BadRequest", "data": {"message": message}}, 400)


def _int(value: str | None) -> int | None:
    if value in (None, ""):
        return None
    return int(value)  # ValueError → 400


class DemoServer:
    """A scripted OpenCode server: every session state, cycling, over real HTTP and SSE."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        password: str | None = None,
        username: str = "opencode",
        speed: float = 1.0,
        heartbeat: float = 10.0,
        seed: int = 0,
        clock: Callable[[], float] = time.time,
        list_all_folders: bool = False,
        protocol: str = "v1",
    ) -> None:
        """`list_all_folders=True` makes `GET /session` without `?directory=` list every
        folder's sessions (what older docs claimed); the real 1.18.33 lists one folder.
        `protocol="v2"`: the same world served as OpenCode 2.0.15 serves it (tui.demo.v2; its
        heartbeats every 1.5 `heartbeat`, as 15 s to V1's 10 s)."""
        if protocol not in ("v1", "v2"):
            raise ValueError(f"protocol must be v1 or v2, not {protocol!r}")
        self.host, self.port = host, port
        self.list_all_folders = list_all_folders
        self.heartbeat = heartbeat
        self.world: World = build_initial_world(clock, seed, speed)
        self.director = Director(self.world, speed=speed, seed=seed, restart_hook=self.restart)
        self.v2 = V2Face(self.world, self.director, heartbeat * 1.5) if protocol == "v2" else None
        self.url = ""
        self.restarts = 0
        self.on_restart: Callable[[], None] | None = None  # told after each scripted restart
        self._credentials = None if password is None else f"{username}:{password}"
        self._http = HttpServer(self._handle)
        self._started = False
        self._stream_ids = itertools.count(1)

    # ----- lifecycle --------------------------------------------------------------------
    async def start(self) -> None:
        """Bind the port and start the scenario scripts; `url` is set afterwards."""
        port = await self._http.start(self.host, self.port)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"http://{host}:{port}"
        self.director.start()
        self._started = True

    async def stop(self) -> None:
        if self._started:
            self._started = False
            await self.director.stop()
            await self._http.stop()

    async def __aenter__(self) -> DemoServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def restart(self) -> None:
        """Simulated restart: event streams drop, the status map and open requests are
        forgotten, runs in progress die with their last assistant message never completed."""
        self._http.drop_streams()
        self.director.reset()
        if self.v2 is not None:
            self.v2.reset()
        self.restarts += 1
        if self.on_restart is not None:
            self.on_restart()

    def freeze(self) -> None:
        """Stop the scenario clock (before `start()`: the initial world stays as built)."""
        self.director.clock.freeze()

    def thaw(self) -> None:
        self.director.clock.thaw()

    # ----- HTTP -------------------------------------------------------------------------
    def _authorized(self, req: Request) -> bool:
        if self._credentials is None:
            return True
        scheme, _, value = req.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            given = base64.b64decode(value.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return False
        return hmac.compare_digest(given.encode(), self._credentials.encode())

    def _directory(self, req: Request) -> str:
        header = unquote(req.headers.get("x-opencode-directory", ""))
        directory = req.query.get("directory") or header
        if len(directory) > 1:
            directory = directory.rstrip("/")
        return directory or self.world.default_directory

    async def _handle(self, req: Request) -> Response | EventStream:
        if not self._authorized(req):
            return Response(
                401,
                b"Unauthorized",
                "text/plain",
                {"www-authenticate": 'Basic realm="Secure Area"'},
            )
        path = req.path.rstrip("/") or "/"
        if self.v2 is not None:  # V2's routes; every other one answers the web UI's HTML
            try:
                if req.method == "GET":
                    got = self.v2.get(req, path)
                elif req.method == "POST":
                    got = self.v2.post(req, path)
                elif req.method == "DELETE":
                    got = self.v2.delete(path)
                else:
                    got = None
            except ValueError as exc:
                return json_response({"_tag": "BadRequest", "message": str(exc)}, 400)
            return got if got is not None else html_response(HTML_PAGE)
        try:
            if req.method == "GET":
                result = self._get(req, path)
            elif req.method == "POST":
                result = self._post(req, path)
            else:
                result = None
        except ValueError as exc:
            return _bad_request(str(exc))
        return result if result is not None else html_response(HTML_PAGE)

    def _get(self, req: Request, path: str) -> Response | EventStream | None:
        w = self.world
        directory = self._directory(req)
        if path == "/global/health":
            return json_response({"healthy": True, "version": VERSION})
        if path == "/global/event":
            return EventStream(self._global_events())
        if path == "/event":
            return EventStream(self._folder_events(directory))
        if path == "/project":
            return json_response(list(w.projects.values()))
        if path == "/project/current":
            return json_response(w.projects.get(directory))
        if path == "/session":
            scoped = None if self.list_all_folders and "directory" not in req.query else directory
            return json_response(self._session_list(req, scoped))
        if path == "/experimental/session":
            projects = {
                p["id"]: {"id": p["id"], "worktree": p["worktree"]} for p in w.projects.values()
            }
            return json_response(
                [
                    {**s, "project": projects.get(s["projectID"])}
                    for s in self._session_list(req, None)
                ]
            )
        if path == "/api/session/active":  # 1.18.33 has the route; v1 runs are not listed
            return json_response({"data": {}})
        if path == "/session/status":
            return json_response(w.status_for(directory))
        if path == "/config/providers":
            return json_response(PROVIDERS)
        if path == "/permission":
            return json_response(w.permissions_for(directory))
        if path == "/question":
            return json_response(w.questions_for(directory))
        match = _SESSION.match(path)
        if match is None or match.group(2) in ("/abort", "/prompt_async"):
            return None
        sid, sub = match.groups()
        if sid not in w.sessions:
            return json_response(
                {"name": "NotFoundError", "data": {"message": f"Session not found: {sid}"}}, 404
            )
        if sub == "/message":
            return json_response(w.last_messages(sid, _int(req.query.get("limit"))))
        if sub == "/children":
            return json_response([w.sessions[c] for c in w.children(sid)])
        if sub == "/todo":
            return json_response(w.todos.get(sid, []))
        return json_response(w.sessions[sid])

    def _session_list(self, req: Request, directory: str | None) -> list[dict[str, Any]]:
        sessions = self.world.session_list()
        if directory is not None:
            sessions = [s for s in sessions if s["directory"] == directory]
        if req.query.get("roots") == "true":
            sessions = [s for s in sessions if not s.get("parentID")]
        search = req.query.get("search", "").lower()
        if search:
            sessions = [s for s in sessions if search in s["title"].lower()]
        start = _int(req.query.get("start"))
        if start is not None:
            sessions = [s for s in sessions if s["time"]["updated"] >= start]
        limit = _int(req.query.get("limit")) or 100
        return sessions[:limit]

    def _post(self, req: Request, path: str) -> Response | None:
        w = self.world
        if path == "/session":
            body = req.json() or {}
            if not isinstance(body, dict):
                raise ValueError("body must be a JSON object")
            title = body.get("title") if isinstance(body.get("title"), str) else None
            return json_response(w.new_session(self._directory(req), title))
        match = _SESSION.match(path)
        if match is not None and match.group(2) in ("/abort", "/prompt_async"):
            sid, sub = match.groups()
            if sid not in w.sessions:
                return json_response(
                    {"name": "NotFoundError", "data": {"message": f"Session not found: {sid}"}}, 404
                )
            if sub == "/abort":
                self.director.abort(sid)
                return json_response(True)
            body = req.json() or {}
            if not isinstance(body, dict) or not isinstance(body.get("parts", []), list):
                raise ValueError("body must be an object with a list of parts")
            text = " ".join(p.get("text", "") for p in body.get("parts", []) if isinstance(p, dict))
            self.director.prompt(sid, text.strip() or "Continue.")
            return Response(204)
        match = _REQUEST.match(path)
        if match is None:
            return None
        kind, request_id, action = match.groups()
        body = req.json() or {}
        if not isinstance(body, dict):
            raise ValueError("body must be a JSON object")
        if kind == "permission":
            if action != "reply":
                return None
            reply = body.get("reply")
            if reply not in ("once", "always", "reject"):
                raise ValueError("reply must be once, always or reject")
            message = body.get("message")
            if not isinstance(message, str):
                message = None
            ok = w.reply_permission(request_id, reply, message)
        elif action == "reject":
            ok = w.reject_question(request_id)
        else:
            answers = body.get("answers")
            if not isinstance(answers, list) or not all(
                isinstance(a, list) and all(isinstance(x, str) for x in a) for a in answers
            ):
                raise ValueError("answers must be a list of lists of labels")
            ok = w.reply_question(request_id, answers)
        return json_response(True) if ok else _not_found(kind, request_id)

    # ----- event streams ----------------------------------------------------------------
    async def _frames(self) -> AsyncIterator[tuple[str, Any]]:
        """("event", Frame) for every world event, ("heartbeat", None) on the interval."""
        queue = self.world.subscribe()
        loop = asyncio.get_running_loop()
        next_beat = loop.time() + self.heartbeat
        try:
            yield "connected", None
            while True:
                try:
                    frame = await asyncio.wait_for(queue.get(), max(0.0, next_beat - loop.time()))
                except TimeoutError:
                    next_beat += self.heartbeat
                    yield "heartbeat", None
                    continue
                if frame is None:
                    return
                yield "event", frame
        finally:
            self.world.unsubscribe(queue)

    def _bare(self, type_: str) -> dict[str, Any]:
        """A stream-level event (connected, heartbeat); its ids leave the world's alone."""
        return {"id": f"evt_srv{next(self._stream_ids):06d}", "type": type_, "properties": {}}

    async def _global_events(self) -> AsyncIterator[str]:
        async for kind, frame in self._frames():
            if kind == "event":
                yield frame.text
            else:  # like the real server: no directory on stream-level frames
                yield _dumps({"payload": self._bare(f"server.{kind}")})

    async def _folder_events(self, directory: str) -> AsyncIterator[str]:
        async for kind, frame in self._frames():
            if kind != "event":
                yield _dumps(self._bare(f"server.{kind}"))
            elif frame.directory == directory:
                yield frame.payload


def main(argv: list[str] | None = None) -> None:
    """Run the demo server until interrupted (password from $OPENCODE_SERVER_PASSWORD)."""
    parser = argparse.ArgumentParser(
        prog="python -m tui.demo.server", description="A simulated OpenCode server for ocwatch."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument("--speed", type=float, default=1.0, help="scenario speed factor")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--heartbeat", type=float, default=10.0, help="seconds between heartbeats")
    parser.add_argument("--frozen", action="store_true", help="keep the initial world as built")
    parser.add_argument(
        "--all-folders",
        action="store_true",
        help="GET /session without ?directory= lists every folder",
    )
    args = parser.parse_args(argv)

    async def run() -> None:
        server = DemoServer(
            host=args.host,
            port=args.port,
            speed=args.speed,
            seed=args.seed,
            heartbeat=args.heartbeat,
            list_all_folders=args.all_folders,
            password=os.environ.get("OPENCODE_SERVER_PASSWORD") or None,
            username=os.environ.get("OPENCODE_SERVER_USERNAME") or "opencode",
        )
        if args.frozen:
            server.freeze()
        async with server:
            print(f"opencode demo server listening on {server.url}", flush=True)
            await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())


if __name__ == "__main__":
    main()
