"""One test (at least) per rule of the decision order (docs/STATES.md#how-it-decides), edges
included."""

from __future__ import annotations

from dataclasses import replace

from tests.builders import (
    SERVER,
    T0,
    assistant,
    busy,
    entries,
    event,
    message_event,
    permission,
    question,
    retry,
    session,
    snap,
    status_event,
    user,
)
from tui.core.derive import DeriveMemo, Link, derive_server
from tui.core.models import Message, SessionStatus
from tui.core.settings import Settings
from tui.core.view import SessionRow

S = Settings(grace=3.0)
NOW = T0


def row(snapshot, sid="s1", journal=(), now=NOW, **kw):
    rows = derive_server(snapshot, journal, now, S, **kw)
    return rows[(SERVER, sid)]


# -- 1. input -------------------------------------------------------------------------------------
def test_open_permission_is_input_even_though_server_says_busy():
    s = snap(
        [session("s1")],
        status={"s1": busy()},
        messages={"s1": assistant("m1", "s1", created=NOW - 10, tools=("running",))},
        permissions=[permission("per_1", "s1", "git push origin main")],
    )
    r = row(s)
    assert r.state == "input" and r.reason is None and not r.stale
    assert [p.id for p in r.pending] == ["per_1"]
    assert r.pending[0].kind == "permission"
    assert "git push origin main" in r.pending[0].summary
    assert any("server reports busy" in e for e in r.evidence)


def test_open_question_is_input_with_what_is_asked():
    s = snap(
        [session("s1")],
        status={"s1": busy()},
        questions=[question("que_1", "s1", "Which database?")],
    )
    r = row(s)
    assert r.state == "input"
    assert r.pending[0].kind == "question"
    assert "Which database?" in r.pending[0].summary
    assert r.pending[0].request.questions[0].options[0].label == "Postgres"


def test_child_request_rolls_up_to_every_ancestor():
    s = snap(
        [session("root"), session("mid", parent="root"), session("leaf", parent="mid")],
        status={"root": busy(), "mid": busy(), "leaf": busy()},
        questions=[question("que_1", "leaf")],
    )
    rows = derive_server(s, (), NOW, S)
    for sid in ("root", "mid", "leaf"):
        r = rows[(SERVER, sid)]
        assert r.state == "input", sid
        assert [p.session_id for p in r.pending] == ["leaf"]
    assert any("sub-agent leaf" in e for e in rows[(SERVER, "root")].evidence)
    assert rows[(SERVER, "root")].children == ("mid",)
    assert rows[(SERVER, "leaf")].parent_id == "mid"


def test_asked_event_opens_and_replied_event_closes_the_request():
    s = snap([session("s1")], status={"s1": busy()})
    asked = event("permission.asked", permission("per_9", "s1").to_wire(), NOW - 2)
    assert row(s, journal=entries(asked)).state == "input"
    replied = event(
        "permission.replied", {"sessionID": "s1", "requestID": "per_9", "reply": "once"}, NOW - 1
    )
    assert row(s, journal=entries(asked, replied)).state == "busy"


def test_question_rejected_event_closes_snapshot_question():
    s = snap([session("s1")], status={"s1": busy()}, questions=[question("que_1", "s1")])
    rej = event("question.rejected", {"sessionID": "s1", "requestID": "que_1"}, NOW - 1)
    assert row(s, journal=entries(rej)).state == "busy"


def test_input_wins_over_retry():
    s = snap([session("s1")], status={"s1": retry()}, permissions=[permission("per_1", "s1")])
    assert row(s).state == "input"


# -- 2. retry -------------------------------------------------------------------------------------
def test_retry_status_is_retry_with_attempt_message_and_next():
    s = snap([session("s1")], status={"s1": retry(3, "Provider overloaded", NOW + 7)})
    r = row(s)
    assert (r.state, r.reason, r.stale) == ("retry", None, False)
    assert r.retry_attempt == 3 and r.retry_message == "Provider overloaded"
    assert r.retry_next == NOW + 7
    assert "retry attempt 3: Provider overloaded" in r.evidence[0]


