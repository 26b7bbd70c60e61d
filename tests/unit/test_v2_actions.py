"""Actions on a V2 server (issue 39, item 1): the same calls as on V1 (`tui.core.actions`), each
sent to V2's route with V2's body, against the fake 2.0.15 server of tests/fakes_v2 (the real
server's tier: tests/integration/test_v2_actions.py)."""

from __future__ import annotations

import httpx
import pytest

from tests.fakes_v2 import FakeV2, load
from tui.core import actions
from tui.core.client import Client

PERM = load("permission_once")["waiting"]
FORM = load("question_answered")["waiting"]
RETRY = load("retry")["waiting"]


def client_of(api: FakeV2) -> Client:
    return Client("http://v2.test", transport=api.transport())


async def test_the_protocol_is_probed_once_and_told_to_the_client() -> None:
    api = FakeV2()
    async with client_of(api) as c:
        assert await actions.protocol_of(c) == "v2" and c.protocol == "v2"
        await actions.protocol_of(c)
    assert api.hits["/api/info"] == 1


async def test_abort_interrupts_and_says_whether_it_ran() -> None:
    api = FakeV2()
    sid = RETRY["session"]["id"]
    async with client_of(api) as c:
        assert await actions.abort(c, sid) is True
        assert await actions.abort(c, sid) is False  # idle now: nothing to abort
        with pytest.raises(actions.ActionError, match="unknown session ses_nope"):
            await actions.abort(c, "ses_nope")
    assert ("POST", f"/api/session/{sid}/interrupt", None) in api.acted


@pytest.mark.parametrize("decision", ["once", "always", "reject"])
async def test_a_permission_reply_is_a_decision(decision: str) -> None:
    api = FakeV2()
    sid, rid = PERM["session"]["id"], PERM["permissions"][0]["id"]
    async with client_of(api) as c:
        await actions.reply_permission(
            c, rid, decision, "not now" if decision == "reject" else None
        )
        with pytest.raises(actions.ActionError, match="no open permission or form"):
            await actions.reply_permission(c, rid, decision)  # answered already
    body = {"decision": decision}
    if decision == "reject":
        body["message"] = "not now"
    assert api.acted == [("POST", f"/api/session/{sid}/permission/{rid}/reply", body)]


async def test_a_form_is_answered_with_its_options_values_or_dismissed() -> None:
    api = FakeV2()
    sid, fid = FORM["session"]["id"], FORM["forms"][0]["id"]
    async with client_of(api) as c:
        with pytest.raises(actions.ActionError, match="no option 'Green'"):
            await actions.answer_question(c, fid, options=["Green"])
        await actions.answer_question(c, fid, options=["Blue"])
    assert api.acted == [
        ("POST", f"/api/session/{sid}/form/{fid}/reply", {"answer": {"q0": "Blue"}})
    ]
    api = FakeV2()
    async with client_of(api) as c:
        await actions.answer_question(c, fid, text=["Teal, please"])  # custom: typed
        api.moments[sid]["forms"] = [FORM["forms"][0]]
        await actions.answer_question(c, fid, reject=True)
    assert api.acted == [
        ("POST", f"/api/session/{sid}/form/{fid}/reply", {"answer": {"q0": "Teal, please"}}),
        ("DELETE", f"/api/session/{sid}/form/{fid}", None),
    ]


FIELDS = {
    "id": "frm_x",
    "title": "Deploy",
    "fields": [
        {
            "key": "env",
            "type": "string",
            "options": [{"value": "prod-1", "label": "Production"}],
            "custom": False,
        },
        {"key": "replicas", "type": "integer"},
        {"key": "notify", "type": "boolean"},
        {
            "key": "regions",
            "type": "multiselect",
            "options": [{"value": "eu", "label": "Europe"}, {"value": "us", "label": "America"}],
        },
        {"key": "note", "type": "string", "required": False},
    ],
}


def test_several_fields_each_get_their_kind_of_value() -> None:
    got = actions.form_answer(FIELDS, [["Production"], ["3"], ["yes"], ["Europe", "America"], []])
    assert got == {"env": "prod-1", "replicas": 3, "notify": True, "regions": ["eu", "us"]}


@pytest.mark.parametrize(
    ("answers", "says"),
    [
        ([["Staging"], ["3"], ["yes"], [], []], "takes one of 'Production'"),
        ([["Production"], ["3.5"], ["yes"], [], []], "wants a whole number"),
        ([["Production"], ["3"], ["maybe"], [], []], "wants yes or no"),
    ],
)
def test_a_value_a_field_cannot_take_is_said(answers: list[list[str]], says: str) -> None:
    with pytest.raises(actions.ActionError, match=says):
        actions.form_answer(FIELDS, answers)


@pytest.mark.parametrize(
    "form",
    [
        {
            "id": "frm_u",
            "title": "Sign in",
            "fields": [{"key": "k", "type": "external", "url": "https://x"}],
        },
        {"id": "frm_n", "title": "Open this", "mode": "url"},
    ],
)
def test_what_a_terminal_cannot_answer_says_answer_in_opencode(form: dict) -> None:
    with pytest.raises(actions.ActionError, match="answer in OpenCode"):
        actions.form_answer(form, [["x"]])


async def test_a_v1_server_is_still_spoken_to_in_v1() -> None:
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        if request.url.path == "/global/health":
            return httpx.Response(200, json={"healthy": True, "version": "1.18.33"})
        return httpx.Response(404, json={"name": "NotFoundError"})

    async with Client("http://v1.test", transport=httpx.MockTransport(handle)) as c:
        assert await actions.protocol_of(c) == "v1"
    assert seen == ["GET /global/health"]
