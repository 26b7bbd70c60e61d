"""Presentation helpers: glyphs and words for states, durations, money, tokens, literal text.

Everything here is pure (no clock reads, no Textual); the dashboard and its tests share it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import PurePath

from rich.cells import cell_len, set_cell_size

from tui.core import words
from tui.core.text import lines_of
from tui.core.text import literal as _literal  # one escaping for the dashboard and the CLI
from tui.core.view import REASONS, STATES, SessionRow, ago
from tui.core.view import attention_rank as attention_rank  # shared with the CLI
from tui.core.view import duration as duration  # shared with the CLI
from tui.core.view import duration_next as duration_next
from tui.core.words import REASON_GLYPH as REASON_GLYPH
from tui.core.words import REASON_LOOK as REASON_LOOK
from tui.core.words import STALE_GLYPH as STALE_GLYPH
from tui.core.words import STALE_LOOK as STALE_LOOK
from tui.core.words import STALE_WORD as STALE_WORD
from tui.core.words import STATE_GLYPH as STATE_GLYPH
from tui.core.words import STATE_LOOK as STATE_LOOK
from tui.core.words import Look as Look

#: Characters of one server text the dashboard lays out at most (a title, a folder, an error, a
#: command): one of megabytes made every repaint wrap all of it (issue 40: such a title froze
#: the dashboard). The whole text stays in `status --json` and `report`.
SHOWN_MAX = 4096


def literal(text: str | None, *, escapes: bool = False) -> str:
    """Untrusted text made safe to show (tui.core.text.literal), cut to SHOWN_MAX characters
    with how many more there are."""
    if text and len(text) > SHOWN_MAX:
        text = f"{text[:SHOWN_MAX]}… (+{len(text) - SHOWN_MAX:,} characters)"
    return _literal(text, escapes=escapes)


def literal_lines(text: str | None) -> list[str]:
    """Untrusted text a person decides on (a command to approve, a question), each of its
    lines made safe to show (`literal`): its line breaks kept, so that no line hides behind
    another (`echo ok⏎rm -rf ~` is two lines, never one harmless `echo`); cut to SHOWN_MAX
    characters in all, with how many more."""
    if text and len(text) > SHOWN_MAX:
        text = f"{text[:SHOWN_MAX]}… (+{len(text) - SHOWN_MAX:,} characters)"
    return [_literal(line) for line in lines_of(text)]


#: The states' glyphs and words live in tui.core.words (one vocabulary for the dashboard, the
#: CLI and the metrics); the dashboard reads them through here.
assert tuple(STATE_LOOK) == STATES and tuple(REASON_LOOK) == REASONS  # one vocabulary
state_glyph = words.glyph
state_label = words.label

#: Every theme variable a state is coloured with (`$state-busy`, ... `$state-error`, ...), with
#: the colour it falls back to in a theme that does not set it.
THEME_FALLBACKS = {
    look.variable: look.fallback
    for look in (*STATE_LOOK.values(), *REASON_LOOK.values(), STALE_LOOK)
}
THEME_VARIABLES = tuple(THEME_FALLBACKS)
assert all(
    THEME_FALLBACKS[look.variable] == look.fallback  # one fallback per variable
    for look in (*STATE_LOOK.values(), *REASON_LOOK.values(), STALE_LOOK)
)
STATE_FILTERS = ("all", *STATE_LOOK, "stale", "active")
"""The state filters offered by the dashboard, in key order (`1`..`8`; `active`: what needs
you or runs)."""
#: The `active` filter: what needs you or runs (an idle row is neither)
ACTIVE_STATES = frozenset({"input", "busy", "retry", "unknown"})


def state_variable(row: SessionRow) -> str:
    """The theme variable colouring this row's state (errors get `state-error`)."""
    if row.state == "idle" and row.reason == "error":
        return REASON_LOOK["error"].variable
    look = STATE_LOOK.get(row.state)
    return look.variable if look is not None else STATE_LOOK["unknown"].variable


