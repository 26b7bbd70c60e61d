"""A replay's shortcuts give what the general code gives: a record line read by the JSON scanner
alone is the value `json` decodes (or the same error), a query string built once is httpx's,
and a replay of every fixture recording through `follow` (its frame records applied without
`step`) pulls the same Views, with the same transitions, as one applying each record by `step`
and pulling at the same moments."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tui.core.view import Changes, View
from tui.record import format as fmt
from tui.record.replay import Replay, _query

FIXTURES = sorted((Path(__file__).parents[1] / "fixtures").glob("*.ndjson"))

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


def _outcome(decode: Any, line: str) -> tuple[str, Any]:
    try:
        return "value", decode(line)
    except (ValueError, RecursionError) as exc:
        return "error", type(exc)


@settings(max_examples=400, deadline=None)
@given(
    value=_json,
    before=st.sampled_from(["", " ", "\t", "x"]),
    after=st.sampled_from(["", " ", "\r", "}", ",1", "x", "\\"]),
)
@example(value={"t": 1.5, "s": 0, "k": "frame", "d": "{}"}, before="", after="")
def test_a_line_read_by_the_scanner_alone_is_what_json_decodes(
    value: Any, before: str, after: str
) -> None:
    line = before + json.dumps(value, separators=(",", ":")) + after + "\n"
    assert _outcome(fmt._value, line) == _outcome(fmt._DECODE, line)


@pytest.mark.parametrize("cut", [1, 5, 20, -3, -2])
def test_a_cut_or_broken_line_is_the_same_error(cut: int) -> None:
    line = '{"t":1.5,"s":0,"k":"frame","d":"{\\"a\\": 1}"}'
    broken = line[:cut] + "\n"
    expected = ("error", json.JSONDecodeError)
    assert _outcome(fmt._value, broken) == _outcome(fmt._DECODE, broken) == expected


def test_every_fixture_line_reads_as_json_decodes_it() -> None:
    for path in FIXTURES:
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True)[1:]:
            assert fmt._value(line) == fmt._DECODE(line)


_param = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12)
)


@settings(max_examples=300, deadline=None)
@given(params=st.dictionaries(st.text(max_size=8), _param, min_size=1, max_size=3))
@example(params={"limit": 1})
@example(params={"limit": True})
@example(params={"limit": 1.0})
def test_a_query_built_once_is_httpxs(params: dict[str, Any]) -> None:
    assert _query(params) == str(httpx.QueryParams(params))
    assert _query(params) == str(httpx.QueryParams(params))  # the second time: the one made


def test_a_query_of_values_that_are_no_key_is_still_httpxs() -> None:
    params = {"directory": ["/a", "/b"]}
    assert _query(params) == str(httpx.QueryParams(params))


def _digest(view: View, changes: Changes | None) -> tuple[Any, ...]:
    return (
        view.generated_at,
        view.servers,
        tuple(view.rows.items()),
        changes.transitions if changes is not None else None,
    )


async def _pulled_by_follow(path: Path) -> tuple[list[float], list[tuple[Any, ...]]]:
    replay = Replay(path)
    seen: list[tuple[Any, ...]] = []
    await replay.follow(lambda v, c: seen.append(_digest(v, c)))
    return [d[0] for d in seen], seen


async def _pulled_by_step(path: Path, moments: list[float]) -> list[tuple[Any, ...]]:
    """Every record applied by step(), the View pulled when follow pulled one (after the last
    record at or before that moment; its clock then)."""
    replay = Replay(path)
    seen: list[tuple[Any, ...]] = []
    pending = list(moments)
    first = pending.pop(0)
    replay.now = max(replay.now, first)
    seen.append(_digest(replay.view(), replay.last_changes))
    while pending:
        at = pending.pop(0)
        while (rec := replay.peek()) is not None and rec.t <= at:
            await replay.step()
        replay.now = max(replay.now, at)
        seen.append(_digest(replay.view(), replay.last_changes))
    return seen


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_follow_pulls_what_stepping_each_record_pulls(path: Path) -> None:
    moments, by_follow = asyncio.run(_pulled_by_follow(path))
    assert by_follow == asyncio.run(_pulled_by_step(path, moments))


async def test_a_replays_client_has_no_network() -> None:
    """A replay's client answers from the recording alone: no quick reads, and a request that
    reaches its transport (none should) finds no network instead of a server."""
    from tui.core.client import OcwatchError
    from tui.record.replay import ReplayClient

    client = ReplayClient("http://127.0.0.1:9")
    assert client._quick is None
    with pytest.raises(httpx.ConnectError, match="a replay has no network"):
        await client.http.get("/session")
    with pytest.raises(OcwatchError, match="not in the recording"):
        await client.request("GET", "/session")
    await client.aclose()


def test_a_replay_collects_garbage_less_often_and_leaves_the_collector_as_it_was() -> None:
    """follow() raises the youngest generation's threshold (gc_relaxed) while it replays, and
    restores the process's own thresholds after, also when the observer fails."""
    import gc

    from tui.core.gcpause import RELAXED_THRESHOLD, gc_relaxed

    run = gc.get_threshold()  # (the test run's own, raised: tests/conftest.py)
    gc.set_threshold(700, 10, 10)  # CPython's, as a process that sets none has them
    before = gc.get_threshold()
    seen: list[int] = []

    def observe(_view: View, _changes: Changes | None) -> None:
        seen.append(gc.get_threshold()[0])
        if len(seen) == 3:
            raise RuntimeError("observer failed")

    try:
        with pytest.raises(RuntimeError):
            asyncio.run(Replay(FIXTURES[0]).follow(observe))
        assert seen and all(t == RELAXED_THRESHOLD for t in seen)
        assert gc.get_threshold() == before
        gc.set_threshold(RELAXED_THRESHOLD * 4, *before[1:])
        # a caller that relaxed it further keeps its own
        with gc_relaxed():
            assert gc.get_threshold()[0] == RELAXED_THRESHOLD * 4
        assert gc.get_threshold()[0] == RELAXED_THRESHOLD * 4
    finally:
        gc.set_threshold(*run)


@pytest.mark.parametrize("path", FIXTURES[:4], ids=lambda p: p.stem)
def test_a_view_pulled_earlier_keeps_its_rows(path: Path) -> None:
    """A one-server View takes the rows as derived, with no copy: later pulls (events, snapshots,
    time passing) leave every earlier View's rows as they were when it was pulled."""
    kept: list[tuple[View, dict[Any, Any]]] = []
    asyncio.run(Replay(path).follow(lambda v, _c: kept.append((v, dict(v.rows)))))
    assert len(kept) > 3
    assert len({id(v.rows) for v, _ in kept}) == len(kept)
    for view, rows in kept:
        assert view.rows == rows and all(view.rows[k] is r for k, r in rows.items())
