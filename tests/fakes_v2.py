"""A V2 (2.0.15) server for unit and app tests, built from the answers captured from the real
one (tests/fixtures/v2, tests/integration/record_v2_fixtures.py): each fixture's session as it was
at one moment ("waiting" when it has one, else "end"), all on one server, over an httpx
MockTransport. Its event stream says `server.connected`, then sends only SSE comment heartbeats
and stays open; V1's routes answer the web UI's HTML, as on the real server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "v2"
INFO = {"version": "2.0.15", "pid": 4242, "urls": [], "paths": {}}
HTML = "<!doctype html><html><body>OpenCode</body></html>"


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def names() -> list[str]:
    return sorted(p.stem for p in FIXTURES.glob("*.json"))


def last_frame_time() -> float:
    """The latest receive time of every fixture's frames (epoch seconds)."""
    return max(t for n in names() for t, _ in load(n)["frames"])


def folder_of(moment: dict[str, Any]) -> str:
    """The folder of a moment's session (its `location.directory`)."""
    return str((moment["session"].get("location") or {}).get("directory") or "")


class _Beats(httpx.AsyncByteStream):
    """`server.connected`, then a comment heartbeat now and then, for ever."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b'data: {"id":"evt_0","type":"server.connected","data":{}}\n\n'
        while True:
            await asyncio.sleep(0.5)
            yield b": heartbeat\n\n"


class FakeV2:
    """One V2 server holding a session per fixture, each at `moment` ("waiting" when the fixture
    has it and `waiting` is set, else "end"). `hits` counts the requests of each route. The
    open requests are listed per folder, each in its session's (`location[directory]`; none
    given: the first session's, the server's own)."""

    def __init__(self, waiting: bool = True, moments: list[dict[str, Any]] | None = None) -> None:
        """`moments`: the sessions as these moments give them (default: every fixture's)."""
        if moments is None:
            moments = []
            for name in names():
                fx = load(name)
                moments.append(fx["waiting"] if waiting and "waiting" in fx else fx["end"])
        self.moments = {m["session"]["id"]: m for m in moments}
        self.own_folder = next((folder_of(m) for m in moments), "")
        self.hits: dict[str, int] = {}
        #: the actions asked: (method, path, JSON body or None), in order
        self.acted: list[tuple[str, str, Any]] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.hits[path] = self.hits.get(path, 0) + 1
        m = self.moments
        if request.method in ("POST", "DELETE"):
            return self._act(request)
        if path == "/api/info":
            return httpx.Response(200, json=INFO)
        if path == "/api/session":
            return httpx.Response(
                200, json={"data": [x["session"] for x in m.values()], "cursor": {}}
            )
        if path == "/api/session/active":
            running = {sid: {"type": "running"} for sid, x in m.items() if sid in x["active"]}
            return httpx.Response(200, json={"data": running})
        directory = request.url.params.get("location[directory]")
        here = [x for x in m.values() if folder_of(x) == (directory or self.own_folder)]
        if path == "/api/permission/request":
            data = [p for x in here for p in x["permissions"]]
            return httpx.Response(200, json={"location": {"directory": directory}, "data": data})
        if path == "/api/form":
            data = [f for x in here for f in x["forms"]]
            return httpx.Response(200, json={"location": {"directory": directory}, "data": data})
        if path == "/api/event":
            return httpx.Response(
                200, headers={"content-type": "text/event-stream"}, stream=_Beats()
            )
        parts = path.split("/")
        if len(parts) == 5 and parts[:3] == ["", "api", "session"] and parts[4] == "message":
            got = m.get(parts[3])
            if got is None:
                return httpx.Response(404, json={"_tag": "SessionNotFoundError"})
            limit = request.url.params.get("limit")  # (newest first, as asked: order=desc)
            data = got["transcript"][: int(limit)] if limit else got["transcript"]
            return httpx.Response(200, json={"data": data, "cursor": {}})
        if path.startswith("/api/"):
            return httpx.Response(404, json={"_tag": "NotFound"})
        return httpx.Response(200, text=HTML, headers={"content-type": "text/html"})

    def _act(self, request: httpx.Request) -> httpx.Response:
        """An action, applied as 2.0.15 applies it (the request gone, the run stopped)."""
        path = request.url.path
        body = json.loads(request.content) if request.content else None
        self.acted.append((request.method, path, body))
        parts = path.split("/")  # ["", "api", "session", sid, kind, id?, "reply"?]
        got = self.moments.get(parts[3]) if len(parts) > 4 and parts[2] == "session" else None
        if got is None:
            return httpx.Response(404, json={"_tag": "SessionNotFoundError"})
        if parts[4] == "interrupt":
            was = parts[3] in got["active"]
            got["active"] = [x for x in got["active"] if x != parts[3]]
            return httpx.Response(200, json={"interrupted": was})
        kind = {"permission": "permissions", "form": "forms"}.get(parts[4])
        if kind is None or len(parts) < 6:
            return httpx.Response(404, json={"_tag": "NotFound"})
        if not any(r["id"] == parts[5] for r in got[kind]):
            return httpx.Response(404, json={"_tag": "NotFound"})
        got[kind] = [r for r in got[kind] if r["id"] != parts[5]]
        return httpx.Response(204)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)
