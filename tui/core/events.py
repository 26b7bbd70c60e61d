"""Parsing frames of `GET /global/event` into Events, tolerant and counted.

A frame is `{"directory", "project", "payload": {"id", "type", "properties"}}`. Persisted changes
come twice on the global stream: once plain, once as a `sync` frame; the sync copies are dropped
here, but their per-aggregate `seq` is watched: a jump means events were missed (no replay), and the
caller must take a fresh snapshot.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar, NamedTuple, cast

from . import text

log = logging.getLogger("ocwatch.events")

#: Event types derive() reads.
RELEVANT = frozenset(
    {
        "session.created",
        "session.updated",
        "session.deleted",
        "session.status",
        "session.idle",
        "session.error",
        "message.updated",
        "message.removed",
        "message.part.updated",
        "permission.asked",
        "permission.replied",
        "question.asked",
        "question.replied",
        "question.rejected",
        "todo.updated",  # (its session's `updated` moves: the details re-read its todos)
    }
)
#: Types that only tell the stream is alive or the server's instances changed.
CONTROL = frozenset(
    {
        "server.connected",
        "server.heartbeat",
        "server.instance.disposed",
        "global.disposed",
    }
)
#: High-rate or irrelevant types skipped cheaply (known, not counted as unknown).
NOISE = frozenset(
    {
        "message.part.delta",
        "session.diff",
        "plugin.added",
        "catalog.updated",
        "lsp.updated",
        "lsp.client.diagnostics",
        "file.edited",
        "file.watcher.updated",
        "session.compacted",
        "installation.updated",
        "installation.update-available",
        "vcs.branch.updated",
        "project.updated",
        "command.executed",
        "mcp.tools.changed",
        "ide.installed",
        "tui.toast.show",
        "pty.created",
        "pty.updated",
        "pty.exited",
        "pty.deleted",
        "message.part.removed",
        "session.next.step",
        "workspace.ready",
        "workspace.failed",
        "server.instance.created",
    }
)
#: Events after which a fresh snapshot is worth taking (debounced by the caller).
RESYNC_TRIGGERS = frozenset(
    {
        "session.idle",
        "session.error",
        "message.removed",
        "server.instance.disposed",
        "global.disposed",
    }
)
#: Events that can change a row's settled state at once (a dashboard draws them without waiting
#: for its next redraw slot); session.status counts when it is not `busy` (Event.may_settle).
SETTLING = frozenset(
    {
        "session.idle",
        "session.error",
        "permission.asked",
        "permission.replied",
        "question.asked",
        "question.replied",
        "question.rejected",
    }
)


@dataclass(slots=True)
class Event:
    """One event from the stream, with the client-side receive time (epoch seconds). Read
    only, by convention: not a frozen dataclass, whose `__init__` sets each field through
    `object.__setattr__` (0.76 us an event against 0.22 us, and one is made for every frame
    worth keeping: issue 42's stream path); nothing assigns to one once made."""

    type: str
    properties: dict[str, Any]
    directory: str | None
    received: float

    @property
    def session_id(self) -> str | None:
        p = self.properties
        sid = p.get("sessionID")
        if isinstance(sid, str):
            return sid
        info = p.get("info")
        if isinstance(info, dict):
            if self.type.startswith("session.") and isinstance(info.get("id"), str):
                return str(info["id"])
            if isinstance(info.get("sessionID"), str):
                return str(info["sessionID"])
        part = p.get("part")
        if isinstance(part, dict) and isinstance(part.get("sessionID"), str):
            return str(part["sessionID"])
        return None

    @property
    def wants_snapshot(self) -> bool:
        if self.type in RESYNC_TRIGGERS:
            return True
        return self.type == "session.status" and self._status_type() == "idle"

    @property
    def may_settle(self) -> bool:
        """Whether it can change a row's settled state at once: a run ending, something asked
        or answered (not a part, a token or a busy repeat)."""
        if self.type in SETTLING:
            return True
        return self.type == "session.status" and self._status_type() != "busy"

    def _status_type(self) -> object:
        """A session.status event's `status.type` (None: no status object)."""
        status = self.properties.get("status")
        return status.get("type") if isinstance(status, dict) else None


class Parsed(NamedTuple):
    """What one frame gave: an event worth keeping (or None), and whether events were missed.
    (A named tuple: one is made for every frame, faster than a frozen dataclass.)"""

    event: Event | None = None
    gap: bool = False
    control: str | None = None  # type of a control event (connected, heartbeat, disposed)
    more: tuple[Event, ...] = ()  # further facts the same frame says (V2: a reject's refusal)


#: A Parsed from its four fields as one tuple, `parsed((event, gap, control, more))`, made by
#: tuple's own constructor: a named tuple's `__new__` is a Python function, which the type's
#: call reaches through a slot (about a thousand instructions, where the stream path spends
#: some 36,000 an event)
parsed = cast(
    Callable[[tuple[Any, bool, Any, tuple[Any, ...]]], Parsed], partial(tuple.__new__, Parsed)
)


_DELTA = '"message.part.delta"'
_NOISE_PREFIXES = ("session.next.", "tui.", "lsp.", "pty.")


def _is_noise(etype: str) -> bool:
    return etype in NOISE or etype.startswith(_NOISE_PREFIXES)


#: What most frames give (nothing to keep), and a gap alone: made once
NOTHING = Parsed()
GAP = Parsed(gap=True)

#: Event ids a parser remembers, to drop copies of an event it applied
SEEN_IDS = 8192


def remember(kept: dict[str, Any], key: str, value: Any, limit: int) -> None:
    """Keep `key` -> `value` in `kept`, the oldest half dropped once it holds `limit` entries
    (dicts keep insertion order): what a parser remembers between frames stays bounded."""
    if len(kept) >= limit:
        for old in list(kept)[: limit // 2]:
            del kept[old]
    kept[key] = value


#: Unknown event types an EventParser remembers (each said once), at most
UNKNOWN_TYPES_KEPT = 64


@dataclass
class FrameParser:
    """What every protocol's parser of one connection counts and keeps (the monitor and the
    servers view read the counts): frames skipped as malformed, events of unknown types, each
    aggregate's last sequence number (a jump is a gap), and the events applied already."""

    #: What a frame's `"type":` is followed by (its type, quoted; a space before it where the
    #: protocol's frames may have one) when the frame is noise known at sight: most of a busy
    #: stream (streamed tokens), passed over unparsed (`Reflector.on_frames`, and `parse`)
    QUICK: ClassVar[tuple[str, ...]] = ()

    skipped: int = 0
    unknown: int = 0
    sync_dropped: int = 0
    unknown_types: Counter[str] = field(default_factory=Counter)
    _seq: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0  # events dropped as copies of one applied already (same event id)
    _ids: dict[str, int] = field(default_factory=dict)  # the last SEEN_IDS ids applied

    def seen(self, event_id: object, data: str) -> bool:
        """Whether this very event (its id and its frame) was applied already (counted); else
        it is now. A server sends each event once: a copy (a proxy or an attacker replaying
        frames) would make a run that never happened (issue 40). The last SEEN_IDS are kept.
        A missing or odd id is never a copy."""
        if not isinstance(event_id, str) or not event_id:
            return False
        mark = hash(data)
        if self._ids.get(event_id) == mark:
            self.duplicates += 1
            return True
        remember(self._ids, event_id, mark, SEEN_IDS)
        return False

    def reset_sequences(self) -> None:
        """Forget the sequences (call on reconnect: the fresh snapshot covers the gap)."""
        self._seq.clear()

    def _malformed(self, data: str) -> Parsed:
        """A frame that is not JSON: counted."""
        self.skipped += 1
        log.warning("skipped a malformed event frame (%d bytes)", len(data))
        return NOTHING

    def _skip(self, what: str) -> Parsed:
        self.skipped += 1
        log.warning("skipped %s", text.literal(what, escapes=True))  # (a server's type in it)
        return NOTHING

    def _unknown(self, etype: str) -> None:
        """An event of a type no rule reads (nor known as noise): counted, said once (the
        first UNKNOWN_TYPES_KEPT types a server sends: one sending a new type in every event
        is not remembered for good)."""
        self.unknown += 1
        types = self.unknown_types
        if etype in types:
            types[etype] += 1
        elif len(types) < UNKNOWN_TYPES_KEPT and len(etype) <= 200:
            types[etype] = 1
            log.info("ignoring unknown event type %r", etype)

    def _seq_jump(self, agg: Any, seq: Any, limit: int | None = None) -> bool:
        """Whether `seq` jumps past the aggregate's last (events were missed), or goes back
        below it (the sequence held is not the server's: a frame that said a huge one would
        otherwise hide every later gap until a reconnect); it is kept as the last (`limit`:
        at most that many aggregates, all forgotten past it). The same again, or odd ones: no."""
        if not isinstance(agg, str) or not isinstance(seq, int) or isinstance(seq, bool):
            return False
        last = self._seq.get(agg)
        if last is None and limit is not None and len(self._seq) >= limit:
            self._seq.clear()  # (a snapshot prunes them: this bounds a stream of new ids)
        self._seq[agg] = seq
        return last is not None and (seq > last + 1 or seq < last)


@dataclass
class EventParser(FrameParser):
    """V1's parser for one connection: counts skips and unknown types, watches sync seq."""

    QUICK = (_DELTA, " " + _DELTA)

    def prune(self, live: Container[str]) -> None:
        """Forget the sequences of sessions that no longer exist (bounded memory over days)."""
        for agg in [a for a in self._seq if a not in live]:
            del self._seq[agg]

    def parse(self, data: str, received: float) -> Parsed:
        """Parse one SSE `data` payload. Never raises."""
        if not data or data.isspace():
            return NOTHING
        # a noise frame (streamed tokens are most of a busy stream) is known by its type, the
        # first `"type":` of the frame (a quote inside a string is escaped, so this is a key),
        # and skipped unparsed: nothing in it is read
        at = data.find('"type":')
        if at >= 0:
            at += 8 if data[at + 7 : at + 8] == " " else 7
            if data.startswith(_DELTA, at):
                return NOTHING
            end = data.find('"', at + 1, at + 64)
            if end > 0 and data[at] == '"' and _is_noise(data[at + 1 : end]):
                return NOTHING
        try:
            frame = text.loads(data)
        except (ValueError, RecursionError):
            return self._malformed(data)
        if not isinstance(frame, dict):
            return self._skip("a frame that is not an object")
        payload = frame.get("payload", frame)  # /event sends the payload bare
        if not isinstance(payload, dict):
            return self._skip("a frame without a payload object")
        etype = payload.get("type")
        if not isinstance(etype, str):
            return self._skip("an event without a type")
        if etype == "sync":
            self.sync_dropped += 1
            sync = payload.get("syncEvent")
            # a replayed copy is dropped before its seq is read (an older seq is a gap, and
            # so would the next real one be); its id is its plain twin's: kept apart
            sid = sync.get("id") if isinstance(sync, dict) else None
            if isinstance(sid, str) and self.seen("sync " + sid, data):
                return NOTHING
            return GAP if self._check_seq(sync) else NOTHING
        props = payload.get("properties")
        if props is None:
            props = {}
        if not isinstance(props, dict):
            return self._skip(f"a {etype} event whose properties are not an object")
        directory = frame.get("directory")
        if not isinstance(directory, str):
            directory = None
        if etype in CONTROL:
            return Parsed(event=Event(etype, props, directory, received), control=etype)
        if etype in RELEVANT:
            # the two checks every fold relies on, made here where a bad one can be counted
            sid = props.get("sessionID")
            if sid is not None and not isinstance(sid, str):
                return self._skip(f"a {etype} event whose sessionID is not a string")
            if etype == "session.status" and not isinstance(props.get("status"), dict):
                return self._skip("a session.status event whose status is not an object")
            if self.seen(payload.get("id"), data):
                return NOTHING  # applied already: a replayed copy says nothing new
            return parsed((Event(etype, props, directory, received), False, None, ()))
        if not _is_noise(etype):
            self._unknown(etype)
        return NOTHING

    def _check_seq(self, sync: Any) -> bool:
        if not isinstance(sync, dict):
            return False
        return self._seq_jump(sync.get("aggregateID"), sync.get("seq"))
