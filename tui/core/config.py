"""The config: defaults, under the TOML file, under the environment, under flags.

Location: `$OCWATCH_CONFIG`, else `$XDG_CONFIG_HOME/ocwatch/config.toml` (default
`~/.config/ocwatch/config.toml`). Every key is optional. An invalid key or variable is reported
(one line per problem) and ignored, never fatal. The layers are pydantic-settings sources
(`load_config`); flags are merged over them by `resolve_options`. Passwords are not read from the
file: they come from the environment (`OPENCODE_SERVER_PASSWORD`) or a password file.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import paths, tls
from .client import OcwatchError
from .discover import LocalDiscovery, port_owners
from .inventory import InventoryFile
from .service import Service, listening, read_service
from .settings import DEFAULT_USERNAME, Auth, Settings, default_server_urls
from .targets import Servers, TargetSource

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

#: The core's defaults: the config's tunables default to them (written once, in Settings)
CORE = Settings()
DEFAULT_ATTACH = ("opencode", "attach", "{url}", "--session", "{session}", "--dir", "{dir}")
#: A V2 server's (2.0.15: `opencode --server URL --session ID`; it has no `attach`)
DEFAULT_ATTACH_V2 = ("opencode", "--server", "{url}", "--session", "{session}")
"""`opencode attach URL --session ID --dir DIR` (OpenCode 1.x)."""

AlertKind = Literal["input", "completed", "error", "aborted", "stale", "unknown"]
DEFAULT_ALERTS: tuple[AlertKind, ...] = ("input", "error", "stale")


class AlertConfig(BaseModel):
    """Which alerts fire, and how."""

    model_config = ConfigDict(extra="forbid")

    bell: bool = False
    """Ring the terminal bell."""
    osc9: bool = False
    """Send an OSC 9 desktop notification through the terminal (iTerm2, WezTerm, kitty, ...)."""
    osc777: bool = False
    """Send an OSC 777 notification through the terminal (foot, Ghostty, urxvt, VTE, ...)."""
    osc99: bool = False
    """Send kitty's OSC 99 notification through the terminal."""
    desktop: bool = False
    """Run `notify-send` where it exists."""
    unfocused_only: bool = False
    """Terminal and desktop alerts only while the terminal does not have the focus (the
    terminal must report focus; off-terminal alerts are always sent)."""
    notify_cmd: str | list[str] | None = None
    """A program to run per alert, without a shell: the alert as JSON on stdin and in
    OCWATCH_ALERT_* variables (a string is split like a shell would, nothing expanded)."""
    webhook: str | None = None
    """A URL to POST each alert to as JSON (an ntfy topic URL gets ntfy's format); a bearer
    token comes from $OCWATCH_WEBHOOK_TOKEN."""
    webhook_format: Literal["auto", "json", "ntfy"] = "auto"
    """`auto`: ntfy for ntfy.sh and ntfy.* hosts, else json."""
    on: list[AlertKind] = Field(default_factory=lambda: list(DEFAULT_ALERTS))
    """Transitions that alert: input, completed, error, aborted, stale, unknown."""
    min_interval: float = Field(default=10.0, ge=0)
    """Seconds between two alerts of the same kind for the same session."""
    max_per_minute: int = Field(default=12, ge=1)
    """Alerts per minute at most, over all sessions (the rest are counted, not sent)."""


class ServerEntry(BaseModel):
    """One server of the config's `servers` list, with a name and credentials of its own."""

    model_config = ConfigDict(extra="forbid")

    url: str
    """The server's URL."""
    name: str | None = Field(
        default=None, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$"
    )
    """What the server is called: in the dashboard, `status --json`, metric labels (`server`)
    and alerts; `--server NAME` picks it (default: its URL). Letters, digits and `_.:@-`."""
    password_env: str | None = None
    """The environment variable holding this server's password."""
    password_file: str | None = None
    """A file holding this server's password."""
    username: str | None = None
    """The user name (default $OPENCODE_SERVER_USERNAME, else `opencode`)."""


