"""What a session is doing (`tui.core.activity`), from messages the real server sent (the
recorded fixtures) and from hostile ones."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests import recorded
from tui.core.activity import (
    Activity,
    TodoItem,
    TokenSplit,
    activity_from,
    model_limits,
    reply_end,
    summarize_todos,
    todo_items,
    tool_summary,
)

LIMITS = {("fake", "fake"): 100_000}


def of(name: str, role: str, **kw: Any) -> Activity:
    msg = recorded.last_message(name, role)
    return activity_from(recorded.session(name, role), [msg], fetched_at=1.0, limits=LIMITS, **kw)


def test_a_completed_run_has_its_reply_model_tokens_and_context() -> None:
    a = of("all_states", "completed")
    assert a.reply == "All done, the task is complete."
    assert a.model == "fake/fake" and a.agent == "build"
    assert a.tokens == TokenSplit(input=100, output=20)
    assert a.context == 120 and a.context_limit == 100_000
    assert a.context_share == 120 / 100_000
    assert a.running == () and a.last_tool is None
    assert a.messages == 1 and not a.more
    assert of("all_states", "completed", limit=1).more  # as many read as asked: maybe more


def test_a_run_waiting_for_a_permission_has_its_tool_running() -> None:
    a = of("all_states", "permission")
    assert [r.brief() for r in a.running] == ["bash: echo scripted"]
    assert a.running[0].status == "running" and a.running[0].started is not None
    assert a.reply == "I will run a command."


def test_a_sub_agent_task_and_a_question_say_what_they_are_about() -> None:
    assert [r.brief() for r in of("all_states", "parent").running] == ["task: Scripted sub-task"]
    (question,) = of("all_states", "question").running
    assert question.brief() == "question: Which colour should I use?"


def test_no_limits_no_share() -> None:
    msg = recorded.last_message("all_states", "completed")
    a = activity_from("s", [msg], fetched_at=0)
    assert a.context == 120 and a.context_limit is None and a.context_share is None


def test_only_the_newest_assistant_message_has_tools_running_now() -> None:
    old = {
        "info": {"role": "assistant"},
        "parts": [
            {
                "type": "tool",
                "tool": "bash",
                "state": {"status": "running", "input": {"command": "make old"}},
            }
        ],
    }
    new = {
        "info": {"role": "assistant"},
        "parts": [
            {"type": "text", "text": "now writing"},
            {
                "type": "tool",
                "tool": "edit",
                "state": {"status": "completed", "input": {"filePath": "/w/a.py"}},
            },
        ],
    }
    a = activity_from("s", [old, {"info": {"role": "user"}}, new], fetched_at=0, limit=40)
    assert a.running == ()
    assert a.last_tool is not None and a.last_tool.brief() == "edit: /w/a.py"
    assert a.reply == "now writing" and a.messages == 3 and not a.more


def test_a_reply_before_the_newest_prompt_is_an_earlier_runs() -> None:
    replied = {"info": {"role": "assistant"}, "parts": [{"type": "text", "text": "All done."}]}
    prompt = {"info": {"role": "user"}, "parts": [{"type": "text", "text": "Again"}]}
    started = {"info": {"role": "assistant"}, "parts": []}  # the new run's step, no text yet
    for messages, earlier in [
        ([replied], False),
        ([replied, prompt], True),
        ([replied, prompt, started], True),
        ([prompt, replied], False),
        ([prompt], False),  # no reply at all
    ]:
        a = activity_from("s", messages, fetched_at=0)
        assert a.reply_before_prompt is earlier, messages
    assert activity_from("s", [replied, prompt], fetched_at=0).reply == "All done."


def test_the_reply_is_its_last_lines_and_synthetic_text_is_not_a_reply() -> None:
    text = "\n".join(f"line {i}" for i in range(20))
    assert reply_end(text, lines=3) == "line 17\nline 18\nline 19"
    assert reply_end("x" * 1000, chars=10) == "…" + "x" * 9
    msg = {
        "info": {"role": "assistant"},
        "parts": [
            {"type": "text", "text": "real"},
            {"type": "text", "text": "injected", "synthetic": True},
        ],
    }
    assert activity_from("s", [msg], fetched_at=0).reply == "real"


def test_tool_summaries() -> None:
    assert tool_summary("bash", {"input": {"command": "npm   test\n--watch"}}) == "npm test --watch"
    assert tool_summary("edit", {"input": {"filePath": "src/app.py", "oldString": "x"}}) == (
        "src/app.py"
    )
    assert tool_summary("todowrite", {"input": {"todos": [{}, {}]}}) == "2 todos"
    assert tool_summary("mcp_thing", {"input": {"n": 1}, "title": "Looked up"}) == "Looked up"
    assert tool_summary("mcp_thing", {"input": "not a dict"}) == ""
    assert len(tool_summary("bash", {"input": {"command": "y" * 500}})) == 120


def test_todos_and_their_progress() -> None:
    todos = todo_items(
        [
            {"content": "Read", "status": "completed"},
            {"content": "Fix", "status": "in_progress"},
            {"content": "Test", "status": "pending"},
            {"content": "Dropped", "status": "cancelled"},
            "junk",
            3,
        ]
    )
    assert todos is not None and len(todos) == 4
    assert summarize_todos(todos) == (1, 3, TodoItem("Fix", "in_progress"))
    assert todo_items({"not": "a list"}) is None  # an unknown route's answer: no todos


def test_the_todo_list_as_written_when_the_server_keeps_only_open_ones() -> None:
    written = [
        {"content": "Read", "status": "completed"},
        {"content": "Fix", "status": "in_progress"},
    ]
    msg = {
        "info": {"role": "assistant"},
        "parts": [
            {
                "type": "tool",
                "tool": "todowrite",
                "state": {"status": "completed", "input": {"todos": written}},
            }
        ],
    }
    a = activity_from("s", [msg], fetched_at=0, todos=[written[1]])
    assert a.todos is not None and summarize_todos(a.todos)[:2] == (1, 2)
    same = activity_from("s", [msg], fetched_at=0, todos=written + [{"content": "More"}])
    assert same.todos is not None and len(same.todos) == 3  # the server's own list wins


def test_model_limits_from_the_providers_config() -> None:
    cfg = {
        "providers": [
            {
                "id": "fake",
                "models": {
                    "fake": {"limit": {"context": 100000, "output": 4000}},
                    "nolimit": {},
                    "bad": {"limit": {"context": "big"}},
                },
            },
            {"models": {"x": {"limit": {"context": 5}}}},
            "junk",
        ]
    }
    assert model_limits(cfg) == {("fake", "fake"): 100000}
    assert model_limits(None) == {} and model_limits({"providers": "x"}) == {}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "info",
                    "parts",
                    "role",
                    "type",
                    "text",
                    "tool",
                    "state",
                    "status",
                    "input",
                    "tokens",
                    "cache",
                    "time",
                    "start",
                    "modelID",
                    "providerID",
                    "cost",
                    "id",
                    "error",
                    "name",
                    "data",
                    "message",
                    "model",
                    "agent",
                    "finish",
                    "synthetic",
                    "todos",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(JSON, max_size=5), JSON, JSON)
def test_any_answer_gives_an_activity_never_an_exception(
    messages: list[Any], todos: Any, providers: Any
) -> None:
    a = activity_from("s", messages, fetched_at=0, todos=todos, limits=model_limits(providers))
    assert a.tokens.total >= 0 and a.cost >= 0
    json.dumps([r.brief() for r in a.running])  # printable
