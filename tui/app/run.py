"""Entry points the CLI calls: the dashboard on real servers, and `ocwatch demo`.

Both read the config file (`tui.core.config`); flags win over it (the environment already has,
inside `load_config`). Config problems are shown in the dashboard as warnings, never fatal.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tui.core.config import AlertConfig, Config, load_config
from tui.core.fleet import Fleet
from tui.core.settings import Auth, Settings, default_server_urls

from .app import create_app


@dataclass
class Options:
    """What the dashboard runs with, once the config file, environment and flags are merged."""

    urls: list[str]
    settings: Settings
    theme: str | None
    alerts: AlertConfig
    auth: Auth | None
    notices: list[str] = field(default_factory=list)


def resolve(
    config: Config,
    *,
    urls: Sequence[str] | None = None,
    grace: float | None = None,
    theme: str | None = None,
    bell: bool = False,
    osc9: bool = False,
    desktop: bool = False,
    auth: Auth | None = None,
    env: Mapping[str, str] | None = None,
    notices: Sequence[str] = (),
) -> Options:
    """Merge flags over the config (pure, but for reading `password_file`).

    Servers: `--server`, else the config's (file or `$OCWATCH_SERVERS`), else
    `$OPENCODE_SERVER_URL`, else the default. Alert flags only switch sinks on. The config's
    `password_file` is read only when the environment gives no password
    (`$OPENCODE_SERVER_PASSWORD` or `$OPENCODE_SERVER_PASSWORD_FILE`)."""
    env = dict(os.environ) if env is None else dict(env)
    out = list(notices)
    chosen = list(urls or config.servers or default_server_urls(env))
    settings = config.settings()
    if grace is not None:
        settings = Settings(grace=grace, resync_interval=settings.resync_interval)
    alerts = config.alerts.model_copy(update={
        "bell": config.alerts.bell or bell,
        "osc9": config.alerts.osc9 or osc9,
        "desktop": config.alerts.desktop or desktop,
    })
    env_password = env.get("OPENCODE_SERVER_PASSWORD") or env.get("OPENCODE_SERVER_PASSWORD_FILE")
    if auth is None and not env_password and config.password_file:
        try:
            auth = Auth.from_env({"OPENCODE_SERVER_PASSWORD_FILE":
                                  os.path.expanduser(config.password_file),
                                  "OPENCODE_SERVER_USERNAME":
                                  env.get("OPENCODE_SERVER_USERNAME", "")})
        except (OSError, ValueError) as exc:  # ValueError: not UTF-8 text
            why = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
            out.append(f"config password_file {config.password_file}: cannot read it "
                       f"({why}); connecting without a password")
    return Options(chosen, settings, theme or config.theme, alerts, auth, out)


def run_dashboard(urls: Sequence[str] | None, *, auth: Auth | None,
                  settings: Settings | None = None, theme: str | None = None,
                  grace: float | None = None, bell: bool = False, osc9: bool = False,
                  desktop: bool = False) -> int:
    """Run the dashboard until the user quits; the exit code.

    `urls` None: the servers come from the config (or the default). `settings`, when given,
    replaces the config's grace and resync interval."""
    config, warnings = load_config()
    opts = resolve(config, urls=urls, grace=grace, theme=theme, bell=bell, osc9=osc9,
                   desktop=desktop, auth=auth, notices=warnings)
    fleet = Fleet(opts.urls, auth=opts.auth, settings=settings or opts.settings)
    app = create_app(fleet, theme=opts.theme, server_urls=opts.urls, alerts=opts.alerts,
                     notices=opts.notices)
    app.run()
    return app.return_code or 0


def run_demo(*, theme: str | None = None, speed: float = 1.0,
             settings: Settings | None = None, grace: float | None = None, bell: bool = False,
             osc9: bool = False, desktop: bool = False) -> int:
    """Start the built-in simulated server on a loopback port and run the dashboard on it
    (theme and alerts from the config file and flags; the config's servers are not used)."""
    from tui.demo.server import DemoServer

    config, warnings = load_config()
    opts = resolve(config, grace=grace, theme=theme, bell=bell, osc9=osc9, desktop=desktop,
                   notices=warnings)

    async def main() -> int:
        async with DemoServer(speed=speed) as server:
            fleet = Fleet([server.url], settings=settings or opts.settings)
            app = create_app(fleet, theme=opts.theme, server_urls=[server.url],
                             alerts=opts.alerts, notices=opts.notices)
            app.startup_message = (
                f"Demo: a simulated OpenCode server at {server.url}. Its sessions cycle through "
                "every state; select one waiting for input and press r to answer it, a to "
                "abort a run, ? for every key.")
            await app.run_async()
            return app.return_code or 0

    return asyncio.run(main())
