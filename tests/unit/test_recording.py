"""Recordings: what a monitor saw is written (answers, frames, stream changes, snapshots) and a
replay of the file rebuilds the same Views; nothing secret is written; a file that cannot be
replayed exactly is refused with the line that is wrong."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes import FakeAPI, wire_session
from tests.unit.test_transitions import Clock, frame, wire_msg
from tui.cli.main import main
from tui.core.client import OcwatchError, Unreachable
from tui.core.fleet import Fleet
from tui.core.settings import Auth, Settings
from tui.core.view import View
from tui.record import replay as replay_module
from tui.record.format import RecordingError, parse_time, read
from tui.record.replay import MAX_OPEN_SNAPSHOTS, Replay, replay_to
from tui.record.writer import Recorder, parse_size


async def until(condition: Callable[[], object], timeout: float = 30.0) -> None:
    """Until `condition` holds (a generous deadline: a loaded machine is slow, not wrong)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.01)


T0 = 1_800_000_000.0
SERVER = "http://test:4096"
S = Settings(grace=3.0)


def rows_json(view: View) -> list[dict[str, Any]]:
    return view.to_json()["sessions"]


async def record_a_run(
    path: Path, *, password: str | None = None, max_size: int | None = None
) -> tuple[Fleet, Clock, list[View]]:
    """A server with a session that runs and fails while the stream is up, and another that
    asks a permission; recorded while a consumer pulls Views (returned, as the live ones)."""
    clock = Clock(T0)
    api = FakeAPI(
        sessions=[wire_session("ses_1"), wire_session("ses_2")],
        messages={"ses_1": [wire_msg("ses_1", created=T0 - 100, completed=T0 - 90)]},
        password=password,
    )
    auth = Auth("opencode", password) if password else None
    fleet = Fleet(
        [SERVER],
        auth=auth,
        settings=S,
        clock=clock,
        transport=httpx.MockTransport(api.handle),
        names={SERVER: "prod"},
    )
    mon = fleet.monitors[0]
    recorder = Recorder(path, [(SERVER, "prod")], S, version="test", max_size=max_size, clock=clock)
    mon.tap = recorder
    views = []
    assert await mon.take_snapshot()
    mon.stream_opened()
    views.append(fleet.current())
    clock.t = T0 + 1  # a prompt: busy
    api.status = {"/p/a": {"ses_1": {"type": "busy"}}}
    mon.on_data(frame("session.status", {"sessionID": "ses_1", "status": {"type": "busy"}}))
    views.append(fleet.current())
    clock.t = T0 + 2  # it fails: error, idle, then the message that says so
    failed = wire_msg("ses_1", created=T0 + 1, completed=T0 + 2)
    failed["info"]["error"] = {"name": "APIError", "data": {"message": "bad request"}}
    api.status, api.messages["ses_1"] = {}, [failed]
    mon.on_data(frame("session.error", {"sessionID": "ses_1", "error": failed["info"]["error"]}))
    mon.on_data(frame("session.status", {"sessionID": "ses_1", "status": {"type": "idle"}}))
    mon.on_data(frame("message.updated", {"sessionID": "ses_1", "info": failed["info"]}))
    mon.on_data("this is not json")  # a garbled frame: counted, replayed as counted
    views.append(fleet.current())
    clock.t = T0 + 3  # the other asks a permission; a snapshot reads it
    ask = {
        "id": "per_1",
        "sessionID": "ses_2",
        "permission": "bash",
        "patterns": ["npm test"],
        "metadata": {},
        "always": [],
        "tool": {"messageID": "m", "callID": "c"},
    }
    api.permissions = {"/p/a": [ask]}
    api.status = {"/p/a": {"ses_2": {"type": "busy"}}}
    assert await mon.take_snapshot()
    views.append(fleet.current())
    clock.t = T0 + 4
    mon.stream_down(OcwatchError(f"{SERVER}: event stream closed by the server"))
    views.append(fleet.current())
    clock.t = T0 + 10
    views.append(fleet.current())
    mon.tap = None
    recorder.close()
    return fleet, clock, views


async def replayed_as_live(replay: Replay, live: list[View]) -> list[View]:
    """`replay` pulled at the moments the live consumer pulled `live`, its Views asserted
    equal to those (rows, and the last one's servers)."""
    got = []
    for want in live:
        await replay.advance(want.generated_at)
        got.append(replay.view())
    assert [rows_json(v) for v in got] == [rows_json(v) for v in live]
    assert [s.to_json() for s in got[-1].servers] == [s.to_json() for s in live[-1].servers]
    return got


async def test_a_replay_rebuilds_the_views_of_the_live_run(tmp_path: Path) -> None:
    path = tmp_path / "run.ndjson"
    _fleet, _clock, live = await record_a_run(path)
    replay = Replay(path)
    got = await replayed_as_live(replay, live)
    assert got[-1].servers[0].skipped_events == 1  # the garbled frame, counted again
    assert got[-1].servers[0].name == "prod"
    final = {r["id"]: (r["state"], r["reason"]) for r in rows_json(got[-1])}
    assert final == {"ses_1": ("idle", "error"), "ses_2": ("input", None)}
    assert replay.ended == "stopped"


