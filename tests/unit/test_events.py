"""The event parser: tolerant, counted, sync duplicates dropped, seq gaps detected."""

from __future__ import annotations

import json

from tui.core.events import EventParser


def frame(etype: str, props: dict | None = None, directory: str = "/p/a") -> str:
    return json.dumps(
        {
            "directory": directory,
            "project": "prj",
            "payload": {"id": "evt_1", "type": etype, "properties": props or {}},
        }
    )


def sync(agg: str, seq: int) -> str:
    return json.dumps(
        {
            "directory": "/p/a",
            "payload": {
                "type": "sync",
                "syncEvent": {
                    "id": "x",
                    "type": "session.updated.1",
                    "seq": seq,
                    "aggregateID": agg,
                    "data": {},
                },
            },
        }
    )


def test_relevant_event_is_kept_with_directory_and_session():
    p = EventParser()
    got = p.parse(frame("session.status", {"sessionID": "s1", "status": {"type": "busy"}}), 5.0)
    assert got.event is not None
    assert got.event.type == "session.status" and got.event.directory == "/p/a"
    assert got.event.session_id == "s1" and got.event.received == 5.0


def test_session_id_from_info_and_part():
    p = EventParser()
    e = p.parse(frame("session.updated", {"info": {"id": "s9"}}), 0).event
    assert e is not None and e.session_id == "s9"
    e = p.parse(frame("message.updated", {"info": {"id": "m", "sessionID": "s3"}}), 0).event
    assert e is not None and e.session_id == "s3"
    e = p.parse(frame("message.part.updated", {"part": {"sessionID": "s4"}}), 0).event
    assert e is not None and e.session_id == "s4"


def test_bare_payload_from_per_directory_stream_is_accepted():
    p = EventParser()
    raw = json.dumps({"type": "session.idle", "properties": {"sessionID": "s1"}})
    assert p.parse(raw, 0).event is not None


def test_sync_duplicates_are_dropped_and_a_seq_jump_is_a_gap():
    p = EventParser()
    assert p.parse(sync("s1", 4), 0).gap is False  # first sight: no baseline
    assert p.parse(sync("s1", 5), 0).gap is False
    assert p.parse(sync("s1", 5), 0).gap is False  # repeated
    assert p.parse(sync("s2", 1), 0).gap is False  # per aggregate
    got = p.parse(sync("s1", 8), 0)
    assert got.gap is True and got.event is None
    assert p.sync_dropped == 5
    p.reset_sequences()
    assert p.parse(sync("s1", 20), 0).gap is False


def test_a_seq_that_goes_back_is_a_gap_and_the_new_baseline():
    """A frame saying a huge seq (a hostile or broken sender) is a gap; the server's own seq
    after it goes back, which is one too, and from there its jumps are seen again (kept as
    the highest, the huge one hid every later gap until a reconnect)."""
    p = EventParser()
    assert p.parse(sync("s1", 4), 0).gap is False
    assert p.parse(sync("s1", 10**18), 0).gap is True
    assert p.parse(sync("s1", 5), 0).gap is True
    assert p.parse(sync("s1", 6), 0).gap is False
    assert p.parse(sync("s1", 9), 0).gap is True  # missed 7 and 8: seen


def test_a_replayed_sync_frame_is_no_gap():
    """A copy of a sync frame read before (its event id and frame) is dropped before its
    older seq is read: no gap, none at the next real frame either."""
    p = EventParser()
    frames = [sync("s1", n).replace('"id": "x"', f'"id": "evt_{n}"') for n in range(5)]
    gaps = [p.parse(f, 0).gap for f in [*frames[:4], frames[1], frames[4]]]
    assert gaps == [False] * 6 and p.duplicates == 1


def test_a_sync_frame_and_its_plain_twin_share_an_id_and_neither_hides_a_copy():
    """1.18.33 sends a persisted change twice, the plain event and its sync frame, under one
    id: a copy of the plain one is still known after its twin was read."""
    p = EventParser()
    plain = frame("session.status", {"sessionID": "s1", "status": {"type": "busy"}})
    twin = sync("s1", 0).replace('"id": "x"', '"id": "evt_1"')
    assert p.parse(plain, 0).event is not None
    assert p.parse(twin, 0).gap is False
    assert p.parse(plain, 0).event is None and p.duplicates == 1


def test_malformed_json_is_counted_and_skipped():
    p = EventParser()
    for bad in [
        '{"payload": {"type": "session.idle"',
        "[1,2]",
        '{"payload": 3}',
        '{"payload": {"properties": {}}}',
        '{"payload": {"type": "x.y", "properties": 5}}',
    ]:
        assert p.parse(bad, 0).event is None
    assert p.skipped == 5


