"""`ocwatch metrics`: the headless Prometheus exporter (and alert deliveries, when configured).

It keeps every server's View current (the same monitors as the dashboard), serves `/metrics`
from the last View, and logs to stderr one line when a server goes down or comes back. It runs
until SIGINT or SIGTERM (exit 0), or exits 2 when it cannot listen."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from .. import __version__
from ..core.alerts import Alerter
from ..core.config import AlertConfig
from ..core.fleet import Fleet
from ..core.targets import Servers
from ..core.text import literal
from ..core.view import Changes, View
from .output import stop_on_signals


def server_log(err: TextIO) -> Callable[[View, Changes | None], None]:
    """An observer that says, once per change, when a server becomes unreachable or is back."""
    up: dict[str, bool] = {}

    def observe(view: View, _changes: Changes | None) -> None:
        for s in view.servers:
            if not s.reachable and s.error is None:
                continue  # not read yet (its first snapshot is loading)
            was = up.get(s.url)
            if was is None and s.reachable:
                up[s.url] = True
                continue
            if was is not False and not s.reachable:
                why = s.why_unread()
                if why.startswith(f"{s.label}: "):  # the error names its URL already
                    why = why[len(s.label) + 2 :]
                print(
                    f"ocwatch metrics: {literal(s.label, escapes=True)}: "
                    f"{literal(why, escapes=True)}",
                    file=err,
                    flush=True,
                )
            elif was is False and s.reachable:
                print(
                    f"ocwatch metrics: {literal(s.label, escapes=True)}: reachable again",
                    file=err,
                    flush=True,
                )
            up[s.url] = s.reachable

    return observe


def serving(url: str, fleet: Fleet, servers: Servers) -> str:
    """The first line on stderr: where /metrics is served, for which servers, and where more
    come from (with only a servers file or discovery, no server is watched yet: the line
    said `for` and nothing)."""
    shown = ", ".join(literal(m.name or m.url, escapes=True) for m in fleet.monitors)
    more = ", ".join(literal(s.label, escapes=True) for s in servers.sources)
    if more:
        shown = f"{shown}, and the servers from {more}" if shown else f"the servers from {more}"
    return f"ocwatch metrics: serving {url} for {shown}"


def run_metrics(
    servers: Servers,
    *,
    listen: str,
    session_info: bool = False,
    observers: Sequence[Callable[[View, Changes | None], None]] = (),
    alerts: AlertConfig | None = None,
    err: TextIO | None = None,
) -> int:
    """Serve /metrics on `listen` for these servers until SIGINT/SIGTERM; with `--notify-cmd`
    or `--webhook`, deliver the alerts too (the same dedupe and rate limits as the
    dashboard's)."""
    from ..export.deliver import deliverer_for
    from ..export.metrics import Metrics
    from ..export.serve import follow, start_exporter

    err = err or sys.stderr

    def report(text: str) -> None:
        print(f"ocwatch metrics: {literal(text, escapes=True)}", file=err, flush=True)

    fleet = Fleet.of_servers(servers, keeper=servers.keeper(report))

    deliverer = deliverer_for(alerts, fleet, report) if alerts is not None else None
    metrics = Metrics(
        session_info=session_info,
        version=__version__,
        extra=[deliverer.metrics] if deliverer is not None else [],
    )
    exporter = start_exporter(metrics, listen)  # OcwatchError: main() says it, exit 2
    print(serving(exporter.url, fleet, servers), file=err, flush=True)
    watchers = [metrics.publish, server_log(err), *observers]
    if deliverer is not None and alerts is not None:
        alerter = Alerter(alerts, [deliverer], time.monotonic)

        def alert(_view: View, changes: Changes | None) -> None:
            if changes is not None:
                alerter.feed(changes.transitions + changes.asks)

        watchers.append(alert)

    async def main() -> None:
        stop = asyncio.Event()
        stop_on_signals(stop)
        if deliverer is None:
            await follow(fleet, watchers, stop=stop)
            return
        delivering = asyncio.create_task(deliverer.run())
        try:
            await follow(fleet, watchers, stop=stop)
        finally:
            with contextlib.suppress(TimeoutError):  # what is queued gets a last chance
                await asyncio.wait_for(deliverer.drained(), 5)
            delivering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await delivering

    try:
        asyncio.run(main())
    finally:
        exporter.close()
    return 0