async def test_a_refused_reconnect_replays_as_the_outage_it_was(tmp_path: Path) -> None:
    """A reconnect that could not reach the server marks it unreachable (a restart may have
    cut runs off): the stream record keeps the error's class, and a replay shows the same
    outage (read as a plain stream error, it would show the rows live)."""
    path = tmp_path / "refused.ndjson"
    clock = Clock(T0)
    api = FakeAPI(sessions=[wire_session("ses_1")], status={"/p/a": {"ses_1": {"type": "busy"}}})
    fleet = Fleet([SERVER], settings=S, clock=clock, transport=httpx.MockTransport(api.handle))
    mon = fleet.monitors[0]
    recorder = Recorder(path, [(SERVER, SERVER)], S, version="test", clock=clock)
    mon.tap = recorder
    assert await mon.take_snapshot()
    mon.stream_opened()
    live = [fleet.current()]
    clock.t = T0 + 1
    mon.stream_down(OcwatchError(f"{SERVER}: event stream closed by the server"))
    live.append(fleet.current())
    clock.t = T0 + 2
    mon.stream_down(Unreachable(f"{SERVER}: cannot connect (connection refused)"))
    live.append(fleet.current())
    mon.tap = None
    recorder.close()
    assert [r["state"] for v in live for r in rows_json(v)] == ["busy", "busy", "unknown"]
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r.get("error") for r in records if r.get("k") == "stream"] == [
        None,
        "OcwatchError",
        "Unreachable",
    ]
    await replayed_as_live(Replay(path), live)


async def test_the_same_file_gives_the_same_views_and_transitions(tmp_path: Path) -> None:
    path = tmp_path / "run.ndjson"
    await record_a_run(path)
    runs = []
    for _ in range(2):
        seen: list[Any] = []
        replay = Replay(path)
        await replay.follow(
            lambda v, c, seen=seen: seen.append(
                (
                    v.generated_at,
                    rows_json(v),
                    [
                        (t.key, t.before and t.before.state, t.after and t.after.state)
                        for t in (c.transitions if c else ())
                    ],
                )
            )
        )
        runs.append(seen)
    assert runs[0] == runs[1]
    steps = [tr for _at, _rows, trs in runs[0] for tr in trs]
    assert ((SERVER, "ses_1"), "busy", "idle") in steps
    assert ((SERVER, "ses_2"), "idle", "input") in steps


async def test_status_at_a_moment_of_the_recording(tmp_path: Path) -> None:
    path = tmp_path / "run.ndjson"
    await record_a_run(path)
    _r, during = await replay_to(path, T0 + 1.5)
    assert {r["id"]: r["state"] for r in rows_json(during)}["ses_1"] == "busy"
    _r, end = await replay_to(path)
    assert {r["id"]: r["state"] for r in rows_json(end)}["ses_1"] == "idle"


async def test_no_password_reaches_the_file(tmp_path: Path) -> None:
    path = tmp_path / "run.ndjson"
    secret = "s3cr3t-pw-0f-the-server"
    await record_a_run(path, password=secret)
    written = path.read_bytes()
    assert written.count(b'"k":"http"') > 5  # answers were recorded
    for trace in (
        secret,
        base64.b64encode(f"opencode:{secret}".encode()).decode(),
        "authorization",
        "Basic ",
    ):
        assert trace.encode() not in written


async def test_a_gzipped_recording_replays_the_same(tmp_path: Path) -> None:
    plain, packed = tmp_path / "a.ndjson", tmp_path / "a.ndjson.gz"
    await record_a_run(plain)
    await record_a_run(packed)
    with gzip.open(packed, "rt") as f:
        assert json.loads(f.readline())["format"] == "ocwatch-recording"
    _r, a = await replay_to(plain)
    _r, b = await replay_to(packed)
    assert rows_json(a) == rows_json(b)


async def test_max_size_stops_the_recording_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "small.ndjson"
    await record_a_run(path, max_size=4096)
    lines = path.read_text().splitlines()
    end = json.loads(lines[-1])
    assert end["k"] == "end" and "--max-size" in end["why"]
    assert path.stat().st_size < 4096 + max(len(line) for line in lines) + 200
    _r, view = await replay_to(path)  # what is there replays
    assert view.servers


async def test_max_size_is_a_bound_the_file_never_passes(tmp_path: Path) -> None:
    """`--max-size 20K` stopped at 38 KB (found by a review): the size was looked at after a
    record, and one snapshot answer is many KB. A record that would pass it is not written;
    the file ends there, at most the size given, and what is in it replays."""
    for size in (1500, 3000, 4096, 6000):
        path = tmp_path / f"small-{size}.ndjson"
        await record_a_run(path, max_size=size)
        assert path.stat().st_size <= size, size
        end = json.loads(path.read_text().splitlines()[-1])
        assert end["k"] == "end" and "--max-size" in end["why"]
        await replay_to(path)


