"""Capture V2 wire facts from a real `opencode serve` 2.0.15 into `tests/fixtures/v2/`.

    python -m tests.integration.record_v2_fixtures [NAME...]

(NAME: only those, e.g. `question_interrupted`; none: every one.)

For each kind of run it writes `<name>.json`: `{"frames": [[received, data], ...]}` (every
`/api/event` frame about the session, as received, deltas included), and the answers a snapshot
reads at the moments that matter: `waiting` (while it waits for the user, when it does) and
`end` (once it ended): `{"session", "transcript", "active", "permissions", "forms"}`. The unit
tests (tests/unit/test_v2.py) replay them through the V2 parser, the journal and derive.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Set
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


def main(only: frozenset[str] = frozenset()) -> None:
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

        def save(name: str, sid: str, got: dict[str, Any], forms: Set[str] = frozenset()) -> None:
            time.sleep(0.5)  # (the last frames of the end)
            got["frames"] = rec.about(sid, set(forms))
            got["session_id"] = sid
            (OUT / f"{name}.json").write_text(json.dumps(got, indent=1) + "\n")

        for name, record in SCENARIOS.items():
            if not only or name in only:
                record(d, model, save)
    finally:
        srv.stop()
        model.stop()


Save = Callable[..., None]  # (name, session id, answers, forms)


def ran_to(
    name: str, scenario: str, outcome: str
) -> Callable[[V2Driver, ScriptedModel, Save], None]:
    def record(d: V2Driver, model: ScriptedModel, save: Save) -> None:
        sid = d.run(scenario)
        d.wait_outcome(sid, outcome)
        save(name, sid, {"end": answers(d, sid)})

    return record


def interrupted(d: V2Driver, model: ScriptedModel, save: Save) -> None:
    sid = d.run("hang", "rec-interrupt")
    d.wait_active(sid)
    wait_until(lambda: d.messages(sid, 2)[0]["type"] == "assistant", what="a step")
    busy = answers(d, sid)
    d.interrupt(sid)
    d.wait_outcome(sid, "interrupted")
    model.release("rec-interrupt")
    save("interrupted", sid, {"waiting": busy, "end": answers(d, sid)})


def retry(d: V2Driver, model: ScriptedModel, save: Save) -> None:
    sid = d.run("unavailable")
    d.wait_retry(sid)
    waiting = answers(d, sid)
    d.interrupt(sid)
    d.wait_outcome(sid, "interrupted")
    save("retry", sid, {"waiting": waiting, "end": answers(d, sid)})


def permission(decision: str) -> Callable[[V2Driver, ScriptedModel, Save], None]:
    def record(d: V2Driver, model: ScriptedModel, save: Save) -> None:
        sid = d.run("permission", f"echo rec-{decision}")
        req = d.wait_permission(sid)
        waiting = answers(d, sid)
        d.reply_permission(sid, req["id"], decision)
        if decision == "once":
            d.wait_outcome(sid, "succeeded")
        else:
            wait_until(lambda: sid not in d.active(), what="the rejected run's end")
        save(f"permission_{decision}", sid, {"waiting": waiting, "end": answers(d, sid)})

    return record


def question(how: str) -> Callable[[V2Driver, ScriptedModel, Save], None]:
    """A question form answered, dismissed, or left open while the run is interrupted (the
    server cancels the form, fails its tool call, then interrupts the run)."""

    def record(d: V2Driver, model: ScriptedModel, save: Save) -> None:
        sid = d.run("question")
        form = d.wait_form(sid)
        waiting = answers(d, sid)
        if how == "answered":
            d.answer_form(sid, form["id"], {"q0": "Red"})
            d.wait_outcome(sid, "succeeded")
        elif how == "dismissed":
            d.dismiss_form(sid, form["id"])
            wait_until(lambda: sid not in d.active(), what="the dismissed run's end")
        else:
            d.interrupt(sid)
            d.wait_outcome(sid, "interrupted")
        save(f"question_{how}", sid, {"waiting": waiting, "end": answers(d, sid)}, {form["id"]})

    return record


#: Each fixture and how it is made, in the order recorded
SCENARIOS: dict[str, Callable[[V2Driver, ScriptedModel, Save], None]] = {
    "completed": ran_to("completed", "text", "succeeded"),
    "failed": ran_to("failed", "fail", "failed"),
    "interrupted": interrupted,
    "retry": retry,
    "permission_once": permission("once"),
    "permission_reject": permission("reject"),
    "question_answered": question("answered"),
    "question_dismissed": question("dismissed"),
    "question_interrupted": question("interrupted"),
}


if __name__ == "__main__":
    main(frozenset(sys.argv[1:]))