# -- 3. busy and stale ----------------------------------------------------------------------------
def completed(sid="s1", at=NOW - 60, finish="stop", **kw):
    return assistant("m2", sid, created=at - 5, completed=at, finish=finish, **kw)


def test_busy_with_streaming_message_is_busy_not_stale():
    s = snap(
        [session("s1")],
        status={"s1": busy()},
        messages={"s1": assistant("m1", "s1", created=NOW - 600)},
    )
    r = row(s)
    assert (r.state, r.stale) == ("busy", False)


def test_silence_alone_is_not_evidence_long_tool_call_stays_busy():
    s = snap(
        [session("s1")],
        status={"s1": busy()},
        messages={"s1": assistant("m1", "s1", created=NOW - 3600, tools=("running",))},
    )
    r = row(s)
    assert (r.state, r.stale) == ("busy", False)
    assert any("tool bash running" in e for e in r.evidence)


def test_stale_busy_after_grace_with_evidence():
    s = snap([session("s1")], status={"s1": busy()}, messages={"s1": completed(at=NOW - 42)})
    r = row(s)
    assert r.state == "busy" and r.stale
    text = "\n".join(r.evidence)
    assert "STALE" in r.evidence[0]
    assert "finish: stop" in text and "42s ago" in text
    assert "no tool call pending or running" in text


def test_not_stale_within_grace():
    s = snap([session("s1")], status={"s1": busy()}, messages={"s1": completed(at=NOW - 2)})
    r = row(s)
    assert r.state == "busy" and not r.stale
    assert any("grace" in e for e in r.evidence)


def test_tool_calls_finish_is_not_terminal():
    s = snap(
        [session("s1")],
        status={"s1": busy()},
        messages={"s1": completed(at=NOW - 100, finish="tool-calls")},
    )
    assert not row(s).stale


def test_open_tool_part_blocks_stale():
    for st in ("pending", "running"):
        s = snap(
            [session("s1")],
            status={"s1": busy()},
            messages={"s1": completed(at=NOW - 100, tools=("completed", st))},
        )
        assert not row(s).stale, st
    s = snap(
        [session("s1")],
        status={"s1": busy()},
        messages={"s1": completed(at=NOW - 100, tools=("completed", "error"))},
    )
    assert row(s).stale


def test_busy_child_blocks_stale_of_parent():
    s = snap(
        [session("p"), session("c", parent="p")],
        status={"p": busy(), "c": busy()},
        messages={"p": completed("p", at=NOW - 100), "c": assistant("mc", "c", created=NOW - 10)},
    )
    r = row(s, "p")
    assert r.state == "busy" and not r.stale
    assert any("sub-agent busy: c" in e for e in r.evidence)


def test_last_message_user_prompt_while_busy_is_a_starting_run_not_stale():
    s = snap(
        [session("s1")], status={"s1": busy()}, messages={"s1": user("m9", "s1", created=NOW - 100)}
    )
    r = row(s)
    assert r.state == "busy" and not r.stale


def test_stale_with_error_message():
    s = snap(
        [session("s1")],
        status={"s1": busy()},
        messages={"s1": completed(at=NOW - 30, error="APIError")},
    )
    r = row(s)
    assert r.stale and r.error == "APIError: APIError happened"


def test_busy_event_after_completion_restarts_the_grace():
    s = snap([session("s1")], status={}, messages={"s1": completed(at=NOW - 60)})
    r = row(s, journal=entries(status_event("s1", "busy", NOW - 1)))
    assert r.state == "busy" and not r.stale


def test_listed_by_api_session_active_is_busy():
    s = snap(
        [session("s1")],
        status={},
        active=frozenset({"s1"}),
        messages={"s1": assistant("m1", "s1", created=NOW - 5)},
    )
    r = row(s)
    assert r.state == "busy"
    assert "/api/session/active" in r.evidence[0]


# -- 4. idle with a reason ------------------------------------------------------------------------
def test_fresh_session_is_idle_with_no_reason():
    r = row(snap([session("s1")]))
    assert (r.state, r.reason, r.settled) == ("idle", None, True)