def test_an_event_whose_session_or_status_has_the_wrong_shape_is_counted_and_skipped():
    """Not passed on to be dropped unseen by the fold: counted where the servers view shows."""
    p = EventParser()
    assert (
        p.parse(frame("session.status", {"sessionID": 7, "status": {"type": "busy"}}), 0).event
        is None
    )
    assert p.parse(frame("session.idle", {"sessionID": ["s1"]}), 0).event is None
    assert p.parse(frame("session.status", {"sessionID": "s1", "status": "busy"}), 0).event is None
    assert p.skipped == 3
    assert (
        p.parse(frame("session.status", {"sessionID": "s1", "status": {"type": "busy"}}), 0).event
        is not None
    )


def test_unknown_types_are_counted_noise_is_not():
    p = EventParser()
    assert p.parse(frame("message.part.delta", {"delta": "tok"}), 0).event is None
    assert p.parse(frame("brand.new.event"), 0).event is None
    assert p.parse(frame("brand.new.event"), 0).event is None
    assert p.unknown == 2 and p.unknown_types["brand.new.event"] == 2
    assert p.skipped == 0


def test_control_events_are_flagged():
    p = EventParser()
    got = p.parse(frame("server.heartbeat", directory="global"), 0)
    assert got.control == "server.heartbeat"
    assert p.parse(frame("server.instance.disposed"), 0).control == "server.instance.disposed"


def test_snapshot_triggers():
    p = EventParser()

    def wants(raw: str) -> bool:
        e = p.parse(raw, 0).event
        assert e is not None
        return e.wants_snapshot

    assert wants(frame("session.idle", {"sessionID": "s"}))
    assert wants(frame("session.error", {"sessionID": "s", "error": {"name": "APIError"}}))
    assert wants(frame("session.status", {"sessionID": "s", "status": {"type": "idle"}}))
    assert not wants(frame("session.status", {"sessionID": "s", "status": {"type": "busy"}}))
    assert not wants(frame("message.updated", {"info": {"id": "m", "sessionID": "s"}}))


def test_blank_data_is_ignored():
    p = EventParser()
    assert p.parse("", 0).event is None and p.parse("  ", 0).event is None
    assert p.skipped == 0


def test_streamed_token_frames_are_skipped_unparsed_and_nothing_else_is():
    from tui.core.events import EventParser

    parser = EventParser()
    compact = (
        '{"directory":"/p/a","payload":{"id":"evt_1","type":"message.part.delta",'
        '"properties":{"sessionID":"ses_1","delta":"tok"}}}'
    )
    spaced = '{"directory": "/p/a", "payload": {"type": "message.part.delta", "properties": {}}}'
    broken_delta = compact[:-5]  # cut: skipped unparsed as well (nothing in it is read)
    for data in (compact, spaced, broken_delta):
        got = parser.parse(data, 1.0)
        assert got.event is None and not got.gap
    assert parser.skipped == 0 and parser.unknown == 0
    # the words inside a text are escaped: the frame is read as what it is
    quoting = (
        '{"payload":{"type":"message.part.updated","properties":{"sessionID":"ses_1",'
        '"part":{"id":"p","sessionID":"ses_1","messageID":"m","type":"text",'
        '"text":"\\"type\\":\\"message.part.delta\\""}}}}'
    )
    got = parser.parse(quoting, 1.0)
    assert got.event is not None and got.event.type == "message.part.updated"
    # a malformed frame of another type is still counted
    assert parser.parse('{"payload":{"type":"session.status",', 1.0).event is None
    assert parser.skipped == 1


def test_every_noise_type_is_skipped_unparsed_and_a_relevant_one_never():
    from tui.core.events import NOISE, RELEVANT, EventParser

    parser = EventParser()
    for etype in [*NOISE, "session.next.step", "lsp.whatever"]:
        cut = '{"payload":{"type":"' + etype + '","properties":{"x":'  # unparseable: unread
        assert parser.parse(cut, 1.0).event is None
    assert parser.skipped == 0 and parser.unknown == 0
    for etype in RELEVANT:
        cut = '{"payload":{"type":"' + etype + '","properties":{"x":'
        parser.parse(cut, 1.0)
    assert parser.skipped == len(RELEVANT)  # parsed, found malformed, counted


def test_a_copy_of_an_applied_event_is_dropped() -> None:
    """Issue 40: frames replayed with the same event ids (a proxy, an attacker) made a run that
    never happened. Each event id is applied once."""
    import json as _json

    from tui.core.events import EventParser

    frame = _json.dumps(
        {
            "directory": "/p",
            "payload": {
                "id": "evt_1",
                "type": "session.status",
                "properties": {"sessionID": "ses_1", "status": {"type": "busy"}},
            },
        }
    )
    parser = EventParser()
    assert parser.parse(frame, 1.0).event is not None
    assert parser.parse(frame, 2.0).event is None and parser.duplicates == 1
    other = frame.replace("evt_1", "evt_2")
    assert parser.parse(other, 3.0).event is not None