class Config(BaseModel):
    """Everything the config file may set. Flags win over the environment, which wins over it."""

    model_config = ConfigDict(extra="forbid")

    servers: list[str | ServerEntry] = Field(default_factory=list)
    """Servers to watch: URLs, or tables with their own credentials (default:
    $OPENCODE_SERVER_URL or http://127.0.0.1:4096). $OPENCODE_SERVER_PASSWORD (or
    `password_file`) is the first server's password only; another server gets a password only
    from its own `password_env` or `password_file`."""
    theme: str | None = None
    """Dashboard theme: ocwatch-dark, ocwatch-light, ocwatch-contrast, or a user theme's name."""
    grace: float = Field(default=CORE.grace, ge=0)
    """Seconds a finished run may still read busy before it is flagged stale."""
    resync_interval: float = Field(default=CORE.resync_interval, gt=0)
    """Seconds between full resync snapshots."""
    request_deadline: float = Field(default=CORE.request_deadline, ge=1)
    """Seconds one HTTP request may take in all, its answer read to the end (a server that
    trickles its answer cannot hold a snapshot, `status` or `wait` longer)."""
    command_deadline: float = Field(default=CORE.command_deadline, ge=1)
    """Seconds `status` may take in all to read every server ($OCWATCH_COMMAND_DEADLINE): a
    server slower than that is said too slow, exit 2."""
    password_file: str | None = None
    """A file holding the server password (the password itself never goes in this file)."""
    ca_file: str | None = None
    """A PEM file of the certificates (CAs) https servers are verified against, for a server
    whose certificate a private CA signed (default: $SSL_CERT_FILE or $SSL_CERT_DIR, else the
    usual public CAs). Read whatever the proxy settings; verification is never turned off."""
    alerts: AlertConfig = Field(default_factory=AlertConfig)
    read_only: bool = False
    """Turn every dashboard action off (abort, reply, answer, attach): for wall screens
    ($OCWATCH_READ_ONLY=1, or --read-only)."""
    attach_command: list[str] = Field(default_factory=lambda: list(DEFAULT_ATTACH), min_length=1)
    """What `A` runs to open the selected session of a V1 server in OpenCode: {url}, {session}
    and {dir} are filled in. The server's password goes in the child's environment
    (OPENCODE_SERVER_PASSWORD), never in its arguments."""
    attach_command_v2: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ATTACH_V2), min_length=1
    )
    """The same for a session of a V2 server (`opencode --server {url} --session {session}`)."""
    fold_idle_after: float = Field(default=12 * 3600.0, ge=0)
    """Seconds after which an idle session folds away in the dashboard's table (counted in
    the line above it; `o` shows them; a filter looks at every session). 0: never."""
    attach_in: Literal["auto", "tmux-window", "tmux-split", "terminal"] = "auto"
    """Where `A` opens the session: a new tmux window or a pane beside the dashboard (which
    keeps watching, alerting and exporting meanwhile), or this terminal, handed over until
    OpenCode exits. auto: a tmux window inside tmux, else this terminal."""

    servers_file: str | None = None
    """An inventory file in Prometheus's file_sd JSON format (`--servers-file`): its servers
    are watched beside `servers`, and it is re-read when it changes (docs/CONFIGURATION.md)."""

    discover: Literal["auto", "local", "none"] = "auto"
    """Local discovery (`--discover`): this user's OpenCode servers on this machine, found in
    /proc (Linux) and V2's service.json. auto: on when nothing names a server (no `servers`,
    no servers_file, no --server, no $OPENCODE_SERVER_URL); local: beside the servers named;
    none: off (then with nothing named, the V2 service's file is read once and
    127.0.0.1:4096 watched if something listens there)."""

    def settings(self) -> Settings:
        return Settings(
            grace=self.grace,
            resync_interval=self.resync_interval,
            request_deadline=self.request_deadline,
            command_deadline=self.command_deadline,
        )


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """`$OCWATCH_CONFIG`, else the config file of the config folder (tui.core.paths)."""
    env = os.environ if env is None else env
    if env.get("OCWATCH_CONFIG"):
        return Path(env["OCWATCH_CONFIG"]).expanduser()
    return paths.config_file()