def test_idle_completed():
    r = row(snap([session("s1")], messages={"s1": completed(at=NOW - 5)}))
    assert (r.state, r.reason) == ("idle", "completed")


def test_idle_aborted():
    m = completed(at=NOW - 5, error="MessageAbortedError")
    r = row(snap([session("s1")], messages={"s1": m}))
    assert (r.state, r.reason) == ("idle", "aborted")


def test_idle_aborted_when_the_message_closed_with_no_finish_no_error_and_no_output():
    """1.18.33 closes the assistant message of a run aborted while it waits to retry with
    neither a finish nor an error nor any part (and sends no session.error): no model answer
    completed it. A shell command the user ran (`!cmd`) has no finish either, but its tool
    part: completed (found by a review of the first version of this rule)."""
    m = assistant("m2", "s1", created=NOW - 9, completed=NOW - 5)
    r = row(snap([session("s1")], messages={"s1": m}))
    assert (r.state, r.reason, r.settled) == ("idle", "aborted", True)
    assert "no finish, no error and no output" in r.evidence[0]
    shell = assistant("m2", "s1", created=NOW - 9, completed=NOW - 5, tools=("completed",))
    r = row(snap([session("s1")], messages={"s1": shell}))
    assert (r.state, r.reason) == ("idle", "completed")
    assert r.evidence[0].endswith("(finish: none)")
    # a finish of its own, terminal, completes it
    m = assistant("m2", "s1", created=NOW - 9, completed=NOW - 5, finish="length")
    assert row(snap([session("s1")], messages={"s1": m})).reason == "completed"
    # and the server, still reading busy past the grace period, is stale with that ending
    m = assistant("m2", "s1", created=NOW - 9, completed=NOW - 5)
    s = snap([session("s1")], status={"s1": busy()}, messages={"s1": m}, started_at=NOW - 1)
    r = row(s)
    assert (r.state, r.stale, r.ended) == ("busy", True, "aborted")


def test_idle_error_for_any_other_error():
    for name in ("APIError", "ProviderAuthError", "UnknownError", "ContextOverflowError"):
        r = row(snap([session("s1")], messages={"s1": completed(at=NOW - 5, error=name)}))
        assert (r.state, r.reason) == ("idle", "error"), name
        assert r.error and r.error.startswith(name)


def test_server_reason_wins():
    m = completed(at=NOW - 5, error="APIError")
    s = snap(
        [session("s1")],
        status={"s1": SessionStatus(type="idle", reason="completed")},
        messages={"s1": m},
    )
    assert (row(s).state, row(s).reason) == ("idle", "completed")
    ev = status_event("s1", "idle", NOW - 1, reason="aborted")
    s2 = snap([session("s1")], messages={"s1": completed(at=NOW - 5)})
    assert row(s2, journal=entries(ev)).reason == "aborted"


def test_session_error_event_gives_reason_before_the_message_is_persisted():
    # the real server sends session.error, status idle and session.idle before the
    # message.updated that carries the error
    s = snap(
        [session("s1")],
        status={"s1": busy()},
        messages={"s1": assistant("m1", "s1", created=NOW - 3)},
    )
    j = entries(
        event(
            "session.error",
            {"sessionID": "s1", "error": {"name": "APIError", "data": {"message": "bad"}}},
            NOW - 0.3,
        ),
        status_event("s1", "idle", NOW - 0.2),
        event("session.idle", {"sessionID": "s1"}, NOW - 0.1),
    )
    r = row(s, journal=j)
    assert (r.state, r.reason, r.settled) == ("idle", "error", True)


