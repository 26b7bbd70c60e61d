"""Acting on a server: abort a run, reply to a permission, answer or reject a question.

Requests live in the instance of their session's project folder, so every action first finds the
folder (sessions are listed across folders; requests are asked per folder). Each action speaks the
server's protocol (V1's routes, or V2's under `/api`, tui.core.protocols), probed when the client
has not been told it; the arguments are the same on both.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from .client import Client, NotFound, OcwatchError, Unreachable, WrongProtocol
from .models import PermissionRequest, QuestionRequest, Session
from .protocols.v2 import wire
from .text import lines_of


class ActionError(OcwatchError):
    """An action the server refused or that cannot apply (exit code 2)."""


@dataclass(frozen=True)
class Located:
    request: PermissionRequest | QuestionRequest
    directory: str | None
    raw: dict[str, Any] | None = None  # V2: the record as the server gave it (a form's fields)


async def protocol_of(client: Client) -> str:
    """The server's protocol ("v1" or "v2"): the client's when known, else probed (and told
    to the client). OcwatchError when it speaks neither."""
    if client.protocol is None:
        try:
            await client.health()
            client.protocol = "v1"
        except WrongProtocol:
            await client.info()  # (WrongProtocol again: it is no OpenCode server)
            client.protocol = "v2"
    return client.protocol


async def folders(client: Client) -> tuple[dict[str, Session], list[str | None]]:
    sessions = {}
    v2 = await protocol_of(client) == "v2"
    listed = await (client.v2_sessions() if v2 else client.all_sessions())
    if v2:
        listed = [wire.session(raw) for raw in listed]
        found = sorted({str(raw["directory"]) for raw in listed if raw.get("directory")})
    for raw in listed:
        try:
            s = Session.parse(raw)
        except ValueError:
            continue
        sessions[s.id] = s
    if v2:
        return sessions, [*found] or [None]
    return sessions, await client.folders(sessions.values())


async def locate_request(client: Client, request_id: str) -> Located:
    """Find an open permission or question by id in any folder; ActionError when none is open."""
    _sessions, dirs = await folders(client)

    v2 = client.protocol == "v2"

    async def one(d: str | None) -> Located | None:
        if v2:  # (V2's records, read as V1's; the form kept as it is for its fields)
            perms, qs = await asyncio.gather(
                client.v2_pending("/api/permission/request", d), client.v2_pending("/api/form", d)
            )
        else:
            perms, qs = await asyncio.gather(client.permissions(d), client.questions(d))
        for raw in perms:
            if raw.get("id") == request_id:
                wired = wire.permission(raw) if v2 else raw
                return Located(PermissionRequest.parse(wired), d, raw if v2 else None)
        for raw in qs:
            if raw.get("id") == request_id:
                wired = wire.form(raw) if v2 else raw
                return Located(QuestionRequest.parse(wired), d, raw if v2 else None)
        return None

    for found in await asyncio.gather(*(one(d) for d in dirs)):
        if found is not None:
            return found
    raise ActionError(
        f"no open permission or {'form' if v2 else 'question'} {request_id} on {client.url} "
        "(already answered, or never asked)"
    )


async def _reply_sent(client: Client, request_id: str, send: Awaitable[object]) -> None:
    """Send a reply to a request. When the answer does not come (a timeout, a dropped
    connection), the server may have applied it all the same: look again, and say which."""
    try:
        await send
    except Unreachable as exc:
        try:
            await locate_request(client, request_id)
        except ActionError:
            return  # no longer open: the server applied it
        except OcwatchError as again:
            raise ActionError(
                f"{exc.message}; the server may have applied it (could not check: {again.message})"
            ) from None
        raise ActionError(
            f"{exc.message}; {request_id} is still open: the server did not apply it"
        ) from None


async def abort(client: Client, session_id: str) -> bool:
    """Abort the session's run. Returns whether the server reported it running just before (the
    server accepts an abort of an idle session too, and nothing happens)."""
    if await protocol_of(client) == "v2":
        return await _v2_abort(client, session_id)
    sessions, _ = await folders(client)
    s = sessions.get(session_id)
    if s is None:
        raise ActionError(f"unknown session {session_id} on {client.url}")
    directory = s.directory or None
    status = (await client.status(directory)).get(session_id)
    running = isinstance(status, dict) and status.get("type") in ("busy", "retry")
    try:
        await client.abort(session_id, directory)
    except NotFound as exc:
        raise ActionError(f"abort refused: {exc.message}") from None
    except Unreachable as exc:  # it may have been applied: look again
        try:
            after = (await client.status(directory)).get(session_id)
        except OcwatchError:
            raise ActionError(
                f"{exc.message}; the server may have aborted it (could not check)"
            ) from None
        if isinstance(after, dict) and after.get("type") in ("busy", "retry"):
            raise ActionError(f"{exc.message}; {session_id} still runs: not aborted") from None
    return running


#: The most a prompt may be (characters): a prompt is typed or piped, not a file to upload
MAX_PROMPT = 1_000_000


async def prompt(client: Client, session_id: str, text: str) -> None:
    """Send the session a prompt; its run starts on the server. ActionError: an empty or a
    too long prompt, an unknown session, or the server's refusal."""
    if not text.strip():
        raise ActionError("the prompt is empty")
    if len(text) > MAX_PROMPT:
        raise ActionError(f"the prompt is longer than {MAX_PROMPT:,} characters")
    sessions, _ = await folders(client)
    s = sessions.get(session_id)
    if s is None:
        raise ActionError(f"unknown session {session_id} on {client.url}")
    try:
        await client.prompt(session_id, text, s.directory or None)
    except NotFound as exc:
        raise ActionError(f"prompt refused: {exc.message}") from None


