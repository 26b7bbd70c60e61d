"""`ocwatch report SESSION_ID`: a self-contained bug-report bundle for one session.

ocwatch watches the server for a few seconds (`--for`), recording what it says, then writes one
JSON object: the session's View row with its evidence, its timeline over the capture, its last
messages, its status, permission and question entries as the server sent them, the last events
about it, the server's drift examples, and the versions of the server and of ocwatch. With
`--redact` the text of messages (prompts, replies, tool input and output) is replaced by its
length. `-o FILE.ndjson` (or `.ndjson.gz`) writes the capture as a recording instead, which
`ocwatch replay` and `status --replay` open."""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from .. import __version__
from ..core import text
from ..core.client import OcwatchError
from ..core.decide import Link, SessionInputs, row_of
from ..core.derive import inputs_of
from ..core.fleet import Fleet
from ..core.models import Wire
from ..core.raw import about
from ..core.settings import Settings
from ..core.targets import Servers
from ..core.text import literal
from ..core.view import ServerInfo, SessionRow, View, iso
from .watch import transition_json

if TYPE_CHECKING:
    from ..core.monitor import ServerMonitor

_W = TypeVar("_W", bound=Wire)

FORMAT = "ocwatch-report"
VERSION = 1
MESSAGES = 20
EVENTS = 200
#: Keys whose string values say what happened, not what was said: kept by --redact (every other
#: string, titles, text, commands, paths of files, errors, is replaced by its length). Ids are
#: not secrets, a report is followed by them: a session's id is kept wherever it is (a row's
#: `children`, the task tool's `sessionId` and `parentSessionId`), and so is a message's
_KEPT_KEYS = frozenset(
    {
        "id",
        "type",
        "status",
        "role",
        "finish",
        "sessionID",
        "messageID",
        "callID",
        "partID",
        "tool",
        "name",
        "providerID",
        "modelID",
        "agent",
        "kind",
        "state",
        "reason",
        "version",
        "slug",
        "projectID",
        "parentID",
        "session_id",
        "parent_id",
        "children",
        "sessionId",
        "parentSessionId",
        "assistantMessageID",
        "inboxID",
        "server",
        "at",
        "since",
        "updated",
        "generated_at",
        "created",
        "completed",
        "start",
        "end",
        "reply",
        "permission",
        "settling",
        "ended",
        "format",
        "stream",
        "_tag",
        "requestID",
        "aggregateID",
    }
)


def redact(value: Any, key: str | None = None) -> Any:
    """`value` with every string not under a kept key replaced by `[redacted: N chars]` (ids,
    types, states, times and numbers stay: they are what a bug is about). Walked with a stack
    of its own, not by recursion: a server's JSON may be nested as deep as the parser allows,
    deeper than Python's recursion (a model's dump has tuples: made lists)."""
    root: list[Any] = [None]
    stack: list[tuple[Any, str | None, Any, Any]] = [(value, key, root, 0)]
    while stack:
        item, under, holder, slot = stack.pop()
        if isinstance(item, dict):
            copy: dict[Any, Any] = dict.fromkeys(item)  # (in its order; filled below)
            holder[slot] = copy
            stack.extend((v, k, copy, k) for k, v in item.items())
        elif isinstance(item, list | tuple):
            seq: list[Any] = [None] * len(item)
            holder[slot] = seq
            stack.extend((v, under, seq, i) for i, v in enumerate(item))
        elif isinstance(item, str) and under not in _KEPT_KEYS:
            holder[slot] = f"[redacted: {len(item)} chars]"
        else:
            holder[slot] = item
    return root[0]


