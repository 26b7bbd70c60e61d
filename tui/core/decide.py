"""decide(): one session's row from its inputs, in the decision order
(docs/STATES.md#how-it-decides): input > retry > busy (stale detection) > idle with reason >
unknown.

Two steps, both pure: `decide()` reads the server's facts alone (`SessionInputs`, the clock
passed in, the settings) and says what they show and until when; `carry()` lays the caller's
previous row over that (the settled state an unsettled row keeps, the time in state no fact
dates, what an unreachable server leaves of it). Nothing here reads a clock, does I/O, keeps a
cache or mutates its arguments. What gathers the facts of every session, and reuses decisions
whose facts did not change, is derive.py.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Final, NamedTuple

from .models import (
    Message,
    MessageError,
    MessageInfo,
    Part,
    PermissionRequest,
    QuestionRequest,
    Session,
    SessionStatus,
    id_time,
)
from .settings import Settings
from .text import first_line
from .view import REASON_STATE, LastKnown, Pending, Reason, SessionRow, Settling, State, ago

#: Finishes that do not end a run: the model asked for tools and another step follows.
NON_TERMINAL_FINISH = frozenset({"tool-calls", "tool_calls", "unknown"})
SERVER_REASONS: dict[str, Reason] = {
    "completed": "completed",
    "aborted": "aborted",
    "error": "error",
    "interrupted": "interrupted",
    "failed": "error",
    "cancelled": "aborted",
}
#: Tool errors by which the user ended the run (the server then stops after a `tool-calls` step).
_REFUSALS = ("rejected", "dismissed", "declined")  # (V2 2.0.15: "The user declined ...")
#: ...but for a rejection with a message: the server hands it to the model as feedback and the
#: run goes on with a next step (1.18.33: PermissionCorrectedError, "The user rejected permission
#: to use this specific tool call with the following feedback: ...")
_FEEDBACK = "with the following feedback"

Request = PermissionRequest | QuestionRequest


class Link(NamedTuple):
    """How the monitor currently reaches the server (an input to derive, not a clock read)."""

    reachable: bool = True
    error: str | None = None
    since: float | None = None


class SessionInputs(NamedTuple):
    """The facts one session's row is decided from (gathered in one place: derive._gather).
    Equal inputs, at a clock inside the same validity, decide the same (`decide`); the caller's
    previous row is no fact, and is laid over the decision after (`carry`)."""

    server: str
    session: Session
    #: its status-map entry, with the stream's status events since the snapshot laid over it
    status: SessionStatus | None
    #: the stream's last retry status while the attempt after it is under way (Facts.retrying)
    last_retry: SessionStatus | None
    #: listed by /api/session/active (and no idle event since)
    active: bool
    #: why its last message is not read: None, it is; LOADING, the first snapshot has listed the
    #: session but not read it yet; else what made it unreadable (Snapshot.unreadable)
    unread: str | None
    #: its last message, with the stream's updates and parts laid over it
    message: Message | None
    #: the permissions and questions open on it or below it (by id), each with when the stream
    #: saw it asked (None: the snapshot listed it)
    requests: tuple[tuple[Request, float | None], ...]
    #: its busy descendants, and its children (sorted)
    busy_children: tuple[str, ...]
    children: tuple[str, ...]
    #: the stream's last session.error of it; the one a snapshot cut carried over, and when
    #: the cut journal last changed its status
    stream_error: MessageError | None
    carried_error: MessageError | None
    carried_at: float | None
    #: when the stream last changed its status
    status_at: float | None
    #: its last event's receive time
    touched: float | None
    link: Link
    #: when the server last said it runs (that event, or the snapshot that listed it); when it
    #: last said it does not. Last: a resync moves them for every session, and most rows never
    #: read them (Decided.reads_claims), so the memo then compares the fields before them
    claim_at: float | None
    quiet_at: float | None


#: SessionInputs.unread of a session a first snapshot has listed but not read yet (what made
#: one unreadable is always said in more words)
LOADING: Final = "loading"

#: what the memo compares of the inputs of a decision that reads no claim time (Decided.
#: reads_claims): their first BEFORE_CLAIMS fields
BEFORE_CLAIMS: Final = list(SessionInputs.__annotations__).index("claim_at")


class Decided(NamedTuple):
    """What the facts show, as a row (`carry` lays the previous row over it: as it is, it is the
    row of a session seen for the first time at the moment decided), and the first moment the
    same inputs could decide differently (a grace period ending, an "N s ago" text ticking;
    inf: never). `reads_claims`: whether the row depends on when the server last said the
    session runs or does not (SessionInputs.claim_at, quiet_at); when it does not, inputs
    differing only in those two times decide the same row (a resync moves them for every
    session, and most rows never read them). `undated`: no server fact dates the settled state
    the row shows, so its `since` is the moment decided, the one thing of it `valid_until`
    does not cover (carry counts it from the previous row, or from the moment it is given).
    `inputs`: the facts it was decided from (what a memo files it under)."""

    row: SessionRow
    valid_until: float
    reads_claims: bool
    undated: bool
    inputs: SessionInputs


class Verdict(NamedTuple):
    """What the rules conclude. `since`: when the state began by the server's facts (None: no
    fact dates it); `ended`: for a stale row, how the messages show the run ended although the
    server still reports busy; `settling`: for an unsettled verdict, what the facts wait for."""

    state: State
    reason: Reason | None
    stale: bool
    evidence: tuple[str, ...]
    settled: bool
    since: float | None
    ended: Reason | None = None
    settling: Settling | None = None
    #: the first moment the same inputs could decide differently (inf: never; `now`: not past
    #: this very moment, as when the verdict reads the clock itself)
    until: float = math.inf
    #: the rules compared the server's last claim or quiet time (Decided.reads_claims)
    reads_claims: bool = False

    @staticmethod
    def of(
        state: State,
        reason: Reason | None,
        stale: bool,
        evidence: tuple[str, ...],
        settled: bool,
        since: float | None,
        ended: Reason | None = None,
        settling: Settling | None = None,
        until: float = math.inf,
        reads_claims: bool = False,
    ) -> Verdict:
        """A Verdict. What the rules return through: a call of the NamedTuple itself goes through
        its Python-level `__new__`, and derive decides every session through here; the
        record's `_make` would cost less, but `_make` is among the names a test keeps from
        being read off another object (a Textual private). docs/PERFORMANCE.md."""
        return _new(
            Verdict,
            (state, reason, stale, evidence, settled, since, ended, settling, until, reads_claims),
        )


def ms(t: float | None) -> float | None:
    return None if t is None or t == 0 else t / 1000.0


#: "HH:MM" for each minute of a day, ":SSZ" for each second of a minute
_HM = tuple(f"{h:02d}:{m:02d}" for h in range(24) for m in range(60))
_SZ = tuple(f":{sec:02d}Z" for sec in range(60))


def clock_text(t: float) -> str:
    """HH:MM:SSZ in UTC (two table lookups: formatting dominated derive's hot path)."""
    sec = int(t) % 86400
    return _HM[sec // 60] + _SZ[sec % 60]


def sooner(a: float, b: float) -> float:
    """min(a, b) (the builtin parses its keywords first: 2.5x the time of this, per session)."""
    return b if b < a else a


def later(a: float, b: float) -> float:
    """max(a, b), as `sooner`."""
    return b if b > a else a


def tick(now: float, t: float) -> float:
    """When ago(now, t) changes its text: the next whole second after t."""
    return t + int(later(0.0, now - t)) + 1


def pending_of(req: Request) -> Pending:
    """A request as the View shows it: its kind and one-line summary."""
    if isinstance(req, PermissionRequest):
        cmd = first_line(req.command)  # (a command's other lines are counted, never hidden)
        pats = ", ".join(first_line(p) for p in req.patterns)
        summary = f"permission {req.permission or '?'}"
        if cmd:
            summary += f": {cmd}"
        elif pats:
            summary += f": {pats}"
        return Pending("permission", req.id, req.session_id, summary, req)
    qs = req.questions
    first = first_line(qs[0].question) if qs else ""
    summary = f"question: {first}" + (f" (+{len(qs) - 1} more)" if len(qs) > 1 else "")
    return Pending("question", req.id, req.session_id, summary, req)


def decide(inputs: SessionInputs, now: float, settings: Settings) -> Decided:
    """What the session's facts show at `now`, and until when: the rules' verdict (`_verdict`)
    as a row, with the session's figures. An unsettled verdict shows busy (the run that is
    starting or finishing), or while it loads what the maps say; `carry` keeps the previous
    row's settled state over it, and dates a settled state no fact dates."""
    (
        server,
        s,
        status,
        last_retry,
        _active,
        _unread,
        msg,
        requests,
        _busy_children,
        children,
        stream_error,
        _carried_error,
        _carried_at,
        _status_at,
        touched,
        _link,
        _claim_at,
        _quiet_at,
    ) = inputs  # read once: this runs for every session
    st = status if last_retry is None else _between_attempts(status, last_retry, msg)
    pending = tuple([pending_of(req) for req, _ in requests]) if requests else ()
    state, reason, stale, evidence, settled, since, ended, settling, until, claims = _verdict(
        inputs, st, pending, now, settings.grace
    )
    undated = False
    if not settled:
        # the facts are still arriving: not a new state. At first sight, the run that is
        # starting or finishing: busy (carry keeps the last settled one instead); a row still
        # loading has none to keep: what the maps say (busy, or unknown until its message is read)
        if settling != "loading":
            state, reason, stale, ended = "busy", None, False, None
    elif since is None:  # time in state: no server fact dates it (carry counts it)
        since, undated = now, True
        evidence = (
            *evidence,
            "time in state counted from when ocwatch first saw it (no server fact dates it)",
        )
    # the session's figures: when it was last updated (the session, its last message or its
    # last event, the latest), the last assistant error (else the stream's), its cost and
    # tokens (the session's, else its last message's)
    info = msg.info if msg is not None else None
    updated = s.time.updated / 1000.0
    err = None
    cost = s.cost
    tokens = s.tokens.total if s.tokens is not None else None
    if info is not None:
        mt = info.time
        mtime = (mt.completed or mt.created) / 1000.0
        if mtime > updated:
            updated = mtime
        if info.role == "assistant":
            err = info.error
        if cost is None:
            cost = info.cost
        if tokens is None and info.tokens is not None:
            tokens = info.tokens.total
    if touched is not None and touched > updated:
        updated = touched
    if err is None:
        err = stream_error
    attempt = retry_message = retry_next = None
    if st is not None and st.type == "retry":
        attempt, retry_message, retry_next = st.attempt, st.message, ms(st.next)
    return _new(
        Decided,
        (
            SessionRow(
                server,
                s.id,
                s.title,
                s.directory,
                s.parent_id,
                state,
                reason,
                stale,
                evidence,
                pending,
                since,
                updated or None,
                cost,
                tokens,
                settled,
                err.text if err is not None else None,
                attempt,
                retry_message,
                retry_next,
                children,
                ended,
                settling,
            ),
            until,
            claims,
            undated,
            inputs,
        ),
    )


#: a previous row's that is no settled state: what an outage or a first snapshot loading showed
_NOT_HELD = ("unreachable", "loading")


def carry(
    decided: Decided, previous: SessionRow | None, now: float, link: Link
) -> tuple[SessionRow, float]:
    """The row `decide` made, at `now`, with the caller's previous row of the session laid over
    it, and until when the result holds with that previous row (inf, or `now` where it reads
    the clock): an unsettled row keeps the last settled state; a state no server fact dates is
    in state since the previous row's time, else from this very moment; busy again after input
    or retry is dated from when ocwatch saw it; an unreachable server leaves the row unknown,
    with its last known state. Given the very row it returns as `previous`, it returns an equal
    row (while the link is up): the memo files a row for the call it is handed back to. Pure;
    the decided row itself (the same object) when there is nothing to lay over it."""
    row, _, _, undated, _ = decided
    held = previous
    if held is not None and held.settling in _NOT_HELD:
        held = None
    settled, since = row.settled, row.since
    if held is None and link.reachable and (not undated or since == now):
        # first sight (dated, unsettled, or counted from this very moment): nothing to carry
        return row, now if undated else math.inf
    state, reason, stale, ended = row.state, row.reason, row.stale, row.ended
    evidence, pending, until = row.evidence, row.pending, math.inf
    if not settled:
        if held is not None and row.settling != "loading":
            state, reason, stale, ended, since = (
                held.state,
                held.reason,
                held.stale,
                held.ended,
                held.since,
            )
            if state == "input":  # a row waiting says what is asked: what it waited for
                pending = held.pending  # (answered since: else it would be settled input)
    elif undated:
        # time in state: from the server's facts, so that every monitor agrees
        if held is not None and held.state == state and held.reason == reason and held.since:
            since = held.since
        else:  # from this very moment: a row that read the clock is not reused later
            since = until = now
    elif state == "busy" and held is not None and since is not None:
        # busy again after waiting for input or between retries: in state from then, not
        # from the run's start (the answer or the attempt that got through is dated by no
        # fact: from the moment ocwatch saw it, then carried)
        if held.state in ("input", "retry"):
            since = until = now
            evidence = (*evidence, f"busy again (was {held.state}) since ocwatch saw it")
        elif held.state == "busy" and held.since is not None and held.since > since:
            since = held.since
            evidence = (*evidence, f"busy again since {clock_text(since)} (after input or retry)")
    settling, last_known = row.settling, None
    if not link.reachable:
        evidence = (_unreachable(link, state, reason), *evidence)
        if settling != "loading":  # (a row whose facts never came in has nothing to keep)
            last_known = LastKnown(state, reason, stale)
        state, reason, stale, settled, ended = "unknown", None, False, False, None
        settling = "unreachable"
        since = link.since or since
    elif (
        state == row.state
        and since == row.since
        and evidence is row.evidence
        and pending is row.pending
        and (reason, stale, ended) == (row.reason, row.stale, row.ended)
    ):
        return row, until  # nothing laid over it
    return _laid_over(
        row, state, reason, stale, evidence, pending, since, settled, ended, settling, last_known
    ), until


def _laid_over(
    row: SessionRow,
    state: State,
    reason: Reason | None,
    stale: bool,
    evidence: tuple[str, ...],
    pending: tuple[Pending, ...],
    since: float | None,
    settled: bool,
    ended: Reason | None,
    settling: Settling | None,
    last_known: LastKnown | None,
) -> SessionRow:
    """`row` with what `carry` laid over it (its figures the same)."""
    return SessionRow(
        row.server,
        row.id,
        row.title,
        row.directory,
        row.parent_id,
        state,
        reason,
        stale,
        evidence,
        pending,
        since,
        row.updated,
        row.cost,
        row.tokens,
        settled,
        row.error,
        row.retry_attempt,
        row.retry_message,
        row.retry_next,
        row.children,
        ended,
        settling,
        last_known,
    )


def row_of(
    inputs: SessionInputs, previous: SessionRow | None, now: float, settings: Settings
) -> SessionRow:
    """The session's row: its facts decided, the previous row carried over the decision."""
    return carry(decide(inputs, now, settings), previous, now, inputs.link)[0]


#: Decided and Verdict made without their Python-level `__new__`: derive decides every session
#: on a first derive, and on that path these records made through `__new__` are among the
#: dearest of the shape's costs (docs/PERFORMANCE.md)
_new = tuple.__new__


def _verdict(
    i: SessionInputs,
    st: SessionStatus | None,
    pending: tuple[Pending, ...],
    now: float,
    grace: float,
) -> Verdict:
    """The rules, in the design's order (`st`: the status to decide by; `pending`: the open
    requests as the row shows them)."""
    msg = i.message
    info = msg.info if msg is not None else None
    # 1. input: something is asked of the user (here or in a descendant)
    if pending:
        return _input(i, st, pending, now)
    if i.unread is not None and (st is None or st.type != "retry"):
        if i.unread == LOADING:
            return _loading(st, i.active, i.status_at)
        return _unreadable(st, i.active, i.status_at, i.unread)
    if st is not None:
        kind = st.type
        # 2. retry
        if kind == "retry":
            return _retry(st, i.status_at, info)
        # 3. busy (stale detection): busy, or a state this monitor does not know
        if kind != "idle" or i.active:
            return _busy(kind, i, msg, info, now, grace)
        # 4. idle with a reason the server gave
        if st.reason:
            reason = SERVER_REASONS.get(st.reason)
            if reason is not None:
                dated = None
                if info is not None:
                    dated = ms(info.time.completed) or ms(info.time.created)
                said = f"server reports idle, reason {st.reason}"
                return Verdict.of(
                    REASON_STATE[reason],
                    reason,
                    False,
                    (said,) if not st.message else (said, st.message),
                    True,
                    dated or i.status_at,
                )
    elif i.active:
        return _busy("running (/api/session/active)", i, msg, info, now, grace)
    # 5. absent from the status map (or idle): the messages tell
    if msg is None or info is None:
        if i.stream_error is not None:
            return _idle_error(i.stream_error, i.status_at)
        return Verdict.of(
            "idle", None, False, ("no messages yet",), True, ms(i.session.time.created)
        )
    if info.role == "assistant":
        return _not_running(i, msg, info, now, grace)
    return _unanswered(i, info, now, grace)


def _between_attempts(
    st: SessionStatus | None, last_retry: SessionStatus, msg: Message | None
) -> SessionStatus | None:
    """The status to decide by: busy between two attempts with no output yet is still the
    retry (the server reads busy while the next attempt is under way)."""
    if st is None or st.type != "busy":
        return st
    info = msg.info if msg is not None else None
    if info is None or (
        info.role == "assistant" and not info.time.completed and msg is not None and not msg.parts
    ):
        return replace(
            last_retry, message=f"{last_retry.message or 'retrying'} (next attempt under way)"
        )
    return st


def _input(
    i: SessionInputs, st: SessionStatus | None, pending: tuple[Pending, ...], now: float
) -> Verdict:
    """Requests open here or in a descendant: the user is asked for input, since the first
    request was made (its id dates it; else when the stream said it was asked)."""
    sid = i.session.id
    ev = [
        p.summary if p.session_id == sid else f"{p.summary} (sub-agent {p.session_id})"
        for p in pending
    ]
    times = [
        t for req, asked_at in i.requests if (t := id_time(req.id, now) or asked_at) is not None
    ]
    if st is not None:
        ev.append(f"server reports {st.type} while waiting")
    return Verdict.of("input", None, False, tuple(ev), True, min(times) if times else None)


def _loading(st: SessionStatus | None, in_active: bool, status_at: float | None) -> Verdict:
    """A first snapshot has listed the session but not read its last message yet: busy when the
    server reports it running (not settled: its stale check rests on that message), else
    unknown (absent from the status map is idle or unknown until the messages agree)."""
    note = "last message not read yet (the first snapshot is loading)"
    if st is not None and st.type != "idle" or in_active:
        label = st.type if st is not None and st.type != "idle" else "running"
        return Verdict.of(
            "busy",
            None,
            False,
            (f"server reports {label}", note),
            False,
            status_at,
            None,
            "loading",
        )
    return Verdict.of(
        "unknown", None, False, ("not in the status map", note), False, None, None, "loading"
    )


#: The evidence a row whose last message could not be read starts with (`wait` reads it)
UNREADABLE = "last message unreadable: "


def _unreadable(
    st: SessionStatus | None, in_active: bool, status_at: float | None, why: str
) -> Verdict:
    """Its last message could not be read (that session's failure alone): busy when the server
    reports it running (its stale check cannot run), else unknown; never idle with no messages,
    for there is one and it says how the run ended."""
    note = f"{UNREADABLE}{why}"
    if st is not None and st.type != "idle" or in_active:
        label = st.type if st is not None and st.type != "idle" else "running"
        return Verdict.of("busy", None, False, (f"server reports {label}", note), True, status_at)
    return Verdict.of("unknown", None, False, ("not in the status map", note), True, None)


def _retry(st: SessionStatus, status_at: float | None, info: MessageInfo | None) -> Verdict:
    """Retrying, since the step whose model call failed began (its assistant message)."""
    attempt = f"retry attempt {st.attempt if st.attempt is not None else '?'}"
    if st.message:
        attempt += f": {st.message}"
    since = status_at
    if info is not None and info.role == "assistant" and not info.time.completed:
        since = ms(info.time.created) or since
    if st.next:
        return Verdict.of(
            "retry",
            None,
            False,
            (attempt, f"next attempt at {clock_text(st.next / 1000)}"),
            True,
            since,
        )
    return Verdict.of("retry", None, False, (attempt,), True, since)


def _busy(
    label: str,
    i: SessionInputs,
    msg: Message | None,
    info: MessageInfo | None,
    now: float,
    grace: float,
) -> Verdict:
    """Busy, since its run began (the prompt); stale when the run visibly ended and the server
    still said it runs after that (a status event or a snapshot taken past the grace period)."""
    status_at, claim_at, busy_children = i.status_at, i.claim_at, i.busy_children
    reported = (
        f"server reports {label} since {clock_text(status_at)}"
        if status_at
        else f"server reports {label}"
    )
    if msg is None or info is None:
        return Verdict.of("busy", None, False, (reported, "no message yet"), True, status_at)
    began = run_start(info, now) or status_at
    if info.role != "assistant":
        return Verdict.of(
            "busy", None, False, (reported, "last message is a prompt (run starting)"), True, began
        )
    tool = _open_tool(msg)
    times = info.time
    completed = times.completed
    done = completed / 1000.0 if completed else None
    ended = outcome(msg, info, done) if done is not None else None
    if ended is None or tool is not None or busy_children:
        ev = [reported]
        if tool is not None:
            ev.append(f"tool {tool.tool or '?'} {tool.state.status if tool.state else '?'}")
        if busy_children:
            ev.append("sub-agent busy: " + ", ".join(busy_children[:3]))
        if done is None:
            refused = None if tool is not None or busy_children else _refusal(msg)
            if refused is not None:
                at = ms(refused.state.ended) if refused.state else None
                if at is not None and now - at <= grace:
                    # the user refused the tool: the run ends as soon as the server saves the
                    # step (1.18.33 still reads busy for ~100 ms). Not a new state yet
                    return Verdict.of(
                        "busy",
                        None,
                        False,
                        (
                            reported,
                            f"the user refused tool {refused.tool or '?'}: the run is ending",
                        ),
                        False,
                        began,
                        None,
                        "finishing",
                        at + grace,
                    )
            ev.append(f"assistant message streaming since {clock_text(ms(times.created) or now)}")
            if not times.created:  # the evidence reads the clock itself
                return Verdict.of("busy", None, False, tuple(ev), True, began, until=now)
        elif ended is None:
            ev.append(f"step finished with {info.finish!r}; next step pending")
        return Verdict.of("busy", None, False, tuple(ev), True, began)
    assert done is not None
    if ended[0] == "aborted" and now - done <= grace:
        refused = _refusal(msg)
        if refused is not None:
            # the user refused the tool and the step is saved; the server has not said the run
            # is over yet (V2 2.0.15: 5 ms later). Not a new state: the run is ending
            return Verdict.of(
                "busy",
                None,
                False,
                (reported, f"the user refused tool {refused.tool or '?'}: the run is ending"),
                False,
                began,
                None,
                "finishing",
                done + grace,
            )
    held_since = later(done, status_at or 0.0)
    until = tick(now, done)
    since_done = ago(now, done)
    facts = (
        reported,
        f"{ended[1]}, {since_done}",
        "no tool call pending or running",
        "nothing asked; no sub-agent busy",
    )
    if now - held_since > grace:
        if claim_at is None or claim_at < held_since + grace:
            # only what the server said before the run ended calls it busy (its idle event may
            # have been lost): not stale until the server says so again
            return Verdict.of(
                "busy",
                None,
                False,
                (
                    f"run ended {since_done}; asking the server whether it still reports {label}",
                    *facts,
                ),
                False,
                began,
                None,
                "confirming",
                until,
                reads_claims=True,
            )
        held = since_done if held_since == done else ago(now, held_since)
        return Verdict.of(
            "busy",
            None,
            True,
            (
                f"STALE: run ended {held} but the server still reports {label}",
                *facts,
                f"the server said {label} at {clock_text(claim_at)}, after the run ended",
            ),
            True,
            began,
            ended[0],
            None,
            sooner(until, tick(now, held_since)),
            reads_claims=True,
        )
    return Verdict.of(
        "busy",
        None,
        False,
        (*facts, f"within the {grace:g}s grace period"),
        True,
        began,
        until=sooner(until, held_since + grace),
    )


def _not_running(
    i: SessionInputs, msg: Message, info: MessageInfo, now: float, grace: float
) -> Verdict:
    """Not running, and the last message is the assistant's: how (or whether) the run ended.

    A run the snapshot shows unfinished reads what the journal carried across a snapshot cut
    (the run's final message may not have been saved yet)."""
    times = info.time
    completed = times.completed
    done = completed / 1000.0 if completed else None
    ended = outcome(msg, info, done)
    if ended is not None:
        return Verdict.of("idle", ended[0], False, (ended[1],), True, done or i.status_at)
    stream_error = i.stream_error if i.stream_error is not None else i.carried_error
    if stream_error is not None:
        return _idle_error(stream_error, i.status_at or i.carried_at)
    # absent, but the run visibly did not end: unknown
    if done is None:
        what = "last assistant message never completed"
    else:
        what = (
            f"last assistant step completed at {clock_text(done)} with finish "
            f"{info.finish!r}, and no next step followed"
        )
    tool = _open_tool(msg)
    if tool is not None:
        what += f"; tool {tool.tool or '?'} left {tool.state.status}"  # type: ignore[union-attr]
    # the later of the times known (max over the set ones, without the builtin's keywords)
    created = ms(times.created)
    last_activity = (later(done, created) if created else done) if done else created or None
    told = i.status_at or i.carried_at
    start = later(told, last_activity) if told and last_activity else told or last_activity or now
    if now - start <= grace:
        return Verdict.of(
            "unknown",
            None,
            False,
            ("server reports not busy; " + what + " (waiting for the final message)",),
            False,
            run_start(info, now),
            None,
            "finishing",
            start + grace,
        )
    quiet_at = i.quiet_at
    if quiet_at is None or quiet_at < (last_activity or 0.0):
        # only what the server said before this run's last activity calls it not running (a
        # busy event may have been lost): ask it again before calling the run cut off
        # (depends on the snapshot's time: never reused across one)
        return Verdict.of(
            "unknown",
            None,
            False,
            (
                "server reports not busy, but said so before the run's last activity; "
                + what
                + " (asking the server again)",
            ),
            False,
            run_start(info, now),
            None,
            "confirming",
            now,
            reads_claims=True,
        )
    return Verdict.of(
        "unknown",
        "interrupted",
        False,
        (
            "server reports not busy (absent from the status map)",
            what,
            "the run was cut off (server restart or crash?)",
        ),
        True,
        last_activity,
        reads_claims=True,
    )


def _unanswered(i: SessionInputs, info: MessageInfo, now: float, grace: float) -> Verdict:
    """Not running, and the last message is a user prompt with no reply."""
    if i.stream_error is not None:
        return _idle_error(i.stream_error, i.status_at)
    sent = info.time.created
    created = ms(sent) or now
    start = later(created, i.status_at or 0.0)
    # with no time sent, the evidence reads the clock itself: never reuse it
    until = math.inf if sent else now
    if now - start <= grace:
        return Verdict.of(
            "unknown",
            None,
            False,
            (
                f"prompt sent at {clock_text(created)}; no reply yet and the server does not "
                "report busy (the run is starting)",
            ),
            False,
            ms(sent),
            None,
            "starting",
            sooner(until, start + grace),
        )
    quiet_at = i.quiet_at
    if quiet_at is None or quiet_at < created:
        # the server's "not busy" predates the prompt: its busy may have been lost
        return Verdict.of(
            "unknown",
            None,
            False,
            (
                f"prompt sent at {clock_text(created)}; the server said not busy before it "
                "(asking the server again)",
            ),
            False,
            ms(sent),
            None,
            "confirming",
            now,
            reads_claims=True,
        )
    return Verdict.of(
        "unknown",
        None,
        False,
        (
            f"prompt sent at {clock_text(created)} ({ago(now, created)}) has no reply",
            "server does not report busy (absent from the status map)",
        ),
        True,
        ms(sent),
        None,
        None,
        sooner(until, tick(now, created)),
        reads_claims=True,
    )


def _idle_error(err: MessageError, at: float | None) -> Verdict:
    """Idle after a session.error event: aborted for MessageAbortedError, else error."""
    if err.name == "MessageAbortedError":
        return Verdict.of(
            "idle", "aborted", False, (f"session.error event: aborted ({err.name})",), True, at
        )
    return Verdict.of("idle", "error", False, (f"session.error event: {err.text}",), True, at)


def run_start(info: MessageInfo, now: float) -> float | None:
    """When the run the last message belongs to began: its prompt's creation (the user message,
    or the one the assistant message answers, dated by its id)."""
    if info.role != "assistant":
        return ms(info.time.created)
    return id_time(info.parent_id, now) or ms(info.time.created)


def _open_tool(msg: Message) -> Part | None:
    """The message's first tool call still pending or running, if any."""
    for part in msg.parts:
        if part.is_open_tool:
            return part
    return None


def _refusal(msg: Message) -> Part | None:
    """The message's tool call the user refused, ending the run (a rejected permission, a
    dismissed question), if any. A rejection with a message is none: the run goes on."""
    for part in msg.parts:
        st = part.state
        if part.type == "tool" and st is not None and st.status == "error" and st.error:
            error = st.error.lower()
            if any(w in error for w in _REFUSALS) and _FEEDBACK not in error:
                return part
    return None


def outcome(msg: Message, info: MessageInfo, done: float | None) -> tuple[Reason, str] | None:
    """How an assistant message ended a run: (reason, evidence), or None if it did not end one.
    `info` is `msg.info` (an assistant's), `done` its completion time in seconds (or None).

    An error ends it (aborted for MessageAbortedError); a completed message with a terminal finish
    completes it; a `tool-calls` step whose tool the user refused (a rejected permission or a
    dismissed question) ends it too: the server stops there, with no error on the message.
    """
    error = info.error
    if error is not None:
        if error.name == "MessageAbortedError":
            return "aborted", f"last assistant message: aborted ({error.name})"
        return "error", f"last assistant message: {error.text}"
    if done is None:
        return None
    finish = info.finish
    if not finish and not msg.parts:
        # closed with neither a finish, nor an error, nor any output: the server stopped the
        # run before the model answered (1.18.33: a run aborted while it waits to retry). (A
        # shell command the user ran, `!cmd`, also has no finish, and its tool part)
        return "aborted", (
            f"last assistant message closed at {clock_text(done)} with no finish, no error and "
            "no output (the run was stopped before the model answered, e.g. aborted between "
            "retries)"
        )
    if finish not in NON_TERMINAL_FINISH:
        return "completed", (
            f"last assistant message completed at {clock_text(done)} (finish: {finish or 'none'})"
        )
    part = _refusal(msg)
    if part is not None and part.state is not None:
        return "aborted", (
            f"the user refused tool {part.tool or '?'}: {part.state.error} "
            f"(step ended {clock_text(done)})"
        )
    return None


def _unreachable(link: Link, state: str, reason: str | None) -> str:
    """The evidence line a row gets while the server cannot be reached."""
    return (
        f"server unreachable{': ' + link.error if link.error else ''}; "
        f"last known state: {state}{' (' + reason + ')' if reason else ''}"
    )
