"""What a session is doing, on screen: the detail view's "Doing" section and the details pane
beside the table (wide terminals, `d`)."""

from __future__ import annotations

from textual.content import Content
from textual.strip import Strip
from textual.visual import Visual

from tui.core.activity import Activity, ToolRun, summarize_todos
from tui.core.view import RUNNING, SessionRow

from .. import format as fmt
from ..inspect import Look
from .strip_view import StripView

Part = str | tuple[str, str]
LABEL = 10
MUTED = "$foreground-muted"


def _label(name: str) -> tuple[str, str]:
    return (f"{name:<{LABEL - 1}} ", MUTED)


def _tool(run: ToolRun, now: float, running: bool, directory: str = "") -> list[Part]:
    """`bash: npm test · 2m10s`; a path inside the session's folder is shown relative to it."""
    parts: list[Part] = [(fmt.literal(run.tool), "bold")]
    summary = run.summary_in(directory)
    if summary:
        parts += [": ", fmt.literal(summary)]
    if running and run.started is not None:
        parts += [(f" · {fmt.duration(now - run.started)}", "$state-busy")]
    elif running:
        parts += [(" · starting", MUTED)]
    elif run.status in ("pending", "running"):
        parts += [(" · did not finish", "$state-error")]
    elif run.status != "completed":
        parts += [
            (f" · {fmt.literal(run.status)}", "$state-error" if run.status == "error" else MUTED)
        ]
    return parts


def _todos(activity: Activity) -> list[Part]:
    todos = activity.todos or ()
    done, total, current = summarize_todos(todos)
    parts: list[Part] = [_label("todos"), f"{done}/{total} done"]
    if current is not None:
        parts += [(" · now: ", MUTED), fmt.literal(current.content)]
    elif done < total:
        following = next((t for t in todos if t.status == "pending"), None)
        if following is not None:
            parts += [(" · next: ", MUTED), fmt.literal(following.content)]
    return parts


def _count(n: int, more: bool) -> str:
    return f"{n}+" if more else str(n)


def activity_content(row: SessionRow, look: Look, now: float) -> Content:
    """The "Doing" lines of a session: model and agent, the tool running now (or the last
    one), todo progress, the end of the last reply, tokens, context use, messages and cost."""
    activity, error = look.activity, look.error
    if not look.available:
        return Content.styled("What the session is doing is read from a live server.", MUTED)
    if activity is None:
        if error:
            return Content.styled(
                f"Cannot read what it is doing: {fmt.literal(error)}", "$state-error"
            )
        return Content.styled("Reading what it is doing …", MUTED)
    parts: list[Part] = []

    def line(*more: Part) -> None:
        if parts:
            parts.append("\n")
        parts.extend(more)

    if activity.model or activity.agent:
        agent: list[Part] = (
            [(" · agent ", MUTED), fmt.literal(activity.agent)] if (activity.agent) else []
        )
        line(_label("model"), fmt.literal(activity.model or "–"), *agent)
    running = row.state in RUNNING or row.state == "input"
    if running and activity.running:
        for run in activity.running:
            line(_label("running"), *_tool(run, now, run.status == "running", row.directory))
    elif activity.last_tool is not None:
        line(_label("last tool"), *_tool(activity.last_tool, now, False, row.directory))
    if activity.todos:
        line(*_todos(activity))
    if activity.reply and not (running and activity.reply_before_prompt):
        # ended with nothing written since the last prompt (aborted, failed): the reply shown
        # is an earlier run's, and said to be
        earlier = (  # (not on an unknown row: its run may still be going)
            " · an earlier run's: the last run wrote none"
            if activity.reply_before_prompt and row.state == "idle"
            else ""
        )
        line(_label("reply"), (fmt.clock_time(activity.reply_at, now) + earlier, MUTED))
        for text in activity.reply.splitlines():
            line("  ", fmt.literal(text))
    elif running:  # (the last reply, if any, is an earlier run's)
        line(_label("reply"), ("nothing written yet", MUTED))
    t = activity.tokens
    over = f" (last {activity.messages} messages)" if activity.more else ""
    line(
        _label("tokens"),
        f"in {fmt.tokens(t.input)} · out {fmt.tokens(t.output)} · "
        f"reasoning {fmt.tokens(t.reasoning)}",
        (over, MUTED),
    )
    line(_label("cache"), f"{fmt.tokens(t.cache_read)} read · {fmt.tokens(t.cache_write)} written")
    if activity.context is not None:
        share = activity.context_share
        if share is not None and activity.context_limit:
            style = "$state-error" if share >= 0.9 else "$state-retry" if share >= 0.7 else ""
            line(
                _label("context"),
                (f"≈ {share:.0%}", style),
                f" of {fmt.tokens(activity.context_limit)}",
                (f" ({fmt.tokens(activity.context)}: the last step's tokens)", MUTED),
            )
        else:
            line(
                _label("context"),
                f"≈ {fmt.tokens(activity.context)} tokens",
                (" (the model's window is not in the server's config)", MUTED),
            )
    line(
        _label("messages"),
        _count(activity.messages, activity.more),
        (" · cost ", MUTED),
        fmt.money(row.cost if row.cost is not None else activity.cost),
    )
    if error:
        line((f"(the last look failed: {fmt.literal(error)})", "$state-error"))
    elif look.loading:
        line(("(reading again …)", MUTED))
    return Content.assemble(*parts)