def matches_state(row: SessionRow, state_filter: str) -> bool:
    """Whether a row passes a state filter from STATE_FILTERS."""
    if state_filter == "all":
        return True
    if state_filter == "stale":
        return row.stale
    if state_filter == "active":
        return row.stale or row.state in ACTIVE_STATES
    return row.state == state_filter


def coarse(seconds: float) -> str:
    """A span of time as `age` says it, without the "ago": `12h`, `3d`, `45m`."""
    return age(0.0, seconds).removesuffix(" ago")


def is_old(row: SessionRow, cutoff: float) -> bool:
    """An idle row that has not moved since `cutoff` (folded away by the dashboard's ageing):
    settled, not stale, nothing asked; a row with no date is never old."""
    return (
        row.state == "idle"
        and row.settled
        and not row.stale
        and row.updated is not None
        and row.updated < cutoff
    )


def matches_text(row: SessionRow, needle: str) -> bool:
    """Case-insensitive substring match on title, id and folder."""
    if not needle:
        return True
    needle = needle.casefold()
    return any(needle in s.casefold() for s in (row.title, row.id, row.directory))


def text_match(needle: str, rows: Iterable[SessionRow]) -> tuple[str, Callable[[SessionRow], bool]]:
    """How the filter box reads `needle` over `rows`, and its test: the text itself (`text`)
    when some row holds it (so `[bold]` or `v2.4` mean what they say), else the text as a
    case-insensitive regular expression over title, id and folder (`deploy|release`, `^fix`:
    `regex`), when it is one (else `invalid`: nothing matches)."""
    if not needle or any(matches_text(r, needle) for r in rows):
        return "text", lambda row: matches_text(row, needle)
    pattern = _pattern(needle)
    if pattern is None:
        return "invalid", lambda _row: False
    return "regex", lambda row: any(pattern.search(s) for s in (row.title, row.id, row.directory))


@lru_cache(maxsize=32)
def _pattern(text: str) -> re.Pattern[str] | None:
    """`text` as a case-insensitive regular expression (None: it is not one)."""
    try:
        return re.compile(text, re.IGNORECASE)
    except (re.error, RecursionError, OverflowError):
        return None


JUST_NOW = 5
"""Seconds within which activity reads `now`: a streaming session would otherwise flip
between `0s ago` and `1s ago` on almost every redraw."""


def reason_text(row: SessionRow) -> str:
    """What the reason column shows: the idle reason, what is asked, or the retry attempt (the
    narrow table shows a stale row's flag there instead: cells.py)."""
    kind, n = _reason(row)
    if row.state == "input" and row.pending:
        return kind if n == 1 else f"{kind} +{n - 1}"
    if kind == "attempt":
        return f"attempt {n}"
    return kind


def asked_text(row: SessionRow) -> str:
    """What a waiting row waits for, after its title: `bash: npm test`, `edit: src/app.py`,
    `Which region?` (the reason column names the kind); an unreachable server's row, what it
    last was (`was busy`); "" for other rows. Server text: shown through literal() by the
    caller."""
    first = row.pending[0] if row.pending else None
    asked = (
        first.summary.removeprefix(f"{first.kind} ").removeprefix(f"{first.kind}: ")
        if first is not None
        else ""
    )
    if row.last_known is not None:
        said = row.last_known.said()
        return f"was {said}, {asked}" if said == "input" and asked else f"was {said}"
    return asked if row.state == "input" else ""


#: How a one-line summary says a command or a question has more lines (text.first_line)
_MORE_LINES = re.compile(r" \(\+[\d,]+ lines?\)$")


