"""Acting on a server: abort a run, reply to a permission, answer or reject a question.

Requests live in the instance of their session's project folder, so every action first finds the
folder (sessions are listed across folders; requests are asked per folder).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass

from .client import Client, NotFound, OcwatchError, Unreachable
from .models import PermissionRequest, QuestionRequest, Session


class ActionError(OcwatchError):
    """An action the server refused or that cannot apply (exit code 2)."""


@dataclass(frozen=True)
class Located:
    request: PermissionRequest | QuestionRequest
    directory: str | None


async def folders(client: Client) -> tuple[dict[str, Session], list[str | None]]:
    sessions = {}
    for raw in await client.all_sessions():
        try:
            s = Session.parse(raw)
        except ValueError:
            continue
        sessions[s.id] = s
    return sessions, await client.folders(sessions.values())


async def locate_request(client: Client, request_id: str) -> Located:
    """Find an open permission or question by id in any folder; ActionError when none is open."""
    _sessions, dirs = await folders(client)

    async def one(d: str | None) -> Located | None:
        perms, qs = await asyncio.gather(client.permissions(d), client.questions(d))
        for raw in perms:
            if raw.get("id") == request_id:
                return Located(PermissionRequest.parse(raw), d)
        for raw in qs:
            if raw.get("id") == request_id:
                return Located(QuestionRequest.parse(raw), d)
        return None

    for found in await asyncio.gather(*(one(d) for d in dirs)):
        if found is not None:
            return found
    raise ActionError(
        f"no open permission or question {request_id} on {client.url} "
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
    if locate:
        loc = await locate_request(client, request_id)
        if not isinstance(loc.request, PermissionRequest):
            raise ActionError(f"{request_id} is a question; use `ocwatch answer`")
        directory = loc.directory
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
    text: str | None,
) -> list[list[str]]:
    """Map `--option` labels (or one typed `--text`) onto every question of a request."""
    if text is not None:
        return [[text] for _ in req.questions] or [[text]]
    chosen = list(options or [])
    known = {o.label for q in req.questions for o in q.options}
    unknown = [c for c in chosen if c not in known]
    if unknown:
        raise ActionError(
            f"no option {unknown[0]!r} in {req.id}; options: "
            + ", ".join(repr(x) for x in sorted(known))
        )
    answers: list[list[str]] = []
    for i, q in enumerate(req.questions, 1):
        labels = [o.label for o in q.options]
        picked = [c for c in chosen if c in labels]
        if not picked:
            raise ActionError(
                f"question {i} ({q.question!r}) got no answer; options: "
                + ", ".join(repr(x) for x in labels)
            )
        if len(picked) > 1 and not q.multiple:
            raise ActionError(f"question {i} ({q.question!r}) takes one option, got {picked}")
        answers.append(picked)
    return answers


async def answer_question(
    client: Client,
    request_id: str,
    *,
    options: list[str] | None = None,
    text: str | None = None,
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
    try:
        if answers is None:  # reject
            await _reply_sent(client, request_id, client.reject_question(request_id, loc.directory))
        else:
            await _reply_sent(
                client, request_id, client.reply_question(request_id, answers, loc.directory)
            )
    except NotFound:
        raise ActionError(f"question {request_id} is no longer open (already answered?)") from None
