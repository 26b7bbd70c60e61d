"""The conversation of one session (`m`): user prompts, replies, tool calls folded to one line
each, errors; loaded on demand and following new messages live.

The newest FIRST_PAGE messages are read and painted first, then the whole list; while the
session changes (its `updated` time moves) the newest page is read again and laid over what is
shown. The view stays at the end while the user is there; scrolled up, it stays put.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial

from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import Footer, Static

from tui.core.client import OcwatchError
from tui.core.conversation import FIRST_PAGE, Entry, entries, merge
from tui.core.view import SessionRow

from .. import format as fmt
from ..dashboard import Dashboard
from ..widgets.conversation_log import Block, BlockLog
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


def _tool_line(entry: Entry, directory: str, now: float) -> list[Part]:
    parts: list[Part] = []
    for run in entry.tools:
        mark, style = {
            "completed": ("✓", "$state-idle"),
            "error": ("✗", "$state-error"),
            "running": ("…", "$state-busy"),
            "pending": ("…", "$state-busy"),
        }.get(run.status, ("·", MUTED))
        summary = run.summary_in(directory)
        took = ""
        if run.started is not None and run.ended is not None:
            took = f"  {fmt.duration(run.ended - run.started)}"
        elif run.started is not None and run.status == "running":
            took = f"  running {fmt.duration(now - run.started)}"
        parts += ["\n  ", (mark, style), " ", (fmt.literal(run.tool), "bold")]
        if summary:
            parts += [": ", fmt.literal(fmt.truncate(summary, 200))]
        if took:
            parts.append((took, MUTED))
    return parts


def running(e: Entry) -> bool:
    """Whether what the message shows changes with the clock (it is still being written, or
    a tool of it runs)."""
    return (e.role == "assistant" and e.completed is None and not e.error) or any(
        t.status == "running" for t in e.tools
    )


def entry_content(e: Entry, now: float, directory: str = "") -> Content:
    """One message: a heading (who, model, when, how long), its text, one line per tool call,
    its error. Text from the server is shown literally, line by line."""
    when = fmt.clock_time(e.created, now)
    parts: list[Part]
    if e.role == "idle":  # V2: the run ended here
        return Content.assemble((f"── idle ({fmt.literal(e.text)})  {when}", MUTED))
    if e.role == "user":
        parts = [("▌ you", "bold $accent"), (f"  {when}", MUTED)]
    else:
        parts = [(f"▌ {fmt.literal(e.agent or 'assistant')}", "bold $primary")]
        if e.model:
            parts.append((f" · {fmt.literal(e.model)}", MUTED))
        parts.append((f"  {when}", MUTED))
        if e.created is not None and e.completed is not None:
            parts.append((f" · {fmt.duration(e.completed - e.created)}", MUTED))
        elif e.completed is None and not e.error:
            parts.append((" · writing …", "$state-busy"))
    if e.reasoning:
        parts += ["\n", (f"  (thought for {e.reasoning:,} characters)", f"{MUTED} italic")]
    for line in e.text.splitlines():
        parts += ["\n", fmt.literal(line)]
    parts += _tool_line(e, directory, now)
    if e.retry and e.completed is None:
        nxt = f", next {fmt.clock_time(e.retry_at, now)}" if e.retry_at else ""
        parts += ["\n", (f"↻ retry {fmt.literal(e.retry)}{nxt}", "$state-retry")]
    if e.error:
        parts += ["\n", (f"✗ {fmt.literal(e.error)}", "$state-error bold")]
    return Content.assemble(*parts)


def _block(e: Entry, now: float, directory: str, first: bool) -> Content:
    content = entry_content(e, now, directory)
    return content if first else Content("\n") + content


def conversation_blocks(items: Sequence[Entry], now: float, directory: str = "") -> list[Block]:
    """One block per message, a blank line before each but the first; a block's key changes
    exactly when its text does (a message whose text follows the clock, each second). The
    content is made only for a key the log has not laid out yet."""
    return [
        (
            (e, i == 0, int(now) if running(e) else None, directory),
            partial(_block, e, now, directory, i == 0),
        )
        for i, e in enumerate(items)
    ]


class ConversationScreen(ViewScreen):
    """One session's messages, scrollable, following new ones."""

    BINDINGS = [
        Binding("escape,m", "back", "Back"),
        *session_keys.ATTACH,
        Binding("home,g", "top", "First message", show=False),
        Binding("end,G", "bottom", "Last message (and follow)", show=False),
    ]

    def __init__(self, dashboard: Dashboard, key: Key, row: SessionRow | None = None) -> None:
        super().__init__(dashboard)
        self.key = key
        self.row = row
        self.items: list[Entry] = []
        self.loaded_all = False
        self.unavailable = False  # no live server to read it from (a replay)
        self.error: str | None = None
        self._read_for: float | None = None  # the row's `updated` the last read was for
        self._read_at = 0.0
        self._reading = False
        self._painted_tick = 0

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
            self.error = (
                "The conversation is read from a live server; a recording holds each "
                "session's last message only (enter: the details, Raw)."
            )
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

    def _paint(self, stick: bool = False) -> None:
        """Show the messages; stay at the end when the user was there (or `stick`)."""
        at_end = stick or self._at_end()
        now = self.dashboard.now
        directory = self.row.directory if self.row is not None else ""
        self._painted_tick = int(now)
        blocks = conversation_blocks(self.items, now, directory)
        if not blocks and not self.unavailable:  # (none read is not none sent)
            blocks = [("empty", Content.styled("No message yet.", MUTED))]
        if self.error:
            blocks.append(
                (
                    ("error", self.error),
                    Content.styled("\n" + fmt.literal(self.error), "$state-error"),
                )
            )
        self.body.set_blocks(blocks)
        self._title()
        if at_end:
            self.call_after_refresh(self.body.scroll_end, animate=False)

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
        if tick != self._painted_tick and any(running(e) for e in self.items[-FIRST_PAGE:]):
            self._paint()  # a running tool's time counts up
        if (
            row is None
            or self._reading
            or row.updated == self._read_for
            or time.monotonic() - self._read_at < FOLLOW_GAP
        ):
            return
        self._read_for = row.updated
        self.run_worker(self._follow(), group="conversation", exclusive=True, exit_on_error=False)

    def action_back(self) -> None:
        self.dismiss()

    def action_top(self) -> None:
        self.body.scroll_home(animate=False)

    def action_bottom(self) -> None:
        self.body.scroll_end(animate=False)
