"""The conversation of one session (`m`): user prompts, replies, tool calls folded to one line
each (enter or a click expands one to its input, output or error and an edit's diff; `e` all of
them), errors; loaded on demand and following new messages live.

The newest FIRST_PAGE messages are read and painted first, then the whole list; while the
session changes (its `updated` time moves) the newest page is read again and laid over what is
shown. The view stays at the end while the user is there; scrolled up, it stays put. A reply
whose run ended unfinished says so (interrupted, cut off), never "writing …" (the session's row
says whether its run goes on: tui.core.conversation.run_active).
"""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import Footer, Static

from tui.core.client import OcwatchError
from tui.core.conversation import FIRST_PAGE, Entry, entries, merge, run_active
from tui.core.view import SessionRow

from .. import format as fmt
from ..dashboard import Dashboard
from ..transcript import CallKey, Spot, conversation_blocks
from ..widgets.conversation_log import BlockLog
from . import session_keys
from .view_screen import ViewScreen

Key = tuple[str, str]
Part = str | tuple[str, str]
MUTED = "$foreground-muted"
FOLLOW_GAP = 1.0
"""Least seconds between two reads while the session keeps changing."""
FOLLOW_PAGE = 10
"""Messages read while following (the newest): when they do not reach back to the last one
shown, everything is read again."""
RETRY_AFTER = 5.0
"""Seconds before a failed read is tried again."""
UNAVAILABLE = (
    "The conversation is read from a live server; a recording holds each session's last "
    "message only (esc, then enter: the details, Raw)."
)
TOOLS_OFF = "No conversation was read (no live server), so it has no tool call to expand."
TOOL_ACTIONS = frozenset({"toggle_call", "next_call", "previous_call", "toggle_all"})
"""The keys on tool calls: not offered when no conversation could be read."""