async def capture(
    session_id: str,
    servers: Servers,
    *,
    seconds: float,
    recording: Path,
    redacted: bool,
    transport: httpx.AsyncBaseTransport | None = None,
) -> dict[str, Any]:
    """Watch and record for `seconds`, then build the bundle (OcwatchError: the session is on
    no watched server, or no server could be read).

    The steps: watch the servers into `recording` and read the session's messages at the end
    (`_watch`); find its row; read back from the recording what the server said about it
    (`_recorded`); put the bundle together, redacted if asked."""
    # its snapshots read the session and its sub-agents alone (of the others, only that they
    # are listed): a report on a server of thousands of sessions asks a handful of questions
    fleet = Fleet.of_servers(servers, transport=transport, focus=[session_id])
    fetched = await _watch(fleet, session_id, seconds, recording, servers.settings)
    view = fleet.current()
    row = _row_of(view, session_id)
    server = next(s for s in view.servers if s.url == row.server)
    index = next(i for i, m in enumerate(fleet.monitors) if m.url == row.server)
    events, entries = _recorded(recording, index, session_id)
    bundle: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "generated_at": iso(view.generated_at),
        "ocwatch": __version__,
        "server": _server_json(server),
        "captured_for_seconds": seconds,
        "session": row.to_json(),
        "children": [
            r.to_json()
            for r in view.rows.values()
            if r.parent_id == session_id and r.server == row.server
        ],
        "timeline": [transition_json(t) for t in fleet.history(row.key)],
        "fact_sources": _fact_sources(fleet, row),
        "messages": fetched.messages,
        # V2: the transcript's entries as the server gave them (typed: user, assistant with its
        # content, idle with its outcome, ...); `messages` is what ocwatch read of them
        **({"transcript": fetched.transcript} if fetched.transcript is not None else {}),
        "messages_error": fetched.error,
        "server_entries": entries,
        "events": events[-EVENTS:],
        "drift_examples": list(server.drift_examples),
        "redacted": redacted,
    }
    if not redacted:
        return bundle
    monitor = fleet.monitor(row.server)
    assert monitor is not None
    wanted = [row, *(r for r in view.rows.values() if r.parent_id == session_id)]
    return redact_bundle(bundle, redacted_evidence(monitor, view, wanted, servers.settings))


@dataclass
class _Fetched:
    """The session's last messages, read when the capture ends."""

    messages: Any = field(default_factory=list)
    error: str | None = None
    """Why they (or the V2 transcript) could not be read."""
    transcript: list[Any] | None = None
    """V2: its transcript's entries as the server gave them."""


async def _watch(
    fleet: Fleet, session_id: str, seconds: float, recording: Path, settings: Settings
) -> _Fetched:
    """Follow `fleet` into a recording at `recording` until the first snapshots and `seconds`
    more have passed, then read the session's last messages."""
    from ..export.serve import follow
    from ..record.writer import Recorder

    recorder = Recorder(
        recording,
        [(m.url, m.name) for m in fleet.monitors],
        settings,
        version=__version__,
        focus=fleet.focus,
    )
    for m in fleet.monitors:
        m.tap = recorder
    stop = asyncio.Event()
    fetched = _Fetched()

    async def stop_later() -> None:
        """After the first snapshots and `seconds` more: the messages, then stop."""
        try:
            await asyncio.gather(*(m.first_snapshot() for m in fleet.monitors))
            await asyncio.sleep(seconds)
            await _fetch(fleet, session_id, fetched)
        finally:
            stop.set()

    timer = asyncio.create_task(stop_later())
    try:
        await follow(fleet, [], stop=stop)
        await timer
    finally:
        timer.cancel()
        for m in fleet.monitors:
            m.tap = None
        recorder.close()
    return fetched


async def _fetch(fleet: Fleet, session_id: str, fetched: _Fetched) -> None:
    """Into `fetched`: the session's last messages, and on a V2 server its transcript's
    entries as they are (a failure is said in `fetched.error`, the first one kept)."""
    rows = fleet.current().find(session_id)
    if not rows:
        return
    row = rows[0]
    try:
        fetched.messages = await fleet.act(
            row.server,
            lambda c: c.messages(session_id, limit=MESSAGES, directory=row.directory or None),
            resync=False,
        )
    except OcwatchError as exc:
        fetched.error = exc.message
    if fleet.protocol_of(row.server) != "v2":
        return
    try:
        entries = await fleet.act(
            row.server, lambda c: c.v2_messages(session_id, MESSAGES), resync=False
        )
        fetched.transcript = list(reversed(entries))
    except OcwatchError as exc:
        fetched.error = fetched.error or exc.message


def _row_of(view: View, session_id: str) -> SessionRow:
    """The session's row (OcwatchError: no server could be read, or none has it)."""
    rows = view.find(session_id)
    if rows:
        return rows[0]
    down = [s for s in view.servers if not s.reachable]
    if down and len(down) == len(view.servers):
        raise OcwatchError(down[0].why_unread())
    raise OcwatchError(f"session {session_id} is on none of the watched servers")


