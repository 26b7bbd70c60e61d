"""Alerts: one per real transition (the server may send idle twice, abort several times), rate
limited, delivered by a terminal bell, an OSC 9 desktop notification, or `notify-send`.

`alerts_for()` is pure (transitions in, alerts out); `Alerter` adds the dedupe memory and the rate
limits; the sinks write.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .config import AlertConfig, AlertKind
from .models import id_time
from .outcome import Outcome, outcome
from .text import plain
from .view import SessionRow, Transition


@dataclass(frozen=True, slots=True)
class Alert:
    kind: str  # input | completed | error | aborted | stale | unknown
    key: tuple[str, str]
    signature: tuple[object, ...]  # what makes this episode distinct (e.g. the request ids)
    title: str
    text: str
    asked: tuple[str, ...] = ()  # for input: what each open request asks
    directory: str = ""  # the session's project folder


#: The alert kind of each outcome: a stale run that completed or was aborted alerts as stale
#: (the server still calls it busy); one that errored as an error (core/outcome.py says why); a
#: session that has never run, none.
KIND_OF: dict[Outcome, AlertKind | None] = {
    Outcome.COMPLETED: "completed",
    Outcome.ABORTED: "aborted",
    Outcome.ERROR: "error",
    Outcome.INTERRUPTED: "unknown",
    Outcome.UNKNOWN: "unknown",
    Outcome.NEVER_RAN: None,
    Outcome.INPUT: "input",
    Outcome.STALE_COMPLETED: "stale",
    Outcome.STALE_ABORTED: "stale",
    Outcome.STALE: "stale",
}


def _kind(row: SessionRow) -> AlertKind | None:
    ended = outcome(row)
    return None if ended is None else KIND_OF[ended]


#: Seconds of clock difference allowed between the server's request times and ours
SKEW = 5.0


def alerts_for(changes: Iterable[Transition], asked_since: float | None = None) -> list[Alert]:
    """The alerts a batch of transitions calls for (pure). A row that appears already in a
    state (first sight, e.g. at startup) does not alert: only changes do; but one that appears
    already waiting for input, asked at or after `asked_since` (when the alerts began), does:
    a session created and asking while nobody watched its start (the user in OpenCode, a
    reconnect) is asked something new all the same."""
    out: list[Alert] = []
    for tr in changes:
        row, before = tr.after, tr.before
        if row is None:
            continue
        if before is None:
            if asked_since is None or _kind(row) != "input" or not _asked_after(row, asked_since):
                continue
            before = _NOTHING
        kind = _kind(row)
        if kind is None or kind == _kind(before) and kind != "input":
            continue
        title = row.title or row.id
        if kind == "input":
            ids = tuple(p.id for p in row.pending)
            if tuple(p.id for p in before.pending) == ids:
                continue
            text = row.pending[0].summary if row.pending else "waiting for input"
            sig: tuple[object, ...] = ids
        elif kind == "stale":
            text = row.evidence[0] if row.evidence else "busy, but the run ended"
            sig = (row.since,)
        else:
            text = f"{kind}" + (f": {row.error}" if row.error and kind != "completed" else "")
            if row.stale:  # an errored run the server still calls busy
                text += " (the server still reports busy)"
            sig = (row.since,)
        asked = tuple(p.summary for p in row.pending) if kind == "input" else ()
        out.append(Alert(kind, row.key, sig, title, text, asked, row.directory))
    return out


def _asked_after(row: SessionRow, since: float) -> bool:
    """Whether something the row asks was asked at or after `since`, by the time its id says
    (OpenCode's ids carry it; a request whose id does not is never taken for new)."""
    for p in row.pending:
        at = id_time(p.id, since)
        if at is not None and at >= since - SKEW:
            return True
    return False


#: What a session first seen asking was before (for alerts_for: asked nothing)
_NOTHING = SessionRow("", "", "", "", None, "busy", None, False, (), (), None, None, None, None)


@dataclass
class Alerter:
    """Dedupes and rate-limits alerts, then hands them to the sinks."""

    config: AlertConfig
    sinks: list[Callable[[Alert], None]]
    clock: Callable[[], float]
    sent: int = 0
    suppressed: int = 0
    _last: dict[tuple[tuple[str, str], str], tuple[float, tuple[object, ...]]] = field(
        default_factory=dict
    )
    _window: deque[float] = field(default_factory=deque)
    #: when the alerts began, wall-clock time as the rows' times are (`clock` may be monotonic:
    #: it only spaces alerts): a session first seen asking something asked since then alerts
    started_at: float = field(default_factory=time.time)

    def feed(self, changes: Iterable[Transition]) -> list[Alert]:
        """Deliver the alerts of these transitions; returns those actually sent."""
        delivered: list[Alert] = []
        changes = list(changes)
        for tr in changes:  # sessions that are gone: forget them (bounded memory)
            if tr.after is None:
                for kind in ("input", "completed", "error", "aborted", "stale", "unknown"):
                    self._last.pop((tr.key, kind), None)
        for alert in alerts_for(changes, self.started_at):
            if alert.kind not in self.config.on:
                continue
            now = self.clock()
            mark = (alert.key, alert.kind)
            last = self._last.get(mark)
            if last is not None and (
                last[1] == alert.signature or now - last[0] < self.config.min_interval
            ):
                self.suppressed += 1
                continue
            while self._window and now - self._window[0] > 60.0:
                self._window.popleft()
            if len(self._window) >= self.config.max_per_minute:
                self.suppressed += 1
                continue
            self._window.append(now)
            self._last[mark] = (now, alert.signature)
            for sink in self.sinks:
                sink(alert)
            self.sent += 1
            delivered.append(alert)
        return delivered


def osc9(alert: Alert) -> str:
    """The OSC 9 sequence for an alert; control characters (and `;`) in titles are removed so a
    title cannot end the sequence early or inject another."""
    text = plain(f"ocwatch: {alert.title}: {alert.text}", 200).replace(";", " ")
    return f"\x1b]9;{text}\x07"


def osc777(alert: Alert) -> str:
    """OSC 777 `notify` (urxvt, foot, Ghostty, WezTerm, VTE terminals): a title and a body."""
    title = plain(f"ocwatch {alert.kind}: {alert.title}", 100).replace(";", " ")
    body = plain(alert.text, 200).replace(";", " ")
    return f"\x1b]777;notify;{title};{body}\x07"


def osc99(alert: Alert) -> str:
    """kitty's OSC 99 desktop notification: the title, then the body (one notification)."""
    title = plain(f"ocwatch {alert.kind}: {alert.title}", 100)
    body = plain(alert.text, 200)
    return f"\x1b]99;i=ocwatch:d=0:p=title;{title}\x1b\\\x1b]99;i=ocwatch:d=1:p=body;{body}\x1b\\"


def tmux_passthrough(sequence: str) -> str:
    """A sequence wrapped so tmux hands it to the outer terminal (tmux >= 3.3 needs
    `set -g allow-passthrough on`)."""
    return "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"


def sequences(config: AlertConfig, inside_tmux: bool) -> list[Callable[[Alert], str]]:
    """The terminal notifications configured (OSC 9, 777, 99), wrapped for tmux inside it."""
    makers: tuple[tuple[bool, Callable[[Alert], str]], ...] = (
        (config.osc9, osc9),
        (config.osc777, osc777),
        (config.osc99, osc99),
    )
    chosen = [make for on, make in makers if on]
    if not inside_tmux:
        return chosen
    return [_through_tmux(make) for make in chosen]


def _through_tmux(make: Callable[[Alert], str]) -> Callable[[Alert], str]:
    return lambda alert: tmux_passthrough(make(alert))


def _writer(make: Callable[[Alert], str], write: Callable[[str], None]) -> Callable[[Alert], None]:
    return lambda alert: write(make(alert))


def terminal_sinks(
    config: AlertConfig,
    write: Callable[[str], None],
    bell: Callable[[], None] | None = None,
    inside_tmux: bool | None = None,
) -> list[Callable[[Alert], None]]:
    """Sinks that reach the terminal (the bell: `bell()`, else BEL written; OSC 9, 777, 99
    through `write`, wrapped for tmux inside it) and run notify-send, as configured."""
    sinks: list[Callable[[Alert], None]] = []
    if config.bell:
        ring = bell or (lambda: write("\a"))
        sinks.append(lambda _alert: ring())
    tmux = bool(os.environ.get("TMUX")) if inside_tmux is None else inside_tmux
    sinks += [_writer(make, write) for make in sequences(config, tmux)]
    if config.desktop:
        exe = shutil.which("notify-send")
        if exe is not None:

            def desktop(a: Alert, exe: str = exe) -> None:
                with contextlib.suppress(OSError):  # fixed program, args not through a shell
                    subprocess.Popen(
                        [
                            exe,
                            "--app-name=ocwatch",
                            f"ocwatch: {a.kind}",
                            plain(f"{a.title}: {a.text}", 300),
                        ],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )

            sinks.append(desktop)
    return sinks