async def test_the_file_is_new_and_only_its_owner_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "run.ndjson"
    await record_a_run(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(FileExistsError):
        Recorder(path, [(SERVER, "")], S, version="test")


def header(**over: Any) -> str:
    data = {
        "format": "ocwatch-recording",
        "version": 1,
        "created": T0,
        "ocwatch": "x",
        "servers": [{"url": SERVER, "name": ""}],
        "settings": {},
    }
    return json.dumps({**data, **over}) + "\n"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (header(version=3), ":1: recording format version 3 is not one this ocwatch reads"),
        (header(version=True), ":1: recording format version True is not one this ocwatch"),
        # a focused fleet's recording (report's) names its focus; without it, it cannot be read
        (header(version=2), ":1: a recording of version 2 must name the sessions it looked at"),
        (header(version=2, focus=None), ":1: a recording of version 2 must name the sessions"),
        (header(version=2, focus=[""]), ":1: a recording of version 2 must name the sessions"),
        (header(version=2, focus=["ses_1", 7]), ":1: a recording of version 2 must name the"),
        ("{}\n", ":1: not an ocwatch recording"),
        ("PK\x03\x04 zip\n", ":1: not an ocwatch recording"),
        (
            header() + '{"t": 1, "s": 0, "k": "frame", "d": "x"}\nnot json\n',
            ":3: not a JSON object",
        ),
        (header() + '{"t": 1, "s": 0, "k": "telepathy"}\n', ":2: unknown record kind 'telepathy'"),
        (
            header() + '{"t": 1, "s": 5, "k": "frame", "d": "x"}\n',
            ":2: a frame record of no server",
        ),
        (header() + '{"s": 0, "k": "frame", "d": "x"}\n', ":2: a frame record without its time"),
        (header() + '{"t": 1, "s": 0, "k": "http", "m": "GET"}\n', ":2: an http record without"),
        # hostile times (a hostile review: tracebacks, "year out of range", hangs, exit 0)
        *(
            (header(created=bad), ":1: the header's creation time")
            for bad in (float("nan"), float("inf"), 1e300, 10**400, -1e18, 1e16)
        ),
        *(
            (
                header() + json.dumps({"t": bad, "s": 0, "k": "frame", "d": "x"}) + "\n",
                ":2: a frame record at",
            )
            for bad in (float("nan"), float("-inf"), -5.0, 1e300, 10**400)
        ),
        (header(servers=[]), ":1: the header names no server"),
        *(
            (
                header()
                + json.dumps(
                    {
                        "t": 1,
                        "s": 0,
                        "k": "http",
                        "m": "GET",
                        "p": "/",
                        "q": "",
                        "st": 200,
                        "h": {},
                        **over,
                    }
                )
                + "\n",
                said,
            )
            for over, said in (
                ({"st": -1}, ":2: an http record whose status -1 is none"),
                ({"st": True}, ":2: an http record whose status True is none"),
                ({"h": {"content-type": 5}}, ":2: an http record whose headers are not text"),
                ({"b64": "!!!notbase64"}, ":2: an http record whose body is not base64"),
                ({"b64": 12}, ":2: an http record whose body is not base64"),
            )
        ),
    ],
)
async def test_a_file_that_cannot_be_replayed_is_refused_naming_the_line(
    tmp_path: Path, text: str, said: str
) -> None:
    path = tmp_path / "bad.ndjson"
    path.write_text(text)
    with pytest.raises(RecordingError) as got:
        await replay_to(path)
    assert said in got.value.message and str(path) in got.value.message


