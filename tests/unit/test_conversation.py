"""A session's conversation (`tui.core.conversation`): from the real server's messages (the
recorded fixtures), merged as newer pages arrive, and never an exception."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests import recorded
from tui.core.conversation import Entry, entries, entry, merge

from .test_activity import JSON


def test_a_failed_run_shows_its_error_and_a_completed_one_its_reply() -> None:
    failed = entry(recorded.last_message("all_states", "failed"))
    assert failed is not None and failed.role == "assistant"
    assert failed.error is not None and failed.error.startswith("APIError")
    done = entry(recorded.last_message("all_states", "completed"))
    assert done is not None and done.text == "All done, the task is complete."
    assert done.model == "fake/fake" and done.agent == "build" and done.finish == "stop"
    assert done.created is not None and done.completed is not None


def test_tool_calls_are_one_line_each() -> None:
    e = entry(recorded.last_message("all_states", "permission"))
    assert e is not None
    assert [t.brief() for t in e.tools] == ["bash: echo scripted"]


def test_a_user_prompt_has_its_model_from_the_nested_field() -> None:
    e = entry(
        {
            "info": {
                "id": "msg_1",
                "role": "user",
                "time": {"created": 1_700_000_000_000},
                "model": {"providerID": "fake", "modelID": "fake"},
            },
            "parts": [{"type": "text", "text": "Fix it"}, {"type": "reasoning", "text": "hmm"}],
        }
    )
    assert e == Entry(
        "msg_1", "user", 1_700_000_000.0, model="fake/fake", text="Fix it", reasoning=3
    )


def E(i: int, text: str = "") -> Entry:  # noqa: N802
    return Entry(f"msg_{i:03d}", "assistant", float(i), text=text)


def test_merge_replaces_appends_and_drops_what_the_tail_lacks() -> None:
    known = [E(1), E(2), E(3, "partial"), E(4)]
    assert merge(known, [E(3, "whole"), E(5)]) == [E(1), E(2), E(3, "whole"), E(5)]
    assert merge([], [E(1)]) == [E(1)] and merge(known, []) == known


def test_entries_skip_what_is_not_a_message() -> None:
    assert [e.id for e in entries([{"info": {"id": "msg_1"}}, "x", {"info": {}}, None])] == [
        "msg_1"
    ]


@settings(max_examples=300, deadline=None)
@given(st.lists(JSON, max_size=6))
def test_any_answer_gives_entries_never_an_exception(messages: list[Any]) -> None:
    items = entries(messages)
    assert merge(items, items) == items