async def new_session(client: Client, directory: str, title: str | None = None) -> str:
    """A new session in `directory` (an absolute path: the project folder the server runs its
    agent in); its id."""
    if not directory.startswith("/"):
        raise ActionError(f"the folder must be an absolute path, not {directory!r}")
    await protocol_of(client)
    try:
        return await client.create_session(directory, title)
    except NotFound as exc:
        raise ActionError(f"no session created: {exc.message}") from None


def title_of(text: str) -> str | None:
    """A new session's title: its first prompt's first line that says something, cut to 80
    characters (None: a blank prompt)."""
    said = [line.strip() for line in lines_of(text) if line.strip()]
    return said[0][:80] if said else None


async def start_session(client: Client, directory: str, text: str) -> str:
    """A new session in `directory`, titled after the prompt's first line and sent the prompt
    (none when `text` is blank: the session waits idle); its id. ActionError: as
    `new_session` and `prompt` say."""
    if len(text) > MAX_PROMPT:  # (refused before a session is made for nothing)
        raise ActionError(f"the prompt is longer than {MAX_PROMPT:,} characters")
    session_id = await new_session(client, directory, title_of(text))
    if text.strip():
        await prompt(client, session_id, text)
    return session_id


async def _v2_abort(client: Client, session_id: str) -> bool:
    """V2: `interrupt`, which says whether a run was under way."""
    try:
        running = session_id in await client.v2_active()
        said = await client.v2_interrupt(session_id)
    except NotFound as exc:
        raise ActionError(f"unknown session {session_id} on {client.url}: {exc.message}") from None
    except Unreachable as exc:  # it may have been applied: look again
        try:
            still = session_id in await client.v2_active()
        except OcwatchError:
            raise ActionError(
                f"{exc.message}; the server may have interrupted it (could not check)"
            ) from None
        if still:
            raise ActionError(f"{exc.message}; {session_id} still runs: not aborted") from None
        return True
    return said if said is not None else running