def pane_header(row: SessionRow, now: float) -> Content:
    """The pane's first lines: state, title, what is asked, the stale evidence."""
    style = f"${fmt.state_variable(row)} bold"
    parts: list[Part] = [(fmt.state_label(row), style)]
    if row.reason:
        parts += [" ", (row.reason, f"${fmt.state_variable(row)}")]
    if row.stale:
        parts += ["  ", (f"{fmt.STALE_GLYPH} {fmt.STALE_WORD}", "$state-stale bold reverse")]
    in_state = None if row.since is None else now - row.since
    parts += [
        (f"  {fmt.duration(in_state)}", MUTED),
        "\n",
        (fmt.literal(row.title or row.id), "bold"),
        "\n",
        (f"{fmt.literal(row.id)} · {fmt.literal(fmt.short_folder(row.directory))}", MUTED),
    ]
    for item in row.pending:
        asked = item.summary.removeprefix(f"{item.kind} ").removeprefix(f"{item.kind}: ")
        parts += ["\n", (f"? {item.kind} ", "$state-input bold"), fmt.literal(asked)]
    if row.stale or row.state == "unknown":
        for ev in row.evidence[:4]:
            parts += ["\n", ("• ", "$state-stale" if row.stale else MUTED), fmt.literal(ev)]
    if row.error:
        parts += ["\n", (fmt.literal(fmt.truncate(row.error, 300)), "$state-error")]
    return Content.assemble(*parts)


class DetailsPane(StripView, can_focus=False):
    """Beside the table on wide terminals: the cursor's session and what it is doing.

    Drawn line by line (the line API of `ScrollView`): a new session or a new second of its
    running tool repaints the pane alone. As Statics, each change asked for a layout of the
    whole screen, which paints the table again on every cursor move."""

    DEFAULT_CSS = """
    DetailsPane {
        width: 50;
        height: 1fr;
        border-left: vkey $panel-lighten-2;
        padding: 0 1;
    }
    """

    HEADING = Content.assemble("\n", ("Doing", "$primary bold"))
    """The heading of the activity (a line of space above it)."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self._shown: tuple[object, ...] | None = None
        self._session: tuple[str, str] | None = None
        self._blocks: tuple[Content, ...] = ()

    @property
    def text(self) -> str:
        """What the pane says, without styles."""
        return "\n".join(block.plain for block in self._blocks)

    def show(self, row: SessionRow | None, look: Look | None, now: float) -> None:
        """Show a session (nothing is redrawn when nothing it shows changed: the same row and
        activity objects within the same second); another session is shown from its top."""
        shown = (row, look, int(now))
        if shown == self._shown:
            return
        self._shown = shown
        if row is None or look is None:
            self._blocks = (Content.styled("No session selected.", MUTED), self.HEADING)
        else:
            self._blocks = (pane_header(row, now), self.HEADING, activity_content(row, look, now))
        session = None if row is None else (row.server, row.id)
        if session != self._session:
            self._session = session
            self.scroll_to(y=0, animate=False, immediate=True)
        self._render_blocks()

    def on_resize(self) -> None:
        self._render_blocks()

    def _render_blocks(self) -> None:
        region = self.scrollable_content_region
        if region.width <= 0:
            return
        # made at the width the scrollbar leaves now; again only when they would make it come
        # or go (that is no resize: the lines must be made at the width it leaves at once)
        width = region.width
        lines = self._strips(width)
        bar = self.styles.scrollbar_size_vertical
        if bar and (len(lines) > region.height) != self.show_vertical_scrollbar:
            width += -bar if not self.show_vertical_scrollbar else bar
            lines = self._strips(width)
        self.show_lines(lines, width)
        if self.scroll_y > self.max_scroll_y:  # it got shorter: its end stays in view
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)

    def _strips(self, width: int) -> list[Strip]:
        style = self.visual_style
        return [
            strip
            for block in self._blocks
            for strip in Visual.to_strips(self, block, width, None, style)
        ]
