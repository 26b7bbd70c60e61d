"""What the dashboard is built with, as one value: the CLI builds it once (`tui.app.run`) and
`create_app` hands it whole to the app. Every field has a default, so a test names only what it
needs: `create_app(source, DashboardOptions(server_urls=[url], peek=peek))`."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.core.config import AlertConfig
    from tui.core.view import Changes, View
    from tui.export.deliver import Deliverer
    from tui.record.replay import ReplaySource
    from tui.record.writer import FleetRecording

    from .actions import Actions
    from .inspect import Peek
    from .launch import Launcher


@dataclass(frozen=True)
class DashboardOptions:
    """The dashboard's options (the servers it shows come from its ViewSource)."""

    theme: str | None = None
    """A theme name (None: `ocwatch-dark`; an unknown name warns and falls back)."""
    server_urls: Sequence[str] | None = None
    """The configured servers, shown while the first View has none (None:
    `$OPENCODE_SERVER_URL` or http://127.0.0.1:4096)."""
    clock: Callable[[], float] = time.time
    """The wall clock (epoch seconds), injectable so tests are deterministic."""
    user_theme_dir: Path | None = None
    """Where user themes live (None: `$XDG_CONFIG_HOME/ocwatch/themes`)."""
    actions: Actions | None = None
    """How abort / reply / answer reach the servers (`FleetActions(fleet)` for a live Fleet;
    None: the dashboard says actions need a live server)."""
    alerts: AlertConfig | None = None
    """Which alerts fire and how (None: none; bell, OSC 9, notify-send are opt-in)."""
    notices: Sequence[str] = ()
    """Config warnings to show when the app starts."""
    observers: Sequence[Callable[[View, Changes | None], None]] = ()
    """Called with each new View and its changes (the metrics of `--metrics`)."""
    deliverer: Deliverer | None = None
    """Off-terminal alert deliveries (--notify-cmd, --webhook), run by the app."""
    replay: ReplaySource | None = None
    """The source's controls when it is a recording's replay (keys p . + - > <)."""
    recording: FleetRecording | None = None
    """Starts and stops a recording of the live servers (R; `FleetRecording`)."""
    read_only: bool = False
    """Every action off (abort, reply, answer, attach), for wall screens."""
    launcher: Launcher | None = None
    """Builds the command `A` runs to attach OpenCode to a session (None: `A` says it needs a
    live server)."""
    peek: Peek | None = None
    """Reads what the selected session is doing (`FleetPeek(fleet)`; None: the details say it
    needs a live server)."""
    fold_idle_after: float | None = None
    """Seconds after which an idle session folds away (None: 12 hours; 0: never)."""
    looked: Callable[[], list[str]] | None = None
    """What local discovery looked at, a line per place, for the "no server" screen (None:
    discovery is off)."""