async def reply_permission(
    client: Client,
    request_id: str,
    reply: str,
    message: str | None = None,
    directory: str | None = None,
    *,
    locate: bool = True,
) -> None:
    if reply not in ("once", "always", "reject"):
        raise ActionError(f"reply must be once, always or reject, not {reply!r}")
    if locate or await protocol_of(client) == "v2":
        loc = await locate_request(client, request_id)
        if not isinstance(loc.request, PermissionRequest):
            raise ActionError(f"{request_id} is a question; use `ocwatch answer`")
        directory = loc.directory
        if client.protocol == "v2":
            sid = loc.request.session_id
            try:
                await _reply_sent(
                    client,
                    request_id,
                    client.v2_reply_permission(sid, request_id, reply, message),
                )
            except NotFound:
                raise ActionError(
                    f"permission {request_id} is no longer open (already answered?)"
                ) from None
            return
    try:
        await _reply_sent(
            client, request_id, client.reply_permission(request_id, reply, message, directory)
        )
    except NotFound:
        raise ActionError(
            f"permission {request_id} is no longer open (already answered?)"
        ) from None


def question_answers(
    req: QuestionRequest,
    options: list[str] | None,
    text: list[str] | str | None,
) -> list[list[str]]:
    """Map `--option` labels and typed `--text` answers onto every question of a request (a V2
    form: one question per field). A question answers with the options chosen among its own;
    one with none takes a typed answer: the one `--text` for all of them, or one each, in
    order."""
    texts = [text] if isinstance(text, str) else list(text or [])
    known = {o.label for q in req.questions for o in q.options}
    chosen = [_label_of(c, known, req.id) for c in options or ()]
    needing = [
        q for q in req.questions if not any(o.label in chosen for o in q.options)
    ]  # (those answered by typing)
    if len(texts) > 1 and len(texts) != len(needing):
        raise ActionError(
            f"{len(texts)} typed answers for {len(needing)} question"
            f"{'s' if len(needing) != 1 else ''} without a chosen option"
        )
    typed = iter(texts)
    answers: list[list[str]] = []
    for i, q in enumerate(req.questions, 1):
        labels = [o.label for o in q.options]
        picked = [c for c in chosen if c in labels]
        if not picked and texts:
            picked = [texts[0] if len(texts) == 1 else next(typed)]
        if not picked:
            raise ActionError(
                f"question {i} ({q.question!r}) got no answer; "
                + (
                    "options: " + ", ".join(repr(x) for x in labels)
                    if labels
                    else "type one with --text"
                )
            )
        if len(picked) > 1 and not q.multiple:
            raise ActionError(f"question {i} ({q.question!r}) takes one option, got {picked}")
        answers.append(picked)
    return answers


def _label_of(given: str, known: set[str], request_id: str) -> str:
    """The option label `--option given` means: itself when an option has it, else the one
    label equal to it but for case. ActionError when two are (naming them) or none is."""
    if given in known:
        return given
    folded = given.casefold()
    near = sorted(x for x in known if x.casefold() == folded)
    if len(near) == 1:
        return near[0]
    if near:
        raise ActionError(
            f"option {given!r} in {request_id} is ambiguous: it matches "
            + ", ".join(repr(x) for x in near[:-1])
            + f" and {near[-1]!r} (give one exactly)"
        )
    raise ActionError(
        f"no option {given!r} in {request_id}; options: "
        + ", ".join(repr(x) for x in sorted(known))
    )


async def answer_question(
    client: Client,
    request_id: str,
    *,
    options: list[str] | None = None,
    text: list[str] | str | None = None,
    answers: list[list[str]] | None = None,
    reject: bool = False,
) -> None:
    """Answer a question request, or reject it. `answers` gives one list per question (what a
    dialog knows); otherwise `options` labels (or one typed `text`) are mapped onto them."""
    loc = await locate_request(client, request_id)
    if not isinstance(loc.request, QuestionRequest):
        raise ActionError(f"{request_id} is a permission, not a question (reply to it instead)")
    if reject:
        answers = None
    elif answers is None:
        answers = question_answers(loc.request, options, text)
    elif len(answers) != len(loc.request.questions):
        raise ActionError(
            f"question {request_id} has {len(loc.request.questions)} questions, "
            f"got {len(answers)} answers"
        )
    if client.protocol == "v2":
        await _v2_answer(client, loc, answers)
        return
    try:
        if answers is None:  # reject
            await _reply_sent(client, request_id, client.reject_question(request_id, loc.directory))
        else:
            await _reply_sent(
                client, request_id, client.reply_question(request_id, answers, loc.directory)
            )
    except NotFound:
        raise ActionError(f"question {request_id} is no longer open (already answered?)") from None


