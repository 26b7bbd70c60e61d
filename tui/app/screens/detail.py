"""The detail view of one session: state, evidence, what is asked, timeline, error, children."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from tui.core.raw import RawFacts
from tui.core.view import Pending, SessionRow, Transition, View

from .. import format as fmt
from ..dashboard import Dashboard, OpenDetails
from ..widgets.activity import activity_content
from . import session_keys
from .dialog import block, multiline, value_lines, values_lines
from .view_screen import ViewScreen

Key = tuple[str, str]
Part = str | tuple[str, str]
LABEL_WIDTH = 12


#: where a field's value starts, after its label: a value's next lines are indented under it
INDENT = " " * (2 + LABEL_WIDTH)


def _label(name: str) -> tuple[str, str]:
    return (f"{name:<{LABEL_WIDTH - 1}} ", "$foreground-muted")


def _lit(value: Any) -> str:
    return fmt.literal(str(value))


def state_parts(row: SessionRow) -> list[Part]:
    """`● busy` in its colour, then `⚠ STALE` when stale."""
    style = f"${fmt.state_variable(row)} bold"
    if row.state == "input":
        style += " reverse"
    parts: list[Part] = [(fmt.state_label(row), style)]
    if row.reason:
        parts += [" ", (row.reason, f"${fmt.state_variable(row)}")]
    if row.stale:
        parts += ["  ", (f"{fmt.STALE_GLYPH} {fmt.STALE_WORD}", "$state-stale bold reverse")]
    return parts


def summary_section(row: SessionRow, view: View, now: float) -> Content:
    """Identity and state of the session."""
    parts: list[Part] = [_label("state"), *state_parts(row), "\n"]
    in_state = None if row.since is None else now - row.since
    if row.last_known is not None:
        parts += [
            _label("last known"),
            (row.last_known.said(), "dim"),
            (f", {fmt.duration(in_state)} ago (the server cannot be read)", "$foreground-muted"),
            "\n",
        ]
    parts += [
        _label("in state"),
        fmt.duration(in_state),
        (f"  since {fmt.clock_time(row.since, now)}", "$foreground-muted"),
        "\n",
    ]
    parts += [
        _label("updated"),
        fmt.clock_time(row.updated, now),
        (f"  {fmt.age(row.updated, now)}", "$foreground-muted"),
        "\n",
    ]
    if not row.settled:
        parts += [_label("settled"), ("no, the final facts are still arriving", "italic"), "\n"]
    if row.state == "retry":
        retry = f"attempt {row.retry_attempt}" if row.retry_attempt is not None else "retrying"
        parts += [_label("retry"), (retry, "$state-retry")]
        if row.retry_message:
            parts += ["  ", _lit(row.retry_message)]
        if row.retry_next is not None:
            parts += [(f"  next in {fmt.duration(row.retry_next - now)}", "$foreground-muted")]
        parts.append("\n")
    parts += [_label("session"), _lit(row.id), "\n"]
    parts += [_label("folder"), _lit(row.directory or "–"), "\n"]
    parts += [_label("server"), _lit(row.server), "\n"]
    if row.parent_id:
        parent = view.rows.get((row.server, row.parent_id))
        parts += [_label("parent"), _lit(row.parent_id)]
        if parent is not None:
            parts += [
                "  ",
                (fmt.literal(parent.title), "italic"),
                ("  (p opens it)", "$foreground-muted"),
            ]
        parts.append("\n")
    parts += [
        _label("cost"),
        fmt.money(row.cost),
        ("   tokens ", "$foreground-muted"),
        fmt.tokens(row.tokens),
    ]
    return Content.assemble(*parts)


def evidence_section(row: SessionRow) -> Content:
    """Why the state is what it is: the evidence lines of the View."""
    if not row.evidence:
        note = (
            "Nothing contradicts the server: the state is what it reports."
            if row.state in ("busy", "retry")
            else "No evidence lines for this state."
        )
        return Content.styled(note, "$foreground-muted")
    style = "$state-stale" if row.stale else ""
    parts: list[Part] = []
    for i, line in enumerate(row.evidence):
        parts += [("• ", style or "$foreground-muted"), _lit(line)]
        if i < len(row.evidence) - 1:
            parts.append("\n")
    return Content.assemble(*parts)


def _get(detail: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in detail and detail[name] not in (None, "", [], (), {}):
            return detail[name]
    return None


def pending_parts(item: Pending, row: SessionRow) -> list[Part]:
    """One permission or question, from the request the server sent (`Pending.request`)."""
    glyph_style = "$state-input bold"
    parts: list[Part] = [
        (f"? {item.kind}", glyph_style),
        "  ",
        (_lit(item.id), "$foreground-muted"),
    ]
    if item.session_id and item.session_id != row.id:
        parts += [("  asked by sub-agent ", "$foreground-muted"), _lit(item.session_id)]
    parts.append("\n")
    if item.summary:
        parts += ["  ", _label("summary"), _lit(item.summary), "\n"]
    if item.kind == "permission":
        perm = item.permission
        name = perm.permission if perm is not None else None
        if name:
            parts += ["  ", _label("tool"), (_lit(name), "bold"), "\n"]
        metadata: Mapping[str, Any] = perm.metadata if perm is not None else {}
        command = _get(metadata, "command", "cmd") or (perm.command if perm is not None else None)
        if command:  # every line of it: what will run, as it will run
            parts += ["  ", _label("command"), *value_lines(str(command), INDENT, "bold"), "\n"]
        blocks: list[Part] = []
        if metadata:
            for k, v in metadata.items():
                if k in ("command", "cmd") or isinstance(v, (dict, list, tuple)) or v in (None, ""):
                    continue
                if multiline(v):  # a diff: its lines, after the one-line fields
                    blocks += ["  ", _label(_lit(k)), "\n", *block(v, "    ")]
                else:
                    parts += ["  ", _label(_lit(k)), _lit(v), "\n"]
        patterns = perm.patterns if perm is not None else ()
        if patterns:
            parts += ["  ", _label("patterns"), *values_lines(patterns, INDENT), "\n"]
        parts += blocks
        parts += [
            "  ",
            ("answer: ", "$foreground-muted"),
            ("r", "bold"),
            (" here, or ", "$foreground-muted"),
            (f"ocwatch reply {_lit(item.id)} once|always|reject", "italic"),
            "\n",
        ]
    else:
        questions = item.question.questions if item.question is not None else ()
        for n, q in enumerate(questions, 1):
            parts += ["  ", (f"Q{n} ", "bold")]
            if q.header:
                parts += [(f"{_lit(q.header)}: ", "$foreground-muted")]
            parts += [*value_lines(q.question, "     ", "bold"), "\n"]
            for opt in q.options:
                parts += ["     ○ ", _lit(opt.label)]
                if opt.description:
                    parts += [(f" — {_lit(opt.description)}", "$foreground-muted")]
                parts.append("\n")
            extras = []
            if q.multiple:
                extras.append("several answers allowed")
            if q.custom:
                extras.append("a typed answer is allowed")
            if extras:
                parts += ["     ", ("; ".join(extras), "$foreground-muted italic"), "\n"]
        parts += [
            "  ",
            ("answer: ", "$foreground-muted"),
            ("r", "bold"),
            (" here, or ", "$foreground-muted"),
            (f"ocwatch answer {_lit(item.id)} --option LABEL | --text TEXT | --reject", "italic"),
            "\n",
        ]
    return parts


def pending_section(row: SessionRow) -> Content | None:
    """What the session is waiting for (None when nothing is asked)."""
    if not row.pending:
        return None
    parts: list[Part] = []
    for item in row.pending:
        parts += pending_parts(item, row)
    return Content.assemble(*parts).rstrip()


def _state_brief(row: SessionRow | None) -> list[Part]:
    if row is None:
        return [("gone", "$foreground-muted italic")]
    parts: list[Part] = [(fmt.state_label(row), f"${fmt.state_variable(row)}")]
    if row.reason:
        parts.append(f" {row.reason}")
    if row.stale:
        parts += [" ", (fmt.STALE_GLYPH + " stale", "$state-stale bold")]
    if row.pending:
        parts.append(f" ({', '.join(p.kind for p in row.pending)})")
    return parts


def timeline_section(history: Iterable[Transition], now: float) -> Content:
    """Observed transitions with their times, oldest first."""
    parts: list[Part] = []
    for t in history:
        if parts:
            parts.append("\n")
        parts += [(fmt.clock_time(t.at, now), "$foreground-muted"), "  "]
        if t.before is None:
            parts += [("appeared", "$foreground-muted"), " as "]
        else:
            parts += [*_state_brief(t.before), ("  →  ", "$foreground-muted")]
        parts += _state_brief(t.after)
    if not parts:
        return Content.styled(
            "No transition observed since ocwatch started watching.", "$foreground-muted"
        )
    return Content.assemble(*parts)


def raw_section(facts: RawFacts, now: float) -> Content:
    """Where each fact of the row comes from, the snapshot's entries for the session, then its
    last events (type, properties)."""
    parts: list[Part] = []
    if facts.sources:
        parts.append(("facts from", "$foreground-muted"))
        for fact, source, at in facts.sources:
            parts += [
                "\n  ",
                fmt.literal(fact),
                ("  ←  ", "$foreground-muted"),
                fmt.literal(source),
            ]
            if at is not None:
                parts += [" ", (fmt.clock_time(at, now), "$foreground-muted")]
    if facts.snapshot_at is not None:
        parts += [
            "\n" if parts else "",
            ("snapshot ", "$foreground-muted"),
            (fmt.clock_time(facts.snapshot_at, now), "$foreground-muted"),
        ]
        for entry in facts.entries:
            parts += ["\n  ", fmt.literal(entry)]
    for t, etype, props in facts.events:
        parts += [
            "\n" if parts else "",
            (fmt.clock_time(t, now), "$foreground-muted"),
            "  ",
            (fmt.literal(etype), "bold"),
            "  ",
            (fmt.literal(fmt.truncate(props, 300)), "$foreground-muted"),
        ]
    if not facts.events:
        parts += [
            "\n" if parts else "",
            ("No event about it since ocwatch started watching.", "$foreground-muted"),
        ]
    return Content.assemble(*parts)


def children_of(row: SessionRow, view: View) -> list[SessionRow]:
    """The session's sub-agents present in the View (from `children` and `parent_id`)."""
    ids = list(row.children)
    ids += sorted(
        r.id
        for r in view.rows.values()
        if r.server == row.server and r.parent_id == row.id and r.id not in ids
    )
    return [view.rows[(row.server, i)] for i in ids if (row.server, i) in view.rows]