def test_a_file_cut_at_its_end_replays_what_it_has_and_says_where_it_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recorder killed mid-write leaves a last line cut short, or (gzip) a compressed
    stream that stops short: every reader refused the whole file, though the lines before the
    cut replay as they would have (found by a review: `zcat` recovered 533 whole lines). They
    are replayed, and the reader says where the file ends. A plain file killed between two
    lines has no end record: said too. Only read() without `cut` still refuses."""
    good = tmp_path / "a.ndjson.gz"
    asyncio.run(record_a_run(good))
    whole = gzip.decompress(good.read_bytes()).decode().splitlines(keepends=True)
    cut_gz = tmp_path / "cut.ndjson.gz"
    cut_gz.write_bytes(good.read_bytes()[: good.stat().st_size * 2 // 3])
    cut_line = tmp_path / "cut.ndjson"
    cut_line.write_text("".join(whole[:-2]) + whole[-2][:10])  # (the last: the end record)
    cut_char = tmp_path / "cut-char.ndjson"  # cut inside a character of two bytes and more
    cut_char.write_bytes("".join(whole[:-2]).encode() + '{"t": 1, "d": "✓'.encode()[:-1])
    unended = tmp_path / "unended.ndjson"
    unended.write_text("".join(whole[:-1]))
    for path, said in [
        (cut_gz, "the compressed file ends early"),
        (cut_line, f":{len(whole) - 1}: the last line is cut short"),
        (cut_char, f":{len(whole) - 1}: the last line is cut short"),
        (unended, "no end record"),
    ]:
        replay, _view = asyncio.run(replay_to(path))
        assert replay.records > 0
        (note,) = replay.notes()
        assert said in note and "did not end cleanly" in note, note
        for command in (["status", "--json"], ["watch", "--json"]):
            assert main([*command, "--replay", str(path)]) == 0
            err = capsys.readouterr().err
            assert err == f"ocwatch: warning: {note}\n", err
        with (
            pytest.raises(RecordingError, match="cut short|ends early|not UTF-8")
            if path != unended
            else (contextlib.nullcontext())
        ):
            for _ in read(path)[1]:
                pass
    replay, _view = asyncio.run(replay_to(good))
    assert replay.notes() == []
    # the lines before a cut replay as the whole file's lines did
    short, view = asyncio.run(replay_to(cut_line))
    assert short.records == len(whole) - 3
    _replay, then = asyncio.run(replay_to(good, short.last_at))
    assert rows_json(view) == rows_json(then) and rows_json(view)


def test_replay_refuses_a_corrupt_or_cut_line_before_it_takes_the_screen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ocwatch replay` read the header only: a corrupt line later stopped the dashboard's
    source, restarted every second for ever behind the screen (found by a review). Every line
    is read first; no app is made."""
    import tui.app.run as run

    monkeypatch.setattr(run, "create_app", lambda *a, **k: pytest.fail("the screen was taken"))
    good = '{"t": 1, "s": 0, "k": "frame", "d": "x"}\n'
    for text, said in [
        (header() + good * 3 + "not json\n" + good, ":5: not a JSON object"),
        (header() + good + "not json\n" + good.rstrip("\n"), ":3: not a JSON object"),
    ]:
        path = tmp_path / "bad.ndjson"
        path.write_text(text)
        assert main(["replay", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err, err


def test_the_cli_says_a_bad_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.ndjson"
    path.write_text(header(version=9))
    assert main(["status", "--json", "--replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "version 9" in err
    assert main(["status", "--replay", str(tmp_path / "missing.ndjson")]) == 2
    assert "No such file" in capsys.readouterr().err


def test_status_and_watch_replay_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.ndjson"
    asyncio.run(record_a_run(path))
    capsys.readouterr()
    assert main(["status", "--json", "--replay", str(path), "--at", "+1.5"]) == 0
    during = json.loads(capsys.readouterr().out)
    assert {r["id"]: r["state"] for r in during["sessions"]}["ses_1"] == "busy"
    assert during["servers"][0]["name"] == "prod"
    assert main(["watch", "--json", "--replay", str(path)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    ses_1 = [
        (x["from"] and x["from"]["state"], x["to"]["state"])
        for x in lines
        if x["session_id"] == "ses_1"
    ]
    assert ses_1 == [(None, "idle"), ("idle", "busy"), ("busy", "idle")]
    assert main(["status", "--at", "+1"]) == 2  # --at without --replay
    capsys.readouterr()
    for command in ("status", "watch"):  # the recording names its servers: not silently ignored
        assert main([command, "--replay", str(path), "--server", "http://x:1"]) == 2
        assert "--server does not go with --replay" in capsys.readouterr().err


def test_watch_replay_of_a_server_never_read_exits_as_live_watch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recording of a server that refused the password: live `watch` said why and exited 2,
    `watch --replay` of what it recorded exited 0 (found by a review). Now it says why, on
    stderr as live, and exits 2."""
    path = tmp_path / "refused.ndjson"

    async def record() -> None:
        api = FakeAPI(sessions=[wire_session("ses_1")], password="right")
        fleet = Fleet([SERVER], settings=S, transport=httpx.MockTransport(api.handle))
        mon = fleet.monitors[0]
        recorder = Recorder(path, [(SERVER, "")], S, version="test", clock=lambda: T0)
        mon.tap = recorder
        assert not await mon.take_snapshot()
        recorder.close()
        await mon.client.aclose()

    asyncio.run(record())
    assert main(["watch", "--json", "--replay", str(path)]) == 2
    got = capsys.readouterr()
    assert got.out == ""
    assert got.err.count("\n") == 1 and "authentication failed (HTTP 401)" in got.err, got.err
    early = tmp_path / "early.ndjson"  # no snapshot recorded, nor any error: not read yet
    early.write_text(header() + json.dumps({"t": T0, "k": "end", "why": "stopped"}) + "\n")
    assert main(["watch", "--json", "--replay", str(early)]) == 2
    assert capsys.readouterr().err == f"ocwatch watch: {SERVER}: not read yet\n"


def test_times_and_sizes() -> None:
    assert parse_time("+30", T0) == T0 + 30
    assert parse_time("1800000000.5") == 1800000000.5
    assert parse_time("2027-01-15T08:00:00Z") == T0
    assert parse_size("500M") == 500 * 2**20 and parse_size("2g") == 2 * 2**30
    assert parse_size("64KiB") == 64 * 2**10
    for bad in ("lots", "1k"):
        with pytest.raises(ValueError, match="--max-size"):
            parse_size(bad)


def test_a_recording_names_its_format_first(tmp_path: Path) -> None:
    path = tmp_path / "x.ndjson"
    Recorder(path, [(SERVER, "prod")], S, version="9.9").close()
    head, records = read(path)
    assert head.servers == ((SERVER, "prod"),) and head.ocwatch == "9.9"
    assert head.settings["grace"] == 3.0
    assert [r.kind for r in records] == ["end"]
    os.remove(path)


def test_a_line_longer_than_any_record_is_refused_not_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compressed file of one endless line (a review's 1.5 MB inflating to 1.5 GB took
    `status --replay` to 3.1 GB): a header or a record longer than MAX_HEADER / MAX_LINE is
    refused once that much is read. (The limits made small here: the same code reads them.)"""
    import tui.record.format as fmt

    monkeypatch.setattr(fmt, "MAX_HEADER", 1000)
    monkeypatch.setattr(fmt, "MAX_LINE", 5000)
    bomb = tmp_path / "bomb.ndjson.gz"
    with gzip.open(bomb, "wt") as f:
        f.write('{"format": "ocwatch-recording", "x": "' + "a" * 10_000 + '"}\n')
    with pytest.raises(RecordingError, match="not an ocwatch recording"):
        read(bomb)
    path = tmp_path / "long.ndjson"
    Recorder(path, [(SERVER, "prod")], S, version="9.9").close()
    lines = path.read_text().splitlines(keepends=True)
    record = json.dumps({"t": T0, "s": 0, "k": "frame", "d": "x" * 6000}) + "\n"
    path.write_text(lines[0] + record + "".join(lines[1:]))
    _head, records = read(path)
    with pytest.raises(RecordingError, match="2: a line longer than 0 MiB"):
        list(records)


def test_a_recording_counts_the_snapshots_it_holds_whole(tmp_path: Path) -> None:
    """One in flight when the recording starts ends in it unbegun (a replay passes over it):
    not counted; one begun and ended there, taken or failed, is."""
    rec = Recorder(tmp_path / "x.ndjson", [(SERVER, "")], S, version="test", clock=lambda: T0)
    rec.snapshot(SERVER, T0, 4, False, protocol="v1")
    assert rec.snapshots == 0
    rec.snapshot(SERVER, T0, 5, True)
    assert rec.snapshots == 0
    rec.snapshot(SERVER, T0, 5, False, protocol="v1")
    rec.snapshot(SERVER, T0, 6, True)
    rec.snapshot(SERVER, T0, 6, False, "unreachable", "Unreachable")
    rec.snapshot(SERVER, T0, 6, False, protocol="v1")  # (an end said twice counts once)
    assert rec.snapshots == 2
    rec.close()


def synthetic(path: Path, events: int, seconds: float) -> None:
    """A recording of a snapshot of 50 sessions, then `events` frames over `seconds`: token
    noise, part updates and busy/idle status changes, as a busy server sends them."""
    rec = Recorder(path, [(SERVER, "")], S, version="test", clock=lambda: T0)
    rec.snapshot(SERVER, T0, 1, True)
    sessions = [wire_session(f"ses_{i:03d}") for i in range(50)]
    rec.http(
        SERVER,
        T0,
        1,
        "GET",
        "/global/health",
        "",
        200,
        {"content-type": "application/json"},
        b'{"healthy":true,"version":"x"}',
    )
    rec.http(
        SERVER,
        T0,
        1,
        "GET",
        "/experimental/session",
        "limit=1000",
        200,
        {"content-type": "application/json"},
        json.dumps(sessions).encode(),
    )
    for route in ("/session/status", "/permission", "/question"):
        rec.http(
            SERVER,
            T0,
            1,
            "GET",
            route,
            "directory=%2Fp%2Fa",
            200,
            {"content-type": "application/json"},
            b"{}" if "status" in route else b"[]",
        )
    rec.http(SERVER, T0, 1, "GET", "/project", "", 200, {"content-type": "application/json"}, b"[]")
    rec.http(
        SERVER,
        T0,
        1,
        "GET",
        "/api/session/active",
        "",
        404,
        {"content-type": "application/json"},
        b"{}",
    )
    for s in sessions:
        rec.http(
            SERVER,
            T0,
            1,
            "GET",
            f"/session/{s['id']}/message",
            "limit=1&directory=%2Fp%2Fa",
            200,
            {"content-type": "application/json"},
            b"[]",
        )
    rec.snapshot(SERVER, T0, 1, False)
    rec.stream(SERVER, T0, True, None)
    for i in range(events):
        t = T0 + seconds * i / events
        sid = f"ses_{i % 50:03d}"
        if i % 10 == 0:
            kind = "busy" if (i // 500) % 2 == 0 else "idle"
            data = frame("session.status", {"sessionID": sid, "status": {"type": kind}})
        else:
            data = json.dumps(
                {
                    "directory": "/p/a",
                    "payload": {
                        "type": "message.part.delta",
                        "properties": {"sessionID": sid, "delta": "tok"},
                    },
                }
            )
        rec.frame(SERVER, t, data)
    rec.close()


async def test_a_replay_at_100x_of_100k_events_finishes_and_ends_as_replayed(
    tmp_path: Path,
) -> None:
    import time

    from tui.record.replay import ReplaySource

    path = tmp_path / "big.ndjson.gz"
    synthetic(path, 100_000, 50.0)
    source = ReplaySource(path, speed=100)
    notified = 0

    def notify() -> None:
        nonlocal notified
        notified += 1

    started = time.monotonic()
    runner = asyncio.create_task(source.run(notify))
    while not source.finished:
        assert time.monotonic() - started < 120, "the replay did not finish"
        await asyncio.sleep(0.05)
    runner.cancel()
    assert source.replay.events == 100_000 and notified > 100
    _r, want = await replay_to(path)
    assert rows_json(source.current()) == rows_json(want)
    assert "ended" in source.status()


async def test_the_player_keeps_its_pace_when_records_are_closer_than_a_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recorded time passes at the speed counted from where it started, not from each wait:
    a wait lasts at least the event loop's tick (1 ms), so 20,000 records 5 ms apart at 100x
    were waited for one by one (26 s for a 1 s replay). Records already due are applied without
    a wait; so at 1000x (no Python reads 20,000 events in 0.1 s) nearly none is waited for."""
    import time

    from tui.record import replay as player

    path = tmp_path / "dense.ndjson"
    synthetic(path, 20_000, 100.0)
    waits = 0
    wait_for = asyncio.wait_for

    async def counted(aw: Any, timeout: float | None) -> Any:
        nonlocal waits
        waits += 1
        return await wait_for(aw, timeout)

    monkeypatch.setattr(player.asyncio, "wait_for", counted)
    source = player.ReplaySource(path, speed=1000)
    runner = asyncio.create_task(source.run(lambda: None))
    started = time.monotonic()
    while not source.finished:
        assert time.monotonic() - started < 120, "the replay did not finish"
        await asyncio.sleep(0.05)
    runner.cancel()
    assert source.replay.events == 20_000
    assert waits < 20_000 / 4, waits


@pytest.mark.parametrize("speed", [10.0, 1000.0])
async def test_the_players_timeline_is_the_same_at_any_speed(tmp_path: Path, speed: float) -> None:
    """The dashboard's player pulled the View when the screen asked (at most every 50 ms):
    at 10x a busy step of under a second was not in the timeline (found by a review). It pulls
    at the recorded batches as `watch --replay` does, whatever the speed and the screen's
    pace; the screen gets every transition since it last asked."""
    from tui.record.replay import ReplaySource

    path = tmp_path / "run.ndjson"
    await record_a_run(path)
    want, _view = await replay_to(path)
    source = ReplaySource(path, speed=speed)
    screen: list[tuple[str, str | None]] = []  # what the screen was handed, in order
    asked = asyncio.Event()

    async def draw() -> None:  # the app's pace: a pull at most every 50 ms after a notify
        while True:
            await asyncio.sleep(0.05)
            await asked.wait()
            asked.clear()
            source.current()
            changes = source.last_changes
            source.last_changes = None
            for tr in changes.transitions if changes is not None else ():
                if tr.key == (SERVER, "ses_1") and tr.after is not None:
                    screen.append((tr.after.state, tr.after.reason))

    drawer = asyncio.create_task(draw())
    runner = asyncio.create_task(source.run(asked.set))
    # to the end, and the screen's pull of the last notify done (it clears `asked` and reads
    # the changes in one step)
    await until(lambda: source.finished and not asked.is_set())
    runner.cancel()
    drawer.cancel()
    key = (SERVER, "ses_1")
    states = [(tr.after.state, tr.after.reason) for tr in want.history(key) if tr.after]
    assert states == [("idle", "completed"), ("busy", None), ("idle", "error")]
    assert [(tr.after.state, tr.after.reason) for tr in source.history(key) if tr.after] == states
    assert screen == states


async def test_the_players_timeline_times_what_time_changed_as_watch_replay_does(
    tmp_path: Path,
) -> None:
    """A change that only time makes (a prompt's grace period ending) was stamped at the
    player's next pull: at 1000x, the next record's time, seconds later (found by a review).
    The player pulls as follow() does while nothing comes: a recorded second after the last
    pull, while time can still change the View."""
    from tui.record.replay import ReplaySource

    path = tmp_path / "quiet.ndjson"
    clock = Clock(T0)
    api = FakeAPI(
        sessions=[wire_session("ses_1")],
        messages={"ses_1": [wire_msg("ses_1", created=T0 - 1, role="user")]},
    )
    fleet = Fleet([SERVER], settings=S, clock=clock, transport=httpx.MockTransport(api.handle))
    mon = fleet.monitors[0]
    recorder = Recorder(path, [(SERVER, "")], S, version="test", clock=clock)
    mon.tap = recorder
    assert await mon.take_snapshot()  # a prompt with no reply, the server not busy: starting
    mon.stream_opened()
    clock.t = T0 + 20
    mon.on_data(frame("server.heartbeat", {}))
    recorder.close()
    await mon.client.aclose()
    want, _view = await replay_to(path)
    source = ReplaySource(path, speed=1000)
    runner = asyncio.create_task(source.run(lambda: None))
    await until(lambda: source.finished)
    runner.cancel()
    key = (SERVER, "ses_1")
    times = [(tr.after.state, tr.at) for tr in want.history(key) if tr.after]
    assert times[0][0] == "unknown" and T0 + 2 < times[0][1] < T0 + 5, times
    assert [(tr.after.state, tr.at) for tr in source.history(key) if tr.after] == times


async def test_pause_step_speed_and_seek(tmp_path: Path) -> None:
    from tui.record.replay import ReplaySource

    path = tmp_path / "run.ndjson"
    await record_a_run(path)
    source = ReplaySource(path, speed=1.0)
    runner = asyncio.create_task(source.run(lambda: None))
    await asyncio.sleep(0.05)  # (the player under way: how far it gets does not matter)
    source.toggle_pause()
    assert "paused" in source.status()
    before = source.replay.records
    source.step_once()
    await until(lambda: source.replay.records == before + 1)
    assert source.replay.records == before + 1  # one record, and still paused
    source.faster(3)
    assert source.speed == 10.0
    source.seek(+9)  # to the end of the run (its ten seconds)
    await until(lambda: source.clock() >= T0 + 9)
    assert {r["id"]: r["state"] for r in rows_json(source.current())}["ses_1"] == "idle"
    at = source.clock()  # (paused: it stays; a seek past the end stops at the end)
    source.seek(-9)  # back: replayed from the start up to nine seconds before, and held there
    target = max(T0, at - 9)
    await until(lambda: source.clock() == pytest.approx(target, abs=0.01))
    await asyncio.sleep(0.1)  # (held there: time for a move that must not come)
    assert source.clock() == pytest.approx(target, abs=0.01)
    assert {r["id"]: r["state"] for r in rows_json(source.current())}["ses_1"] != "idle"
    runner.cancel()


async def test_the_raw_facts_of_a_session_live_and_replayed(tmp_path: Path) -> None:
    path = tmp_path / "run.ndjson"
    fleet, _clock, _views = await record_a_run(path)
    live = fleet.raw((SERVER, "ses_1"))
    assert live is not None
    assert [etype for _t, etype, _p in live.events] == [
        "session.status",
        "session.error",
        "session.status",
        "message.updated",
    ]
    assert any(
        e.startswith("last message msg_1: assistant, completed, finish stop, error APIError")
        for e in live.entries
    )
    asking = fleet.raw((SERVER, "ses_2"))
    assert asking is not None and "permission per_1: bash npm test" in asking.entries
    _r, _view = await replay_to(path)
    assert _r.fleet.raw((SERVER, "ses_1")) == live  # the same frames, the same snapshot
    assert fleet.raw(("http://elsewhere:1", "ses_1")) is None


def test_a_full_disk_stops_the_recording_not_the_monitor(tmp_path: Path) -> None:
    said: list[str] = []
    rec = Recorder(tmp_path / "x.ndjson", [(SERVER, "")], S, version="t", on_full=said.append)

    class Full:
        def write(self, _data: bytes) -> int:
            raise OSError(28, "No space left on device")

        def flush(self) -> None:
            raise OSError(28, "No space left on device")

        def close(self) -> None:
            pass

    rec._file = Full()  # type: ignore[assignment]
    rec.frame(SERVER, T0, "{}")  # no exception
    rec.frame(SERVER, T0, "{}")
    rec.close()
    assert rec.stopped is not None and "No space left on device" in rec.stopped
    assert said == [rec.stopped]


def test_a_gzipped_recording_reaches_the_disk_as_it_runs(tmp_path: Path) -> None:
    clock = [T0]
    path = tmp_path / "x.ndjson.gz"
    rec = Recorder(path, [(SERVER, "")], S, version="t", clock=lambda: clock[0])
    for i in range(50):
        clock[0] = T0 + i * 0.1
        rec.frame(SERVER, clock[0], '{"payload":{"type":"server.heartbeat"}}')
    # not closed (as after a crash): what was flushed a second ago is readable
    with gzip.open(path, "rt") as f:
        assert json.loads(f.readline())["format"] == "ocwatch-recording"
        assert f.readline().startswith('{"t":')
    rec.close()


@pytest.mark.parametrize("bad", ["inf", "nan", "1e300", "-5", "0001-01-01", "+"])
def test_a_time_that_is_no_moment_of_a_recording_is_refused(bad: str) -> None:
    with pytest.raises(OcwatchError):
        parse_time(bad, T0 if bad != "+" else None)


def test_a_moment_before_the_recording_or_before_its_first_snapshot_is_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--at +-5` or a date before the recording was accepted, and a moment before the first
    snapshot said "unreachable" with no error, of a server that answered (found by a review):
    the first is refused naming the start, the second says the server was not read yet."""
    with pytest.raises(OcwatchError, match="before the recording starts"):
        parse_time("+-5", T0)
    with pytest.raises(OcwatchError, match="before the recording starts"):
        parse_time(str(T0 - 1), T0)
    assert parse_time("+0", T0) == T0
    path = tmp_path / "early.ndjson"
    path.write_text(header())  # the header alone: no snapshot was recorded
    assert main(["status", "--replay", str(path), "--at", "+0"]) == 2
    err = capsys.readouterr().err
    assert err.endswith(f"\nocwatch: {SERVER}: not read yet\n"), err
    assert err.startswith("ocwatch: warning: ") and "no end record" in err, err
    assert main(["status", "--replay", str(path), "--at", "+-1"]) == 2
    assert "before the recording starts" in capsys.readouterr().err


def test_a_moment_after_the_recording_ends_is_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--at 2030-01-01` read every row as in its state for years, the stream `stalled` but
    the server reachable, exit 0; `replay --from` past the end started there (found by a
    review). Both are refused naming the end; the end itself is a moment of the recording."""
    import tui.app.run as run

    path = tmp_path / "short.ndjson"
    rec = Recorder(path, [(SERVER, "")], S, version="t", clock=lambda: T0)
    rec.stream(SERVER, T0, True, None)
    rec.frame(SERVER, T0 + 10, '{"payload":{"type":"server.heartbeat"}}')
    rec.close()
    for at in ("+11", "2030-01-01T00:00:00Z"):
        assert main(["status", "--replay", str(path), "--at", at]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "after the recording ends" in err, err
    assert main(["status", "--replay", str(path), "--at", "+10"]) == 2  # (never read: 2)
    assert "after the recording ends" not in capsys.readouterr().err
    monkeypatch.setattr(run, "create_app", lambda *a, **k: pytest.fail("the screen was taken"))
    assert main(["replay", str(path), "--from", "+11"]) == 2
    assert "after the recording ends" in capsys.readouterr().err


async def test_a_long_silence_in_a_recording_replays_at_once(tmp_path: Path) -> None:
    import time

    path = tmp_path / "gap.ndjson"
    rec = Recorder(path, [(SERVER, "")], S, version="t", clock=lambda: T0)
    rec.stream(SERVER, T0, True, None)
    rec.frame(SERVER, T0 + 1, '{"payload":{"type":"server.heartbeat"}}')
    rec.frame(SERVER, T0 + 86_400 * 30, '{"payload":{"type":"server.heartbeat"}}')  # a month
    rec.close()
    started = time.monotonic()
    await replay_to(path)
    await replay_to(path, T0 + 86_400 * 365)
    assert time.monotonic() - started < 5


def test_recorded_settings_of_the_wrong_type_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.ndjson"
    path.write_text(header(settings={"grace": "three"}))
    with pytest.raises(RecordingError, match="the setting 'grace' is 'three'"):
        Replay(path)
    # a timeout of 1e12 s: the replay stepped through it a second at a time, for ever
    path.write_text(header(settings={"heartbeat_timeout": 1e12}))
    with pytest.raises(RecordingError, match="'heartbeat_timeout' is 1000000000000.0, outside"):
        Replay(path)
    path.write_text(header(settings={"max_event": 16_777_216}))  # (a size, not seconds)
    Replay(path)


async def test_snapshots_begun_and_never_ended_are_bounded(tmp_path: Path) -> None:
    """Live, a server has one snapshot open (two while one supersedes another): a file that
    begins 100,000 made the replay crawl and grow; past MAX_OPEN_SNAPSHOTS it is refused."""
    begins = "".join(
        json.dumps({"t": T0 + 1, "s": 0, "k": "snap", "n": n, "begin": True}) + "\n"
        for n in range(1, MAX_OPEN_SNAPSHOTS + 2)
    )
    path = tmp_path / "begins.ndjson"
    path.write_text(header() + begins)
    with pytest.raises(RecordingError, match=f":{MAX_OPEN_SNAPSHOTS + 2}: more than"):
        await replay_to(path)


async def test_answers_to_requests_never_made_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot's answers wait for its requests; ones for a route it never asks were kept
    until it ended (1.6 GB from a 1.6 MB gzip): past MAX_KEPT_ANSWERS, refused."""
    monkeypatch.setattr(replay_module, "MAX_KEPT_ANSWERS", 2**20)
    answer = {"t": T0 + 1, "s": 0, "k": "http", "n": 1, "m": "GET", "p": "/nope", "q": ""}
    lines = [json.dumps({"t": T0 + 1, "s": 0, "k": "snap", "n": 1, "begin": True})]
    lines += [json.dumps({**answer, "st": 200, "h": {}, "b": "x" * 2**19})] * 3
    path = tmp_path / "answers.ndjson"
    path.write_text(header() + "\n".join(lines) + "\n")
    with pytest.raises(RecordingError, match=":4: more than 1 MiB of answers to requests never"):
        await replay_to(path)


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A FIFO (no writer) held the reader in its open for ever: refused, exit 2, one line."""
    fifo = tmp_path / "rec.ndjson"
    os.mkfifo(fifo)
    for command in ("status", "watch"):
        run = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from tui.cli.main import main; "
                f"sys.exit(main(['{command}', '--replay', {str(fifo)!r}]))",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 2, run.stderr
        assert run.stderr.count("\n") == 1 and "not a regular file" in run.stderr


async def test_a_frame_that_came_while_a_snapshot_was_read_replays_where_it_came(
    tmp_path: Path,
) -> None:
    """A snapshot decides which last messages to ask for once the maps are in, from the journal
    as it is then (the stream vouches for a running session whose status did not move). A
    status event that comes after that, while it still reads other messages, must not change
    that decision in the replay: the replay reads the snapshot as the answers come in the file,
    with the frames that came meanwhile applied in their place (applied all before it, the
    replay asked for a message the live run never asked for, and refused the file)."""
    path = tmp_path / "race.ndjson"
    clock = Clock(T0)
    api = FakeAPI(
        sessions=[wire_session("ses_1"), wire_session("ses_2")],
        status={"/p/a": {"ses_1": {"type": "busy"}}},
        messages={
            "ses_1": [wire_msg("ses_1", created=T0 - 5)],
            "ses_2": [wire_msg("ses_2", created=T0 - 100, completed=T0 - 90)],
        },
    )
    meanwhile: list[str] = []  # the session whose message request ses_1's end comes during

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path in meanwhile:
            clock.t += 0.01
            api.status = {"/p/a": {"ses_2": {"type": "busy"}}}
            idle = {"sessionID": "ses_1", "status": {"type": "idle"}}
            mon.on_data(frame("session.status", idle))
        return api.handle(request)

    transport = httpx.MockTransport(handle)
    fleet = Fleet([SERVER], settings=S, clock=clock, transport=transport, names={SERVER: "prod"})
    mon = fleet.monitors[0]

    recorder = Recorder(path, [(SERVER, "prod")], S, version="test", clock=clock)
    mon.tap = recorder
    mon.stream_opened()
    clock.t = T0 + 1
    assert await mon.take_snapshot()
    live = [fleet.current()]
    clock.t = T0 + 2  # ses_2 starts with no event: its message is asked again, ses_1's not
    api.status = {"/p/a": {"ses_1": {"type": "busy"}, "ses_2": {"type": "busy"}}}
    meanwhile.append("/session/ses_2/message")
    assert await mon.take_snapshot()
    live.append(fleet.current())
    assert mon.store.snapshot is not None and mon.store.snapshot.vouched == 1
    clock.t = T0 + 4
    live.append(fleet.current())
    mon.tap = None
    recorder.close()

    replay = Replay(path)
    await replayed_as_live(replay, live)
    assert replay.fleet.monitors[0].store.snapshot.vouched == 1


def test_a_burst_then_silence_reaches_the_disk_at_the_next_tick(tmp_path: Path) -> None:
    """Issue 40: 40 frames, then silence, a SIGKILL 9 s later: the .gz kept none of them (the
    flush waited for the next record). The recorder's tick flushes what was written."""
    import gzip as _gzip
    import zlib

    from tui.record.writer import Recorder

    now = [T0]
    path = tmp_path / "burst.ndjson.gz"
    recorder = Recorder(path, [(SERVER, "")], S, version="test", clock=lambda: now[0])
    for i in range(40):
        recorder.frame(SERVER, now[0], f'{{"payload": {{"id": "evt_{i}"}}}}')

    def readable() -> bytes:  # what a reader gets from the file as it is on disk (no end)
        raw = path.read_bytes()
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw)

    assert b"evt_39" not in readable()  # (buffered: no record came after the burst)
    now[0] += 0.6
    recorder.tick()
    assert b"evt_39" in readable()  # a crash now loses nothing of the burst
    recorder.close()
    assert b"evt_39" in _gzip.decompress(path.read_bytes())