class ConversationScreen(ViewScreen):
    """One session's messages, scrollable, following new ones."""

    BINDINGS = [
        Binding("escape,m", "back", "Back"),
        *session_keys.ATTACH,
        Binding(
            "enter,space",
            "toggle_call",
            "Expand",
            tooltip="Expand the selected tool call (its input, output or error, an edit's diff) "
            "or fold it; a click on a tool call does the same",
        ),
        Binding("tab", "next_call", "Next tool", tooltip="Select the next tool call"),
        Binding(
            "shift+tab",
            "previous_call",
            "Previous tool",
            tooltip="Select the previous tool call",
            show=False,
        ),
        Binding("e", "toggle_all", "All tools", tooltip="Expand every tool call, or fold them all"),
        Binding("home,g", "top", "First message", show=False),
        Binding("end,G", "bottom", "Last message (and follow)", show=False),
        # behind the tool-call keys: with no conversation read (a replay) they are not offered,
        # and pressed say why (`check_action`); tab would otherwise move the focus instead
        Binding("enter,space,tab,shift+tab,e", "tools_off", show=False),
    ]

    def __init__(self, dashboard: Dashboard, key: Key, row: SessionRow | None = None) -> None:
        super().__init__(dashboard)
        self.key = key
        self.row = row
        self.items: list[Entry] = []
        self.loaded_all = False
        self.unavailable = dashboard.inspector.peek is None
        """No live server to read it from (a replay): no tool call to expand or select."""
        self.error: str | None = None
        self._read_for: float | None = None  # the row's `updated` the last read was for
        self._read_at = 0.0
        self._reading = False
        self._painted_tick = 0
        self._painted_active: bool | None = None
        self._ticking = False
        self.expand_all = False
        self.toggled: set[CallKey] = set()
        """Calls the user expanded (or, with expand_all, folded) one by one."""
        self.cursor: CallKey | None = None
        self.calls: list[Spot] = []

    @property
    def session_key(self) -> Key:
        return self.key

    def compose(self) -> ComposeResult:
        yield Static(id="conversation-title")
        yield BlockLog(id="conversation")
        yield Footer()

    def on_mount(self) -> None:
        self._reading = True  # _load reads first (a View arriving meanwhile reads nothing)
        self.follow_view()
        self.body.set_blocks([("reading", Content.styled("Reading the messages …", MUTED))])
        self.body.focus()
        self.run_worker(self._load(), group="conversation", exclusive=True, exit_on_error=False)

    @property
    def body(self) -> BlockLog:
        return self.query_one(BlockLog)

    def _at_end(self) -> bool:
        body = self.body
        return body.scroll_y >= body.max_scroll_y - 1

    async def _read(self, limit: int | None) -> list[Entry] | None:
        peek = self.dashboard.inspector.peek
        row = self.row
        if peek is None or row is None:
            # (a replay: no server to ask, now or later; the recording holds each session's
            # last message only, in the details' Raw section)
            self.unavailable = True
            self.error = UNAVAILABLE
            self.refresh_bindings()
            return None
        try:
            raw = await peek.messages(row.server, row.id, row.directory, limit)
        except OcwatchError as exc:
            self.error = exc.message
            return None
        self.error = None
        return entries(raw)

    async def _load(self) -> None:
        """The newest page first (painted at once), then every message."""
        try:
            self._read_for = self.row.updated if self.row is not None else None
            self._read_at = time.monotonic()
            page = await self._read(FIRST_PAGE)
            if page is None:
                self._paint()
                return
            self.items = page
            self._paint(stick=True)
            if len(page) < FIRST_PAGE:
                self.loaded_all = True
                return
            whole = await self._read(None)
            if whole is not None:
                self.items = whole
                self.loaded_all = True
            self._paint()
        finally:
            self._reading = False

    async def _follow(self) -> None:
        self._reading = True
        try:
            self._read_at = time.monotonic()
            page = await self._read(FOLLOW_PAGE)
            if page is not None and self.items and page and page[0].id > self.items[-1].id:
                page = await self._read(None)  # more came than the page holds: read all
                if page is not None:
                    self.items = page
            elif page is not None:
                self.items = merge(self.items, page)
            self._paint()
        finally:
            self._reading = False

    def expanded(self, call: CallKey) -> bool:
        """Whether a tool call shows its details."""
        return (call in self.toggled) != self.expand_all

    @property
    def active(self) -> bool:
        """Whether the session's run goes on (its newest reply may still be written)."""
        row = self.row
        return run_active(row.state, row.settled) if row is not None else True

    def _paint(self, stick: bool = False, follow: bool = True) -> None:
        """Show the messages; stay at the end when the user was there (or `stick`; not when
        not `follow`: the caller shows what it changed)."""
        at_end = stick or (follow and self._at_end())
        now = self.dashboard.now
        directory = self.row.directory if self.row is not None else ""
        self._painted_tick = int(now)
        self._painted_active = active = self.active
        layout = conversation_blocks(
            self.items, now, directory, active=active, expanded=self.expanded
        )
        self.calls, self._ticking = layout.calls, layout.ticking
        blocks = layout.blocks
        if not blocks and not self.unavailable:  # (none read is not none sent)
            blocks = [("empty", Content.styled("No message yet.", MUTED))]
        if self.error:
            blocks.append(
                (
                    ("error", self.error),
                    Content.styled("\n" + fmt.literal(self.error), "$state-error"),
                )
            )
        body = self.body
        body.set_blocks(blocks)
        if self.cursor is not None and self._spot(self.cursor) is None:
            self.cursor = None  # (its message was removed)
        spot = self._spot(self.cursor) if self.cursor is not None else None
        body.cursor = spot.head if spot is not None else None
        self._title()
        if at_end:
            self.call_after_refresh(self._to_end, body.scroll_y)

    def _to_end(self, was: float) -> None:
        """To the end once the new lines are laid out, unless the reader scrolled up since
        (a g pressed meanwhile stays where it took them). Closed meanwhile (escape pressed at
        once): nothing to scroll (the dashboard crashed on the log no longer there)."""
        body = self.query_one_optional(BlockLog)
        if body is not None and body.scroll_y >= was:
            body.scroll_end(animate=False, immediate=True)

    def _spot(self, call: CallKey) -> Spot | None:
        return next((s for s in self.calls if s.call == call), None)

    def _title(self) -> None:
        row = self.row
        name = fmt.literal((row.title or row.id) if row is not None else self.key[1])
        if self.unavailable:
            count = "not read: no live server"
        else:
            said = sum(1 for e in self.items if e.role != "idle")  # (V2's run ends: no message)
            count = f"{said} messages" + (
                "" if self.loaded_all else " (the newest; reading the rest …)"
            )
        parts: list[Part] = [("Conversation  ", "bold"), (name, "bold")]
        if row is not None:
            parts += ["  ", (fmt.state_label(row), f"${fmt.state_variable(row)}")]
        parts += [(f"  {count}", MUTED)]
        self.query_one("#conversation-title", Static).update(Content.assemble(*parts))

    def show_view(self) -> None:
        """A new View: read the newest messages again when the session changed."""
        view = self.dashboard.view
        row = view.rows.get(self.key) if view is not None else None
        if row is not None:
            self.row = row
        if not self.is_mounted:
            return
        self._title()
        if (
            self.error
            and not self.unavailable
            and not self._reading
            and time.monotonic() - self._read_at >= RETRY_AFTER
        ):
            self._reading = True  # a failed read is tried again (the first, or the rest)
            work = self._load() if not self.loaded_all else self._follow()
            self.run_worker(work, group="conversation", exclusive=True, exit_on_error=False)
            return
        tick = int(self.dashboard.now)
        if (tick != self._painted_tick and self._ticking) or self.active != self._painted_active:
            self._paint()  # a running tool's time counts up; the run ended (or began)
        if (
            row is None
            or self._reading
            or row.updated == self._read_for
            or time.monotonic() - self._read_at < FOLLOW_GAP
        ):
            return
        self._read_for = row.updated
        self.run_worker(self._follow(), group="conversation", exclusive=True, exit_on_error=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Without a conversation (no live server) the tool-call keys are not offered; they
        fall through to `tools_off`, which says why (never a key that does nothing)."""
        if action in TOOL_ACTIONS:
            return not self.unavailable
        if action == "tools_off":
            return self.unavailable
        return True

    def action_tools_off(self) -> None:
        self.notify(TOOLS_OFF, severity="warning", timeout=5, markup=False)

    def action_back(self) -> None:
        self.dismiss()

    def action_top(self) -> None:
        # at once: a paint before the next refresh sees the reader has left the end
        self.body.scroll_home(animate=False, immediate=True)

    def action_bottom(self) -> None:
        self.body.scroll_end(animate=False, immediate=True)

    # -- tool calls: the cursor, expanding and folding ------------------------------------------

    def _in_view(self) -> Spot | None:
        """The tool call to start from: the first whose line is in view (at the end of the
        conversation, the last: the newest), else the next one below, else the last above."""
        body = self.body
        top = int(body.scroll_y)
        bottom = top + body.scrollable_content_region.height
        seen: list[Spot] = []
        below = None
        for spot in self.calls:
            span = body.span(spot.head)
            if span is None:
                continue
            if top <= span[0] < bottom:
                seen.append(spot)
            elif span[0] >= bottom and below is None:
                below = spot
        if seen:
            return seen[-1] if self._at_end() else seen[0]
        return below or (self.calls[-1] if self.calls else None)

    def _select(self, spot: Spot) -> None:
        self.cursor = spot.call
        self.body.cursor = spot.head
        self.body.reveal(spot.head, spot.details)

    def _move(self, step: int) -> None:
        if not self.calls:
            self.notify("No tool call in this conversation.", timeout=3)
            return
        keys = [s.call for s in self.calls]
        if self.cursor not in keys:
            spot = self._in_view()
        else:
            i = keys.index(self.cursor) + step
            spot = self.calls[min(max(i, 0), len(keys) - 1)]
        if spot is not None:
            self._select(spot)

    def action_next_call(self) -> None:
        """Select the next tool call."""
        self._move(1)

    def action_previous_call(self) -> None:
        """Select the previous tool call."""
        self._move(-1)

    def action_toggle_call(self) -> None:
        """Expand the selected tool call, or fold it (none selected: the first in view)."""
        spot = self._spot(self.cursor) if self.cursor is not None else None
        if spot is None:
            spot = self._in_view()
        if spot is None:
            self.notify("No tool call in this conversation.", timeout=3)
            return
        self._toggle(spot.call)

    def _toggle(self, call: CallKey) -> None:
        self.toggled ^= {call}
        self.cursor = call
        self._paint(follow=False)
        spot = self._spot(call)
        if spot is not None:  # (once the log's new height is laid out)
            self.call_after_refresh(self.body.reveal, spot.head, spot.details)

    def action_toggle_all(self) -> None:
        """Expand every tool call, or fold them all (when every one is expanded)."""
        self.expand_all = (
            not all(self.expanded(s.call) for s in self.calls)
            if self.calls
            else (not self.expand_all)
        )
        self.toggled.clear()
        anchor = self._spot(self.cursor) if self.cursor is not None else None
        self._paint(follow=anchor is None)
        if anchor is not None:
            spot = self._spot(anchor.call)
            if spot is not None:
                self.call_after_refresh(self.body.reveal, spot.head, spot.details)

    def on_block_log_clicked(self, event: BlockLog.Clicked) -> None:
        """A click on a tool call's line expands or folds it; on its details, selects it."""
        for spot in self.calls:
            if event.key == spot.head:
                self._toggle(spot.call)
                return
            if event.key == spot.details:
                self._select(spot)
                return