class DetailScreen(ViewScreen):
    """Everything the View knows about one session; updates live."""

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("p", "parent", "Parent"),
        *session_keys.action("r", "respond", "Respond"),
        *session_keys.action("a", "abort", "Abort"),
        session_keys.messages(show=True),
        *session_keys.ATTACH,
        session_keys.WEB,
    ]

    def __init__(self, dashboard: Dashboard, key: Key) -> None:
        super().__init__(dashboard)
        self.key = key
        self.row: SessionRow | None = None
        self._children: list[Key] = []
        self._has_parent = False

    @property
    def session_key(self) -> Key:
        """The session this screen shows (the user is looking at it)."""
        return self.key

    def compose(self) -> ComposeResult:
        yield Static(id="detail-title")
        with VerticalScroll(id="detail-body"):
            yield Static(id="detail-gone")
            yield Static("State", classes="heading")
            yield Static(id="detail-summary", classes="section")
            yield Static("Doing", classes="heading")
            yield Static(id="detail-activity", classes="section")
            yield Static("Waiting for you", classes="heading pending")
            yield Static(id="detail-pending", classes="section pending")
            yield Static("Evidence", classes="heading")
            yield Static(id="detail-evidence", classes="section")
            yield Static("Last error", classes="heading error")
            yield Static(id="detail-error", classes="section error")
            yield Static("Timeline", classes="heading")
            yield Static(id="detail-timeline", classes="section")
            yield Static(
                "Sub-agents  (tab to reach them, enter opens one)", classes="heading children"
            )
            yield OptionList(id="detail-children", classes="children")
            yield Static(
                "Raw: what the server said about it (where each fact comes from, "
                "the snapshot's entries, the last events as received)",
                classes="heading raw",
            )
            yield Static(id="detail-raw", classes="section raw")
        yield Footer()

    def on_mount(self) -> None:
        self.dashboard.activity_changed.subscribe(self, self._on_activity)
        self.follow_view()
        self.query_one("#detail-body").focus()

    def _on_activity(self, key: Key) -> None:
        if key == self.key and self.row is not None:
            self._show_activity(self.row)

    def _show_activity(self, row: SessionRow) -> None:
        app = self.dashboard
        gone = app.view is None or self.key not in app.view.rows
        look = app.inspector.look(row, app.now, ask=not gone)
        self.query_one("#detail-activity", Static).update(activity_content(row, look, app.now))

    def show_view(self) -> None:
        """Display the session from the dashboard's latest View (the last known row if it is
        gone)."""
        app = self.dashboard
        view, now = app.view, app.now
        if view is None:
            return
        current = view.rows.get(self.key)
        gone = current is None
        if current is not None:
            self.row = current
        row = self.row
        gone_box = self.query_one("#detail-gone", Static)
        gone_box.display = gone
        if gone:
            gone_box.update(
                Content.styled(
                    "This session is no longer in the View (deleted, or its server is not "
                    "reachable). Showing what was last known.",
                    "$state-error bold",
                )
            )
        has_parent = row is not None and row.parent_id is not None
        if has_parent != self._has_parent:
            self._has_parent = has_parent
            self.refresh_bindings()
        if row is None:
            self.query_one("#detail-title", Static).update(
                Content.styled(f"Unknown session {fmt.literal(self.key[1])}", "bold")
            )
            return
        title = fmt.literal(row.title) or row.id
        self.query_one("#detail-title", Static).update(
            Content.assemble(*state_parts(row), "  ", (title, "bold"))
        )
        self.query_one("#detail-summary", Static).update(summary_section(row, view, now))
        self._show_activity(row)
        self.query_one("#detail-evidence", Static).update(evidence_section(row))
        pending = pending_section(row)
        for widget in self.query(".pending"):
            widget.display = pending is not None
        if pending is not None:
            self.query_one("#detail-pending", Static).update(pending)
        for widget in self.query(".error"):
            widget.display = bool(row.error)
        if row.error:
            self.query_one("#detail-error", Static).update(
                Content.styled(fmt.literal(row.error), "$state-error")
            )
        self.query_one("#detail-timeline", Static).update(
            timeline_section(app.history(self.key), now)
        )
        facts = app.raw(self.key) if app.raw is not None else None
        for widget in self.query(".raw"):
            widget.display = facts is not None
        if facts is not None:
            self.query_one("#detail-raw", Static).update(raw_section(facts, now))
        self._show_children(children_of(row, view))

    def _show_children(self, children: list[SessionRow]) -> None:
        keys = [c.key for c in children]
        box = self.query_one("#detail-children", OptionList)
        for widget in self.query(".children"):
            widget.display = bool(children)
        options = [
            Option(
                Content.assemble(
                    (fmt.state_label(c), f"${fmt.state_variable(c)}"),
                    "  ",
                    fmt.literal(c.title) or c.id,
                    (f"  {fmt.STALE_GLYPH} {fmt.STALE_WORD}", "$state-stale bold")
                    if c.stale
                    else "",
                ),
                id=f"{c.server}\x1f{c.id}",
            )
            for c in children
        ]
        if keys == self._children and box.option_count == len(options):
            for option in options:  # same children: refresh their text, keep the highlight
                box.replace_option_prompt(option.id or "", option.prompt)
            return
        highlighted = box.highlighted
        box.clear_options()
        box.add_options(options)
        if options:
            box.highlighted = min(highlighted or 0, len(options) - 1)
        self._children = keys

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        server, _, session = (event.option.id or "").partition("\x1f")
        if session:
            self.post_message(OpenDetails((server, session)))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "parent":  # only offered when there is a parent
            return self.row is not None and self.row.parent_id is not None
        return True

    def action_back(self) -> None:
        """Back to the previous screen."""
        self.dismiss()

    def action_parent(self) -> None:
        """Open the parent session's details."""
        if self.row is not None and self.row.parent_id:
            self.post_message(OpenDetails((self.row.server, self.row.parent_id)))