async def _v2_answer(client: Client, loc: Located, answers: list[list[str]] | None) -> None:
    """V2: a form answered (each field's value from its question's answer), or dismissed."""
    sid, fid = loc.request.session_id, loc.request.id
    try:
        if answers is None:
            await _reply_sent(client, fid, client.v2_dismiss_form(sid, fid))
        else:
            answer = form_answer(loc.raw or {}, answers)
            await _reply_sent(client, fid, client.v2_reply_form(sid, fid, answer))
    except NotFound:
        raise ActionError(f"form {fid} is no longer open (already answered?)") from None


_TRUE = {"y", "yes", "true", "1", "on"}
_FALSE = {"n", "no", "false", "0", "off"}


def form_answer(form: dict[str, Any], answers: list[list[str]]) -> dict[str, Any]:
    """A V2 form's `answer` (`{field key: value}`) from one answer per question, in the order
    wire.form made the questions (one per field): a chosen option's label becomes its value
    (a multiselect's, a list of them); typed text is taken as it is where the field allows it,
    as a number or a yes/no where the field wants one. ActionError for what a terminal cannot
    answer (a link to open, a form of no field): it says to answer in OpenCode."""
    fields = [f for f in form.get("fields") or () if isinstance(f, dict)]
    title = repr(str(form.get("title") or form.get("id") or "")[:80])
    if not fields:
        raise ActionError(f"form {title} asks nothing a terminal can answer: answer in OpenCode")
    out: dict[str, Any] = {}
    for field, picked in zip(fields, answers, strict=False):
        key = field.get("key")
        kind = field.get("type")
        name = str(field.get("title") or key)
        if not isinstance(key, str):
            raise ActionError(f"form {title}: field {name!r} has no key: answer in OpenCode")
        if kind == "external" or kind not in (
            "string",
            "multiselect",
            "number",
            "integer",
            "boolean",
        ):
            raise ActionError(
                f"form {title}: field {name!r} ({kind or 'of no type'}) cannot be answered "
                "from a terminal: answer in OpenCode"
            )
        if not picked:
            if field.get("required"):
                raise ActionError(f"form {title}: field {name!r} needs an answer")
            continue
        options = {
            str(o.get("label") or o.get("value")): str(o.get("value"))
            for o in field.get("options") or ()
            if isinstance(o, dict) and o.get("value") is not None
        }
        custom = field.get("custom") is not False
        values: list[str] = []
        for item in picked:
            if item in options:
                values.append(options[item])
            elif options and not custom:
                raise ActionError(
                    f"form {title}: field {name!r} takes one of "
                    + ", ".join(repr(x) for x in options)
                )
            else:
                values.append(item)
        if kind == "multiselect":
            out[key] = values
        elif kind in ("number", "integer"):
            out[key] = _number(values[0], kind, title, name)
        elif kind == "boolean":
            word = values[0].strip().lower()
            if word not in _TRUE | _FALSE:
                raise ActionError(f"form {title}: field {name!r} wants yes or no")
            out[key] = word in _TRUE
        else:
            out[key] = values[0]
    return out


def _number(text: str, kind: str, title: str, name: str) -> float | int:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (kind == "integer" and not value.is_integer()):
        raise ActionError(
            f"form {title}: field {name!r} wants {'a whole' if kind == 'integer' else 'a'} number"
        )
    return int(value) if kind == "integer" else value
