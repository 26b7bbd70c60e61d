"""The question dialog: every question of the request, its options (one or several, as the
request says), a typed answer where allowed; submit or reject."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.segment import Segment
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Input, RadioButton, RadioSet, SelectionList, Static
from textual.widgets.option_list import OptionDoesNotExist
from textual.widgets.selection_list import Selection

from tui.app.format import literal
from tui.core.view import Pending, SessionRow

from ..dashboard import Dashboard
from .confirm import ConfirmScreen
from .dialog import DialogBody, Part, RequestDialog, asked_by, value_lines

QUESTION_EXTRA = (
    ("↑ ↓, space", "Move between options, choose one (or toggle one of several)"),
    ("tab", "Next question or typed answer; enter in a typed answer submits"),
)


@dataclass(frozen=True)
class QuestionReply:
    """Answers (one list per question: chosen labels and/or typed text), or a rejection."""

    answers: list[list[str]] | None
    reject: bool = False


@dataclass(frozen=True)
class Asked:
    """One question of the request (`Pending.request`), as the dialog shows it."""

    question: str
    header: str
    labels: tuple[str, ...]
    descriptions: tuple[str, ...]
    multiple: bool
    custom: bool


def questions_of(pending: Pending) -> list[Asked]:
    req = pending.question
    if req is None:
        return []
    return [
        Asked(
            question=q.question,
            header=q.header,
            labels=tuple(o.label for o in q.options),
            descriptions=tuple(o.description for o in q.options),
            multiple=q.multiple,
            custom=q.custom,
        )
        for q in req.questions
    ]


def option_prompt(label: str, description: str) -> Content:
    parts: list[Part] = [literal(label)]
    if description:
        parts.append((f" — {literal(description)}", "$foreground-muted"))
    return Content.assemble(*parts)


def heading(n: int, asked: Asked) -> Content:
    parts: list[Part] = [(f"Q{n} ", "bold $accent")]
    if asked.header:
        parts.append((f"{literal(asked.header)}: ", "$foreground-muted"))
    parts += value_lines(asked.question, "   ", "bold")  # every line of what is asked
    how = "choose any number" if asked.multiple else "choose one"
    if asked.custom:
        how += " or type an answer"
    parts.append((f"  ({how})", "$foreground-muted italic"))
    return Content.assemble(*parts)


def answer_of(asked: Asked, chosen: Sequence[str], typed: str) -> list[str]:
    """The answer to one question: for a single choice a typed answer replaces the option; for
    several, it is added to them."""
    typed = typed.strip() if asked.custom else ""
    if not asked.multiple:
        return [typed] if typed else list(chosen[:1])
    return [*chosen, typed] if typed else list(chosen)


class ChoiceButton(RadioButton):
    """A radio button whose mark shows its state without colour: ● chosen, ○ not."""

    BUTTON_INNER = "○"  # (made unchosen)

    def watch_value(self) -> None:
        super().watch_value()
        self.BUTTON_INNER = "●" if self.value else "○"  # what RadioButton draws its mark with


class ChoiceList(SelectionList[int]):
    """A checklist whose mark shows its state without colour: ✓ chosen, blank not."""

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        segments = list(strip)
        # (SelectionList draws ToggleButton's mark, which Checkbox keeps as it is)
        if len(segments) < 3 or segments[1].text != Checkbox.BUTTON_INNER:
            return strip
        try:
            option = self.get_option_at_index(self.scroll_offset.y + y)
        except OptionDoesNotExist:
            return strip
        mark = "✓" if option.value in self.selected else " "
        segments[1] = Segment(mark, segments[1].style, segments[1].control)
        return Strip(segments, strip.cell_length)


class TypedAnswer(Input):
    """A typed answer, one line. A paste of several lines is kept whole, its lines joined by
    spaces, and said so: Input keeps a paste's first line only, and the rest of a pasted
    answer was lost without a word (a UX review sent two lines of three)."""

    def on_paste(self, event: events.Paste) -> None:
        lines = [line.rstrip() for line in event.text.splitlines() if line.strip()]
        if len(lines) <= 1:
            return  # (Input's own)
        event.prevent_default()
        event.stop()
        one = lines[0] + "".join(" " + line.lstrip() for line in lines[1:])
        selection = self.selection
        if selection.is_empty:
            self.insert_text_at_cursor(one)
        else:
            self.replace(one, *selection)
        self.notify(f"Pasted {len(lines)} lines as one: a typed answer is one line.", timeout=4)


class QuestionScreen(RequestDialog[QuestionReply | None]):
    """ctrl+s submits, ctrl+r rejects, esc cancels; tab moves between the questions."""

    BINDINGS = [
        # not priority bindings: a key is then taken in its turn, after the keys typed before
        # it reached the focused field (a priority binding runs as the app reads the key, so a
        # typed answer and ctrl+s read at once sent the answer without what was typed)
        Binding("ctrl+s", "submit", "Submit"),
        Binding("ctrl+r", "reject", "Reject… (asks first; the run stops)"),
        Binding("escape", "cancel", "Cancel"),
    ]
    SCROLL_SAID = ("tab or pgdn", "shift+tab or pgup")  # (the arrows move in a list)

    def __init__(
        self, row: SessionRow, pending: Pending, dashboard: Dashboard | None = None
    ) -> None:
        super().__init__(row, pending, dashboard)
        self.asked = questions_of(pending)

    def compose(self) -> ComposeResult:
        with Vertical(id="question", classes="dialog") as box:
            box.border_title = "Question asked"
            box.border_subtitle = "ctrl+s submit · ctrl+r reject… · esc cancel"
            yield self.gone_banner()
            with DialogBody(classes="dialog-body"):
                yield Static(asked_by(self.row, self.pending), classes="dialog-who")
                for n, asked in enumerate(self.asked, 1):
                    yield Static(heading(n, asked), classes="question-heading")
                    yield self._choices(n, asked)
                    if asked.custom:
                        hint = (
                            "a typed answer (added to the choices)"
                            if asked.multiple
                            else "or type an answer (replaces the choice)"
                        )
                        yield TypedAnswer(
                            placeholder=hint, id=f"typed-{n}", classes="question-typed"
                        )
                if not self.asked:
                    yield Static("The request carries no question; reject it or cancel.")
            yield self.more_sign()
            yield Static(
                Content.styled(
                    "↑↓ move · space/enter choose · tab next question · enter in a typed answer "
                    "submits",
                    "$foreground-muted",
                ),
                classes="dialog-note",
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Submit (ctrl+s)", variant="success", id="submit")
                yield Button("Reject… (ctrl+r)", variant="error", id="reject")
                yield Button("Cancel (esc)", id="cancel")

    def _choices(self, n: int, asked: Asked) -> Widget:
        """Options as radio buttons (one choice) or a checklist (several); either way the mark
        itself says what is chosen (● / ○, ✓), not only its colour."""
        prompts = [
            option_prompt(lb, d) for lb, d in zip(asked.labels, asked.descriptions, strict=True)
        ]
        if asked.multiple:
            return ChoiceList(
                *(Selection(p, i) for i, p in enumerate(prompts)),
                id=f"choices-{n}",
                classes="question-choices",
            )
        return RadioSet(
            *(ChoiceButton(p) for p in prompts), id=f"choices-{n}", classes="question-choices"
        )

    def on_mount(self) -> None:
        first = (
            self.query(".question-choices, .question-typed").first(Widget)
            if self.asked
            else self.query_one("#cancel", Button)
        )
        first.focus()

    # -- reading the answers ------------------------------------------------------------------

    def chosen(self, n: int) -> list[str]:
        """The labels chosen for question `n` (1-based), in option order."""
        asked = self.asked[n - 1]
        widget = self.query_one(f"#choices-{n}")
        if isinstance(widget, SelectionList):
            return [asked.labels[i] for i in sorted(widget.selected)]
        assert isinstance(widget, RadioSet)
        index = widget.pressed_index
        return [asked.labels[index]] if 0 <= index < len(asked.labels) else []

    def typed(self, n: int) -> str:
        boxes = self.query(f"#typed-{n}")
        return boxes.first(Input).value if boxes else ""

    def answers(self) -> tuple[list[list[str]], int | None]:
        """Every question's answer, and the first question left without one (or None)."""
        out = [answer_of(a, self.chosen(n), self.typed(n)) for n, a in enumerate(self.asked, 1)]
        missing = next((n for n, a in enumerate(out, 1) if not a), None)
        return out, missing

    # -- events and actions -------------------------------------------------------------------

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        {
            "submit": self.action_submit,
            "reject": self.action_reject,
            "cancel": self.action_cancel,
        }.get(event.button.id or "", lambda: None)()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    def action_submit(self) -> None:
        """Send the answers (every question needs one)."""
        if not self.asked:
            self.notify("Nothing to answer: reject the request or cancel.", severity="warning")
            return
        answers, missing = self.answers()
        if missing is not None:
            asked = self.asked[missing - 1]
            what = "choose an option" + (" or type an answer" if asked.custom else "")
            self.notify(
                f"Question {missing} has no answer yet: {what}.", severity="warning", timeout=4
            )
            self.query_one(f"#choices-{missing}").focus()
            return
        self.dismiss(QuestionReply(answers))

    def action_reject(self) -> None:
        """Reject the whole request, once confirmed: the agent is told the user dismissed it,
        and its run stops (a key next to ctrl+s ended a run at once; a permission's reject
        asks for its confirmation too)."""
        body = Content.assemble(
            "Reject the question of ",
            (literal(self.row.title) or self.row.id, "bold"),
            "?\n\n",
            (
                "The agent is told you dismissed it, and its run stops. To answer it, go back.",
                "$foreground-muted",
            ),
        )

        def rejected(yes: bool | None) -> None:
            if yes:
                self.dismiss(QuestionReply(None, reject=True))

        self.app.push_screen(
            ConfirmScreen("Reject this question?", body, yes="Reject", no="Back"), rejected
        )

    def action_cancel(self) -> None:
        """Close without answering."""
        self.dismiss(None)


def describe(answers: Sequence[Sequence[str]]) -> str:
    """`PostgreSQL` or `Q1: a, b · Q2: c` for a notification."""
    if len(answers) == 1:
        return ", ".join(answers[0])
    return " · ".join(f"Q{n}: {', '.join(a)}" for n, a in enumerate(answers, 1))