def test_idle_twice_for_one_run_changes_nothing():
    s = snap(
        [session("s1")],
        status={"s1": busy()},
        messages={"s1": assistant("m1", "s1", created=NOW - 20)},
    )
    done = message_event(completed(at=NOW - 10), NOW - 10)
    once = entries(
        done,
        status_event("s1", "idle", NOW - 9.9),
        event("session.idle", {"sessionID": "s1"}, NOW - 9.8),
    )
    twice = entries(*[e.event for e in once], event("session.idle", {"sessionID": "s1"}, NOW - 1))
    a, b = row(s, journal=once), row(s, journal=twice)
    assert (a.state, a.reason) == ("idle", "completed")
    assert (a.state, a.reason, a.stale, a.since, a.evidence) == (
        b.state,
        b.reason,
        b.stale,
        b.since,
        b.evidence,
    )


def refused(text: str, at: float = NOW - 30):
    m = assistant("m2", "s1", created=at - 5, completed=at, finish="tool-calls", tools=("error",))
    part = replace(m.parts[0], state=replace(m.parts[0].state, error=text))
    return replace(m, parts=(part,))


def test_rejected_permission_ends_the_run_as_aborted():
    # observed on 1.18.33: the step completes with finish tool-calls, no error on the message,
    # the tool part errors with this text, and the session goes idle
    m = refused("The user rejected permission to use this specific tool call.")
    r = row(snap([session("s1")], messages={"s1": m}))
    assert (r.state, r.reason, r.settled) == ("idle", "aborted", True)
    assert "refused tool bash" in r.evidence[0]


def test_dismissed_question_ends_the_run_as_aborted():
    r = row(snap([session("s1")], messages={"s1": refused("The user dismissed this question")}))
    assert (r.state, r.reason) == ("idle", "aborted")


def test_tool_error_that_is_not_a_refusal_does_not_end_the_run():
    r = row(snap([session("s1")], messages={"s1": refused("exit code 1")}))
    assert (r.state, r.reason) == ("unknown", "interrupted")
    s = snap([session("s1")], status={"s1": busy()}, messages={"s1": refused("exit code 1")})
    assert not row(s).stale


FEEDBACK = (
    "The user rejected permission to use this specific tool call with the following feedback: "
    "use rsync"
)  # as 1.18.33 words a rejection with a message


def test_a_rejection_with_a_message_does_not_end_the_run():
    # the server hands the message to the model and a next step follows: no outcome, and a
    # server that says busy is no stale claim, one that says idle with no next step is a cut
    assert (row(snap([session("s1")], messages={"s1": refused(FEEDBACK)})).reason) == (
        "interrupted"
    )
    r = row(snap([session("s1")], status={"s1": busy()}, messages={"s1": refused(FEEDBACK)}))
    assert (r.state, r.stale, r.settled) == ("busy", False, True)
    assert "next step pending" in r.evidence[-1]


def test_busy_after_a_refusal_is_stale():
    s = snap(
        [session("s1")],
        status={"s1": busy()},
        messages={"s1": refused("The user rejected permission to use this tool call.")},
    )
    assert row(s).stale


# -- 5. unknown -----------------------------------------------------------------------------------
def test_absent_with_unfinished_assistant_message_is_unknown_interrupted():
    s = snap(
        [session("s1")],
        messages={"s1": assistant("m1", "s1", created=NOW - 300, tools=("running",))},
    )
    r = row(s)
    assert (r.state, r.reason, r.settled) == ("unknown", "interrupted", True)
    assert any("never completed" in e for e in r.evidence)


def test_absent_unfinished_within_grace_keeps_the_run_busy_but_unsettled():
    """Idle reported before the final message is saved is no new state: the row stays busy
    (finishing, unsettled); past the grace period without the message it is interrupted."""
    s = snap(
        [session("s1")],
        status={"s1": busy()},
        messages={"s1": assistant("m1", "s1", created=NOW - 30)},
    )
    r = row(s, journal=entries(status_event("s1", "idle", NOW - 1)))
    assert (r.state, r.reason, r.settled, r.settling) == ("busy", None, False, "finishing")
    assert any("waiting for the final message" in e for e in r.evidence)
    later = row(s, journal=entries(status_event("s1", "idle", NOW - 1)), now=NOW + 5)
    assert (later.state, later.reason, later.settled) == ("unknown", "interrupted", True)


