"""Record the wire fixtures from the pinned `opencode serve` into tests/fixtures/, with
`ocwatch record` itself: the tests replay what users record.

    OPENCODE_BIN=... python -m tests.integration.record_fixtures [--out DIR] [--only NAME]

Starts its own isolated server and scripted model and runs each scenario one after the other,
each under its own `ocwatch record <scenario>.ndjson` (started, and its first snapshot taken,
before the scenario begins; stopped with SIGINT once the scenario's sessions have been quiet for
QUIET seconds). Then `all_states.ndjson` (one session of every state live at once) and
`restart.ndjson` (SIGKILL mid-run, restart on the same data). `manifest.json` says, per
recording, which sessions the scenario made (and their roles), the request ids and notes.

Not a test: run it by hand when the pinned server version changes, then review the diff
(`ocwatch watch --json --replay FILE` reads a recording as transitions).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.cli_env import cli_env
from tests.recorded import read_records

from .driver import (
    Driver,
    EventRecorder,
    cleanup_states,
    make_all_states,
    wait_until,
)
from .oc_server import REPO_ROOT, OpenCodeServer, find_opencode_bin
from .scripted_model import ScriptedModel

QUIET = 2.0  # a scenario's recording ends after this long without a frame about its sessions


class Recording:
    """`ocwatch record PATH -s URL` in a subprocess, as a user runs it."""

    def __init__(self, path: Path, server: OpenCodeServer) -> None:
        path.unlink(missing_ok=True)
        self.path = path
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tui.cli.main", "record", str(path), "-s", server.url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(server.password),
            cwd=REPO_ROOT,
        )

    def snapshots_done(self) -> int:
        """Snapshots the recording holds that succeeded (read while it is written)."""
        if not self.path.exists():
            return 0
        done = 0
        for line in self.path.read_text().splitlines():
            if '"k":"snap"' in line:
                rec = json.loads(line)
                done += not rec["begin"] and "failed" not in rec
        return done

    def wait_snapshot(self, count: int = 1, timeout: float = 60) -> None:
        """Until `count` snapshots succeeded (the first: the recording is ready)."""
        wait_until(
            lambda: self.snapshots_done() >= count or self.proc.poll() is not None,
            timeout,
            interval=0.2,
            what=f"snapshot {count} of {self.path.name}",
        )
        if self.proc.poll() is not None:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise RuntimeError(f"ocwatch record ended: {err}")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(30)
        err = self.proc.stderr.read() if self.proc.stderr else ""
        if code != 0:
            raise RuntimeError(f"ocwatch record exited {code}: {err}")
        last = self.path.read_text().splitlines()[-1]
        assert json.loads(last)["k"] == "end", last


class Recorder:
    def __init__(self, out: Path, server: OpenCodeServer, model: ScriptedModel) -> None:
        self.out = out
        self.server = server
        self.model = model
        self.d = Driver(server.url, auth=server.auth, default_directory=str(server.project))
        self.manifest: dict[str, Any] = {}

    def scenario(self, name: str, fn: Callable[[Driver, EventRecorder], dict[str, Any]]) -> None:
        print(f"[record] {name} ...", flush=True)
        t0 = time.monotonic()
        recording = Recording(self.out / f"{name}.ndjson", self.server)
        rec: EventRecorder | None = None
        try:
            recording.wait_snapshot()
            rec = EventRecorder(self.server.url, auth=self.server.auth).start()
            meta = fn(self.d, rec)
            ids = set(meta["sessions"].keys())

            def quiet() -> bool:
                mine = rec.for_sessions(ids)
                last = max((f.received for f in mine if f.session_id in ids), default=0)
                return time.time() - last > QUIET

            wait_until(quiet, 60, interval=0.2, what="quiet event stream")
        finally:
            if rec is not None:
                rec.stop()
            recording.stop()
        self.done(name, meta, time.monotonic() - t0)

    def done(self, name: str, meta: dict[str, Any], took: float) -> None:
        path = self.out / f"{name}.ndjson"
        records = read_records(path)
        frames = sum(r.kind == "frame" for r in records)
        self.manifest[name] = {
            **meta,
            "file": path.name,
            "records": len(records),
            "frames": frames,
            "seconds": round(took, 1),
        }
        print(
            f"[record] {name}: {len(records)} records ({frames} frames), "
            f"{path.stat().st_size} bytes",
            flush=True,
        )


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


def record_all_states(r: Recorder) -> None:
    """One session of every state live at once; the recording ends after its first snapshot
    (every route the monitor reads, answered while they were live)."""
    srv, d = r.server, r.d
    st = make_all_states(d, str(srv.project), str(srv.project2))
    try:
        recording = Recording(r.out / "all_states.ndjson", srv)
        try:
            recording.wait_snapshot()
        finally:
            recording.stop()
        r.done(
            "all_states",
            {
                "sessions": {sid: state for state, sid in st.ids().items()},
                "requests": {
                    "permission": st.permission_request["id"],
                    "question": st.question_request["id"],
                },
                "notes": "one session of every state live at once; the first snapshot",
            },
            0,
        )
    finally:
        cleanup_states(d, r.model, st)


def record_kill_restart(r: Recorder) -> None:
    """SIGKILL mid-run (one streaming, one waiting on a permission), restart on the same data
    and port, under one recording: before, the loss, the reconnect and what came after."""
    srv, d = r.server, r.d
    busy = d.run("hang", "rec-kill")
    perm = d.run("permission")
    d.wait_status(busy["id"], "busy")
    d.wait_assistant(busy["id"], lambda m: any(p["type"] == "text" for p in m["parts"]))
    d.wait_permission(perm["id"])
    recording = Recording(r.out / "restart.ndjson", srv)
    try:
        recording.wait_snapshot()
        port = httpx.URL(srv.url).port
        srv.kill()
        r.model.release("rec-kill")
        srv.start(port=port)
        d.close()
        r.d = d = Driver(srv.url, auth=srv.auth, default_directory=str(srv.project))
        recording.wait_snapshot(2, timeout=120)  # reconnected and read everything again
        rec = EventRecorder(srv.url, auth=srv.auth).start()
        # give the fresh server a chance to announce anything about the dead runs
        wait_until(
            lambda: time.time() - rec.snapshot()[-1].received > QUIET,
            30,
            interval=0.2,
            what="quiet after restart",
        )
        rec.stop()
    finally:
        recording.stop()
    r.done(
        "restart",
        {
            "sessions": {busy["id"]: "interrupted-stream", perm["id"]: "interrupted-permission"},
            "notes": "SIGKILL while one run streamed and one waited on a permission; restart on "
            "the same data dirs and port",
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
                        if '"session.error"' not in "".join(frame_texts(out / f"{name}.ndjson")):
                            break
                        r.scenario(name, fn)
        model.release("rec-abort-before")
        if not args.only or "all_states" in args.only:
            record_all_states(r)
        if not args.only or "restart" in args.only:
            record_kill_restart(r)
        manifest_path = out / "manifest.json"
        old = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
        old.pop("_meta", None)
        old.update(r.manifest)
        meta = {
            "opencode_version": version,
            "projects": {"alpha": str(srv.project), "beta": str(srv.project2)},
        }
        manifest_path.write_text(json.dumps({"_meta": meta, **old}, indent=1) + "\n")
    except (AssertionError, httpx.HTTPError, RuntimeError):
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


def frame_texts(path: Path) -> list[str]:
    return [r.data["d"] for r in read_records(path) if r.kind == "frame"]


if __name__ == "__main__":
    raise SystemExit(main())
