"""Acting from the dashboard: pick the dialog for a row, run the action in a worker, report.

Nothing here changes a row. The action goes to the server; the row changes when the server
confirms it (the next event or snapshot). A refusal is shown as the server's one-line error and
leaves everything as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from textual.content import Content

from tui.app.format import literal
from tui.core.client import OcwatchError
from tui.core.view import RUNNING, Pending, SessionRow

from .actions import Actions
from .screens.confirm import ConfirmScreen
from .screens.dialog import draft_request
from .screens.permission import PermissionReply, PermissionScreen
from .screens.prompt import NewSession, NewSessionScreen, PromptScreen
from .screens.question import QuestionReply, QuestionScreen, describe

if TYPE_CHECKING:
    from .app import OcwatchApp

log = logging.getLogger("ocwatch.app")
Key = tuple[str, str]
NO_ACTIONS = "Actions need a live server: this dashboard shows fixed Views."


class Responder:
    """Opens the right dialog for a row and runs what the user chose."""

    def __init__(self, app: OcwatchApp, actions: Actions | None) -> None:
        self.app = app
        self.actions = actions
        self.no_actions = NO_ACTIONS
        """What the user is told when there are no actions (a replay says why)."""
        self.sending: set[str] = set()
        """Request ids (and `abort:` session ids) whose action is on its way."""
        self.sent: set[str] = set()
        """Request ids the server accepted an answer for, until the View drops them."""
        self.select_when_shown: Key | None = None
        """A session created from the dashboard, selected as soon as the table has it."""
        self.drafts: dict[str, str] = {}
        """What was written and not sent, or sent and not yet accepted by the server (the
        dialog closed with esc, a send that failed): prompts, a permission's message; kept for
        when the dialog opens again (a request's, while it is open)."""

    def forget_closed(self) -> None:
        """Drop answered requests the View no longer lists (called on each new View)."""
        view = self.app.view
        kept = {key: rid for key in self.drafts if (rid := draft_request(key)) is not None}
        if (not self.sent and not kept) or view is None:
            return
        open_ids = {p.id for r in view.rows.values() for p in r.pending}
        self.sent &= open_ids
        for key, rid in kept.items():  # written for a request no longer open: done with
            if rid not in open_ids:
                del self.drafts[key]

    def _ready(self) -> Actions | None:
        if self.actions is None:
            self.app.notify(self.no_actions, severity="warning", timeout=5)
        return self.actions

    # -- respond ------------------------------------------------------------------------------

    def respond(self, key: Key | None) -> None:
        """Open the dialog for the row's first request not yet answered."""
        row = self.app.row_of(key)
        if row is None:
            return
        if not row.pending:
            self.app.notify(
                f"{literal(row.title) or row.id} is not waiting for you ({row.state}).",
                timeout=4,
                markup=False,
            )
            return
        if self._ready() is None:
            return
        waiting = [p for p in row.pending if p.id not in self.sent | self.sending]
        if not waiting:
            self.app.notify(
                "Already answered; the row changes when the server confirms.", timeout=4
            )
            return
        pending = waiting[0]
        if pending.kind == "permission":
            self.app.push_screen(
                PermissionScreen(row, pending, self.app.dashboard, self.drafts),
                lambda reply: self._permission(row, pending, reply),
            )
        else:
            self.app.push_screen(
                QuestionScreen(row, pending, self.app.dashboard),
                lambda reply: self._question(row, pending, reply),
            )

    def _permission(self, row: SessionRow, pending: Pending, reply: PermissionReply | None) -> None:
        if reply is None or self.actions is None:
            return
        actions = self.actions
        what = f"Reply {reply.reply}" + (" with a message" if reply.message else "")
        self._run(
            what,
            pending.id,
            lambda: actions.reply(row.server, pending.id, reply.reply, reply.message),
        )

    def _question(self, row: SessionRow, pending: Pending, reply: QuestionReply | None) -> None:
        if reply is None or self.actions is None:
            return
        actions = self.actions
        what = "Reject the question" if reply.reject else f"Answer {describe(reply.answers or [])}"
        self._run(
            what,
            pending.id,
            lambda: actions.answer(row.server, pending.id, reply.answers, reply.reject),
        )

    # -- prompt -------------------------------------------------------------------------------

    def prompt(self, key: Key | None) -> None:
        """Open the prompt dialog for the row's session; send what is written on confirm."""
        row = self.app.row_of(key)
        if row is None or self._ready() is None:
            return
        screen = PromptScreen(row, self.drafts)
        self.app.push_screen(screen, lambda text: self._prompt(row, text, screen.draft_key))

    def _prompt(self, row: SessionRow, text: str | None, draft: str) -> None:
        if not text or self.actions is None:
            return
        actions = self.actions
        lines = len(text.splitlines())
        what = f"Prompt ({lines} line{'s' if lines != 1 else ''})"
        self._run(what, f"prompt:{row.id}", lambda: actions.prompt(row.server, row.id, text), draft)

    def new_session(self, key: Key | None) -> None:
        """Open the new-session dialog, on the selected row's server and in its folder (to
        start from); create it on confirm, and select it once the table shows it."""
        view = self.app.view
        row = view.rows.get(key) if view is not None and key is not None else None
        server = row.server if row is not None else next(iter(self.app.server_urls), None)
        if server is None:
            self.app.notify("No server to create a session on.", severity="warning", timeout=4)
            return
        if self._ready() is None:
            return
        folder = row.directory if row is not None else ""
        screen = NewSessionScreen(server, folder, self.drafts)
        self.app.push_screen(screen, lambda made: self._new_session(server, made, screen.draft_key))

    def _new_session(self, server: str, made: NewSession | None, draft: str) -> None:
        if made is None or self.actions is None:
            return
        actions = self.actions

        async def create() -> None:
            session_id = await actions.new_session(server, made.folder, made.text)
            self.select_when_shown = (server, session_id)
            self.app.notify(f"New session {session_id} in {made.folder}.", markup=False)

        self._run("New session", f"new:{server}:{made.folder}", create, draft)

    def select_new(self) -> None:
        """Select the session just created once the View has it (called on each new View)."""
        key, view = self.select_when_shown, self.app.view
        if key is not None and view is not None and key in view.rows:
            self.select_when_shown = None
            self.app.main_screen.table.select_key(key)

    # -- abort --------------------------------------------------------------------------------

    def abort(self, key: Key | None) -> None:
        """Ask, then abort the row's run."""
        row = self.app.row_of(key)
        if row is None:
            return
        if row.state not in RUNNING and not row.stale:
            self.app.notify(
                f"{literal(row.title) or row.id} is {row.state}: there is no run to abort.",
                timeout=4,
                markup=False,
            )
            return
        if self._ready() is None:
            return
        rows = self.app.view.rows if self.app.view is not None else {}
        running = [
            child
            for cid in row.children
            if (child := rows.get((row.server, cid))) is not None
            and (child.state in RUNNING or child.stale)
        ]
        also = (
            f" Its running sub-agent{'s' if len(running) > 1 else ''} "
            f"({len(running)}) stop{'' if len(running) > 1 else 's'} with it."
            if running
            else ""
        )
        body = Content.assemble(
            "Abort the run of ",
            (literal(row.title) or row.id, "bold"),
            "?\n",
            (literal(row.id) + "  " + literal(row.server), "$foreground-muted"),
            "\n\n",
            (
                "The agent stops where it is; the session and its messages stay." + also,
                "$foreground-muted",
            ),
        )
        self.app.push_screen(
            ConfirmScreen(
                "Abort this run?", body, yes="Abort", no="Keep running", session_key=row.key
            ),
            lambda yes: self._abort(row, bool(yes)),
        )

    def _abort(self, row: SessionRow, yes: bool) -> None:
        if not yes or self.actions is None:
            return
        actions = self.actions
        self._run("Abort", f"abort:{row.id}", lambda: actions.abort(row.server, row.id))

    # -- running ------------------------------------------------------------------------------

    def _run(
        self, what: str, token: str, act: Callable[[], Awaitable[None]], draft: str = ""
    ) -> None:
        """Send `act` (one at a time per `token`: a request id, or `abort:`, `prompt:`,
        `new:` and its target); once the server accepts it, the `draft` it was written in
        (its key in `drafts`), and a request's drafts, are done with."""
        if token in self.sending:
            self.app.notify("Already on its way to the server.", timeout=3)
            return
        self.sending.add(token)
        self.app.run_worker(
            self._send(what, token, act, draft),
            group="actions",
            exit_on_error=False,
            description=what,
        )

    async def _send(
        self, what: str, token: str, act: Callable[[], Awaitable[None]], draft: str = ""
    ) -> None:
        try:
            await act()
        except OcwatchError as exc:
            self.app.notify(
                exc.message, title=f"{what} failed", severity="error", timeout=10, markup=False
            )
            return
        except Exception as exc:  # a bug must not take the dashboard down
            log.exception("action failed")
            self.app.notify(
                f"{type(exc).__name__}: {exc}",
                title=f"{what} failed",
                severity="error",
                timeout=10,
                markup=False,
            )
            return
        finally:
            self.sending.discard(token)
        self.drafts.pop(draft, None)
        if not token.startswith(("abort:", "prompt:", "new:")):
            self.sent.add(token)
            for key in [k for k in self.drafts if draft_request(k) == token]:
                del self.drafts[key]
        self.app.notify(f"{what}: accepted by the server.", timeout=4, markup=False)
        self.app.mark_dirty()