def test_unsettled_row_keeps_the_last_settled_state():
    s = snap([session("s1")], messages={"s1": completed(at=NOW - 60)})
    before = derive_server(s, (), NOW, S)
    assert before[(SERVER, "s1")].state == "idle"
    prompt = message_event(user("m2", "s1", created=NOW + 1), NOW + 1)
    r = derive_server(s, entries(prompt), NOW + 1.5, S, previous=before)[(SERVER, "s1")]
    assert (r.state, r.reason, r.settled, r.settling) == ("idle", "completed", False, "starting")
    assert r.since == before[(SERVER, "s1")].since


def test_final_message_after_idle_settles_as_completed():
    s = snap(
        [session("s1")],
        status={"s1": busy()},
        messages={"s1": assistant("m1", "s1", created=NOW - 30)},
    )
    j = entries(
        status_event("s1", "idle", NOW - 1),
        message_event(
            assistant("m1", "s1", created=NOW - 30, completed=NOW - 1, finish="stop"), NOW - 0.9
        ),
    )
    r = row(s, journal=j)
    assert (r.state, r.reason, r.settled) == ("idle", "completed", True)


def test_user_prompt_without_reply_past_grace_is_unknown():
    s = snap([session("s1")], messages={"s1": user("m1", "s1", created=NOW - 60)})
    r = row(s)
    assert r.state == "unknown" and r.settled
    assert any("has no reply" in e for e in r.evidence)


def test_user_prompt_within_grace_is_a_starting_run_unsettled():
    s = snap([session("s1")], messages={"s1": user("m1", "s1", created=NOW - 1)})
    r = row(s)
    assert (r.state, r.settled, r.settling, r.since) == ("busy", False, "starting", NOW - 1)


def test_tool_calls_step_without_follow_up_and_absent_is_unknown():
    s = snap([session("s1")], messages={"s1": completed(at=NOW - 60, finish="tool-calls")})
    r = row(s)
    assert (r.state, r.reason) == ("unknown", "interrupted")


def test_unreachable_server_makes_rows_unknown_with_last_known_state():
    s = snap([session("s1")], status={"s1": busy()})
    r = row(s, link=Link(False, "cannot connect", NOW - 10))
    assert (r.state, r.settled) == ("unknown", False)
    assert "server unreachable: cannot connect" in r.evidence[0]
    assert "last known state: busy" in r.evidence[0]
    assert r.last_known == ("busy", None, False) and r.since == NOW - 10
    assert r.to_json()["last_known"] == {"state": "busy", "reason": None, "stale": False}


def test_an_outage_keeps_each_rows_last_known_state_and_its_place():
    """Every row of a server that went down is unknown (the truth now) and carries what its
    last facts said; the state order ranks it by that, so the table keeps its order."""
    from tui.core.view import attention_rank

    s = snap(
        [session("s1"), session("s2"), session("s3")],
        status={"s1": busy()},
        messages={"s2": completed(), "s3": completed(finish="stop", error="APIError")},
        permissions=[permission("per_1", "s3")],
    )
    up = derive_server(s, (), NOW, S)
    down = derive_server(s, (), NOW + 5, S, link=Link(False, "cannot connect", NOW + 1))
    for sid in ("s1", "s2", "s3"):
        was, now_ = up[(SERVER, sid)], down[(SERVER, sid)]
        assert (now_.state, now_.settling) == ("unknown", "unreachable")
        assert now_.last_known == (was.state, was.reason, was.stale)
        assert attention_rank(now_) == attention_rank(was)
    assert down[(SERVER, "s3")].last_known.said() == "input"
    assert down[(SERVER, "s2")].last_known.said() == "idle (completed)"
    back = derive_server(s, (), NOW + 9, S, previous=down)
    assert all(r.last_known is None for r in back.values())


# -- the journal on top of the snapshot -----------------------------------------------------------
def test_status_events_override_the_snapshot():
    s = snap([session("s1")], messages={"s1": completed(at=NOW - 100)})
    r = row(s, journal=entries(status_event("s1", "busy", NOW - 1)))
    assert r.state == "busy"
    r = row(s, journal=entries(status_event("s1", "retry", NOW - 1, attempt=1, message="x")))
    assert r.state == "retry"


