"""Drive a real V2 `opencode serve` (2.x) over its own API (sync httpx), waiting on conditions.

Nothing here imports ocwatch: the tests drive the server's own routes to answer, reject, dismiss
and interrupt (ocwatch's own V2 actions come with V2 part two).

    d = V2Driver(server.url, auth=server.auth, directory=str(server.project))
    sid = d.run("permission")                  # a new session, prompted with a scenario marker
    req = d.wait_permission(sid)               # polls /api/permission/request for the folder
    d.reply_permission(sid, req["id"], "reject")
"""

from __future__ import annotations

from typing import Any

import httpx

from .driver import wait_until
from .scripted_model import marker


class V2Driver:
    def __init__(self, url: str, *, auth: tuple[str, str] | None, directory: str) -> None:
        self.url = url
        self.directory = directory
        self.http = httpx.Client(base_url=url, auth=auth, timeout=30)
        self.folders: dict[str, str] = {}

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> V2Driver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sessions ---------------------------------------------------------------------------
    def create(self, title: str, directory: str | None = None) -> str:
        d = directory or self.directory
        r = self.http.post("/api/session", json={"title": title, "location": {"directory": d}})
        r.raise_for_status()
        sid = r.json()["data"]["id"]
        self.folders[sid] = d
        return sid

    def prompt(self, sid: str, scenario: str, arg: str | None = None, text: str = "go") -> None:
        r = self.http.post(
            f"/api/session/{sid}/prompt", json={"text": f"{text} {marker(scenario, arg)}"}
        )
        r.raise_for_status()

    def run(self, scenario: str, arg: str | None = None, directory: str | None = None) -> str:
        sid = self.create(f"v2 {scenario}", directory)
        self.prompt(sid, scenario, arg)
        return sid

    def session(self, sid: str) -> dict[str, Any]:
        return self.http.get(f"/api/session/{sid}").raise_for_status().json()["data"]

    def sessions(self) -> list[dict[str, Any]]:
        r = self.http.get("/api/session", params={"limit": 1000})
        return r.raise_for_status().json()["data"]

    def active(self) -> set[str]:
        return set(self.http.get("/api/session/active").raise_for_status().json()["data"])

    def messages(self, sid: str, limit: int = 10) -> list[dict[str, Any]]:
        r = self.http.get(f"/api/session/{sid}/message", params={"order": "desc", "limit": limit})
        return r.raise_for_status().json()["data"]

    def children(self, sid: str) -> list[str]:
        return [s["id"] for s in self.sessions() if s.get("parentID") == sid]

    def interrupt(self, sid: str) -> bool:
        r = self.http.post(f"/api/session/{sid}/interrupt")
        return bool(r.raise_for_status().json().get("interrupted"))

    # -- asks -------------------------------------------------------------------------------
    def permissions(self, directory: str | None = None) -> list[dict[str, Any]]:
        r = self.http.get(
            "/api/permission/request",
            params={"location[directory]": directory or self.directory},
        )
        return r.raise_for_status().json()["data"]

    def forms(self, directory: str | None = None) -> list[dict[str, Any]]:
        r = self.http.get("/api/form", params={"location[directory]": directory or self.directory})
        return r.raise_for_status().json()["data"]

    def wait_permission(self, sid: str, directory: str | None = None) -> dict[str, Any]:
        return wait_until(
            lambda: next((p for p in self.permissions(directory) if p["sessionID"] == sid), None),
            what=f"a permission of {sid}",
        )

    def wait_form(self, sid: str, directory: str | None = None) -> dict[str, Any]:
        return wait_until(
            lambda: next((f for f in self.forms(directory) if f["sessionID"] == sid), None),
            what=f"a form of {sid}",
        )

    def reply_permission(self, sid: str, rid: str, decision: str) -> None:
        self.http.post(
            f"/api/session/{sid}/permission/{rid}/reply", json={"decision": decision}
        ).raise_for_status()

    def answer_form(self, sid: str, fid: str, answer: dict[str, Any]) -> None:
        self.http.post(
            f"/api/session/{sid}/form/{fid}/reply", json={"answer": answer}
        ).raise_for_status()

    def dismiss_form(self, sid: str, fid: str) -> None:
        self.http.delete(f"/api/session/{sid}/form/{fid}").raise_for_status()

    # -- waits ------------------------------------------------------------------------------
    def wait_outcome(self, sid: str, outcome: str) -> dict[str, Any]:
        return wait_until(
            lambda: (s := self.session(sid)).get("outcome") == outcome and s,
            what=f"{sid} outcome {outcome}",
        )

    def wait_active(self, sid: str, running: bool = True) -> None:
        wait_until(lambda: (sid in self.active()) == running, what=f"{sid} active={running}")

    def wait_retry(self, sid: str) -> dict[str, Any]:
        return wait_until(
            lambda: next((m["retry"] for m in self.messages(sid, 3) if m.get("retry")), None),
            what=f"{sid} retrying",
        )