def truncate_ask(text: str, width: int) -> str:
    """`asked_text` cut to `width` cells: a path (`edit: /a/b/c.py`) keeps its end (the file's
    name), anything else (a command, a question) its start; how many lines more a command has
    is kept whatever is cut (`shell: echo cle… (+1 line)`)."""
    more = _MORE_LINES.search(text[-32:]) if cell_len(text) > width else None
    if more is not None:
        suffix = more.group(0)
        room = width - cell_len(suffix)
        if room >= 6:
            return truncate_ask(text[: len(text) - len(suffix)], room) + suffix
    if len(text) > 4 * width + 64:
        return truncate(text, width)
    if cell_len(text) <= width:
        return text
    head, sep, detail = text.partition(": ")
    if sep and "/" in detail and " " not in detail and width > len(head) + 4:
        room = width - len(head) - 3  # "head: …tail"
        cut = f"{head}: …{detail[-room:] if room > 0 else ''}"
        if cell_len(cut) <= width:  # (wide characters: cut at the start instead)
            return cut
    return truncate(text, width)


def reason_key(row: SessionRow) -> tuple[str, int]:
    """The reason column's sort value: its word, then how many (requests, or the attempt). A
    stale row sorts by its flag (the narrow table shows it in this column)."""
    return (STALE_WORD, 0) if row.stale else _reason(row)


def _reason(row: SessionRow) -> tuple[str, int]:
    if row.state == "input" and row.pending:
        return row.pending[0].kind, len(row.pending)
    if row.state == "retry" and row.retry_attempt is not None:
        return "attempt", row.retry_attempt
    if row.settling in SAID_SETTLING:
        return row.settling, 0
    return row.reason or "", 0


SAID_SETTLING = frozenset({"loading", "unreachable"})
"""Unsettled rows whose reason column says why (an `unknown` row then reads `unreachable`, not
nothing: its last known state is in the evidence)."""


def age(t: float | None, now: float) -> str:
    """How long ago `t` was, coarse (`12s`, `3m`, `2h`, `5d`); `–` when unknown."""
    if t is None:
        return "–"
    if now - t < JUST_NOW:
        return "now"
    return ago(now, t, coarse=True)


def age_next(seconds: float) -> int:
    """The whole number of seconds ago at which `age` next reads differently."""
    s = max(0, int(seconds))
    if s < JUST_NOW:
        return JUST_NOW
    for unit, below in ((1, 60), (60, 3600), (3600, 86400)):
        if s < below:
            return (s // unit + 1) * unit
    return (s // 86400 + 1) * 86400


def clock_time(t: float | None, now: float | None = None) -> str:
    """Local wall-clock time `HH:MM:SS`, with the date when not on the same day as `now`."""
    if t is None:
        return "–"
    lt = time.localtime(t)
    if now is not None and time.localtime(now)[:3] != lt[:3]:
        return time.strftime("%Y-%m-%d %H:%M:%S", lt)
    return time.strftime("%H:%M:%S", lt)


def money(cost: float | None) -> str:
    """Cost in dollars: `$0.012` under a dollar, `$12.34` above; `–` when unknown."""
    if cost is None:
        return "–"
    if cost == 0:
        return "$0"
    return f"${cost:.3f}" if cost < 1 else f"${cost:.2f}"


def tokens(n: int | None) -> str:
    """Token count: `950`, `12.3k`, `4.1M`; `–` when unknown."""
    if n is None:
        return "–"
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


@lru_cache(maxsize=4096)
def short_folder(directory: str) -> str:
    """The project folder's last component (`/home/me/src/app` → `app`)."""
    if not directory:
        return "–"
    name = PurePath(directory.rstrip("/\\") or "/").name
    return name or directory


def server_error(url: str, error: str | None) -> str:
    """A server's error without a leading copy of its URL (`http://h:1: cannot connect`)."""
    if not error:
        return ""
    for prefix in (f"{url}: ", f"{url.rstrip('/')}: "):
        if error.startswith(prefix):
            return error[len(prefix) :]
    return error


def server_label(url: str) -> str:
    """A short name for a server: `host:port` without the scheme."""
    rest = url.split("://", 1)[-1]
    return rest.rstrip("/")


def truncate(text: str, width: int) -> str:
    """Cut `text` to at most `width` cells, ending with `…` when cut."""
    if width <= 0:
        return ""
    if len(text) > 4 * width + 64:  # (megabytes are not counted cell by cell: a prefix decides)
        return set_cell_size(text[: 4 * width + 64], width - 1) + "…"
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, width - 1) + "…"
