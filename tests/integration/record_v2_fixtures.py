"""Capture V2 wire facts from a real `opencode serve` 2.0.15 into `tests/fixtures/v2/`.

    python -m tests.integration.record_v2_fixtures

For each kind of run it writes `<name>.json`: `{"frames": [[received, data], ...]}` (every
`/api/event` frame about the session, as received, deltas included), and the answers a snapshot
reads at the moments that matter: `waiting` (while it waits for the user, when it does) and
`end` (once it ended): `{"session", "transcript", "active", "permissions", "forms"}`. The unit
tests (tests/unit/test_v2.py) replay them through the V2 parser, the journal and derive.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from .driver import wait_until
from .driver_v2 import V2Driver
from .oc_server import OpenCodeServer, find_opencode2_bin
from .scripted_model import ScriptedModel

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "v2"


class Frames:
    def __init__(self, url: str, auth: tuple[str, str] | None) -> None:
        self.frames: list[tuple[float, str]] = []
        self._stop = threading.Event()

        def run() -> None:
            with (
                contextlib.suppress(httpx.HTTPError),  # (the server stopping at the end)
                httpx.Client(base_url=url, auth=auth, timeout=None) as c,
                c.stream("GET", "/api/event") as r,
            ):
                for line in r.iter_lines():
                    if self._stop.is_set():
                        return
                    if line.startswith("data: "):
                        self.frames.append((time.time(), line[6:]))

        threading.Thread(target=run, daemon=True).start()

    def about(self, sid: str, forms: set[str]) -> list[tuple[float, str]]:
        out = []
        for t, data in list(self.frames):
            if sid in data or any(f in data for f in forms):
                out.append((round(t, 3), data))
        return out


def answers(d: V2Driver, sid: str) -> dict[str, Any]:
    return {
        "session": d.session(sid),
        "transcript": d.messages(sid, 5),
        "active": sorted(d.active()),
        "permissions": [p for p in d.permissions() if p["sessionID"] == sid],
        "forms": [f for f in d.forms() if f["sessionID"] == sid],
    }


def main() -> None:
    binary = find_opencode2_bin()
    assert binary, "the V2 binary is not installed (the README's test command)"
    model = ScriptedModel().start()
    srv = OpenCodeServer(
        binary, Path(tempfile.mkdtemp(prefix="ocwatch-v2-rec-")), model.url, v2=True
    ).start()
    try:
        d = V2Driver(srv.url, auth=srv.auth, directory=str(srv.project))
        rec = Frames(srv.url, srv.auth)
        time.sleep(0.5)
        OUT.mkdir(parents=True, exist_ok=True)

        def save(name: str, sid: str, got: dict[str, Any], forms: set[str] = frozenset()):
            time.sleep(0.5)  # (the last frames of the end)
            got["frames"] = rec.about(sid, set(forms))
            got["session_id"] = sid
            (OUT / f"{name}.json").write_text(json.dumps(got, indent=1) + "\n")

        for name, scenario, outcome in (
            ("completed", "text", "succeeded"),
            ("failed", "fail", "failed"),
        ):
            sid = d.run(scenario)
            d.wait_outcome(sid, outcome)
            save(name, sid, {"end": answers(d, sid)})

        sid = d.run("hang", "rec-interrupt")
        d.wait_active(sid)
        wait_until(lambda: d.messages(sid, 2)[0]["type"] == "assistant", what="a step")
        busy = answers(d, sid)
        d.interrupt(sid)
        d.wait_outcome(sid, "interrupted")
        model.release("rec-interrupt")
        save("interrupted", sid, {"waiting": busy, "end": answers(d, sid)})

        sid = d.run("unavailable")
        d.wait_retry(sid)
        retry = answers(d, sid)
        d.interrupt(sid)
        d.wait_outcome(sid, "interrupted")
        save("retry", sid, {"waiting": retry, "end": answers(d, sid)})

        for decision in ("once", "reject"):
            sid = d.run("permission", f"echo rec-{decision}")
            req = d.wait_permission(sid)
            waiting = answers(d, sid)
            d.reply_permission(sid, req["id"], decision)
            if decision == "once":
                d.wait_outcome(sid, "succeeded")
            else:
                wait_until(lambda s=sid: s not in d.active(), what="the rejected run's end")
            save(f"permission_{decision}", sid, {"waiting": waiting, "end": answers(d, sid)})

        for how in ("answered", "dismissed"):
            sid = d.run("question")
            form = d.wait_form(sid)
            waiting = answers(d, sid)
            if how == "answered":
                d.answer_form(sid, form["id"], {"q0": "Red"})
                d.wait_outcome(sid, "succeeded")
            else:
                d.dismiss_form(sid, form["id"])
                wait_until(lambda s=sid: s not in d.active(), what="the dismissed run's end")
            save(f"question_{how}", sid, {"waiting": waiting, "end": answers(d, sid)}, {form["id"]})
    finally:
        srv.stop()
        model.stop()


if __name__ == "__main__":
    main()
