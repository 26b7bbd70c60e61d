"""`ocwatch metrics`: the headless Prometheus exporter (and alert deliveries, when configured).

It keeps every server's View current (the same monitors as the dashboard), serves `/metrics`
from the last View, and logs to stderr one line when a server goes down or comes back. It runs
until SIGINT or SIGTERM (exit 0), or exits 2 when it cannot listen."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TextIO

from .. import __version__
from ..core.fleet import Fleet
from ..core.settings import Auth, Settings
from ..core.view import Changes, View
from .output import literal


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
                print(f"ocwatch metrics: {literal(s.label)}: "
                      f"{literal(s.error or 'unreachable')}", file=err, flush=True)
            elif was is False and s.reachable:
                print(f"ocwatch metrics: {literal(s.label)}: reachable again", file=err,
                      flush=True)
            up[s.url] = s.reachable

    return observe


def run_metrics(urls: Sequence[str], *, listen: str, auth: Auth | None, settings: Settings,
                auths: Mapping[str, Auth | None] | None = None,
                names: Mapping[str, str] | None = None, session_info: bool = False,
                observers: Sequence[Callable[[View, Changes | None], None]] = (),
                err: TextIO | None = None) -> int:
    """Serve /metrics on `listen` for these servers until SIGINT/SIGTERM."""
    from ..export.metrics import Metrics
    from ..export.serve import follow, served_url, start_exporter

    err = err or sys.stderr
    metrics = Metrics(session_info=session_info, version=__version__)
    server, _thread = start_exporter(metrics, listen)  # OcwatchError: main() says it, exit 2
    fleet = Fleet(urls, auth=auth, settings=settings, auths=auths, names=names)
    shown = ", ".join(literal(m.name or m.url) for m in fleet.monitors)
    print(f"ocwatch metrics: serving {served_url(server)} for {shown}", file=err, flush=True)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        await follow(fleet, [metrics.publish, server_log(err), *observers], stop=stop)

    try:
        asyncio.run(main())
    finally:
        server.shutdown()
        server.server_close()
    return 0
