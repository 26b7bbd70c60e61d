"""Record real wire fixtures from the pinned `opencode serve` into tests/fixtures/.

    OPENCODE_BIN=... python -m tests.integration.record_fixtures [--out DIR] [--only NAME]

Starts its own isolated server and scripted model, runs each scenario one after the other while
reading `GET /global/event`, and writes:

  events_<scenario>.jsonl   every `data:` frame (exact text, one per line) received while the
                            scenario ran, about its sessions or about no session (connect,
                            heartbeat); `message.part.delta` frames are dropped only if the file
                            would exceed 200 KB
  events_manifest.json      per scenario: session ids (and role: main/child), frame count, notes
  http_*.json               sample bodies of the HTTP API (see FIXTURES in tests/fixtures/README.md)

Not a test: run it by hand when the pinned server version changes, then review the diff.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from .driver import (
    Driver,
    EventRecorder,
    Frame,
    cleanup_states,
    make_all_states,
    wait_until,
)
from .oc_server import REPO_ROOT, OpenCodeServer, find_opencode_bin
from .scripted_model import ScriptedModel

MAX_BYTES = 200_000
QUIET = 2.0  # a scenario's recording ends after this long without a frame about its sessions


class Recorder:
    def __init__(self, out: Path, server: OpenCodeServer, model: ScriptedModel) -> None:
        self.out = out
        self.server = server
        self.model = model
        self.d = Driver(server.url, auth=server.auth, default_directory=str(server.project))
        self.manifest: dict[str, Any] = {}

    # -- events -------------------------------------------------------------------------------
    def scenario(self, name: str, fn: Callable[[Driver, EventRecorder], dict[str, Any]]) -> None:
        print(f"[record] {name} ...", flush=True)
        t0 = time.monotonic()
        rec = EventRecorder(self.server.url, auth=self.server.auth).start()
        try:
            meta = fn(self.d, rec)
            ids = set(meta["sessions"].keys())

            def quiet() -> bool:
                mine = rec.for_sessions(ids)
                last = max((f.received for f in mine if f.session_id in ids), default=0)
                return time.time() - last > QUIET

            wait_until(quiet, 60, interval=0.2, what="quiet event stream")
        finally:
            rec.stop()
        frames = [f for f in rec.snapshot() if f.session_id is None or f.session_id in ids]
        self._write_events(name, frames, meta, time.monotonic() - t0)

    def _write_events(
        self, name: str, frames: list[Frame], meta: dict[str, Any], took: float
    ) -> None:
        lines = [f.raw for f in frames]
        dropped = 0
        if sum(len(x) + 1 for x in lines) > MAX_BYTES:
            keep = [f.raw for f in frames if f.type != "message.part.delta"]
            dropped = len(lines) - len(keep)
            lines = keep
        path = self.out / f"events_{name}.jsonl"
        path.write_text("".join(x + "\n" for x in lines))
        self.manifest[name] = {
            **meta,
            "file": path.name,
            "frames": len(lines),
            "dropped_part_deltas": dropped,
            "seconds": round(took, 1),
        }
        print(f"[record] {name}: {len(lines)} frames, {path.stat().st_size} bytes", flush=True)

    # -- http ---------------------------------------------------------------------------------
    def save(self, name: str, body: Any) -> None:
        (self.out / f"http_{name}.json").write_text(json.dumps(body, indent=1) + "\n")

    def save_get(self, name: str, path: str, **params: Any) -> Any:
        r = self.d.client.get(path, params=params)
        r.raise_for_status()
        body = r.json()
        self.save(name, body)
        return body


# ---------------------------------------------------------------------------------------------
# Scenarios (each returns {"sessions": {id: role}, "notes": ...})


def sc_completed(d: Driver, rec: EventRecorder) -> dict[str, Any]:
    s = d.run("text")
    d.wait_completed_idle(s["id"])
    rec.wait_event("session.idle", s["id"])
    return {"sessions": {s["id"]: "main"}, "notes": "text then stop"}


def sc_failed(d: Driver, rec: EventRecorder) -> dict[str, Any]:
    s = d.run("fail")
    d.wait_assistant_error(s["id"], "APIError")
    d.wait_absent(s["id"])
    return {"sessions": {s["id"]: "main"}, "notes": "model answers HTTP 400"}


def sc_aborted(d: Driver, rec: EventRecorder, model: ScriptedModel) -> dict[str, Any]:
    s = d.run("hang", "rec-abort")
    d.wait_status(s["id"], "busy")
    d.wait_assistant(s["id"], lambda m: any(p["type"] == "text" for p in m["parts"]))
    d.abort(s["id"])
    d.wait_assistant_error(s["id"], "MessageAbortedError")
    d.wait_absent(s["id"])
    model.release("rec-abort")
    return {
        "sessions": {s["id"]: "main"},
        "notes": "stream held open, POST /session/{id}/abort while text is streaming",
    }


def sc_aborted_before_request(d: Driver, rec: EventRecorder) -> dict[str, Any]:
    """Abort as soon as the assistant message exists: usually before the model request is sent
    (the case without `session.error`). Timing-dependent; main() retries until it is caught."""
    s = d.run("stall", "rec-abort-before")
    d.wait_assistant(s["id"], timeout=30)
    d.abort(s["id"])
    d.wait_assistant_error(s["id"], "MessageAbortedError")
    d.wait_absent(s["id"])
    return {
        "sessions": {s["id"]: "main"},
        "notes": "abort right after the assistant message appeared, before the model request",
    }


def sc_aborted_stalled(d: Driver, rec: EventRecorder, model: ScriptedModel) -> dict[str, Any]:
    s = d.run("stall", "rec-abort-early")
    d.wait_status(s["id"], "busy")
    d.wait_assistant(s["id"])
    wait_until(
        lambda: any(
            r.scenario and r.scenario[:2] == ("stall", "rec-abort-early") and r.kind == "turn"
            for r in model.requests
        ),
        what="the model request is open",
    )
    d.abort(s["id"])
    d.wait_assistant_error(s["id"], "MessageAbortedError")
    d.wait_absent(s["id"])
    model.release("rec-abort-early")
    return {
        "sessions": {s["id"]: "main"},
        "notes": "abort while the model request is open but no response (headers) has started",
    }


def sc_permission(reply: str) -> Callable[[Driver, EventRecorder], dict[str, Any]]:
    def run(d: Driver, rec: EventRecorder) -> dict[str, Any]:
        s = d.run("permission")
        req = d.wait_permission(s["id"])
        d.reply_permission(req["id"], reply)
        if reply == "reject":
            d.wait_absent(s["id"])
            d.wait_assistant(s["id"], lambda m: bool(m["info"].get("time", {}).get("completed")))
        else:
            d.wait_completed_idle(s["id"])
        return {
            "sessions": {s["id"]: "main"},
            "request": req["id"],
            "notes": f"bash tool asks permission, replied {reply!r}",
        }

    return run


def sc_question(action: str) -> Callable[[Driver, EventRecorder], dict[str, Any]]:
    def run(d: Driver, rec: EventRecorder) -> dict[str, Any]:
        s = d.run("question")
        req = d.wait_question(s["id"])
        if action == "reply":
            d.reply_question(req["id"], [["Blue"]])
            d.wait_completed_idle(s["id"])
        else:
            d.reject_question(req["id"])
            d.wait_absent(s["id"])
            d.wait_assistant(s["id"], lambda m: bool(m["info"].get("time", {}).get("completed")))
        return {
            "sessions": {s["id"]: "main"},
            "request": req["id"],
            "notes": f"question tool, {action}",
        }

    return run


def sc_retry(d: Driver, rec: EventRecorder) -> dict[str, Any]:
    s = d.run("flaky", "2")
    d.wait_status(s["id"], "retry")
    d.wait_completed_idle(s["id"], timeout=90)
    return {"sessions": {s["id"]: "main"}, "notes": "HTTP 503 twice, then text + stop"}


def sc_subagent(child: str) -> Callable[[Driver, EventRecorder], dict[str, Any]]:
    def run(d: Driver, rec: EventRecorder) -> dict[str, Any]:
        s = d.run("task", child)
        kid = d.wait_child(s["id"])
        notes = f"task tool, child prompt [[scenario:{child}]]"
        if child == "permission":
            req = d.wait_permission(kid["id"])
            d.reply_permission(req["id"], "once")
            notes += "; the child's permission replied once"
        d.wait_completed_idle(kid["id"])
        d.wait_completed_idle(s["id"])
        return {"sessions": {s["id"]: "main", kid["id"]: "child"}, "notes": notes}

    return run


def sc_second_folder(d: Driver, rec: EventRecorder, directory2: str) -> dict[str, Any]:
    s = d.run("text", directory=directory2)
    d.wait_completed_idle(s["id"])
    return {"sessions": {s["id"]: "main"}, "notes": "text then stop, in the second folder"}


def sc_heartbeat(d: Driver, rec: EventRecorder) -> dict[str, Any]:
    wait_until(
        lambda: len(rec.find(lambda f: f.type == "server.heartbeat")) >= 2,
        40,
        what="two heartbeats",
    )
    return {"sessions": {}, "notes": "idle connection: first frame and heartbeats"}


# ---------------------------------------------------------------------------------------------


def record_http(r: Recorder) -> None:
    srv, d = r.server, r.d
    alpha, beta = str(srv.project), str(srv.project2)
    r.save_get("health", "/global/health")
    st = make_all_states(d, alpha, beta)
    try:
        r.save("all_states_ids", st.ids())
        r.save_get("session_list", "/session")
        r.save_get("session_list_beta", "/session", directory=beta)
        r.save_get("experimental_session", "/experimental/session")
        r.save_get("session_status", "/session/status", directory=alpha)
        r.save_get("session_status_beta", "/session/status", directory=beta)
        r.save_get("permission", "/permission", directory=alpha)
        r.save_get("question", "/question", directory=alpha)
        r.save_get("project", "/project")
        r.save_get("session_get_completed", f"/session/{st.completed}", directory=alpha)
        r.save_get("session_children", f"/session/{st.parent}/children", directory=alpha)
        for name in (
            "completed",
            "failed",
            "aborted",
            "permission",
            "question",
            "retry",
            "parent",
            "child",
            "fresh",
        ):
            r.save_get(
                f"messages_{name}",
                f"/session/{getattr(st, name)}/message",
                directory=alpha,
                limit=2,
            )
        # the parent's task tool is running while its child is busy: "busy with a tool"
        r.save_get("messages_busy_tool", f"/session/{st.parent}/message", directory=alpha, limit=2)
        resp = d.client.get("/api/session/active")
        r.save(
            "api_session_active",
            {
                "status": resp.status_code,
                "content_type": resp.headers.get("content-type"),
                "body": resp.json(),
                "note": "while every state was live (v1 prompt_async runs)",
            },
        )
        resp = d.client.post(
            "/permission/per_doesnotexist/reply",
            params={"directory": alpha},
            json={"reply": "once"},
        )
        r.save("permission_reply_404", {"status": resp.status_code, "body": resp.json()})
        resp = d.client.post("/question/que_doesnotexist/reject", params={"directory": alpha})
        r.save("question_reject_404", {"status": resp.status_code, "body": resp.json()})
    finally:
        cleanup_states(d, r.model, st)


def record_kill_restart(r: Recorder) -> None:
    """SIGKILL mid-run (one streaming, one waiting on a permission), restart on the same data."""
    srv, d = r.server, r.d
    busy = d.run("hang", "rec-kill")
    perm = d.run("permission")
    d.wait_status(busy["id"], "busy")
    d.wait_assistant(busy["id"], lambda m: any(p["type"] == "text" for p in m["parts"]))
    d.wait_permission(perm["id"])
    r.save_get("messages_before_kill", f"/session/{busy['id']}/message", limit=2)
    srv.kill()
    r.model.release("rec-kill")
    srv.start()
    d.close()
    r.d = d = Driver(srv.url, auth=srv.auth, default_directory=str(srv.project))
    rec = EventRecorder(srv.url, auth=srv.auth).start()
    r.save_get("session_status_after_restart", "/session/status", directory=str(srv.project))
    r.save_get("permission_after_restart", "/permission", directory=str(srv.project))
    r.save_get("messages_interrupted", f"/session/{busy['id']}/message", limit=2)
    r.save_get("messages_interrupted_permission", f"/session/{perm['id']}/message", limit=2)
    r.save_get("session_get_interrupted", f"/session/{busy['id']}")
    # give the fresh server a chance to announce anything about the dead runs, then save
    wait_until(
        lambda: time.time() - rec.snapshot()[-1].received > QUIET,
        30,
        interval=0.2,
        what="quiet after restart",
    )
    rec.stop()
    r._write_events(
        "after_restart",
        rec.snapshot(),
        {
            "sessions": {busy["id"]: "interrupted-stream", perm["id"]: "interrupted-permission"},
            "notes": "frames after a SIGKILL + restart on the same data dirs",
        },
        0,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(REPO_ROOT / "tests" / "fixtures"))
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = ap.parse_args(argv)
    bin_path = find_opencode_bin()
    if not bin_path:
        print("opencode binary not found (set OPENCODE_BIN)", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="ocwatch-rec-"))
    model = ScriptedModel().start()
    srv = OpenCodeServer(bin_path, root, model.url).start()
    r = Recorder(out, srv, model)
    try:
        # warm both project instances so bootstrap noise (plugin.added, ...) stays out
        for directory in (str(srv.project), str(srv.project2)):
            s = r.d.run("text", directory=directory, title="warm-up")
            r.d.wait_completed_idle(s["id"])
        version = r.d.health().get("version")
        scenarios: dict[str, Callable[[Driver, EventRecorder], dict[str, Any]]] = {
            "completed": sc_completed,
            "failed": sc_failed,
            "aborted": lambda d, rec: sc_aborted(d, rec, model),
            "aborted_stalled": lambda d, rec: sc_aborted_stalled(d, rec, model),
            "aborted_before_request": sc_aborted_before_request,
            "permission_once": sc_permission("once"),
            "permission_reject": sc_permission("reject"),
            "question_replied": sc_question("reply"),
            "question_rejected": sc_question("reject"),
            "retry": sc_retry,
            "subagent": sc_subagent("text"),
            "subagent_permission": sc_subagent("permission"),
            "second_folder": lambda d, rec: sc_second_folder(d, rec, str(srv.project2)),
            "heartbeat": sc_heartbeat,
        }
        for name, fn in scenarios.items():
            if not args.only or name in args.only:
                r.scenario(name, fn)
                if name == "aborted_before_request":
                    # timing-dependent: retry until an abort without session.error is caught
                    for _ in range(8):
                        text = (out / f"events_{name}.jsonl").read_text()
                        if '"session.error"' not in text:
                            break
                        r.scenario(name, fn)
        model.release("rec-abort-before")
        if not args.only or "http" in args.only:
            record_http(r)
        if not args.only or "restart" in args.only:
            record_kill_restart(r)
        manifest_path = out / "events_manifest.json"
        old = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
        old.pop("_meta", None)
        old.update(r.manifest)
        manifest_path.write_text(
            json.dumps(
                {
                    "_meta": {
                        "opencode_version": version,
                        "projects": {"alpha": str(srv.project), "beta": str(srv.project2)},
                    },
                    **old,
                },
                indent=1,
            )
            + "\n"
        )
    except (AssertionError, httpx.HTTPError):
        print(srv.tail(), file=sys.stderr)
        raise
    finally:
        r.d.close()
        srv.stop()
        model.stop()
        if not args.keep:
            import shutil

            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
