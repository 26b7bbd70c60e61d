"""A session's conversation (`tui.core.conversation`): from the real server's messages (the
recorded fixtures), merged as newer pages arrive, and never an exception."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import recorded
from tui.core.client import Client
from tui.core.conversation import (
    MAX_LINES,
    CallState,
    Entry,
    ToolCall,
    call_state,
    details,
    entries,
    entry,
    merge,
    progress,
    progresses,
    refusal,
    run_active,
)
from tui.core.protocols.v2 import wire

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


def test_a_message_listed_twice_is_one_entry_as_said_last_in_its_first_place() -> None:
    # (a malformed answer; found by the property test below: merging it with itself grew it)
    said = [
        {"info": {"id": "msg_1", "role": "user"}, "parts": [{"type": "text", "text": "old"}]},
        {"info": {"id": "msg_2", "role": "assistant"}},
        {"info": {"id": "msg_1", "role": "user"}, "parts": [{"type": "text", "text": "new"}]},
        {"info": {"id": ""}},
        {"info": {"id": ""}},
    ]
    items = entries(said)
    assert [(e.id, e.text) for e in items] == [("msg_1", "new"), ("msg_2", ""), ("", "")]
    assert merge(items, items) == items


@settings(max_examples=300, deadline=None)
@given(st.lists(JSON, max_size=6))
def test_any_answer_gives_entries_never_an_exception(messages: list[Any]) -> None:
    items = entries(messages)
    assert merge(items, items) == items


# -- tool calls, expanded (recorded on real servers: tests/integration/record_tool_calls.py) --

V1_TOOLS = recorded.FIXTURES / "tool_calls_v1_1.18.33.json"
V2_TOOLS = recorded.FIXTURES / "tool_calls_v2_2.0.15.json"


def v1_run(name: str) -> list[Entry]:
    """The messages of run `name`, as opencode-ai 1.18.33 answered them."""
    return entries(json.loads(V1_TOOLS.read_text())[name])


def v2_run(name: str) -> list[Entry]:
    """The transcript of run `name`, as opencode 2.0.15 answered it, read as the client's
    `conversation` reads it (oldest first, tool parts in full)."""
    got = json.loads(V2_TOOLS.read_text())[name]
    return entries(m for m in (wire.message(raw, "ses_x", full=True) for raw in reversed(got)) if m)


def the_call(items: list[Entry]) -> tuple[ToolCall, Entry]:
    (pair,) = [(c, e) for e in items for c in e.tools]
    return pair


def shown(call: ToolCall, e: Entry, active: bool = False) -> dict[str, list[str]]:
    """Each section an expanded call shows, its lines (and `(… N more)` as the screen says)."""
    state = call_state(call, progress(e, latest=True, active=active), e.error)
    return {
        d.section: [*d.lines, *([f"(… {d.more} more lines)"] if d.more else [])]
        for d in details(call, state)
    }


@pytest.mark.parametrize("read", [v1_run, v2_run], ids=["v1", "v2"])
def test_a_command_expands_to_its_lines_and_its_output_shown_literally(read: Any) -> None:
    call, e = the_call(read("bash"))
    assert call.tool in ("bash", "shell") and call.status == "completed"
    assert call.summary == "echo one (+2 lines)"  # its one line never runs its lines together
    got = shown(call, e)
    assert got["command"] == [
        "$ echo one",
        "  printf '[bold]x[/] \\033[31mred\\033[0m \\007bell\\n'",
        "  for i in $(seq 1 3); do echo line $i; done",
    ]
    assert got["input"] == ["description: Run a script of three lines"]
    # the output's markup stays text; its escape and bell are shown, not sent to the terminal
    assert got["output"] == ["one", "[bold]x[/] ␛[31mred␛[0m ␇bell", "line 1", "line 2", "line 3"]
    assert "error" not in got and "refused" not in got


@pytest.mark.parametrize("read", [v1_run, v2_run], ids=["v1", "v2"])
def test_an_edit_expands_to_its_diff_instead_of_its_old_and_new_text(read: Any) -> None:
    call, e = the_call(read("edit"))
    got = shown(call, e)
    assert [line.split(": ")[0] for line in got["input"]] in (["filePath"], ["path"])
    diff = got["diff"]
    assert "-ocwatch integration test project alpha." in diff
    assert "+an edited line" in diff and "+and a second one alpha." in diff
    assert diff[0].startswith("--- ") and not any(d.startswith(("Index:", "====")) for d in diff)
    assert got["output"][0] in ("Edit applied successfully.", "Edited README.md (1 replacement)")


@pytest.mark.parametrize("read", [v1_run, v2_run], ids=["v1", "v2"])
def test_a_write_shows_its_content_under_its_key_and_a_failed_read_its_error(read: Any) -> None:
    call, e = the_call(read("write"))
    got = shown(call, e)
    assert got["input"][1:] == ["content:", "  first", "  second"]
    call, e = the_call(read("read"))
    assert call_state(call, "done").word == "error"
    assert shown(call, e)["error"][0].startswith("File not found: /tmp/")


@pytest.mark.parametrize("read", [v1_run, v2_run], ids=["v1", "v2"])
def test_a_rejected_call_says_rejected(read: Any) -> None:
    call, e = the_call(read("rejected"))
    assert call_state(call, "done") == CallState("rejected")
    assert shown(call, e)["refused"] == ["rejected by the user"]


def test_a_call_rejected_with_a_message_says_the_users_message() -> None:
    """V1 gives the user's message in the error (1.18.33's exact words); V2 2.0.15 hands it to
    the model and writes only "Unable to execute command": an error, as the server says."""
    call, e = v1_run("rejected_feedback")[1].tools[0], v1_run("rejected_feedback")[1]
    assert call_state(call, "done") == CallState("rejected", "Use make clean instead, please.")
    assert shown(call, e)["refused"] == ["rejected by the user: Use make clean instead, please."]
    call, e = the_call(v2_run("rejected_feedback"))
    assert call_state(call, "done") == CallState("error", "Unable to execute command: rm -rf build")


def test_refusals_in_the_servers_words() -> None:
    assert refusal("The user dismissed this question") == CallState("dismissed")
    assert refusal(
        "The user has specified a rule which prevents you from using this specific tool call. "
        'Here are some of the relevant rules [{"permission":"bash"}]'
    ) == CallState("denied", "a permission rule forbids it")
    assert refusal("File not found") is None and refusal(None) is None


def test_a_running_command_shows_what_it_wrote_so_far_and_an_aborted_one_what_it_became() -> None:
    items = v1_run("running")
    call, e = the_call(items)
    assert progress(e, latest=True, active=True) == "writing"
    assert call_state(call, "writing") == CallState("running")
    assert shown(call, e, active=True)["command"] == ["$ sleep 60"]
    # the same call, its run aborted: the message says so, and bash its output
    call, e = the_call(v1_run("aborted_running"))
    assert e.aborted and progress(e, latest=True, active=False) == "aborted"
    assert "User aborted the command" in shown(call, e)["output"]


# -- what a message became when its run ended --------------------------------------------------


def test_progress_completed_aborted_failed_and_running() -> None:
    done = entry(recorded.last_message("all_states", "completed"))
    aborted = v1_run("aborted_running")[-1]
    failed = entry(recorded.last_message("all_states", "failed"))
    running = v1_run("running")[-1]
    assert done is not None and failed is not None
    assert progress(done, latest=True, active=False) == "done"
    assert progress(aborted, latest=True, active=True) == "aborted"
    assert progress(failed, latest=True, active=False) == "failed"
    assert progress(running, latest=True, active=True) == "writing"
    # a prompt is not written
    assert progress(v1_run("running")[0], latest=False, active=True) == "done"


def restart_messages(role: str) -> list[Entry]:
    """A session of the restart recording, as read after the server was killed mid-run and
    restarted (1.18.33): its reply never completed."""
    sid = recorded.session("restart", role)
    got = [
        json.loads(r.data["b"])
        for r in recorded.records("restart")
        if r.kind == "http" and r.data["p"] == f"/session/{sid}/message"
    ]
    return entries(got[-1])


def test_a_reply_its_run_left_unfinished_is_interrupted_not_writing() -> None:
    items = restart_messages("interrupted-permission")
    e = items[-1]
    assert e.completed is None and e.error is None
    (call,) = e.tools
    assert call.status == "running"
    # the session still runs (or nothing says otherwise): being written, the call running
    assert progress(e, latest=True, active=True) == "writing"
    # the session's run is over (idle, unknown): the reply was interrupted, so was the call
    assert progress(e, latest=True, active=False) == "interrupted"
    assert call_state(call, "interrupted") == CallState(
        "interrupted", "the run ended before it finished"
    )
    # a newer reply came after it: its run went on without it
    assert progress(e, latest=False, active=True) == "interrupted"
    assert progresses([*items, E(999_999)], active=True)[-2] == "interrupted"


def test_a_call_left_running_by_a_failed_run_is_cut_off_by_its_error() -> None:
    call = ToolCall("bash", "make", "running")
    assert call_state(call, "failed", "APIError: overloaded") == CallState(
        "cut off", "APIError: overloaded"
    )
    assert call_state(call, "aborted") == CallState("interrupted", "the run was aborted")
    assert call_state(ToolCall("bash", "make", "pending"), "writing") == CallState("pending")
    assert call_state(
        ToolCall("bash", "make", "error", error="Tool execution aborted"), "aborted"
    ) == CallState("interrupted", "the run was aborted")


def test_run_active_from_the_sessions_row() -> None:
    assert run_active("busy") and run_active("retry") and run_active("input")
    assert not run_active("idle") and not run_active("unknown")
    assert run_active("idle", settled=False)  # the final message may not be saved yet
    assert run_active(None)  # no row: nothing is claimed


# -- bounded and safe --------------------------------------------------------------------------


def test_an_expanded_call_is_bounded_in_lines_and_characters() -> None:
    output = "\n".join(f"line {i}" for i in range(1, 451)) + "\n" + "x" * 2_000
    call = ToolCall("bash", "yes", "completed", input=(("command", "yes"),), output=output)
    (command, out) = details(call, CallState("completed"))
    assert command.lines == ("$ yes",)
    assert len(out.lines) == MAX_LINES and out.lines[-1] == f"line {MAX_LINES}"
    assert out.more == 451 - MAX_LINES
    (small,) = details(
        ToolCall("read", "f", "completed", output="y" * 600), CallState("completed"), max_chars=50
    )
    assert small.lines == ("y" * 50 + "… (+550 characters)",)


def test_hostile_text_in_any_field_is_shown_as_characters() -> None:
    bad = "[bold]x[/] \x1b[31mred\x1b[0m \x07 \u202egnp.exe\ttab"
    call = ToolCall(
        "edit",
        bad,
        "error",
        input=(("filePath", bad), (bad, "v")),
        output=bad,
        error=bad,
        diff=f"--- a\n+++ b\n+{bad}\n",
    )
    got = details(call, call_state(call, "done"))
    text = "\n".join(line for d in got for line in d.lines)
    assert "[bold]x[/] ␛[31mred␛[0m ␇ \ufffdgnp.exe    tab" in text
    assert not any(ch in text for ch in "\x1b\x07\u202e\t")
    assert {d.section for d in got} == {"input", "diff", "output", "error"}


TOOL_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "info",
                    "parts",
                    "role",
                    "type",
                    "tool",
                    "state",
                    "status",
                    "input",
                    "output",
                    "error",
                    "metadata",
                    "diff",
                    "files",
                    "patch",
                    "filediff",
                    "command",
                    "time",
                    "callID",
                    "name",
                    "data",
                    "completed",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(TOOL_JSON, max_size=4), st.booleans())
def test_any_tool_part_expands_never_an_exception(messages: list[Any], active: bool) -> None:
    items = entries(messages)
    for e, ended in zip(items, progresses(items, active), strict=True):
        for call in e.tools:
            for d in details(call, call_state(call, ended, e.error)):
                assert all("\x1b" not in line for line in d.lines)


async def test_the_v2_conversation_route_carries_each_calls_output_and_diff() -> None:
    """`Client.conversation` on V2 reads the transcript with its tool calls in full (the store's
    reading of the same entries leaves outputs out)."""
    got = json.loads(V2_TOOLS.read_text())["edit"]

    def handle(request: httpx.Request) -> httpx.Response:
        assert request.url.path.endswith("/message")
        return httpx.Response(200, json={"data": got, "cursor": {}})

    async with Client("http://v2", transport=httpx.MockTransport(handle)) as client:
        client.protocol = "v2"
        call, _ = the_call(entries(await client.conversation("ses_x", 20)))
    assert call.output == "Edited README.md (1 replacement)"
    assert call.diff is not None and "+an edited line" in call.diff
    stored = wire.message(got[2], "ses_x")  # (the store's reading: no output, no metadata)
    assert stored is not None and "output" not in stored["parts"][1]["state"]
