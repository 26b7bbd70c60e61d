"""A hostile or broken V2 server's odd records (found by a hostile review): one odd record
costs that record at most, never the server's snapshot, nor a waiting session its state."""

from __future__ import annotations

import copy
from typing import Any

from tests.fakes_v2 import FakeV2, load
from tui.core.client import Client
from tui.core.derive import derive_server
from tui.core.journal import Journal
from tui.core.protocols.v2.events import V2EventParser
from tui.core.protocols.v2.snapshot import fetch_snapshot_v2
from tui.core.settings import Settings
from tui.core.snapshot import MessageCache, Snapshot


async def snapshot(*moments: dict[str, Any]) -> Snapshot:
    async with Client("http://v2", transport=FakeV2(moments=list(moments)).transport()) as c:
        return await fetch_snapshot_v2(c, MessageCache(), clock=lambda: 1.0)


def states(snap: Snapshot) -> dict[str, tuple[str, str | None]]:
    rows = derive_server(snap, Journal().facts(), 10**10, Settings())
    return {sid: (row.state, row.reason) for (_, sid), row in rows.items()}


async def test_a_transcript_entry_whose_type_is_an_object_is_no_turn() -> None:
    """`type` an object or a list: TypeError (unhashable) in the lookup of turn types failed
    the snapshot of every session on the server."""
    done = copy.deepcopy(load("completed")["end"])
    done["transcript"] = [
        {"id": "msg_x", "type": {"k": 1}},
        {"id": "msg_y", "type": ["user"]},
        *done["transcript"],
    ]
    asking = copy.deepcopy(load("permission_once")["waiting"])
    got = states(await snapshot(done, asking))
    assert got[done["session"]["id"]] == ("idle", "completed")
    assert got[asking["session"]["id"]] == ("input", None)


async def test_a_permission_with_an_odd_resource_still_asks() -> None:
    """One entry of `resources` or `save` not a string dropped the whole request: the session
    waiting on it read busy. The strings are kept, the rest left out."""
    asking = copy.deepcopy(load("permission_once")["waiting"])
    asking["permissions"][0]["resources"] = ["echo hi", None, 7]
    asking["permissions"][0]["save"] = [{"x": 1}, "echo *"]
    snap = await snapshot(asking)
    assert states(snap)[asking["session"]["id"]] == ("input", None)
    (asked,) = snap.permissions.values()
    assert (list(asked.patterns), list(asked.always)) == (["echo hi"], ["echo *"])


def test_a_permission_event_with_an_odd_resource_still_asks() -> None:
    frame = {
        "id": "evt_1",
        "type": "permission.asked",
        "data": {
            "id": "per_1",
            "sessionID": "ses_1",
            "action": "shell",
            "resources": ["echo hi", None],
            "save": [3],
            "source": {"type": "tool", "messageID": "msg_1", "id": "call_1"},
        },
    }
    import json

    parsed = V2EventParser().parse(json.dumps(frame), 1.0)
    assert parsed.event is not None
    assert parsed.event.properties["patterns"] == ["echo hi"]
    assert parsed.event.properties["always"] == []
