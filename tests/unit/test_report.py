"""`ocwatch report`: one session's bundle, whole, and with --redact no message text in it."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.fakes import FakeAPI, wire_session
from tui.cli.main import main
from tui.cli.report import capture, redact, redact_bundle
from tui.core import text
from tui.core.client import OcwatchError
from tui.core.settings import Settings
from tui.core.targets import Servers
from tui.record.format import read
from tui.record.writer import Recorder

SECRET = "the launch codes are 0000"


def api() -> FakeAPI:
    msg = {
        "info": {
            "id": "msg_1",
            "sessionID": "ses_1",
            "role": "assistant",
            "time": {"created": 1_000_000, "completed": 1_000_500},
            "finish": "stop",
        },
        "parts": [
            {
                "id": "p1",
                "sessionID": "ses_1",
                "messageID": "msg_1",
                "type": "text",
                "text": SECRET,
            },
            {
                "id": "p2",
                "sessionID": "ses_1",
                "messageID": "msg_1",
                "type": "tool",
                "tool": "bash",
                "callID": "c",
                "state": {"status": "completed", "input": {"command": SECRET}, "output": SECRET},
            },
        ],
    }
    ask = {
        "id": "per_1",
        "sessionID": "ses_1",
        "permission": "bash",
        "patterns": [SECRET],
        "metadata": {},
        "always": [],
        "tool": {"messageID": "msg_1", "callID": "c"},
    }
    return FakeAPI(
        sessions=[wire_session("ses_1"), wire_session("ses_2", parent="ses_1")],
        messages={"ses_1": [msg]},
        permissions={"/p/a": [ask]},
        status={"/p/a": {"ses_1": {"type": "busy"}}},
    )


async def bundle(tmp_path: Path, redacted: bool, sid: str = "ses_1") -> dict:
    fake = api()
    return await capture(
        sid,
        Servers(("http://fake:4096",), Settings(), names={"http://fake:4096": "fake"}),
        seconds=0.2,
        recording=tmp_path / "c.ndjson",
        redacted=redacted,
        transport=httpx.MockTransport(fake.handle),
    )


async def test_the_bundle_has_what_a_bug_report_needs(tmp_path: Path) -> None:
    got = await bundle(tmp_path, redacted=False)
    assert got["format"] == "ocwatch-report" and got["version"] == 1
    assert got["server"]["name"] == "fake" and got["server"]["version"] == "fake"
    assert got["session"]["id"] == "ses_1" and got["session"]["state"] == "input"
    assert got["session"]["evidence"]
    assert [c["id"] for c in got["children"]] == ["ses_2"]
    assert got["messages"][0]["parts"][0]["text"] == SECRET
    assert got["server_entries"]["status"]["entry"] == {"type": "busy"}
    assert got["server_entries"]["permissions"][0]["entry"]["id"] == "per_1"
    assert got["timeline"] and got["timeline"][0]["to"]["state"] == "input"
    assert got["ocwatch"] and got["redacted"] is False


async def test_redact_leaves_no_message_text(tmp_path: Path) -> None:
    got = await bundle(tmp_path, redacted=True)
    dumped = json.dumps(got)
    assert SECRET not in dumped
    assert got["messages"][0]["parts"][0]["text"] == f"[redacted: {len(SECRET)} chars]"
    assert got["messages"][0]["parts"][1]["state"]["status"] == "completed"  # kept
    assert got["session"]["state"] == "input" and got["session"]["id"] == "ses_1"


async def test_an_unknown_session_is_said(tmp_path: Path) -> None:
    with pytest.raises(OcwatchError, match="ses_nope is on none of the watched servers"):
        await bundle(tmp_path, redacted=False, sid="ses_nope")


async def test_an_id_that_is_no_utf_8_is_said_and_recorded_as_typed(tmp_path: Path) -> None:
    """A byte of argv that is no UTF-8 arrives as a lone surrogate: the report says the
    session is on no server (no traceback writing its recording), and the recording's header
    names that focus as typed."""
    sid = "ses_\udcff"
    with pytest.raises(OcwatchError, match="is on none of the watched servers"):
        await bundle(tmp_path, redacted=False, sid=sid)
    header, _records = read(tmp_path / "c.ndjson")
    assert header.focus == (sid,)


def test_a_focus_of_no_session_reads_back_as_written(tmp_path: Path) -> None:
    """A fleet focused on nothing (it reads no session) is recorded and read back so."""
    path = tmp_path / "none.ndjson"
    Recorder(path, [("http://x", "")], Settings(), version="t", focus=()).close()
    assert read(path)[0].focus == ()


def test_redact_keeps_ids_and_states() -> None:
    assert redact({"id": "x", "text": "t", "state": {"status": "done", "output": "o"}}) == {
        "id": "x",
        "text": "[redacted: 1 chars]",
        "state": {"status": "done", "output": "[redacted: 1 chars]"},
    }
    # V2's ids of a message under other names (a run's reply, a queued prompt): kept as messageID
    v2 = {"assistantMessageID": "msg_a", "inboxID": "msg_b", "item": {"text": "t"}}
    assert redact(v2) == {**v2, "item": {"text": "[redacted: 1 chars]"}}


def test_redact_with_a_recording_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "report",
                "ses_1",
                "-s",
                "http://127.0.0.1:9",
                "--redact",
                "-o",
                str(tmp_path / "x.ndjson"),
            ]
        )
        == 2
    )
    assert "--redact applies to a JSON report" in capsys.readouterr().err


def test_redact_keeps_only_what_says_what_happened() -> None:
    frame = {
        "type": "message.part.updated",
        "properties": {
            "sessionID": "ses_1",
            "part": {
                "id": "p",
                "type": "file",
                "filename": "plan.pdf",
                "url": "data:application/pdf;base64,SECRET",
                "delta": "SECRET tokens",
            },
        },
    }
    got = redact(frame)
    assert "SECRET" not in str(got) and "plan.pdf" not in str(got)
    assert got["type"] == "message.part.updated"
    assert got["properties"]["sessionID"] == "ses_1"
    row = {
        "id": "ses_1",
        "title": "Fix the SECRET bug",
        "state": "idle",
        "reason": "error",
        "evidence": ["bash: rm -rf SECRET"],
        "pending": [{"kind": "permission", "id": "p1", "summary": "bash: SECRET"}],
    }
    hidden = redact(row)
    assert "SECRET" not in str(hidden)
    assert (hidden["state"], hidden["reason"], hidden["pending"][0]["kind"]) == (
        "idle",
        "error",
        "permission",
    )


@pytest.mark.parametrize("redacted", [False, True])
async def test_hostile_frames_leave_a_valid_bundle(tmp_path: Path, redacted: bool) -> None:
    """Frames about the session nested too deeply for the JSON parser, or as deep as it
    allows, or with NaN and Infinity in them: the bundle is still written, and is strict JSON
    (found by reviews: the first crashed `report` with a RecursionError traceback, the second
    did with --redact, the third wrote `NaN`)."""
    fake = api()
    deep = '{"type":"x","properties":{"sessionID":"ses_1","v":' + "[" * 5000 + "]" * 5000 + "}}"
    nested = '{"type":"y","properties":{"sessionID":"ses_1","v":' + "[" * 600 + "]" * 600 + "}}"
    odd = (
        '{"type":"session.updated","properties":{"sessionID":"ses_1",'
        '"info":{"cost":NaN,"time":{"created":Infinity,"updated":-Infinity}}}}'
    )

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/event"):
            body = f"data: {deep}\n\ndata: {nested}\n\ndata: {odd}\n\n"
            return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})
        return fake.handle(request)

    got = await capture(
        "ses_1",
        Servers(("http://fake:4096",), Settings()),
        seconds=0.2,
        recording=tmp_path / "c.ndjson",
        redacted=redacted,
        transport=httpx.MockTransport(handle),
    )
    frames = [e["frame"] for e in got["events"]]
    if redacted:
        assert f"[redacted: {len(deep)} chars]" in frames  # the text it was, redacted
    else:
        assert deep in frames  # kept as the text it was
    info = next(f for f in frames if isinstance(f, dict) and f["type"] != "y")
    assert info["properties"]["info"] == {"cost": None, "time": {"created": None, "updated": None}}
    text.dumps(got)  # (what run_report writes: it nests as deep as the frame)
    assert "NaN" not in text.dumps(got) and "Infinity" not in text.dumps(got)


async def test_redact_keeps_ocwatchs_own_words(tmp_path: Path) -> None:
    """--redact replaced the evidence whole, and the fact sources: a redacted bundle no longer
    said why the state was decided (found by a review). The evidence is decided again from
    redacted inputs: the rules' words stay, what was said in them is replaced by its length."""
    plain = await bundle(tmp_path, redacted=False)
    (tmp_path / "r").mkdir()
    got = await bundle(tmp_path / "r", redacted=True)
    evidence = got["session"]["evidence"]
    assert plain["session"]["evidence"][0] == f"permission bash: {SECRET}"
    assert evidence[0] == f"permission bash: [redacted: {len(SECRET)} chars]"
    assert evidence[1:] == plain["session"]["evidence"][1:]  # no text of the user's in those

    def sources(b: dict) -> list[tuple[str, str]]:
        return [(f["fact"], f["source"]) for f in b["fact_sources"]]

    assert sources(got) == sources(plain) and sources(got)
    assert SECRET not in json.dumps(got)


