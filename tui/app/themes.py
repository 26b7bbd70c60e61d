"""Theme files: TOML validated by a pydantic model, turned into `textual.theme.Theme` objects.

Built-in themes ship in the package (`tui/themes/*.toml`); user themes are read from
`$XDG_CONFIG_HOME/ocwatch/themes/*.toml` (default `~/.config/ocwatch/themes`). A user file that
does not parse or validate yields a warning, never a crash.

A theme file looks like:

    name = "my-theme"
    dark = true

    [colors]            # Textual's base colours; only `primary` is required
    primary = "#7aa2f7"
    background = "#1a1b26"

    [states]            # the dashboard's state colours (missing ones derive from [colors])
    busy = "#7dcfff"
    input = "#e0af68"
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from textual.color import Color, ColorParseError
from textual.theme import Theme

from tui.core.paths import theme_dir

from .format import THEME_VARIABLES

DEFAULT_THEME = "ocwatch-dark"
STATE_NAMES = tuple(v.removeprefix("state-") for v in THEME_VARIABLES)
"""The state colours a theme sets (`[states]`): each becomes the theme variable
`$state-<name>` (format.THEME_VARIABLES, from the presentation table)."""


def _check_color(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        Color.parse(value)
    except ColorParseError as error:
        raise ValueError(f"not a colour: {value!r}") from error
    return value


class ThemeColors(BaseModel):
    """Textual's base colours (see `textual.theme.Theme`)."""

    model_config = ConfigDict(extra="forbid")

    primary: str
    secondary: str | None = None
    accent: str | None = None
    warning: str | None = None
    error: str | None = None
    success: str | None = None
    foreground: str | None = None
    background: str | None = None
    surface: str | None = None
    panel: str | None = None
    boost: str | None = None

    @field_validator("*")
    @classmethod
    def _color(cls, value: str | None) -> str | None:
        return _check_color(value)


class StateColors(BaseModel):
    """The dashboard's colour for each session state (plus `error` for failed runs, `stale`)."""

    model_config = ConfigDict(extra="forbid")

    busy: str | None = None
    retry: str | None = None
    input: str | None = None
    idle: str | None = None
    error: str | None = None
    unknown: str | None = None
    stale: str | None = None

    @field_validator("*")
    @classmethod
    def _color(cls, value: str | None) -> str | None:
        return _check_color(value)


class ThemeFile(BaseModel):
    """One theme file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    dark: bool = True
    colors: ThemeColors
    states: StateColors = StateColors()
    variables: dict[str, str] = {}
    """Extra Textual CSS variables (e.g. `footer-key-foreground`), passed through."""

    def to_theme(self) -> Theme:
        """The Textual Theme, with the state colours as `$state-*` variables."""
        variables = dict(self.variables)
        for state in STATE_NAMES:
            value = getattr(self.states, state)
            if value is not None:
                variables[f"state-{state}"] = value
        return Theme(
            name=self.name, dark=self.dark, variables=variables, **self.colors.model_dump()
        )


class ThemeError(Exception):
    """A theme file that cannot be used (the message says why and where)."""


@dataclass
class LoadedThemes:
    """The themes found, and a warning for each file that could not be used."""

    themes: list[Theme] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def parse_theme(text: str, origin: str = "<theme>") -> Theme:
    """Parse and validate the TOML text of a theme file."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ThemeError(f"{origin}: not valid TOML: {error}") from error
    try:
        return ThemeFile.model_validate(data).to_theme()
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}" for e in error.errors()
        )
        raise ThemeError(f"{origin}: {problems}") from error


def load_theme_file(path: Path) -> Theme:
    """Read one theme file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ThemeError(f"{path}: cannot read: {error}") from error
    return parse_theme(text, str(path))


def builtin_themes() -> list[Theme]:
    """The themes shipped in the package (`tui/themes/*.toml`), sorted by name."""
    folder = resources.files("tui").joinpath("themes")
    out = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            out.append(parse_theme(entry.read_text(encoding="utf-8"), f"tui/themes/{entry.name}"))
    return out


def load_themes(user_dir: Path | None = None) -> LoadedThemes:
    """Built-in themes, then the user's (a user theme may replace a built-in of the same name)."""
    loaded = LoadedThemes(themes=builtin_themes())
    folder = theme_dir() if user_dir is None else user_dir
    try:
        paths = sorted(folder.glob("*.toml")) if folder.is_dir() else []
    except OSError as error:
        loaded.warnings.append(f"{folder}: cannot list themes: {error}")
        paths = []
    for path in paths:
        try:
            loaded.themes.append(load_theme_file(path))
        except ThemeError as error:
            loaded.warnings.append(f"Theme ignored: {error}")
    return loaded
