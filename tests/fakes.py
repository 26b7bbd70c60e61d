"""An in-memory OpenCode API behind httpx.MockTransport, for unit tests of client and snapshot.

Integration tests use the real `opencode serve`; this fake only serves the shapes ocwatch reads.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

HTML = "<!doctype html><html><body>OpenCode web UI</body></html>"


@dataclass
class FakeAPI:
    """Per-folder status/permission/question maps, sessions, last messages; counts requests."""

    sessions: list[dict[str, Any]] = field(default_factory=list)
    status: dict[str, dict[str, Any]] = field(default_factory=dict)  # folder -> {sid: status}
    permissions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    questions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    projects: list[dict[str, Any]] = field(default_factory=list)
    default_folder: str = "/p/a"
    password: str | None = None
    html_everywhere: bool = False
    active_route: bool = False
    experimental: bool = True
    hits: Counter[str] = field(default_factory=Counter)
    posts: list[tuple[str, Any]] = field(default_factory=list)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        """Count the request; refuse it without the password; answer a POST, else a GET."""
        path = request.url.path
        self.hits[path if not path.startswith("/session/ses") else "/session/{id}/message"] += 1
        if self.password is not None:
            import base64

            want = "Basic " + base64.b64encode(f"opencode:{self.password}".encode()).decode()
            if request.headers.get("authorization", "") != want:
                return httpx.Response(401, headers={"www-authenticate": "Basic"}, text="no")
        if self.html_everywhere:
            return httpx.Response(200, text=HTML, headers={"content-type": "text/html"})
        if request.method == "POST":
            return self._post(path, request)
        return self._get(path, request)

    def _post(self, path: str, request: httpx.Request) -> httpx.Response:
        """An answer to a permission or a question (404 for one not asked), or any other POST:
        recorded, and accepted."""
        self.posts.append((path, json.loads(request.content or b"null")))
        for kind, asked, tag in (
            ("permission", self.permissions, "PermissionNotFoundError"),
            ("question", self.questions, "QuestionNotFoundError"),
        ):
            if path.startswith(f"/{kind}/"):
                rid = path.split("/")[2]
                if any(r["id"] == rid for reqs in asked.values() for r in reqs):
                    return _json(True)
                message = f"{kind.capitalize()} request not found: {rid}"
                return _json({"_tag": tag, "requestID": rid, "message": message}, 404)
        return _json(True)

    def _get(self, path: str, request: httpx.Request) -> httpx.Response:
        """The routes ocwatch reads; any other path answers the web UI's HTML, as OpenCode's."""
        folder = request.url.params.get("directory") or self.default_folder
        if path == "/global/health":
            return _json({"healthy": True, "version": "fake"})
        if path == "/session":
            d = request.url.params.get("directory")
            limit = int(request.url.params.get("limit", "100"))
            return _json([x for x in self.sessions if d is None or x["directory"] == d][:limit])
        if path == "/experimental/session":
            if not self.experimental:  # a server without the route says so (only a 404 does)
                return httpx.Response(404, json={"name": "NotFound"})
            return self._page(request)
        by_folder = {
            "/project": lambda: self.projects,
            "/session/status": lambda: self.status.get(folder, {}),
            "/permission": lambda: self.permissions.get(folder, []),
            "/question": lambda: self.questions.get(folder, []),
        }
        if path in by_folder:
            return _json(by_folder[path]())
        if path == "/api/session/active" and self.active_route:
            return _json({"data": {}})
        if path.startswith("/session/") and path.endswith("/message"):
            limit = int(request.url.params.get("limit", "100"))
            return _json(self.messages.get(path.split("/")[2], [])[-limit:])
        return httpx.Response(200, text=HTML, headers={"content-type": "text/html"})

    def _page(self, request: httpx.Request) -> httpx.Response:
        """Like 1.18.33: newest `time.updated` first, cursor = last item's `time.updated`."""
        limit = int(request.url.params.get("limit", "100"))
        items = sorted(
            self.sessions, key=lambda x: x.get("time", {}).get("updated", 0), reverse=True
        )
        cursor = request.url.params.get("cursor")
        if cursor is not None:
            items = [x for x in items if x.get("time", {}).get("updated", 0) < float(cursor)]
        page = items[:limit]
        headers = {}
        if len(items) > limit:
            headers["x-next-cursor"] = str(page[-1]["time"]["updated"])
        return httpx.Response(200, json=page, headers=headers)


def _json(data: Any, status: int = 200) -> httpx.Response:
    return httpx.Response(status, json=data)


def wire_session(
    sid: str, folder: str = "/p/a", updated: float = 1_000_000.0, parent: str | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": sid,
        "title": f"t {sid}",
        "directory": folder,
        "version": "x",
        "projectID": "prj",
        "time": {"created": updated, "updated": updated},
    }
    if parent:
        out["parentID"] = parent
    return out


def wait_on_transport(monkeypatch: Any, transport: httpx.AsyncBaseTransport) -> None:
    """`ocwatch wait`'s fleets (tui.cli.wait) made on `transport`, not on the network."""
    from tui.cli import wait

    made = wait.Fleet.of_servers

    def of_servers(servers: Any, **kw: Any) -> Any:
        return made(servers, transport=transport, **kw)

    monkeypatch.setattr(wait.Fleet, "of_servers", of_servers)