def test_the_link_error_in_redacted_inputs_is_redacted() -> None:
    """An unreachable server's row says why, and the why may quote the server (a storage path
    with a user name in it): redacted with the rest (found by a review)."""
    from tui.cli.report import _bare_any
    from tui.core.decide import Link

    why = "HTTP 500 ENOENT /home/alice/.local/x"
    assert _bare_any(Link(False, why, 5.0)) == Link(False, f"[redacted: {len(why)} chars]", 5.0)


async def test_redact_keeps_every_session_id_and_still_hides_the_titles(tmp_path: Path) -> None:
    """Issue 41 item 10: --redact replaced the sub-agent's id in the parent's `children` while
    printing it as the child's `id` and `parent_id`. Session ids are not secrets (a report is
    followed by them): kept wherever the plain bundle has one (the task tool's metadata too);
    titles stay redacted."""
    fake = api()
    task = {
        "id": "p3",
        "sessionID": "ses_1",
        "messageID": "msg_1",
        "type": "tool",
        "tool": "task",
        "callID": "t",
        "state": {
            "status": "running",
            "title": SECRET,
            "input": {"prompt": SECRET},
            "metadata": {"sessionId": "ses_2", "parentSessionId": "ses_1"},
        },
    }
    fake.messages["ses_1"][0]["parts"].append(task)

    async def report(redacted: bool, folder: Path) -> dict:
        folder.mkdir(exist_ok=True)
        return await capture(
            "ses_1",
            Servers(("http://fake:4096",), Settings()),
            seconds=0.2,
            recording=folder / "c.ndjson",
            redacted=redacted,
            transport=httpx.MockTransport(fake.handle),
        )

    plain = await report(False, tmp_path / "plain")
    got = await report(True, tmp_path / "redacted")
    assert got["session"]["children"] == ["ses_2"] == plain["session"]["children"]
    assert [(c["id"], c["parent_id"]) for c in got["children"]] == [("ses_2", "ses_1")]
    metadata = got["messages"][0]["parts"][2]["state"]["metadata"]
    assert metadata == {"sessionId": "ses_2", "parentSessionId": "ses_1"}
    assert got["session"]["title"] == f"[redacted: {len('t ses_1')} chars]"
    assert got["children"][0]["title"] == f"[redacted: {len('t ses_2')} chars]"
    assert SECRET not in json.dumps(got)

    def ids(value: object, path: tuple[object, ...] = ()) -> dict[tuple[object, ...], str]:
        """Every place the bundle holds a session id, whole."""
        if isinstance(value, dict):
            return {p: v for k, x in value.items() for p, v in ids(x, (*path, k)).items()}
        if isinstance(value, list):
            return {p: v for i, x in enumerate(value) for p, v in ids(x, (*path, i)).items()}
        return {path: value} if value in ("ses_1", "ses_2") else {}

    every = ids(plain)
    assert len(every) > 6
    assert ids(redact_bundle(plain)) == every  # the same ids in the same places