def _server_json(server: ServerInfo) -> dict[str, Any]:
    """The report's `server`: which server, and how its stream went."""
    return {
        "url": server.url,
        "name": server.label,
        "version": server.version,
        "protocol": server.protocol,
        "stream": server.stream,
        "reconnects": server.reconnects,
        "skipped_events": server.skipped_events,
        "unknown_events": server.unknown_events,
    }


def _fact_sources(fleet: Fleet, row: SessionRow) -> list[dict[str, Any]]:
    """Where each of the row's facts came from (snapshot or event), and when."""
    raw = fleet.raw(row.key)
    return [
        {"fact": fact, "source": source, "at": iso(at) if at is not None else None}
        for fact, source, at in (raw.sources if raw is not None else ())
    ]


def _recorded(
    recording: Path, index: int, session_id: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """What server `index` said about the session in the recording: the events about it
    (streamed tokens left out: noise), and its status, permission and question entries as the
    server sent them (the last answer wins)."""
    from ..record.format import read

    events: list[dict[str, Any]] = []
    entries: dict[str, Any] = {"status": None, "permissions": [], "questions": []}
    _header, records = read(recording)
    for rec in records:
        if rec.server != index:
            continue
        if rec.kind == "frame":
            event = _event(rec.data["d"], session_id)
            if event is not None:
                events.append({"at": iso(rec.t), "frame": event})
        elif rec.kind == "http" and rec.data.get("st") == 200 and "b" in rec.data:
            route, body, at = rec.data["p"], rec.data["b"], iso(rec.t)
            if route in _V2_ENTRIES:
                _v2_entry(entries, route, body, at, session_id)
            elif route.endswith(("/session/status", "/permission", "/question")):
                _v1_entry(entries, route, body, at, session_id)
    return events, entries


def _event(frame: str, session_id: str) -> Any:
    """A recorded event frame about the session, parsed (as it is when it is not JSON); None:
    it is not about it, or it streams tokens."""
    if '"message.part.delta"' in frame[:300] or not about(frame, session_id):
        return None
    try:
        return text.loads(frame)
    except ValueError:
        return frame


def _v1_entry(entries: dict[str, Any], route: str, body: str, at: str | None, sid: str) -> None:
    """What one recorded V1 answer (session status, permissions, questions) says of the
    session, as it said it (the last one wins)."""
    try:
        data = text.loads(body)
    except ValueError:
        return
    if route.endswith("/session/status") and isinstance(data, dict) and sid in data:
        entries["status"] = {"at": at, "entry": data[sid]}
    elif isinstance(data, list):
        kind = "permissions" if route.endswith("/permission") else "questions"
        mine = [e for e in data if isinstance(e, dict) and e.get("sessionID") == sid]
        if mine:
            entries[kind] = [{"at": at, "entry": e} for e in mine]


#: V2 routes whose answers hold a session's raw entries: its place in the active list, its open
#: permissions and forms (`server_entries` of the report)
_V2_ENTRIES = {
    "/api/session/active": "status",
    "/api/permission/request": "permissions",
    "/api/form": "questions",
}


def _v2_entry(entries: dict[str, Any], route: str, body: str, at: str | None, sid: str) -> None:
    """What one recorded V2 answer says of the session, as it said it (the last one wins)."""
    try:
        data = text.loads(body)
    except ValueError:
        return
    data = data.get("data") if isinstance(data, dict) else None
    kind = _V2_ENTRIES[route]
    if kind == "status":
        if isinstance(data, dict):
            entries["status"] = {"at": at, "entry": data.get(sid, None)}
        return
    mine = [e for e in data or () if isinstance(e, dict) and e.get("sessionID") == sid]
    if mine:
        entries[kind] = [{"at": at, "entry": e} for e in mine]


def redact_bundle(
    bundle: dict[str, Any], evidence: Mapping[str, list[str]] | None = None
) -> dict[str, Any]:
    """The bundle with every text redacted (see `redact`): messages, events, server entries,
    and the rows' titles, evidence, errors and what is asked. `evidence`: for the rows it has
    (by id), evidence decided from redacted inputs (redacted_evidence), kept: ocwatch's own
    words, with what was said in them redacted. The fact sources are ocwatch's words and ids."""
    kept = {
        "format",
        "version",
        "generated_at",
        "ocwatch",
        "server",
        "captured_for_seconds",
        "redacted",
        "fact_sources",
    }
    out = {k: v if k in kept else redact(v) for k, v in bundle.items()}
    for row in [out["session"], *out["children"]]:
        if row["id"] in (evidence or {}):
            row["evidence"] = list((evidence or {})[row["id"]])
    return out


def _bare(model: _W) -> _W:
    """The wire model with every text `redact` redacts redacted."""
    return type(model).parse(redact(model.to_wire()))


def _bare_any(value: Any) -> Any:
    """`value` with every wire model in it (inside plain tuples too: the open requests)
    redacted, and the link's error; anything else as it is (ids, times)."""
    if isinstance(value, Wire):
        return _bare(value)
    if isinstance(value, Link):  # its error may quote the server (a path, a message)
        return Link(value.reachable, redact(value.error), value.since)
    if type(value) is tuple:
        return tuple(_bare_any(v) for v in value)
    return value


def redacted_evidence(
    monitor: ServerMonitor, view: View, rows: list[SessionRow], settings: Settings
) -> dict[str, list[str]]:
    """The evidence of `rows` decided again from their inputs with every text redacted (the
    session, its status, last message, open requests and errors as `redact` leaves them): the
    rules' own words, and in them what was said replaced by its length. A row the redacted
    inputs decide otherwise (a rule read a text: a refused tool's error) is left out: its
    evidence is redacted whole."""
    snapshot = monitor.snapshot
    if snapshot is None:
        return {}
    inputs = inputs_of(snapshot, monitor.journal.facts(), monitor.link())
    out: dict[str, list[str]] = {}
    for row in rows:
        got = inputs.get(row.id)
        if got is None:
            continue
        try:
            bare = SessionInputs(*(_bare_any(v) for v in got))
        except (ValueError, RecursionError):  # not made again from its redacted dump
            continue
        again = row_of(bare, row, view.generated_at, settings)  # (the row as its previous one)
        if again.settled_as == row.settled_as and again.settled == row.settled:
            out[row.id] = list(again.evidence)
    return out


def run_report(
    session_id: str,
    servers: Servers,
    *,
    seconds: float = 3.0,
    output: Path | None = None,
    redacted: bool = False,
) -> int:
    """Print (or write to `output`) the bundle; exit 0, or 2 (said on stderr)."""
    as_recording = output is not None and output.name.endswith((".ndjson", ".ndjson.gz"))
    if output is not None and (output.exists() or output.is_symlink()):
        raise OcwatchError(f"{output}: the file exists; remove it or name another")
    if as_recording and redacted:
        raise OcwatchError(
            "--redact applies to a JSON report; a recording holds what the "
            "server said (write -o FILE.json)"
        )
    from ..record.writer import exclusive

    folder = Path(tempfile.mkdtemp(prefix="ocwatch-report-"))
    try:
        recording = folder / (
            "capture.ndjson.gz"
            if as_recording and output is not None and output.name.endswith(".gz")
            else "capture.ndjson"
        )
        bundle = asyncio.run(
            capture(
                session_id,
                servers,
                seconds=seconds,
                recording=recording,
                redacted=redacted,
            )
        )
        if as_recording and output is not None:
            try:
                with recording.open("rb") as src, exclusive(output) as dst:
                    shutil.copyfileobj(src, dst)
            except OSError as exc:
                raise OcwatchError(f"{output}: cannot write it ({exc.strerror or exc})") from None
            print(
                f"ocwatch report: wrote the capture to {literal(str(output), escapes=True)} "
                "(ocwatch replay opens it)",
                file=sys.stderr,
            )
            return 0
        dumped = text.dumps(bundle, indent=2)
        if output is None:
            print(dumped)
        else:
            try:
                with exclusive(output) as dst:
                    dst.write((dumped + "\n").encode("utf-8"))
            except OSError as exc:
                raise OcwatchError(f"{output}: cannot write it ({exc.strerror or exc})") from None
            print(f"ocwatch report: wrote {literal(str(output), escapes=True)}", file=sys.stderr)
        return 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)
