"""The wire models: tolerant parsing of what the real server sends, and the slotted layout."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from tests.recorded import answer, last_message
from tui.core.models import (
    Message,
    PermissionRequest,
    QuestionRequest,
    Session,
    SessionStatus,
)


def test_recorded_sessions_parse_with_aliases_and_unknown_fields_dropped():
    raw = answer("all_states", "/experimental/session")
    child = next(item for item in raw if item.get("parentID"))
    assert "slug" in child and "summary" in child  # fields ocwatch does not model
    s = Session.parse(child)
    assert s.id == child["id"]
    assert s.parent_id == child["parentID"]
    assert s.project_id == child["projectID"]
    assert s.time.updated == child["time"]["updated"]
    assert s.tokens is not None and s.tokens.total == (
        child["tokens"]["input"]
        + child["tokens"]["output"]
        + child["tokens"]["reasoning"]
        + sum(child["tokens"]["cache"].values())
    )
    assert not hasattr(s, "slug")


def test_recorded_messages_permissions_and_questions_parse():
    busy_tool = Message.parse(last_message("all_states", "parent"))  # its task tool runs
    assert any(p.is_open_tool for p in busy_tool.parts)
    failed = Message.parse(last_message("all_states", "failed"))
    assert failed.info.error is not None and failed.info.error.text.startswith(
        failed.info.error.name
    )
    (perm,) = [PermissionRequest.parse(p) for p in answer("all_states", "/permission")]
    assert perm.session_id and perm.permission
    (question,) = [QuestionRequest.parse(q) for q in answer("all_states", "/question")]
    assert question.questions and question.questions[0].options


def test_field_names_and_wire_names_both_build_a_model():
    by_wire = Session.parse({"id": "s", "parentID": "p", "projectID": "x"})
    by_name = Session(id="s", parent_id="p", project_id="x")
    assert by_wire == by_name


def test_an_idle_reason_from_a_newer_server_is_kept():
    st = SessionStatus.parse({"type": "idle", "reason": "aborted", "since": 1})
    assert (st.type, st.reason) == ("idle", "aborted")


def test_malformed_input_raises_validation_error():
    with pytest.raises(ValidationError):
        Session.parse({"title": "no id"})
    with pytest.raises(ValidationError):
        Message.parse({"info": "not an object"})
    with pytest.raises(ValidationError):
        SessionStatus.parse(["busy"])


def test_models_are_frozen_and_slotted():
    s = Session.parse({"id": "s", "time": {"updated": 5}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.title = "changed"  # type: ignore[misc]
    # fields inline, no per-object dict: the memory figure in models.py depends on it
    assert not hasattr(s, "__dict__") and not hasattr(s.time, "__dict__")
    assert dataclasses.replace(s, title="t").title == "t"


def test_to_wire_round_trips_and_leaves_unset_optionals_out():
    raw = last_message("all_states", "completed")
    msg = Message.parse(raw)
    wire = msg.to_wire()
    assert Message.parse(wire) == msg
    assert wire["info"]["sessionID"] == raw["info"]["sessionID"]
    assert "parent_id" not in Session(id="s").to_wire()
    assert "parentID" not in Session(id="s").to_wire()