def test_session_created_after_snapshot_appears_and_deleted_disappears():
    s = snap([session("s1")])
    created = event(
        "session.created", {"sessionID": "s2", "info": session("s2").to_wire()}, NOW - 1
    )
    rows = derive_server(s, entries(created), NOW, S)
    assert (SERVER, "s2") in rows
    deleted = event(
        "session.deleted", {"sessionID": "s1", "info": session("s1").to_wire()}, NOW - 0.5
    )
    rows = derive_server(s, entries(created, deleted), NOW, S)
    assert set(rows) == {(SERVER, "s2")}


def test_malformed_event_payload_is_counted_not_fatal():
    s = snap([session("s1")], status={"s1": busy()})
    bad = event("message.updated", {"sessionID": "s1", "info": {"role": "assistant"}}, NOW - 1)
    r = row(s, journal=entries(bad))
    assert r.state == "busy"


def test_since_comes_from_the_facts_not_from_when_ocwatch_looked():
    """Busy since its run began (the prompt that the assistant message answers, dated by its id),
    whatever this monitor saw before: a monitor started later gives the same time."""
    prompt_at = 1_795_985_018.173  # msg_2290c8d3d001... was created then
    msg = Message.parse(
        {
            "info": {
                "id": "msg_2290c8d44001UkHwhEkFTPR9ND",
                "sessionID": "s1",
                "role": "assistant",
                "parentID": "msg_2290c8d3d001diUAnKq6g69Hqu",
                "time": {"created": (prompt_at + 5) * 1000},
            },
            "parts": [],
        }
    )
    now = prompt_at + 60
    s = snap([session("s1")], status={"s1": busy()}, messages={"s1": msg}, started_at=now - 1)
    early = derive_server(s, entries(status_event("s1", "busy", prompt_at + 0.2)), now, S)
    late = derive_server(s, (), now + 20, S)
    assert early[(SERVER, "s1")].since == late[(SERVER, "s1")].since == prompt_at
    s_idle = snap([session("s1")], messages={"s1": completed(at=now + 9)})
    after = derive_server(s_idle, (), now + 10, S, previous=early)
    assert after[(SERVER, "s1")].since == now + 9


def test_since_without_facts_is_first_sight_and_says_so():
    s = snap([session("s1")], status={"s1": busy()})
    first = derive_server(s, (), NOW, S)[(SERVER, "s1")]
    assert first.since == NOW
    assert any("first saw it" in e for e in first.evidence)
    again = derive_server(s, (), NOW + 10, S, previous={(SERVER, "s1"): first})
    assert again[(SERVER, "s1")].since == NOW


def test_input_since_the_request_was_made_by_its_id():
    asked_at = 1_795_985_018.645  # per_2290c8f15001...
    s = snap(
        [session("s1")],
        status={"s1": busy()},
        permissions=[permission("per_2290c8f150015gXC5iuEjQuSMI", "s1")],
        started_at=asked_at + 30,
    )
    assert row(s, now=asked_at + 31).since == asked_at
    # a request id that carries no time: when the stream said it was asked
    asked = event("permission.asked", permission("per_9", "s1").to_wire(), NOW - 2)
    assert (
        row(snap([session("s1")], status={"s1": busy()}), journal=entries(asked)).since == NOW - 2
    )


def test_time_in_state_survives_an_outage():
    """While the server is unreachable every row reads unknown; back online, a session that
    completed long before keeps its completion time (and alerts keyed on it do not repeat)."""
    s = snap([session("s1")], messages={"s1": completed(at=NOW - 7200)})
    before = derive_server(s, (), NOW, S)
    assert before[(SERVER, "s1")].since == NOW - 7200
    down = derive_server(
        s, (), NOW + 10, S, previous=before, link=Link(False, "cannot connect", NOW + 5)
    )
    assert down[(SERVER, "s1")].state == "unknown"
    back = derive_server(s, (), NOW + 60, S, previous=down)
    assert (back[(SERVER, "s1")].state, back[(SERVER, "s1")].since) == ("idle", NOW - 7200)


