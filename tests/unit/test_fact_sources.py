"""Where each fact of a row comes from (the detail view's Raw section, `report`'s
`fact_sources`): an event seen after the snapshot began wins over the snapshot's answer, as in
derive; each names its event type or route and its time."""

from __future__ import annotations

from tests.builders import T0, assistant, busy, permission, session, snap
from tui.core.events import Event
from tui.core.journal import Journal
from tui.core.raw import fact_sources


def _journal(*events: tuple[str, dict, float]) -> Journal:
    j = Journal()
    for etype, props, at in events:
        j.add(Event(etype, props, "/p/a", at))
    return j


def test_snapshot_facts_name_their_route_and_the_snapshots_time() -> None:
    s = snap(
        [session("ses_1")],
        status={"ses_1": busy()},
        messages={"ses_1": assistant("msg_1", "ses_1", created=T0 - 20)},
        permissions=[permission("per_1", "ses_1")],
        started_at=T0 - 1,
    )
    assert fact_sources("ses_1", s, None) == (
        ("session info", "snapshot session list", T0 - 1),
        ("status busy", "snapshot GET /session/status", T0 - 1),
        ("last message msg_1", "snapshot GET /session/{id}/message", T0 - 1),
        ("permission per_1", "snapshot GET /permission", T0 - 1),
    )
    quiet = snap([session("ses_2")], started_at=T0 - 1)
    assert ("status absent", "snapshot GET /session/status", T0 - 1) in fact_sources(
        "ses_2", quiet, None
    )


def test_events_after_the_snapshot_win_and_say_when_they_arrived() -> None:
    s = snap(
        [session("ses_1")],
        status={"ses_1": busy()},
        messages={"ses_1": assistant("msg_1", "ses_1", created=T0 - 20)},
        permissions=[permission("per_1", "ses_1")],
        started_at=T0 - 1,
    )
    done = assistant("msg_2", "ses_1", created=T0, completed=T0 + 2).info.to_wire()
    j = _journal(
        ("session.status", {"sessionID": "ses_1", "status": {"type": "idle"}}, T0 + 2.5),
        ("message.updated", {"sessionID": "ses_1", "info": done}, T0 + 3),
        (
            "session.error",
            {"sessionID": "ses_1", "error": {"name": "APIError", "data": {"message": "no"}}},
            T0 + 2,
        ),
        (
            "permission.replied",
            {"sessionID": "ses_1", "requestID": "per_1", "reply": "once"},
            T0 + 1,
        ),
    )
    got = fact_sources("ses_1", s, j.facts())
    assert ("status idle (absent)", "event session.status", T0 + 2.5) in got
    assert ("last message msg_2", "event message.updated", T0 + 3) in got
    assert ("error APIError", "event session.error", T0 + 2) in got
    assert ("permission per_1", "snapshot GET /permission", T0 - 1) in got
    assert ("permission per_1 answered", "event permission.replied", T0 + 1) in got
    assert not any(source.startswith("snapshot GET /session/status") for _f, source, _t in got)


def test_a_request_asked_by_event_names_the_event() -> None:
    ask = permission("per_9", "ses_1").to_wire()
    j = _journal(("permission.asked", ask, T0 + 4))
    got = fact_sources("ses_1", snap([session("ses_1")]), j.facts())
    assert ("permission per_9", "event permission.asked", T0 + 4) in got
    assert fact_sources("ses_x", None, None) == ()


def test_an_update_of_an_older_message_leaves_the_snapshots_as_the_source() -> None:
    """derive keeps the snapshot's last message when the journal only updated an older one
    (merge_message): the source says so."""
    s = snap(
        [session("ses_1")],
        messages={"ses_1": assistant("msg_5", "ses_1", created=T0 - 2)},
        started_at=T0 - 1,
    )
    old = assistant("msg_2", "ses_1", created=T0 - 30, completed=T0 - 20).info.to_wire()
    j = _journal(("message.updated", {"sessionID": "ses_1", "info": old}, T0))
    got = fact_sources("ses_1", s, j.facts())
    assert ("last message msg_5", "snapshot GET /session/{id}/message", T0 - 1) in got
    assert not any(f.startswith("last message msg_2") for f, _s, _t in got)


def test_what_derive_did_not_read_is_not_named_as_a_source() -> None:
    """The journal-over-snapshot rules are read, not copied (tui.core.journal): the active
    list's `running` once a status event called the session idle, and the snapshot's last
    message when an older copy of it (not done) arrived later, are what derive reads."""
    s = snap(
        [session("ses_1")],
        messages={"ses_1": assistant("msg_5", "ses_1", created=T0 - 9, completed=T0 - 2)},
        active=frozenset({"ses_1"}),
        started_at=T0 - 1,
    )
    assert ("status running", "snapshot GET /api/session/active", T0 - 1) in fact_sources(
        "ses_1", s, None
    )
    late = assistant("msg_5", "ses_1", created=T0 - 9).info.to_wire()  # not done: older
    j = _journal(
        ("session.status", {"sessionID": "ses_1", "status": {"type": "idle"}}, T0),
        ("message.updated", {"sessionID": "ses_1", "info": late}, T0 + 1),
    )
    got = fact_sources("ses_1", s, j.facts())
    assert not any(f == "status running" for f, _s, _t in got)
    assert ("last message msg_5", "snapshot GET /session/{id}/message", T0 - 1) in got
    assert not any(source == "event message.updated" for _f, source, _t in got)
