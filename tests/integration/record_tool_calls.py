"""Capture what tool calls look like in a conversation, from real servers, into
`tests/fixtures/tool_calls_v1_1.18.33.json` and `tests/fixtures/tool_calls_v2_2.0.15.json`.

    python -m tests.integration.record_tool_calls

Each run is one session prompted with a scenario of its own (below); the file holds, per run,
the session's messages as the conversation reads them (V1: `GET /session/{id}/message`, oldest
first; V2: `GET /api/session/{id}/message?order=desc`, newest first), and `_meta` the server
version and the project folder. The unit tests (tests/unit/test_conversation.py) read them.

Runs: `bash` a command of three lines whose output holds markup, an escape sequence and a bell
(permission once); `edit` (its diff), `write`, `read` of a missing file (an error); `rejected`
and `rejected_feedback` (the permission rejected, with and without the user's message);
V1 only: `aborted_running` (a `sleep 60` aborted while it runs) and `running` (the same,
read while it runs).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from .driver import Driver, wait_until
from .driver_v2 import V2Driver
from .oc_server import OpenCodeServer, find_opencode2_bin, find_opencode_bin
from .scripted_model import ChatRequest, Reply, ScriptedModel, shell_tool, tool_reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
COMMAND = (
    "echo one\n"
    "printf '[bold]x[/] \\033[31mred\\033[0m \\007bell\\n'\n"
    "for i in $(seq 1 3); do echo line $i; done"
)
#: run -> (the permission reply, its message) when the run asks one
REPLIES: dict[str, tuple[str, str | None] | None] = {
    "bash": ("once", None),
    "edit": None,
    "write": None,
    "read": None,
    "rejected": ("reject", None),
    "rejected_feedback": ("reject", "Use make clean instead, please."),
}


def script(model: ScriptedModel, project: str, path_key: str) -> None:
    """The scripted model's answer for each run (V1 names a file `filePath`, V2 `path`)."""

    def shell(command: str, description: str) -> Any:
        def reply(r: ChatRequest) -> Reply:
            args = {"command": command, "description": description}
            return tool_reply(shell_tool(r), args, text="Running it.")

        return reply

    model.on("bash", shell(COMMAND, "Run a script of three lines"))
    model.on("rejected", shell("rm -rf build", "Clean the build"))
    model.on("rejected_feedback", shell("rm -rf build", "Clean the build"))
    model.on("sleepy", shell("sleep 60", "Wait a minute"))
    model.on("sleepy.after_tool", lambda r: Reply(steps=[("wait", "never"), ("finish", "stop")]))
    for name, path, args in (
        (
            "edit",
            "README.md",
            {
                "oldString": "ocwatch integration test project",
                "newString": "an edited line\nand a second one",
            },
        ),
        ("write", "notes.txt", {"content": "first\nsecond\n"}),
        ("read", "missing.txt", {}),
    ):
        call = {path_key: f"{project}/{path}", **args}
        model.on(name, lambda r, n=name, c=call: tool_reply(n, c, text="On it."))


def record_v1(binary: str, root: Path) -> dict[str, Any]:
    model = ScriptedModel().start()
    srv = OpenCodeServer(binary, root, model.url).start()
    project = str(srv.project)
    script(model, project, "filePath")
    out: dict[str, Any] = {}
    try:
        with Driver(srv.url, auth=srv.auth, default_directory=project) as d:
            version = d.health()["version"]
            for name, reply in REPLIES.items():
                sid = d.run(name, title=name)["id"]
                if reply is not None:
                    asked = d.wait_permission(sid)
                    d.reply_permission(asked["id"], reply[0], reply[1], directory=project)
                wait_until(lambda s=sid: d.status_of(s) is None, 60, what=f"{name} ended")
                wait_until(
                    lambda s=sid: all(
                        m["info"].get("time", {}).get("completed")
                        for m in d.messages(s)
                        if m["info"].get("role") == "assistant"
                    ),
                    30,
                    what=f"{name} saved",
                )
                out[name] = d.messages(sid)
            sid = d.run("sleepy", title="sleepy")["id"]
            asked = d.wait_permission(sid)
            d.reply_permission(asked["id"], "once", None, directory=project)

            def running() -> bool:
                last = d.last_assistant(sid)
                return bool(last) and any(
                    p.get("type") == "tool" and p["state"]["status"] == "running"
                    for p in last["parts"]  # type: ignore[index]
                )

            wait_until(running, 30, what="sleep running")
            out["running"] = d.messages(sid)
            d.abort(sid)
            wait_until(lambda: d.status_of(sid) is None, 60, what="sleepy ended")
            wait_until(
                lambda: (d.last_assistant(sid) or {}).get("info", {}).get("error"),
                30,
                what="the abort saved",
            )
            out["aborted_running"] = d.messages(sid)
    finally:
        srv.stop()
        model.stop()
    return {"_meta": {"server": f"opencode-ai {version}", "project": project}, **out}


def record_v2(binary: str, root: Path) -> dict[str, Any]:
    model = ScriptedModel().start()
    srv = OpenCodeServer(binary, root, model.url, v2=True).start()
    project = str(srv.project)
    script(model, project, "path")
    out: dict[str, Any] = {}
    try:
        with V2Driver(srv.url, auth=srv.auth, directory=project) as d:
            version = d.http.get("/api/info").raise_for_status().json()["version"]
            for name, reply in REPLIES.items():
                sid = d.run(name)
                if reply is not None:
                    asked = d.wait_permission(sid)
                    body: dict[str, Any] = {"decision": reply[0]}
                    if reply[1]:
                        body["message"] = reply[1]
                    d.http.post(
                        f"/api/session/{sid}/permission/{asked['id']}/reply", json=body
                    ).raise_for_status()
                wait_until(lambda s=sid: s not in d.active(), 60, what=f"{name} ended")
                out[name] = d.messages(sid, 20)
    finally:
        srv.stop()
        model.stop()
    return {"_meta": {"server": f"opencode {version}", "project": project}, **out}


def main() -> None:
    v1, v2 = find_opencode_bin(), find_opencode2_bin()
    if v1 is None or v2 is None:
        raise SystemExit("the pinned opencode binaries were not found (see tests/integration)")
    got = record_v1(v1, Path(tempfile.mkdtemp(prefix="ocwatch-tools-")))
    (FIXTURES / "tool_calls_v1_1.18.33.json").write_text(json.dumps(got, indent=1) + "\n")
    got = record_v2(v2, Path(tempfile.mkdtemp(prefix="ocwatch-tools-v2-")))
    (FIXTURES / "tool_calls_v2_2.0.15.json").write_text(json.dumps(got, indent=1) + "\n")


if __name__ == "__main__":
    main()