#: The environment variables that set a config key: over the file, under a flag. An empty one
#: is not set.
ENV_NAMES: dict[str, str] = {
    "servers": "OCWATCH_SERVERS",  # comma-separated URLs
    "theme": "OCWATCH_THEME",
    "grace": "OCWATCH_GRACE",
    "resync_interval": "OCWATCH_RESYNC",
    "read_only": "OCWATCH_READ_ONLY",  # anything but 0, false, no, off turns it on
    "command_deadline": "OCWATCH_COMMAND_DEADLINE",
    "fold_idle_after": "OCWATCH_FOLD_IDLE_AFTER",
    "servers_file": "OCWATCH_SERVERS_FILE",
    "discover": "OCWATCH_DISCOVER",
}


#: The largest config file read (a 200 MB one took minutes and 430 MB to refuse)
CONFIG_MAX = 4 * 2**20


class Notices(list[str]):
    """What reading the config says, in order; and the top-level keys of its file left out as
    not valid (`dropped`)."""

    dropped: frozenset[str] = frozenset()


def load_config(
    path: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[Config, Notices]:
    """The config: defaults, under the file (if any), under the environment (ENV_NAMES), each
    a pydantic-settings source. Returns (config, warnings): a key of the file or a variable that
    is not valid is said in the warnings and left out, the rest kept."""
    environ: Mapping[str, str] = os.environ if env is None else env
    named = path is None and bool(environ.get("OCWATCH_CONFIG"))
    path = path or config_path(environ)
    warnings = Notices()
    file_data = _read_file(path, named, warnings)
    given = {key: environ[name] for key, name in ENV_NAMES.items() if environ.get(name)}
    if not file_data and set(given) <= {"discover"}:
        # nothing to layer: the defaults, without importing pydantic-settings (a good part of
        # the start of every `status` and `wait` where there is no config); $OCWATCH_DISCOVER
        # alone (scripts' and tests' `none`) is no layering either
        data: dict[str, Any] = {}
        for key, raw in given.items():
            problem = _invalid(key, raw)
            if problem is None:
                data[key] = raw
            else:
                warnings.append(f"${ENV_NAMES[key]}={raw!r} {problem}; ignored")
        return Config.model_validate(data), warnings
    return _layered(file_data, environ, warnings), warnings


def _layered(file_data: dict[str, Any], environ: Mapping[str, str], warnings: list[str]) -> Config:
    """The defaults under the file's valid keys under the environment's valid variables."""
    # The sources read this call's file and environment; pydantic-settings is imported here, not
    # by the module: `--help`, `--version` and what never reads the config do not pay for it.
    from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

    class File(PydanticBaseSettingsSource):
        """The valid keys of the config file."""

        def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
            return self().get(field_name), field_name, False

        def __call__(self) -> dict[str, Any]:
            return file_data

    class Environment(PydanticBaseSettingsSource):
        """The valid values of the variables of ENV_NAMES."""

        def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
            name = ENV_NAMES.get(field_name, "")
            return environ.get(name) or None, name, False

        def __call__(self) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for field_name, info in self.settings_cls.model_fields.items():
                raw, name, _ = self.get_field_value(info, field_name)
                if raw is None:
                    continue
                value = _from_env(field_name, raw)
                problem = _invalid(field_name, value)
                if problem is None:
                    out[field_name] = value
                else:
                    warnings.append(f"${name}={raw!r} {problem}; ignored")
            return out

    class Layered(BaseSettings, Config):  # type: ignore[misc]  # its model_config: both kinds
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return Environment(settings_cls), File(settings_cls)  # nothing else is read

    return Config.model_validate(dict(Layered()))


def _read_file(path: Path, named: bool, warnings: Notices) -> dict[str, Any]:
    """The valid top-level keys of the config file (none when there is no file)."""
    data: dict[str, Any] = {}
    if named and not path.is_file():
        warnings.append(f"config {path} (from $OCWATCH_CONFIG): cannot read it (no such file)")
        warnings.dropped = frozenset({"servers"})  # (the servers it names cannot be told)
    if path.is_file():
        why: object = None
        try:
            if path.stat().st_size > CONFIG_MAX:
                raise OSError(f"larger than {CONFIG_MAX // 2**20} MiB")
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            why = exc
        except (RecursionError, ValueError) as exc:  # (ValueError: a number Python won't read)
            why = "nested too deeply" if isinstance(exc, RecursionError) else "a number too long"
        if why is not None:
            warnings.append(f"config {path}: cannot read it ({why}); using defaults")
            data = {}
            # its servers, if it names any, cannot be told: not the default in their place
            warnings.dropped = frozenset({"servers"})
    if "password" in data:
        warnings.append(
            f"config {path}: 'password' is ignored; use $OPENCODE_SERVER_PASSWORD or password_file"
        )
        data.pop("password")
    try:
        Config.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            where = ".".join(str(x) for x in err["loc"])
            warnings.append(f"config {path}: {where}: {err['msg']}")
        kept = {key: value for key, value in data.items() if _invalid(key, value) is None}
        alerts = data.get("alerts")
        if "alerts" not in kept and isinstance(alerts, dict):
            # the table's valid keys stay: a typo in `on` dropped its webhook, and the alerts
            # a metrics exporter was to send went nowhere
            table = {k: v for k, v in alerts.items() if _invalid("alerts", {k: v}) is None}
            if table:
                kept["alerts"] = table
        warnings.dropped = frozenset(data) - frozenset(kept)
        return kept
    return data


def _from_env(field_name: str, raw: str) -> Any:
    """A variable's text as the config key's value: servers split at commas, read_only on for
    anything but 0, false, no or off."""
    if field_name == "servers":
        return [u.strip() for u in raw.split(",") if u.strip()]
    if field_name == "read_only":
        return raw.strip().lower() not in ("0", "false", "no", "off", "")
    return raw


def _invalid(key: str, value: Any) -> str | None:
    """What is wrong with one top-level key's value (None: it is valid)."""
    try:
        Config.model_validate({key: value})
    except ValidationError as exc:
        err = exc.errors()[0]
        return "is not a number" if err["type"] == "float_parsing" else f"({err['msg']})"
    return None


@dataclass
class Options:
    """What the dashboard runs with, once the config file, environment and flags are merged."""

    urls: list[str]
    settings: Settings
    theme: str | None
    alerts: AlertConfig
    auth: Auth | None
    notices: list[str] = field(default_factory=list)
    auths: dict[str, Auth | None] = field(default_factory=dict)  # per server (normalized URL)
    names: dict[str, str] = field(default_factory=dict)  # per server (normalized URL): its name
    read_only: bool = False
    attach_command: list[str] = field(default_factory=lambda: list(DEFAULT_ATTACH))
    attach_command_v2: list[str] = field(default_factory=lambda: list(DEFAULT_ATTACH_V2))
    attach_in: str = "auto"
    fold_idle_after: float = 12 * 3600.0
    origins: dict[str, str] = field(default_factory=dict)
    """Per server (normalized URL): where it was named (`--server`, the config, the
    environment, the default, service.json), for `ocwatch servers`."""
    sources: list[TargetSource] = field(default_factory=list)
    """Where more servers come from while ocwatch runs (discovery, an inventory file): the
    fleet is reconciled to them and `urls` (tui.core.targets)."""

    def auth_for(self, url: str) -> Auth | None:
        """The credentials of one of the chosen servers (None: it gets none)."""
        return self.auths.get(_url_key(url))

    def servers(self) -> Servers:
        """The chosen servers as one value, for a command and its fleet."""
        return Servers(
            tuple(self.urls),
            self.settings,
            self.auth,
            dict(self.auths),
            dict(self.names),
            tuple(self.sources),
        )


def resolve_options(
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
    alert_flags: Mapping[str, Any] | None = None,
    read_only: bool = False,
    servers_file: str | None = None,
    discover: str | None = None,
    servers_needed: bool = True,
) -> Options:
    """Merge flags over the config (pure, but for reading `password_file`).

    A config file whose `servers` could not be read is an OcwatchError unless `urls` name the
    servers (or `$OCWATCH_SERVERS` does; `servers_needed` False: the caller watches none of
    them, the demo).

    Servers: `--server` (a URL, or the name of a server of the config), else the config's
    (file or `$OCWATCH_SERVERS`), else `$OPENCODE_SERVER_URL`, else the default. Alert flags
    (`bell`, `osc9`, `desktop`, and any AlertConfig field in `alert_flags`) only switch sinks
    on; a flag's value (`notify_cmd`, `webhook`, ...) replaces the config's. The config's
    `password_file` is read only when the environment gives no password, its `ca_file` at once
    (`$OPENCODE_SERVER_PASSWORD` or `$OPENCODE_SERVER_PASSWORD_FILE`). `read_only` (--read-only)
    turns the actions off whatever the config says; the config cannot turn them back on.
    `servers_file` (--servers-file, else the config's): an InventoryFile among the sources
    (its servers join the others; read when the fleet runs, not here). `discover`
    (--discover: auto, local, none; else the config's): LocalDiscovery among the sources
    (tui.core.discover; auto: when nothing names a server, on Linux).

    The steps, in the order their notices are said: the config's server entries, the servers
    chosen, the alert sinks, the trusted CAs, the password, each server's credentials."""
    env = dict(os.environ) if env is None else dict(env)
    if (
        servers_needed
        and not urls
        and "servers" in getattr(notices, "dropped", ())
        and not env.get("OCWATCH_SERVERS")
    ):
        # watching the default, or what discovery finds, in their place would answer for
        # servers nobody named (`status`: "no sessions", exit 0)
        why = "; ".join(
            n.removesuffix("; using defaults")
            for n in notices
            if ": servers" in n or ": cannot read it" in n
        )
        raise OcwatchError(
            f"the config's servers cannot be read ({why}): fix them, or name the servers "
            "with --server"
        )
    out = list(notices)
    env_auth = auth  # the user's own password ($OPENCODE_SERVER_PASSWORD), before the config's
    inventory = servers_file or config.servers_file
    entries, by_name = _entries(config, out)
    unnamed = not urls and not config.servers and not env.get("OPENCODE_SERVER_URL")
    discovering = _discovering(discover or config.discover, unnamed, inventory)
    chosen, origins, found = _chosen(
        urls, config, env, by_name, out, unnamed, discovering, inventory
    )
    settings = config.settings()
    if grace is not None:
        settings = dataclasses.replace(settings, grace=grace)
    flags: dict[str, Any] = {"bell": bell, "osc9": osc9, "desktop": desktop, **(alert_flags or {})}
    alerts = _alerts(config.alerts, flags)
    _trust(config, out)
    auth = _config_auth(config, auth, env, out)
    chosen = _once(chosen)
    auths = _auths(chosen, entries, auth, found, env, out)
    return Options(
        chosen,
        settings,
        theme or config.theme,
        alerts,
        auth,
        out,
        auths,
        _names(entries, by_name, auths),
        read_only=read_only or config.read_only,
        attach_command=list(config.attach_command),
        attach_command_v2=list(config.attach_command_v2),
        attach_in=config.attach_in,
        fold_idle_after=config.fold_idle_after,
        sources=_sources(inventory, discovering, env, env_auth, unnamed, auth),
        origins={key: origins.get(key, "config") for key in auths},
    )


def _entries(
    config: Config, out: list[str]
) -> tuple[dict[str, ServerEntry], dict[str, ServerEntry]]:
    """The config's server entries by server (normalized URL), and by name: a name given twice
    is said in `out` and names only the first (the second is called by its URL)."""
    entries = {_url_key(e.url): e for e in config.servers if isinstance(e, ServerEntry)}
    by_name: dict[str, ServerEntry] = {}
    for e in entries.values():
        if e.name is None:
            continue
        if e.name in by_name:
            out.append(f"config: two servers are named {e.name!r}; the second is called by its URL")
            continue
        by_name[e.name] = e
    return entries, by_name


def _chosen(
    urls: Sequence[str] | None,
    config: Config,
    env: dict[str, str],
    by_name: Mapping[str, ServerEntry],
    out: list[str],
    unnamed: bool,
    discovering: bool,
    inventory: str | None,
) -> tuple[list[str], dict[str, str], Service | None]:
    """The servers named (`--server`, by URL or by a config entry's name; else the config's,
    else the environment's or the default), where each was named, and V2's background service
    when it is among them."""
    chosen = [by_name[u].url if u in by_name else u for u in urls or ()] or list(
        [e if isinstance(e, str) else e.url for e in config.servers] or default_server_urls(env)
    )
    origins = {_url_key(u): _origin(urls, config, env) for u in chosen}
    if not unnamed:
        return chosen, origins, None
    chosen, found = _unnamed(chosen, inventory, discovering, env, out)
    if found is not None:
        origins[_url_key(found.url)] = f"service.json ({found.path})"
    return chosen, origins, found


def _names(
    entries: Mapping[str, ServerEntry],
    by_name: Mapping[str, ServerEntry],
    auths: Mapping[str, Auth | None],
) -> dict[str, str]:
    """The chosen servers' names (normalized URL: the name its config entry gives it)."""
    named = {
        k: e.name for k, e in entries.items() if e.name is not None and by_name.get(e.name) is e
    }
    return {key: named[key] for key in auths if key in named}


def _discovering(mode: str, unnamed: bool, inventory: str | None) -> bool:
    """Whether local discovery looks for servers: asked for (`local`), or `auto` when nothing
    names a server, nor an inventory, on Linux."""
    return mode == "local" or (
        mode == "auto" and unnamed and not inventory and sys.platform.startswith("linux")
    )


def _unnamed(
    defaults: list[str],
    inventory: str | None,
    discovering: bool,
    env: Mapping[str, str],
    out: list[str],
) -> tuple[list[str], Service | None]:
    """The servers when nothing names one, and V2's background service if it is among them."""
    if inventory or discovering:
        # the inventory names the servers (not the default, unreachable for ever), or
        # discovery finds them (the V2 service, the default if something listens)
        return [], None
    # V2's background service too, if its file says where (and the V1 default only if
    # something listens there, not to read "unreachable" for ever)
    found = read_service(env, out)
    if found is None:
        return defaults, None
    return [u for u in defaults if listening(u)] + [found.url], found


def _alerts(config: AlertConfig, flags: Mapping[str, Any]) -> AlertConfig:
    """The config's alerts with the flags over them: a switch only turns a sink on, a value
    replaces the config's (TypeError: a flag that is no alert setting)."""
    update: dict[str, Any] = {}
    for key, value in flags.items():
        if key not in AlertConfig.model_fields:
            raise TypeError(f"not an alert setting: {key}")
        if isinstance(value, bool):
            update[key] = bool(getattr(config, key)) or value
        elif value is not None:
            update[key] = value
    return AlertConfig.model_validate({**config.model_dump(), **update})


def _trust(config: Config, out: list[str]) -> None:
    """Every https client of the process verifies against the config's `ca_file` (tls.trusted);
    one that cannot be read is said, and the default CAs are used."""
    try:
        tls.use_ca_file(os.path.expanduser(config.ca_file) if config.ca_file else None)
    except tls.TrustError as exc:
        out.append(f"config {exc}; https servers are verified against the default CAs")


def _config_auth(
    config: Config, auth: Auth | None, env: Mapping[str, str], out: list[str]
) -> Auth | None:
    """The password: the environment's (`auth`), else the config's `password_file` when the
    environment names no password."""
    env_password = env.get("OPENCODE_SERVER_PASSWORD") or env.get("OPENCODE_SERVER_PASSWORD_FILE")
    if auth is not None or env_password or not config.password_file:
        return auth
    return _file_auth(
        config.password_file,
        env.get("OPENCODE_SERVER_USERNAME", ""),
        out,
        f"config password_file {config.password_file}",
        "; connecting without a password",
    )


def _once(chosen: Sequence[str]) -> list[str]:
    """A server named twice (`--server A --server A/`) is one server: the first naming holds,
    and with it the first server's password (a later one, not the first, gets none)."""
    once: dict[str, str] = {}
    for url in chosen:
        once.setdefault(_url_key(url), url)
    return list(once.values())


def _auths(
    chosen: Sequence[str],
    entries: Mapping[str, ServerEntry],
    auth: Auth | None,
    found: Service | None,
    env: Mapping[str, str],
    out: list[str],
) -> dict[str, Auth | None]:
    """Each server's credentials (normalized URL: Auth or None); a password that would cross
    the network in clear is said."""
    auths: dict[str, Auth | None] = {}
    for i, url in enumerate(chosen):
        key = _url_key(url)
        auths[key] = _server_auth(entries.get(key), auth if i == 0 else None, env, out)
        if found is not None and key == _url_key(found.url):
            auths[key] = found.auth  # its own, from its file: it gets no other
            continue
        if auths[key] is not None and _cleartext(url):
            out.append(
                f"{url}: the password goes over plain http to a host that is not this "
                "machine; use https (or a tunnel)"
            )
        if auths[key] is not None and (stranger := _someone_elses(url)) is not None:
            auths[key] = None
            out.append(
                f"{url}: the process listening there belongs to another user (uid "
                f"{stranger}); the password is not sent to it"
            )
    return auths


def _someone_elses(url: str) -> int | None:
    """The uid of another user whose process listens at `url`, a port of this machine (None:
    only this user's, or nobody's, or it cannot be told). A password set for one's own server
    went to whatever listened on its port (a hostile review: a process of `nobody` on 4096)."""
    if not hasattr(os, "getuid"):
        return None
    parts = urlsplit(_url_key(url))
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    if not _loopback(parts.hostname):
        return None
    me = os.getuid()
    others = sorted(uid for uid in port_owners(port) if uid != me)
    return others[0] if others else None


def _server_auth(
    entry: ServerEntry | None, shared: Auth | None, env: Mapping[str, str], out: list[str]
) -> Auth | None:
    """One server's credentials: its entry's own, else `shared` (the password, for the first
    server only); None when its own could not be read (not another's)."""
    if entry is None:
        return shared
    own = _entry_auth(entry, env, out)
    if own is None and (entry.password_env or entry.password_file):
        return None
    return own if own is not None else shared


def _sources(
    inventory: str | None,
    discovering: bool,
    env: dict[str, str],
    env_auth: Auth | None,
    unnamed: bool,
    auth: Auth | None,
) -> list[TargetSource]:
    """Where more servers come from while ocwatch runs: the inventory file, local discovery."""
    sources: list[TargetSource] = []
    if inventory:
        sources.append(InventoryFile(inventory, env=env))
    if discovering:
        default = default_server_urls(env)[0] if unnamed else None
        sources.append(LocalDiscovery(env, auth=env_auth, default=default, default_auth=auth))
    return sources


def _origin(urls: Sequence[str] | None, config: Config, env: Mapping[str, str]) -> str:
    """Where the chosen servers were named (they all come from one place)."""
    if urls:
        return "flag --server"
    if config.servers:
        return "environment $OCWATCH_SERVERS" if env.get("OCWATCH_SERVERS") else "config"
    if env.get("OPENCODE_SERVER_URL"):
        return "environment $OPENCODE_SERVER_URL"
    return "the default address"


def _url_key(url: str) -> str:
    """A URL as the monitors name servers (normalized), or as given when it is not valid."""
    from .client import OcwatchError, normalize_url

    try:
        return normalize_url(url)
    except OcwatchError:
        return url


def _cleartext(url: str) -> bool:
    """Whether a request to `url` travels unencrypted beyond this machine."""
    parts = urlsplit(_url_key(url))
    return parts.scheme == "http" and not _loopback(parts.hostname)


def _loopback(hostname: str | None) -> bool:
    """Whether a URL's host is this machine: a loopback address, or `localhost`."""
    host = (hostname or "").lower()
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name, not an address: `127.evil.example` is no loopback (issue 40)
        return host == "localhost"


def _entry_auth(entry: ServerEntry, env: Mapping[str, str], out: list[str]) -> Auth | None:
    """A server entry's own credentials ($password_env, else password_file), or None."""
    user = entry.username or env.get("OPENCODE_SERVER_USERNAME") or DEFAULT_USERNAME
    if entry.password_env:
        password = env.get(entry.password_env)
        if password:
            return Auth(user, password)
        out.append(f"server {entry.url}: ${entry.password_env} is not set")
    if entry.password_file:
        return _file_auth(
            entry.password_file,
            user,
            out,
            f"server {entry.url}: password_file {entry.password_file}",
        )
    return None


def _file_auth(path: str, user: str, out: list[str], what: str, then: str = "") -> Auth | None:
    """Credentials from a password file (`~` expanded; Auth.from_env reads it), or None; a file
    that cannot be read is said in `out` as `what: cannot read it (why)` + `then`."""
    try:
        return Auth.from_env(
            {
                "OPENCODE_SERVER_PASSWORD_FILE": os.path.expanduser(path),
                "OPENCODE_SERVER_USERNAME": user,
            }
        )
    except (OSError, ValueError) as exc:  # ValueError: not UTF-8 text
        why = exc.strerror if isinstance(exc, OSError) else getattr(exc, "why", str(exc))
        out.append(f"{what}: cannot read it ({why}){then}")
        return None