def test_cost_and_tokens_fall_back_to_last_message():
    s = snap([session("s1")], messages={"s1": completed(at=NOW - 5, cost=0.25)})
    assert row(s).cost == 0.25


def test_a_refused_tool_is_the_run_ending_not_busy_again():
    """Rejecting a permission ends the run; 1.18.33 reads busy for ~100 ms until it saves the
    step: that moment is no new state (unsettled, the waiting row stays waiting)."""
    part = {
        "id": "prt_1",
        "sessionID": "s1",
        "messageID": "m1",
        "type": "tool",
        "tool": "bash",
        "callID": "c1",
        "state": {
            "status": "error",
            "error": "The user rejected permission to use this specific tool call.",
            "time": {"start": (NOW - 5) * 1000, "end": (NOW - 1) * 1000},
        },
    }
    msg = Message.parse(
        {
            "info": {
                "id": "m1",
                "sessionID": "s1",
                "role": "assistant",
                "time": {"created": (NOW - 6) * 1000},
            },
            "parts": [part],
        }
    )
    s = snap([session("s1")], status={"s1": busy()}, messages={"s1": msg})
    waiting = row(
        snap(
            [session("s1")],
            status={"s1": busy()},
            permissions=[permission("per_1", "s1")],
            messages={"s1": msg},
        )
    )
    r = row(s, previous={(SERVER, "s1"): waiting})
    assert (r.state, r.settled, r.settling) == ("input", False, "finishing")
    assert row(s, now=NOW + 5).settled  # past the grace period it is what the server says


def refusing(text: str) -> tuple[Message, SessionRow]:
    """A step still open whose tool the user just refused (its part errored with `text` a
    second ago, the message not completed yet), and the row that waited for the permission."""
    errored = refused(text, at=NOW - 1)
    (tool,) = errored.parts
    assert tool.state is not None
    tool = replace(
        tool, state=replace(tool.state, time={"start": (NOW - 3) * 1000, "end": (NOW - 1) * 1000})
    )
    step = replace(
        errored,
        info=replace(errored.info, time=replace(errored.info.time, completed=None)),
        parts=(tool,),
    )
    waiting = row(
        snap(
            [session("s1")],
            status={"s1": busy()},
            permissions=[permission("per_1", "s1")],
            messages={"s1": step},
        )
    )
    assert waiting.state == "input" and waiting.pending
    return step, waiting


def test_a_rejection_with_a_message_is_the_run_going_on_at_once():
    """Rejecting with a message: the step's tool errors with the feedback and the run goes on
    (recorded on 1.18.33): busy, settled, from that moment; not a run ending, not held waiting
    with nothing asked."""
    step, waiting = refusing(FEEDBACK)
    s = snap([session("s1")], status={"s1": busy()}, messages={"s1": step})
    r = row(s, previous={(SERVER, "s1"): waiting})
    assert (r.state, r.settled, r.settling, r.pending) == ("busy", True, None, ())
    assert not any("ending" in line for line in r.evidence), r.evidence


def test_a_row_held_waiting_while_the_run_ends_says_what_it_waited_for():
    """Rejected: the run is ending (unsettled) and the row stays waiting; an input row with
    nothing asked would say nothing of what it is, so it keeps the request it waited for, the
    same objects (a row decided again equal is the previous object)."""
    step, waiting = refusing("The user rejected permission to use this specific tool call.")
    s = snap([session("s1")], status={"s1": busy()}, messages={"s1": step})
    r = row(s, previous={(SERVER, "s1"): waiting})
    assert (r.state, r.settled, r.settling) == ("input", False, "finishing")
    assert r.pending is waiting.pending
    first = derive_server(s, (), NOW, S, previous={(SERVER, "s1"): waiting}, memo=DeriveMemo())
    # decided again (a memo of its own: no reuse), the same row: the previous object
    again = derive_server(s, (), NOW + 0.5, S, previous=first, memo=DeriveMemo())
    assert again[(SERVER, "s1")] is first[(SERVER, "s1")]
    assert row(s, now=NOW + 5, previous={(SERVER, "s1"): r}).pending == ()  # settled: busy


