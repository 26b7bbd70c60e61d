"""Entry points the CLI calls: the dashboard on real servers, and `ocwatch demo`.

Both read the config file (`tui.core.config`); flags win over it (the environment already has,
inside `load_config`). Config problems are shown in the dashboard as warnings, never fatal.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tui.core.config import Options, load_config
from tui.core.config import resolve_options as resolve
from tui.core.discover import LocalDiscovery
from tui.core.fleet import Fleet
from tui.core.settings import Auth, Settings
from tui.core.view import Changes, View

from .actions import FleetActions
from .app import OcwatchApp, create_app
from .inspect import FleetPeek
from .launch import Launcher, check_template
from .options import DashboardOptions

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from tui.demo.server import DemoServer
    from tui.export.deliver import Deliverer
    from tui.record.writer import FleetRecording

    from .app import OcwatchApp

Observer = Callable[[View, Changes | None], None]


@contextlib.contextmanager
def logs_off_the_screen() -> Iterator[None]:
    """While the dashboard holds the terminal, log records go to Textual's log (`textual
    console`), not to stderr: written there, they would be painted over the screen (a failed
    snapshot's traceback across the table)."""
    from textual.logging import TextualHandler

    root = logging.getLogger()
    kept = root.handlers[:]
    handler = TextualHandler()
    if kept:
        handler.setFormatter(kept[0].formatter)
    root.handlers[:] = [handler]
    try:
        yield
    finally:
        root.handlers[:] = kept


@contextlib.contextmanager
def metrics_served(
    listen: str | None,
    extra: Sequence[Callable[[], Iterable[Metric]]] = (),
) -> Iterator[list[Observer]]:
    """With `--metrics HOST:PORT`: the exporter served while the dashboard runs (its observer
    is yielded); without: nothing. OcwatchError when it cannot listen (before the app starts)."""
    if listen is None:
        yield []
        return
    from tui import __version__
    from tui.export.metrics import Metrics
    from tui.export.serve import start_exporter

    metrics = Metrics(version=__version__, extra=extra)
    exporter = start_exporter(metrics, listen, "--metrics")
    try:
        yield [metrics.publish]
    finally:
        exporter.close()


def recording_of(fleet: Fleet) -> FleetRecording:
    """The dashboard's R key: a recording of these servers."""
    from tui import __version__
    from tui.record.writer import FleetRecording

    return FleetRecording(fleet, __version__)


def off_terminal(opts: Options, fleet: Fleet) -> Deliverer | None:
    """--notify-cmd and --webhook deliveries (the app sets where failures are reported)."""
    if not (opts.alerts.notify_cmd or opts.alerts.webhook):
        return None
    from tui.export.deliver import deliverer_for

    return deliverer_for(opts.alerts, fleet, lambda _text: None)


def launcher_for(opts: Options, fleet: Fleet) -> Launcher:
    """The `A` key's command on these servers (each gets its own credentials); a template
    problem is said when the dashboard starts."""
    for template, key in (
        (opts.attach_command, "attach_command"),
        (opts.attach_command_v2, "attach_command_v2"),
    ):
        problem = check_template(template)
        if problem is not None:
            opts.notices.append(f"config: {problem.replace('attach_command', key, 1)}")
    return Launcher(
        opts.attach_command,
        auth_of=fleet.auth_of,
        refresh=fleet.resync,
        template_v2=opts.attach_command_v2,
        protocol_of=fleet.protocol_of,
        attach_in=opts.attach_in,
    )


def live_options(
    opts: Options,
    fleet: Fleet,
    server_urls: Sequence[str],
    observers: Sequence[Observer],
    deliverer: Deliverer | None,
    launcher: Launcher,
    *,
    looked: Callable[[], list[str]] | None = None,
) -> DashboardOptions:
    """The dashboard's options on live servers: the resolved config and flags, and what acts
    on, reads and records `fleet`."""
    return DashboardOptions(
        theme=opts.theme,
        server_urls=server_urls,
        alerts=opts.alerts,
        notices=opts.notices,
        actions=FleetActions(fleet),
        observers=observers,
        deliverer=deliverer,
        recording=recording_of(fleet),
        read_only=opts.read_only,
        launcher=launcher,
        peek=FleetPeek(fleet),
        fold_idle_after=opts.fold_idle_after,
        looked=looked,
    )


def run_dashboard(
    urls: Sequence[str] | None,
    *,
    auth: Auth | None,
    settings: Settings | None = None,
    theme: str | None = None,
    grace: float | None = None,
    bell: bool = False,
    osc9: bool = False,
    desktop: bool = False,
    metrics: str | None = None,
    alert_flags: Mapping[str, object] | None = None,
    read_only: bool = False,
    servers_file: str | None = None,
    discover: str | None = None,
) -> int:
    """Run the dashboard until the user quits; the exit code.

    `urls` None: the servers come from the config (or the default). `settings`, when given,
    replaces the config's grace and resync interval."""
    config, warnings = load_config()
    opts = resolve(
        config,
        urls=urls,
        grace=grace,
        theme=theme,
        bell=bell,
        osc9=osc9,
        desktop=desktop,
        auth=auth,
        notices=warnings,
        alert_flags=alert_flags,
        read_only=read_only,
        servers_file=servers_file,
        discover=discover,
    )
    said: list[OcwatchApp] = []  # (the app, once made: where the keeper's notes go)

    def note(text: str) -> None:
        for app in said:
            app.notify(text, title="Servers", timeout=8, markup=False)

    servers = opts.servers()
    if settings is not None:
        servers = dataclasses.replace(servers, settings=settings)
    fleet = Fleet.of_servers(servers, progressive=True, keeper=servers.keeper(note))
    deliverer = off_terminal(opts, fleet)
    launcher = launcher_for(opts, fleet)
    with metrics_served(metrics, [deliverer.metrics] if deliverer else []) as observers:
        looked = next((s.said for s in opts.sources if isinstance(s, LocalDiscovery)), None)
        app = create_app(
            fleet,
            live_options(opts, fleet, opts.urls, observers, deliverer, launcher, looked=looked),
        )
        said.append(app)
        with logs_off_the_screen():
            app.run()
    return app.return_code or 0


def run_demo(
    *,
    theme: str | None = None,
    speed: float = 1.0,
    protocol: str = "v1",
    settings: Settings | None = None,
    grace: float | None = None,
    bell: bool = False,
    osc9: bool = False,
    desktop: bool = False,
    metrics: str | None = None,
    alert_flags: Mapping[str, object] | None = None,
    read_only: bool = False,
) -> int:
    """Start the built-in simulated server on a loopback port and run the dashboard on it
    (theme and alerts from the config file and flags; the config's servers are not used).
    `protocol`: the server speaks OpenCode V1 (1.18.33) or V2 (2.0.15)."""
    from tui.demo.server import DemoServer

    config, warnings = load_config()
    opts = resolve(
        config,
        grace=grace,
        theme=theme,
        bell=bell,
        osc9=osc9,
        desktop=desktop,
        notices=warnings,
        alert_flags=alert_flags,
        read_only=read_only,
        servers_needed=False,  # (the config's servers are not watched)
    )

    async def main() -> int:
        async with DemoServer(speed=speed, protocol=protocol) as server:
            fleet = Fleet(
                [server.url],
                settings=settings or opts.settings,
                names={server.url: "demo"},
                progressive=True,
            )
            deliverer, launcher = off_terminal(opts, fleet), launcher_for(opts, fleet)
            app = create_app(
                fleet, live_options(opts, fleet, [server.url], observers, deliverer, launcher)
            )
            wire_demo(app, server, read_only=opts.read_only)
            with logs_off_the_screen():
                await app.run_async()
            return app.return_code or 0

    with metrics_served(metrics) as observers:
        return asyncio.run(main())


def demo_greeting(url: str, *, read_only: bool) -> str:
    """The demo's first toast: what it is, and the keys to try (none that are off)."""
    keys = (
        "it is read-only, so select one and press m for its conversation, ? for every key"
        if read_only
        else "select one waiting for input and press r to answer it, a to abort a run, "
        "p to send a prompt, ? for every key"
    )
    return (
        f"Demo: a simulated OpenCode server at {url}. Its sessions cycle through every "
        f"state; {keys}."
    )


DEMO_RESTART = (
    "A scripted restart (demo): the simulated server restarts now, as a real one may. The run "
    "it cuts off reads as unknown (interrupted) and the dashboard reconnects; nothing is broken."
)


def wire_demo(app: OcwatchApp, server: DemoServer, *, read_only: bool) -> None:
    """What the dashboard says of the demo: its greeting, and each time the demo restarts its
    server on purpose (its script's restart), that it is scripted."""
    app.startup_message = demo_greeting(server.url, read_only=read_only)
    server.on_restart = lambda: app.notify(DEMO_RESTART, title="Demo", timeout=10, markup=False)


def run_replay(
    path: Path, *, speed: float = 1.0, start: str | None = None, theme: str | None = None
) -> int:
    """`ocwatch replay FILE`: the dashboard driven by a recording, no server, actions off."""
    from tui.record.format import notes_of, parse_time, read
    from tui.record.replay import ReplaySource

    # a bad file is said before the screen is taken: the header, and every line (a corrupt or
    # cut one would otherwise stop the replay, restarted again and again, behind the screen)
    cut: list[str] = []
    header, records = read(path, cut)
    end, last = header.created, None
    for rec in records:
        end, last = max(end, rec.t), rec
    at = parse_time(start, header.created, end) if start is not None else None
    config, warnings = load_config()
    notes = notes_of(path, cut, last is not None and last.kind == "end")
    source = ReplaySource(path, speed=speed, start=at, notes=notes)
    app = create_app(
        source,
        DashboardOptions(
            theme=theme or config.theme,
            server_urls=[url for url, _ in header.servers],
            clock=source.clock,
            notices=warnings,
            replay=source,
        ),
    )
    app.title = f"ocwatch replay: {path.name}"
    with logs_off_the_screen():
        app.run()
    return app.return_code or 0
