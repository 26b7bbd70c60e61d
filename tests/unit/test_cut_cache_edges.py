"""Edges where a snapshot, the message cache or the memo meet missed or in-flight events, and
where server text reaches the terminal."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests import recorded
from tests.builders import SERVER, T0, assistant, busy, permission, session, snap, user
from tui.cli.main import main
from tui.cli.wait import exit_code_for, report
from tui.core.derive import DeriveMemo, derive_server
from tui.core.events import Event, EventParser
from tui.core.journal import Journal
from tui.core.models import Message, PermissionRequest, Session
from tui.core.settings import Settings
from tui.core.snapshot import MessageCache, Snapshot, fetch_snapshot

S = Settings()


def test_an_abort_reported_just_before_a_snapshot_survives_the_cut():
    """1.18.33 sends session.error and idle 50-80 ms before it saves the aborted message. A
    snapshot in that window holds the unfinished message; the error must not be cut away."""
    sid = recorded.session("aborted")
    parser, journal = EventParser(), Journal()
    info = sess = None
    for line in recorded.frames("aborted"):
        got = parser.parse(line, 0)
        ev = got.event
        if ev is None or got.control:
            continue
        if (
            ev.type == "message.updated"
            and ev.session_id == sid
            and ev.properties["info"]["role"] == "assistant"
        ):
            if ev.properties["info"]["time"].get("completed"):
                break  # the snapshot is fetched before the final message is saved
            info = ev.properties["info"]
        if ev.type in ("session.created", "session.updated") and ev.session_id == sid:
            sess = ev.properties["info"]
        at = info["time"]["created"] / 1000 + 20 if info else 0.0  # a run that streamed 20 s
        journal.add(Event(ev.type, ev.properties, ev.directory, at))
    assert info is not None and sess is not None
    now = info["time"]["created"] / 1000 + 20.05
    seq = journal.seq
    s = Snapshot(
        SERVER,
        now,
        {sid: Session.parse(sess)},
        {},
        {},
        {},
        {sid: Message(info=info, parts=())},
        journal_seq=seq,
    )
    journal.cut(seq)
    r = derive_server(s, journal.facts(), now + 0.01, S)[(SERVER, sid)]
    assert (r.state, r.reason, r.settled) == ("idle", "aborted", True)
    assert exit_code_for(r) == 3
    # the carry expires: much later, a run still unfinished in the snapshot reads interrupted
    journal.add(Event("server.heartbeat", {}, None, now + 60))
    journal.cut(journal.seq)
    r = derive_server(s, journal.facts(), now + 61, S)[(SERVER, sid)]
    assert (r.state, r.reason) == ("unknown", "interrupted")


class ScriptedClient:
    """Just what fetch_snapshot calls, with a status map and a last message to swap."""

    url = "http://fake"
    requests = 0

    def __init__(self, sess, msg, status):
        self.sess, self.msg, self.status_map = sess, msg, status

    async def health(self):
        return {"healthy": True, "version": "x"}

    async def all_sessions(self):
        return [self.sess]

    async def projects(self):
        return []

    async def folders(self, sessions):
        return [None]

    async def status(self, d):
        return self.status_map

    async def permissions(self, d):
        return []

    async def questions(self, d):
        return []

    async def active(self):
        return set()

    async def messages(self, sid, limit=1, directory=None):
        return [self.msg]


async def test_a_message_cached_while_running_is_asked_again_once_the_run_stopped():
    created = (T0 - 900) * 1000  # a step that started 15 minutes ago (a long tool call)
    sess = {
        "id": "ses_1",
        "directory": "/p",
        "time": {"created": created - 1e3, "updated": created - 500},
    }
    running = {
        "info": {
            "id": "msg_2",
            "sessionID": "ses_1",
            "role": "assistant",
            "time": {"created": created},
        },
        "parts": [],
    }
    aborted = {
        "info": {
            "id": "msg_2",
            "sessionID": "ses_1",
            "role": "assistant",
            "time": {"created": created, "completed": (T0 - 5) * 1000},
            "error": {"name": "MessageAbortedError", "data": {}},
        },
        "parts": [],
    }
    client = ScriptedClient(sess, running, {"ses_1": {"type": "busy"}})
    cache = MessageCache()
    await fetch_snapshot(client, cache, clock=lambda: T0 - 60)  # type: ignore[arg-type]
    # the run is aborted while the stream is down; time.updated does not move (1.18.33)
    client.status_map, client.msg = {}, aborted
    s2 = await fetch_snapshot(client, cache, clock=lambda: T0)  # type: ignore[arg-type]
    r = derive_server(s2, (), T0, S)[("http://fake", "ses_1")]
    assert (r.state, r.reason) == ("idle", "aborted")


def test_the_memo_rereads_a_session_whose_carried_error_expires_across_resyncs():
    """A run's error carried across one cut makes the row idle/error; when a later cut lets the
    carry expire, the row must read interrupted again, although no event names the session and
    the resync reused its Session and Message objects."""
    sid = "s1"
    msg = assistant("msg_2", sid, created=T0 - 5)  # never completed: saved after the error
    first = snap([session(sid)], messages={sid: msg})
    journal, memo = Journal(), DeriveMemo()
    journal.add(
        Event(
            "session.error",
            {"sessionID": sid, "error": {"name": "APIError", "data": {"message": "boom"}}},
            None,
            T0,
        )
    )
    journal.cut(journal.seq)  # the carry keeps the error: no entry names s1 any more
    again = replace(first, sessions=dict(first.sessions), messages=dict(first.messages))
    rows = derive_server(again, journal.facts(), T0 + 1, S, memo=memo)
    assert (rows[(SERVER, sid)].state, rows[(SERVER, sid)].reason) == ("idle", "error")
    journal.add(Event("server.heartbeat", {}, None, T0 + 60))
    journal.cut(journal.seq)  # the carry has expired
    third = replace(again, sessions=dict(again.sessions), messages=dict(again.messages))
    memoed = derive_server(third, journal.facts(), T0 + 61, S, previous=rows, memo=memo)
    assert memoed == derive_server(third, journal.facts(), T0 + 61, S, previous=rows)
    assert (memoed[(SERVER, sid)].state, memoed[(SERVER, sid)].reason) == ("unknown", "interrupted")


def test_the_memo_rereads_a_session_with_as_many_events_in_a_new_fold():
    """A row derived from one event is not reused from the next fold because the session again
    has one event there: the count is per fold, and the event is another."""
    s = snap([session("s1")], messages={"s1": assistant("m1", "s1", created=T0 - 30)})
    j, memo = Journal(carry_for=-1.0), DeriveMemo()
    j.add(Event("session.status", {"sessionID": "s1", "status": {"type": "busy"}}, None, T0))
    rows = derive_server(s, j.facts(), T0, S, memo=memo)
    assert rows[(SERVER, "s1")].state == "busy"
    retry = {"type": "retry", "attempt": 1}
    seq = j.add(Event("session.status", {"sessionID": "s1", "status": retry}, None, T0 + 1))
    j.cut(seq)  # a new fold: one event for s1 again, another one
    memoed = derive_server(s, j.facts(), T0 + 2, S, previous=rows, memo=memo)
    assert memoed == derive_server(s, j.facts(), T0 + 2, S, previous=rows)
    assert memoed[(SERVER, "s1")].state == "retry"


def test_the_memo_rereads_a_request_whose_content_changed_under_the_same_id():
    def perm(cmd: str) -> PermissionRequest:
        return PermissionRequest.parse(
            {"id": "per_1", "sessionID": "s1", "permission": "bash", "metadata": {"command": cmd}}
        )

    j, memo = Journal(), DeriveMemo()
    first = snap([session("s1")], permissions=[perm("ls")])
    rows = derive_server(first, j.facts(), T0, S, memo=memo)
    second = replace(first, permissions={"per_1": perm("rm -rf /")})
    j.cut(j.seq)  # nothing to cut: the same fold
    memoed = derive_server(second, j.facts(), T0 + 1, S, previous=rows, memo=memo)
    assert memoed == derive_server(second, j.facts(), T0 + 1, S, previous=rows)
    assert memoed[(SERVER, "s1")].evidence[0] == "permission bash: rm -rf /"


def test_the_memo_counts_a_tool_part_under_the_session_it_is_filed_under():
    """A part event whose own sessionID differs from the event's is filed under the part's."""
    j, memo = Journal(carry_for=-1.0), DeriveMemo()
    msg = assistant("msg_2", "b", created=T0 - 30, completed=T0 - 20, finish="tool-calls")
    s = snap([session("a"), session("b")], status={"b": busy()}, messages={"b": msg})
    rows = derive_server(s, j.facts(), T0, S, memo=memo)
    j.add(
        Event(
            "message.part.updated",
            {
                "sessionID": "a",
                "part": {
                    "id": "prt_1",
                    "sessionID": "b",
                    "messageID": "msg_2",
                    "type": "tool",
                    "tool": "bash",
                    "state": {"status": "running"},
                },
            },
            None,
            T0,
        )
    )
    for now in (T0 + 1, T0 + 2):  # the part is seen; then cut away (the snapshot covers it)
        memoed = derive_server(s, j.facts(), now, S, previous=rows, memo=memo)
        assert memoed == derive_server(s, j.facts(), now, S, previous=rows)
        rows = memoed
        j.cut(j.seq)
    assert "tool bash running" not in rows[(SERVER, "b")].evidence


def test_the_memo_never_reuses_a_row_for_an_earlier_clock_or_another_previous():
    memo, facts = DeriveMemo(), Journal().facts()
    s = snap([session("s1")], messages={"s1": user("m1", "s1", created=T0 - 100)})
    rows = derive_server(s, facts, T0, S, memo=memo)
    earlier = derive_server(s, facts, T0 - 50, S, previous=rows, memo=memo)  # the clock stepped
    assert earlier == derive_server(s, facts, T0 - 50, S, previous=rows)
    assert "(50s ago)" in earlier[(SERVER, "s1")].evidence[0]
    other = {(SERVER, "s1"): replace(rows[(SERVER, "s1")], since=T0 - 1000)}
    assert derive_server(s, facts, T0 - 50, S, previous=other, memo=memo) == derive_server(
        s, facts, T0 - 50, S, previous=other
    )


def test_an_idle_reason_from_the_server_survives_the_session_idle_after_it():
    m = assistant("m1", "s1", created=T0 - 9, completed=T0 - 8, finish="stop")
    s = snap([session("s1")], messages={"s1": m})
    j = Journal()
    j.add(
        Event(
            "session.status",
            {"sessionID": "s1", "status": {"type": "idle", "reason": "aborted"}},
            None,
            T0,
        )
    )
    j.add(Event("session.idle", {"sessionID": "s1"}, None, T0 + 0.01))
    r = derive_server(s, j.facts(), T0 + 1, S)[(SERVER, "s1")]
    assert (r.state, r.reason) == ("idle", "aborted")


def test_the_memo_sees_a_new_child_of_an_unchanged_parent():
    s = snap([session("p")], messages={"p": None})
    j, memo = Journal(), DeriveMemo()
    derive_server(s, j.facts(), T0, S, memo=memo)
    child = session("c", parent="p").to_wire()
    j.add(Event("session.created", {"sessionID": "c", "info": child}, None, T0))
    with_memo = derive_server(s, j.facts(), T0 + 1, S, memo=memo)
    assert with_memo[(SERVER, "p")].children == ("c",)
    assert with_memo == derive_server(s, j.facts(), T0 + 1, S)


def test_stale_after_a_refusal_exits_like_the_idle_outcome():
    m = assistant(
        "m2", "s1", created=T0 - 40, completed=T0 - 30, finish="tool-calls", tools=("error",)
    )
    part = replace(
        m.parts[0],
        state=replace(
            m.parts[0].state, error="The user rejected permission to use this specific tool call."
        ),
    )
    m = replace(m, parts=(part,))
    r = derive_server(snap([session("s1")], status={"s1": busy()}, messages={"s1": m}), (), T0, S)[
        (SERVER, "s1")
    ]
    assert r.stale and r.ended == "aborted" and exit_code_for(r) == 3


def test_a_session_that_never_ran_does_not_read_completed():
    r = derive_server(snap([session("s1")]), (), T0, S)[(SERVER, "s1")]
    assert (r.state, r.reason) == ("idle", None)
    assert exit_code_for(r) == 5


def test_bad_urls_and_inputs_are_one_line(capsys, tmp_path, monkeypatch):
    for url in ("http://[::1", "http://localhost:99999", "ftp://x", "not a url"):
        assert main(["status", "--server", url]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "invalid server URL" in err
    assert main(["status", "--server", "http://opencode:s3cret@127.0.0.1:9"]) == 2
    out, err = capsys.readouterr()
    assert "s3cret" not in out + err and "OPENCODE_SERVER_PASSWORD" in err
    bad = tmp_path / "pw"
    bad.write_bytes(b"\xff\xfe\x00bad")
    monkeypatch.delenv("OPENCODE_SERVER_PASSWORD", raising=False)
    monkeypatch.setenv("OPENCODE_SERVER_PASSWORD_FILE", str(bad))
    assert main(["status", "--server", "http://127.0.0.1:9"]) == 2
    assert "not UTF-8" in capsys.readouterr().err
    monkeypatch.delenv("OPENCODE_SERVER_PASSWORD_FILE")
    for flags in (
        ["wait", "s", "--timeout", "nan"],
        ["wait", "s", "--timeout", "inf"],
        ["wait", "s", "--timeout", "-1"],
        ["--grace", "nan", "status"],
        ["--grace", "-1", "status"],
        ["--grace", "soon", "status"],
    ):
        with pytest.raises(SystemExit) as exit_:
            main(flags)
        assert exit_.value.code == 2
        assert "expected a number of seconds >= 0" in capsys.readouterr().err
    monkeypatch.setenv("OCWATCH_CONFIG", str(tmp_path / "nowhere.toml"))
    assert main(["status", "--server", "http://127.0.0.1:9"]) == 2
    said = "nowhere.toml (from $OCWATCH_CONFIG): cannot read it (no such file)"
    assert said in capsys.readouterr().err
    # its servers cannot be told: not the default watched in their place
    assert main(["status"]) == 2
    assert "the config's servers cannot be read" in capsys.readouterr().err


def test_server_text_cannot_drive_the_terminal(capsys):
    evil = "git push\x1b]0;PWNED\x07\x1b[2J\nfake line"
    s = snap([session("s1")], status={"s1": busy()}, permissions=[permission("per_1", "s1", evil)])
    row = derive_server(s, (), T0, S)[(SERVER, "s1")]
    assert report(4, row, None, as_json=False) == 4
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b]0;PWNED" in out and out.count("\n") == 2  # one line per pending request
    assert report(2, None, "error from the server \x1b[2J", as_json=False) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\\x1b[2J" in err