def test_a_late_older_copy_of_a_message_does_not_undo_its_end() -> None:
    """Issue 40: a late copy of a message (not completed) after a snapshot showed it completed
    made the row unknown (interrupted) for minutes. A completed message never regresses, in the
    journal or over the snapshot."""
    from tests.builders import assistant, entries, message_event, session, snap
    from tui.core.derive import derive_server
    from tui.core.settings import Settings

    done = assistant("msg_1", "ses_1", created=T0 - 20, completed=T0 - 10, finish="stop")
    running = assistant("msg_1", "ses_1", created=T0 - 20)
    s = snap([session("ses_1")], messages={"ses_1": done})
    for evs in (
        [message_event(running, T0 - 1)],  # over the snapshot
        [message_event(done, T0 - 5), message_event(running, T0 - 1)],  # in the journal
    ):
        rows = derive_server(s, entries(*evs), T0 + 60, Settings())
        (row,) = rows.values()
        assert (row.state, row.reason) == ("idle", "completed"), row.evidence


def test_busy_again_after_input_or_a_retry_counts_from_then_not_from_the_runs_start():
    """A run that waited 5 minutes for a permission: once answered, its time in state counts
    from when it turned busy again, and keeps counting from there; a new run counts from its
    own start; a run first seen busy counts from its start."""
    msg = assistant("m1", "s1", created=NOW - 600, tools=("running",))
    asking = snap(
        [session("s1")],
        status={"s1": busy()},
        messages={"s1": msg},
        permissions=[permission("per_1", "s1")],
    )
    running = replace(asking, permissions=[])
    first = derive_server(running, (), NOW, S)
    assert first[(SERVER, "s1")].since == NOW - 600  # first sight: since the run began
    waiting = derive_server(asking, (), NOW, S)
    assert waiting[(SERVER, "s1")].state == "input"
    again = derive_server(running, (), NOW + 300, S, previous=waiting)
    assert again[(SERVER, "s1")].state == "busy"
    assert again[(SERVER, "s1")].since == NOW + 300
    later_ = derive_server(running, (), NOW + 360, S, previous=again)
    assert later_[(SERVER, "s1")].since == NOW + 300  # carried, not back to the run's start
    retrying = replace(running, status={"s1": retry(next_=NOW + 400)})
    r = derive_server(retrying, (), NOW + 390, S, previous=later_)
    assert r[(SERVER, "s1")].state == "retry"
    through = derive_server(running, (), NOW + 420, S, previous=r)
    assert through[(SERVER, "s1")].since == NOW + 420
    new_run = replace(running, messages={"s1": assistant("m9", "s1", created=NOW + 500)})
    fresh = derive_server(new_run, (), NOW + 510, S, previous=through)
    assert fresh[(SERVER, "s1")].since == NOW + 500  # the new run's own start is later


def test_a_todo_list_change_moves_the_sessions_updated_time_and_nothing_else():
    """todo.updated (the whole list, on a live stream) is no longer dropped as noise: its
    session's `updated` moves (the details re-read its todos then, not every 2 s); its state
    is what it was."""
    from tui.core.events import EventParser

    s = snap([session("s1")], status={"s1": busy()}, messages={"s1": completed(at=NOW - 60)})
    parsed = EventParser().parse(
        '{"payload":{"id":"evt_t","type":"todo.updated","properties":'
        '{"sessionID":"s1","todos":[{"content":"x","status":"pending"}]}}}',
        NOW - 1,
    )
    assert parsed.event is not None
    before = row(s)
    after = row(s, journal=entries(parsed.event))
    assert after.updated == NOW - 1 and (before.updated or 0) < NOW - 1
    assert (after.state, after.reason, after.stale) == (before.state, before.reason, before.stale)
