"""`ocwatch answer ... --option LABEL` (issue 41 item 10): the label as shown matches first;
otherwise the one label that matches it without regard to case; two that do are refused, named;
a label that matches none says which there are. Against the fake 1.18.33 server (tests/fakes)
and the fake 2.0.15 server (tests/fakes_v2), through `tui.core.actions.answer_question`."""

from __future__ import annotations

import pytest

from tests.fakes import FakeAPI, wire_session
from tests.fakes_v2 import FakeV2, load
from tui.core import actions
from tui.core.client import Client
from tui.core.models import QuestionRequest


def asked(*labels: str, multiple: bool = False) -> dict[str, object]:
    return {
        "id": "que_1",
        "sessionID": "ses_a",
        "questions": [
            {
                "question": "Which one?",
                "header": "Pick",
                "options": [{"label": x, "description": ""} for x in labels],
                "multiple": multiple,
            }
        ],
    }


def server_asking(*labels: str, multiple: bool = False) -> FakeAPI:
    return FakeAPI(
        sessions=[wire_session("ses_a")],
        status={"/p/a": {"ses_a": {"type": "busy"}}},
        questions={"/p/a": [asked(*labels, multiple=multiple)]},
    )


async def answered(api: FakeAPI, options: list[str]) -> object:
    async with Client("http://fake.test", transport=api.transport()) as c:
        await actions.answer_question(c, "que_1", options=options)
    (path, body), *_ = [p for p in api.posts if p[0].startswith("/question/")]
    assert path == "/question/que_1/reply"
    return body["answers"]


async def test_a_label_typed_in_another_case_answers_with_the_label_as_the_server_has_it() -> None:
    assert await answered(server_asking("Yes", "No"), ["yes"]) == [["Yes"]]
    assert await answered(server_asking("Yes", "No"), ["NO"]) == [["No"]]
    assert await answered(
        server_asking("Europe", "America", multiple=True), ["europe", "AMERICA"]
    ) == [["Europe", "America"]]


async def test_the_exact_label_wins_over_one_that_differs_only_in_case() -> None:
    assert await answered(server_asking("Yes", "YES"), ["YES"]) == [["YES"]]
    assert await answered(server_asking("Yes", "YES"), ["Yes"]) == [["Yes"]]


async def test_a_label_two_options_match_without_case_is_refused_naming_both() -> None:
    api = server_asking("Yes", "YES", "No")
    async with Client("http://fake.test", transport=api.transport()) as c:
        with pytest.raises(actions.ActionError) as ei:
            await actions.answer_question(c, "que_1", options=["yes"])
    assert str(ei.value.message) == (
        "option 'yes' in que_1 is ambiguous: it matches 'YES' and 'Yes' (give one exactly)"
    )
    assert not [p for p in api.posts if p[0].startswith("/question/")]  # nothing was sent


def test_an_unknown_label_still_lists_the_options_and_candidates_are_shown_literally() -> None:
    req = QuestionRequest.parse(asked("Yes", "No"))
    with pytest.raises(
        actions.ActionError, match="no option 'maybe' in que_1; options: 'No', 'Yes'"
    ):
        actions.question_answers(req, ["maybe"], None)
    odd = QuestionRequest.parse(asked("[b]x\x1b[2J", "[B]X\x1b[2j"))
    with pytest.raises(actions.ActionError) as ei:
        actions.question_answers(odd, ["[b]X\x1b[2J"], None)
    assert "'[B]X\\x1b[2j' and '[b]x\\x1b[2J'" in ei.value.message


async def test_a_v2_form_takes_the_label_in_any_case_and_sends_its_value() -> None:
    form = load("question_answered")["waiting"]
    api = FakeV2()
    sid, fid = form["session"]["id"], form["forms"][0]["id"]
    async with Client("http://v2.test", transport=api.transport()) as c:
        await actions.answer_question(c, fid, options=["bLUE"])
    assert api.acted == [
        ("POST", f"/api/session/{sid}/form/{fid}/reply", {"answer": {"q0": "Blue"}})
    ]
