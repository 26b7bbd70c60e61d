"""Frames of V2's `GET /api/event` as the shared journal's events.

A V2 frame is `{id, created, type, data, durable?: {aggregateID, seq}, location?: {directory}}`.
V2 has no `session.status`, `session.idle`, `message.*` or `question.*`: a run is told by
`session.execution.*`, its steps by `session.step.*` and `session.tool.*`, its asks by
`permission.*` and `form.*`. Each frame that bears on a session's state becomes the one V1 event
that says the same fact (the journal, derive and every consumer are shared); the rest is noise,
skipped without parsing where its type says so. Durable events count a per-aggregate `seq` from 0:
a jump means events were missed (no replay), and the caller must take a snapshot.

2.0.15 ends a run the user ended by rejecting a permission or dismissing a form with
`execution.interrupted {reason: "shutdown"}`, as it ends runs when the server goes down: the reject
or dismiss just before, on this same connection (the same server process), tells the two apart.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field
from typing import Any

from ... import text
from ...events import GAP, NOTHING, Event, FrameParser, Parsed, parsed, remember
from . import wire

log = logging.getLogger("ocwatch.events.v2")

#: Seconds after a reject or a dismiss within which a `shutdown` interruption is the user's
#: (2.0.15 sends it 30-40 ms after the reply; a run that goes on after it, a reject with
#: feedback, clears it at its next step)
REFUSAL_WINDOW = 5.0
#: Entries each of the parser's own maps holds at most (ids it must remember between frames)
MAX_KEPT = 10_000

#: Types known and skipped: catalog updates, streamed text, the inbox, usage, views
NOISE = frozenset(
    {
        "session.text.delta",
        "session.reasoning.delta",
        "session.tool.input.delta",
        "session.tool.progress",
        "session.text.ended",
        "session.reasoning.ended",
        "session.tool.input.ended",
        "session.instructions.updated",
        "session.inbox.delivered",
        "session.usage.updated",
        "session.viewed",
        "worktree.resolved",
    }
)
#: The first output of an attempt: after a retry, the run is busy again
OUTPUT = frozenset({"session.text.started", "session.reasoning.started", "session.step.streamed"})
_NOISE_SUFFIX = (".updated", ".delta")
#: Families that never bear on a session's state (a shell tool's process, terminals, files)
_NOISE_PREFIX = ("shell.", "pty.", "lsp.", "file.", "mcp.", "tui.", "installation.")
#: A V2 event's data; the V1 event (type, properties) a translation gives
Obj = dict[str, Any]
_V1 = tuple[str, dict[str, Any]]
#: Noise known at sight, passed over unparsed: the streamed tokens, and the noise 2.0.15 sends
#: with no `durable` sequence (a usage count, a tool's progress), so no gap is hidden
_QUICK = (
    '"session.text.delta"',
    '"session.reasoning.delta"',
    '"session.tool.input.delta"',
    '"session.usage.updated"',
    '"session.tool.progress"',
)


def _noise(etype: str) -> bool:
    return (
        etype in NOISE
        or etype.startswith(_NOISE_PREFIX)
        or (
            etype.endswith(_NOISE_SUFFIX)
            and not etype.startswith(("session.", "permission.", "form."))
        )
    )


@dataclass
class V2EventParser(FrameParser):
    """Stateful parser for one V2 connection (the EventParser interface): counts skips and
    unknown types, watches each aggregate's `durable.seq`, and remembers what later frames do
    not repeat (a form's session, a tool's name, a step's start, a refusal)."""

    QUICK = _QUICK

    _forms: dict[str, str] = field(default_factory=dict)  # form id -> session id
    _tools: dict[str, str] = field(default_factory=dict)  # call id -> tool name
    _started: dict[str, Any] = field(default_factory=dict)  # assistant message id -> created
    _retrying: dict[str, bool] = field(default_factory=dict)  # sessions between two attempts
    _refused: dict[str, tuple[float, str]] = field(default_factory=dict)  # sid -> (when, what)
    _asks: dict[str, tuple[str, str]] = field(default_factory=dict)  # request -> (msg, call id)
    _ended: dict[str, str] = field(default_factory=dict)  # call id -> how the user ended it
    # the sessions as the last snapshot listed them (prune), and as events created them since:
    # what a rename, which says the title alone, is laid over
    _known: Mapping[str, Any] = field(default_factory=dict)
    _infos: dict[str, dict[str, Any]] = field(default_factory=dict)

    def prune(self, live: Container[str]) -> None:
        """Forget the sequences of aggregates that are no sessions any more (`live`: the
        snapshot's sessions, kept to lay renames over)."""
        if isinstance(live, Mapping):
            self._known = live
            self._infos = {k: v for k, v in self._infos.items() if k in live}
        for agg in [a for a in self._seq if a.startswith("ses_") and a not in live]:
            del self._seq[agg]
        for sid in [s for s in self._retrying if s not in live]:
            del self._retrying[sid]
        # (a refusal of a session the snapshot did not list yet is kept: its run may be ending)

    def parse(self, data: str, received: float) -> Parsed:
        """Parse one SSE `data` payload. Never raises."""
        if not data or data.isspace():
            return NOTHING
        at = data.find('"type":')
        if at >= 0 and data.startswith(_QUICK, at + 7):
            return NOTHING
        try:
            frame = text.loads(data)
        except (ValueError, RecursionError):
            return self._malformed(data)
        if not isinstance(frame, dict):
            return self._skip("a frame that is not an object")
        etype = frame.get("type")
        if not isinstance(etype, str):
            return self._skip("an event without a type")
        props = frame.get("data")
        if props is None:
            props = {}
        if not isinstance(props, dict):
            return self._skip(f"a {etype} event whose data is not an object")
        durable = frame.get("durable")
        copy: bool | None = None  # (None: not asked yet)
        gap = False
        if durable is not None:
            # a replayed copy of an applied event is dropped before its seq is read: an older
            # seq would be a gap, and so would the next real one
            copy = self.seen(frame.get("id"), data)
            if copy:
                return NOTHING
            gap = self._check_seq(durable)
        sid = props.get("sessionID")
        if sid is not None and not isinstance(sid, str):
            return self._skip(f"a {etype} event whose sessionID is not a string")
        if etype == "server.connected":
            return Parsed(Event(etype, props, None, received), gap, control=etype)
        if etype in NOISE:
            return GAP if gap else NOTHING
        self._more: list[tuple[str, dict[str, Any]]] = []
        if copy is None and self.seen(frame.get("id"), data):
            return GAP if gap else NOTHING  # applied already: a replayed copy says nothing new
        try:
            out = self._translate(etype, props, sid, frame.get("created"), received)
        except (TypeError, ValueError, KeyError, AttributeError, ArithmeticError):
            return self._skip(f"a {etype} event of an unexpected shape")
        if out is None:
            if not _noise(etype) and etype not in _KNOWN:
                self._unknown(etype)
            return GAP if gap else NOTHING
        loc = frame.get("location")
        directory = (wire.directory_of(frame) or None) if isinstance(loc, dict) else None
        event = Event(out[0], out[1], directory, received)
        if not self._more:
            return parsed((event, gap, None, ()))
        more = tuple(Event(t, p, directory, received) for t, p in self._more)
        return parsed((event, gap, None, more))

    # -- the facts ------------------------------------------------------------------------------
    def _translate(
        self, etype: str, p: dict[str, Any], sid: str | None, created: Any, received: float
    ) -> _V1 | None:
        """The V1 event (type, properties) a V2 event says, or None (noise, or nothing new):
        its type's step in _STEPS; a type about a session needs its sessionID (session
        lifecycle events and forms do without: a form names its session inside)."""
        step = _STEPS.get(etype)
        if step is None or (sid is None and etype not in _SESSIONLESS):
            return None
        return step(self, etype, p, sid, created, received)

    # Each step: (self, etype, data, sessionID, created, received) -> the V1 event or None. A
    # step of a type not in _SESSIONLESS is called with a sessionID.

    def _session_created(self, _e: str, p: Obj, sid: Any, created: Any, _r: float) -> _V1:
        info = wire.session({**p, "id": sid, "time": {"created": created, "updated": created}})
        self._remember(self._infos, sid, info)
        return "session.created", {"sessionID": sid, "info": info}

    def _session_renamed(self, _e: str, p: Obj, sid: Any, _c: Any, _r: float) -> _V1 | None:
        title = p.get("title")
        return self._changed(sid, {"title": title}) if isinstance(title, str) else None

    def _session_moved(self, _e: str, p: Obj, sid: Any, _c: Any, _r: float) -> _V1 | None:
        """A session moved to another folder (`POST /api/session/{id}/move`): it lives there
        now, and a resync asks that folder what the session waits on (its permissions and
        forms are read per folder)."""
        directory = wire.directory_of(p)
        return self._changed(sid, {"directory": directory}) if directory else None

    def _changed(self, sid: Any, change: dict[str, Any]) -> _V1 | None:
        """A known session's info with `change` laid over it, as V1's session.updated; None
        for a session not seen yet (the next listing has it as it is)."""
        base = self._infos.get(sid) if isinstance(sid, str) else None
        if base is None and isinstance(sid, str) and sid in self._known:
            base = self._known[sid].to_wire()
        if base is None:
            return None
        info = {**base, **change}
        self._remember(self._infos, sid, info)
        return "session.updated", {"sessionID": sid, "info": info}

    def _session_deleted(self, _e: str, _p: Obj, sid: Any, _c: Any, _r: float) -> _V1:
        return "session.deleted", {"sessionID": sid}

    def _execution_started(self, _e: str, _p: Obj, sid: Any, _c: Any, _r: float) -> _V1:
        self._retrying.pop(sid, None)
        self._refused.pop(sid, None)
        return _status(sid, {"type": "busy"})

    def _retry_scheduled(self, _e: str, p: Obj, sid: Any, _c: Any, _r: float) -> _V1:
        self._remember(self._retrying, sid, True)
        retry = wire.retry_of(
            {"type": "assistant", "retry": {**p, "error": p.get("error")}, "time": {}}
        )
        return _status(sid, retry or {"type": "retry"})

    def _output(self, etype: str, p: Obj, sid: Any, created: Any, _r: float) -> _V1 | None:
        """Output (text, reasoning, a tool's input): after a retry, the next attempt is under
        way (busy again); a tool's input starting is its pending part."""
        tool = etype == "session.tool.input.started"
        if tool:
            self._remember(self._tools, p.get("id"), p.get("name"))
        if sid in self._retrying:
            self._retrying.pop(sid, None)
            return _status(sid, {"type": "busy"})
        return self._tool(sid, p, "pending", created) if tool else None

    def _inbox_enqueued(self, _e: str, p: Obj, sid: Any, created: Any, _r: float) -> _V1 | None:
        """A prompt accepted: the run is starting. An item of another kind than the user's
        starts none: a `synthetic` one is context queued for the next prompt (what 2.0.15
        queues with a shell command's output, `POST /api/session/{id}/shell`)."""
        item = p.get("item")
        kind = item.get("type") if isinstance(item, dict) else None
        if isinstance(kind, str) and kind != "user":
            return None
        mid = p.get("inboxID")
        return _message(sid, {"id": mid, "role": "user", "time": {"created": created}})

    def _step_started(self, _e: str, p: Obj, sid: Any, created: Any, _r: float) -> _V1:
        self._refused.pop(sid, None)  # the run went on after it (a reject with feedback)
        mid = p.get("assistantMessageID")
        self._remember(self._started, mid, created)
        return _message(sid, _assistant(sid, mid, {"created": created}))

    def _step_ended(self, etype: str, p: Obj, sid: Any, created: Any, _r: float) -> _V1:
        mid = p.get("assistantMessageID")
        info = _assistant(
            sid, mid, {"created": self._started.get(str(mid), 0), "completed": created}
        )
        for key in ("finish", "cost", "tokens"):
            if p.get(key) is not None:
                info[key] = p[key]
        if etype == "session.step.failed":
            info["error"] = wire.error(p.get("error")) or {"name": "UnknownError"}
        return _message(sid, info)

    def _tool_event(self, etype: str, p: Obj, sid: Any, created: Any, _r: float) -> _V1:
        return self._tool(sid, p, _TOOL_STATUS[etype], created)

    def _permission_asked(self, _e: str, p: Obj, _s: Any, _c: Any, _r: float) -> _V1:
        req = wire.permission(p)
        self._ask(req)
        return "permission.asked", req

    def _permission_replied(self, _e: str, p: Obj, sid: Any, created: Any, received: float) -> _V1:
        reply = p.get("reply")
        refused = reply == "reject" and not p.get("message")
        self._asks_done(p.get("requestID"), sid, created, refused, "rejected by the user")
        if reply == "reject":
            self._remember(self._refused, sid, (received, "rejected a permission"))
        return "permission.replied", {
            "sessionID": sid,
            "requestID": p.get("requestID"),
            "reply": reply,
        }

    def _form_created(self, _e: str, p: Obj, _s: Any, _c: Any, _r: float) -> _V1 | None:
        return self._form(p)

    def _form_ended(self, etype: str, p: Obj, _s: Any, created: Any, received: float) -> _V1:
        return self._form_end(etype, p, received, created)

    def _execution_ended(self, etype: str, p: Obj, sid: Any, _c: Any, _r: float) -> _V1:
        """A run that succeeded or failed: idle, completed or with its error."""
        self._retrying.pop(sid, None)
        self._refused.pop(sid, None)
        if etype == "session.execution.succeeded":
            return _idle(sid, "completed", "session.execution.succeeded")
        why = wire.error_text(p.get("error"))
        return _idle(sid, "error", "session.execution.failed" + (f": {why}" if why else ""))

    def _execution_interrupted(self, _e: str, p: Obj, sid: Any, _c: Any, received: float) -> _V1:
        """A run interrupted: aborted, but for a `shutdown` (the server stopping), unless the
        user refused something just before on this connection (then the user ended it)."""
        self._retrying.pop(sid, None)
        reason = p.get("reason")
        if reason != "shutdown":
            return _idle(
                sid, "aborted", f"session.execution.interrupted (reason {reason or 'none'})"
            )
        refused = self._refused.pop(sid, None)
        if refused is not None and received - refused[0] <= REFUSAL_WINDOW:
            return _idle(
                sid,
                "aborted",
                f"session.execution.interrupted (reason shutdown) just after the user "
                f"{refused[1]}: the user ended the run",
            )
        return _idle(
            sid,
            "interrupted",
            "session.execution.interrupted (reason shutdown): the server is stopping",
        )

    def _tool(
        self, sid: str, p: dict[str, Any], status: str, at: Any
    ) -> tuple[str, dict[str, Any]]:
        """A tool event as V1's tool part (`at`: the event's time, the call's start or end)."""
        call = p.get("id")
        ended = status in ("completed", "error")
        error = p.get("error")
        how = self._ended.pop(call, None) if isinstance(call, str) and ended else None
        if how is not None and status == "error":
            # the failure of a call the user ended (a form dismissed, a permission refused) says
            # so, whatever the server's words: interrupting a run while its form was open fails
            # the call as "Tool execution interrupted", and the row read busy until the run's end
            said = wire.error_text(error)
            error = {"type": "aborted", "message": f"{how} ({said})" if said else how}
        item = {
            "type": "tool",
            "id": call,
            "name": p.get("name") or self._tools.get(call) if isinstance(call, str) else None,
            "state": {"status": status, "input": p.get("input"), "error": error},
            "time": {"completed": at} if ended else {"ran": at},
        }
        if status in ("completed", "error") and isinstance(call, str):
            self._tools.pop(call, None)
        part = wire.tool_part(item, sid, str(p.get("assistantMessageID") or ""))
        part["state"]["status"] = status
        return "message.part.updated", {"sessionID": sid, "part": part}

    def _form(self, p: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        raw = p.get("form")
        if not isinstance(raw, dict):
            raise ValueError("form.created without a form")
        req = wire.form(raw)
        if isinstance(req["id"], str) and isinstance(req["sessionID"], str):
            self._remember(self._forms, req["id"], req["sessionID"])
            self._ask(req)
        return "question.asked", req

    def _form_end(
        self, etype: str, p: dict[str, Any], received: float, created: Any
    ) -> tuple[str, dict[str, Any]]:
        fid = p.get("id") or p.get("formID")
        sid = self._forms.pop(fid, None) if isinstance(fid, str) else None
        sid = sid or p.get("sessionID")
        props: dict[str, Any] = {"requestID": fid}
        if isinstance(sid, str):
            props["sessionID"] = sid
            self._asks_done(fid, sid, created, etype == "form.cancelled", "dismissed by the user")
            if etype == "form.cancelled":
                self._remember(self._refused, sid, (received, "dismissed a form"))
        return ("question.replied" if etype == "form.replied" else "question.rejected"), props

    def _ask(self, req: dict[str, Any]) -> None:
        """Remember which tool call a request holds (its refusal ends that call)."""
        tool = req.get("tool") or {}
        mid, call = tool.get("messageID"), tool.get("callID")
        if isinstance(mid, str) and isinstance(call, str):
            self._remember(self._asks, req.get("id"), (mid, call))

    def _asks_done(self, rid: Any, sid: str, at: Any, refused: bool, how: str) -> None:
        """A request answered; a refusal (a reject without a message, a dismiss) also says, in
        the same frame, that the user ended its tool call: the row keeps what it waited for
        while the run ends (2.0.15 fails the tool 2 ms later, the run 30 ms later)."""
        held = self._asks.pop(rid, None) if isinstance(rid, str) else None
        if not refused or held is None:
            return
        mid, call = held
        self._remember(self._ended, call, how)
        part = wire.tool_part(
            {
                "type": "tool",
                "id": call,
                "name": self._tools.get(call),
                "state": {"status": "error", "error": {"type": "aborted", "message": how}},
                "time": {"completed": at},
            },
            sid,
            mid,
        )
        self._more.append(("message.part.updated", {"sessionID": sid, "part": part}))

    @staticmethod
    def _remember(kept: dict[str, Any], key: Any, value: Any) -> None:
        if isinstance(key, str):
            remember(kept, key, value, MAX_KEPT)

    def _check_seq(self, durable: Any) -> bool:
        if not isinstance(durable, dict):
            return False
        agg, seq = durable.get("aggregateID"), durable.get("seq")
        if isinstance(agg, str) and isinstance(seq, int) and not isinstance(seq, bool):
            self.sync_dropped += 1
        return self._seq_jump(agg, seq, MAX_KEPT)


_Step = Callable[[V2EventParser, str, Obj, Any, Any, float], _V1 | None]
#: The status each tool event gives its call
_TOOL_STATUS = {
    "session.tool.called": "running",
    "session.tool.success": "completed",
    "session.tool.failed": "error",
}
#: Each type the translation reads, and its step (V2EventParser._translate)
_STEPS: dict[str, _Step] = {
    "session.created": V2EventParser._session_created,
    "session.renamed": V2EventParser._session_renamed,
    "session.moved": V2EventParser._session_moved,
    "session.deleted": V2EventParser._session_deleted,
    "session.removed": V2EventParser._session_deleted,
    "session.execution.started": V2EventParser._execution_started,
    "session.retry.scheduled": V2EventParser._retry_scheduled,
    **dict.fromkeys([*OUTPUT, "session.tool.input.started"], V2EventParser._output),
    "session.inbox.enqueued": V2EventParser._inbox_enqueued,
    "session.step.started": V2EventParser._step_started,
    "session.step.ended": V2EventParser._step_ended,
    "session.step.failed": V2EventParser._step_ended,
    **dict.fromkeys(_TOOL_STATUS, V2EventParser._tool_event),
    "permission.asked": V2EventParser._permission_asked,
    "permission.replied": V2EventParser._permission_replied,
    "form.created": V2EventParser._form_created,
    "form.replied": V2EventParser._form_ended,
    "form.cancelled": V2EventParser._form_ended,
    "session.execution.succeeded": V2EventParser._execution_ended,
    "session.execution.failed": V2EventParser._execution_ended,
    "session.execution.interrupted": V2EventParser._execution_interrupted,
}
#: Types translated without a sessionID in their data (a form names its session inside)
_SESSIONLESS = frozenset(
    {
        "session.created",
        "session.renamed",
        "session.deleted",
        "session.removed",
        "form.created",
        "form.replied",
        "form.cancelled",
    }
)
#: Types the translation reads (an unknown type is one that is neither these nor noise)
_KNOWN = frozenset(_STEPS)


def _status(sid: str, status: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "session.status", {"sessionID": sid, "status": status}


def _idle(sid: str, reason: str, why: str) -> tuple[str, dict[str, Any]]:
    return _status(sid, {"type": "idle", "reason": reason, "message": why})


def _message(sid: str, info: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    info.setdefault("sessionID", sid)
    return "message.updated", {"sessionID": sid, "info": info}


def _assistant(sid: str, mid: Any, times: dict[str, Any]) -> dict[str, Any]:
    return {"id": mid, "sessionID": sid, "role": "assistant", "time": times}
