"""Theme files: built-ins valid, user themes loaded, bad files warned about, never fatal."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.coordinate import Coordinate

from tui.app.themes import (
    DEFAULT_THEME,
    STATE_NAMES,
    ThemeError,
    builtin_themes,
    load_themes,
    parse_theme,
)
from tui.core.paths import theme_dir

from .conftest import make_app

REPO = Path(__file__).resolve().parents[2]


def test_builtin_themes_define_every_state_colour() -> None:
    themes = {t.name: t for t in builtin_themes()}
    assert {"ocwatch-dark", "ocwatch-light", "ocwatch-contrast"} <= set(themes)
    assert DEFAULT_THEME in themes and not themes["ocwatch-light"].dark
    for theme in themes.values():
        assert {f"state-{s}" for s in STATE_NAMES} <= set(theme.variables)


def test_example_user_theme_is_valid() -> None:
    theme = parse_theme((REPO / "themes" / "example-user-theme.toml").read_text())
    assert theme.variables["state-input"]


def test_user_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", "/x")
    assert theme_dir() == Path("/x/ocwatch/themes")
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert theme_dir().parts[-3:] == (".config", "ocwatch", "themes")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("name = ", "not valid TOML"),
        ('name = "x"\n[colors]\nprimary = "notacolour"', "not a colour"),
        ('name = "x"\n[colors]\nbackground = "#000000"', "primary"),
        ('name = "x"\ncolours = 1\n[colors]\nprimary = "#fff"', "colours"),
        ('name = "bad name!"\n[colors]\nprimary = "#fff"', "name"),
    ],
)
def test_invalid_theme_says_why(text: str, problem: str) -> None:
    with pytest.raises(ThemeError, match=problem):
        parse_theme(text, "t.toml")


def test_user_themes_load_and_bad_ones_warn(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text(
        'name = "mine"\ndark = false\n[colors]\nprimary = "#123456"\n[states]\ninput = "#ff0000"\n'
    )
    (tmp_path / "broken.toml").write_text("this is not toml =")
    loaded = load_themes(tmp_path)
    names = [t.name for t in loaded.themes]
    assert "mine" in names and "ocwatch-dark" in names
    assert len(loaded.warnings) == 1 and "broken.toml" in loaded.warnings[0]


async def test_app_warns_about_bad_theme_files_and_unknown_names(tmp_path: Path) -> None:
    (tmp_path / "broken.toml").write_text('name = "x"\n[colors]\nprimary = 3\n')
    app, _ = make_app(theme="no-such-theme", user_theme_dir=tmp_path)
    async with app.run_test() as pilot:
        await pilot.pause()
        assert app.theme == DEFAULT_THEME
        messages = [n.message for n in app._notifications]
        assert any("broken.toml" in m for m in messages)
        assert any("no-such-theme" in m for m in messages)


async def test_switching_theme_recolours_rows() -> None:
    app, _ = make_app()
    async with app.run_test() as pilot:
        await pilot.pause()
        table = app.main_screen.table
        before = table.get_cell_at(Coordinate(0, 0)).style
        app.theme = "ocwatch-contrast"
        await pilot.pause()
        assert table.get_cell_at(Coordinate(0, 0)).style != before
        assert app.theme_variables["state-input"]


def test_every_colour_the_presentation_table_uses_is_a_theme_setting():
    """One vocabulary: each theme variable format.STATE_LOOK / REASON_LOOK / STALE_LOOK colours
    with is a `[states]` key a theme file may set, and every shipped theme sets it."""
    from tui.app.format import THEME_VARIABLES
    from tui.app.themes import STATE_NAMES, StateColors, builtin_themes

    assert {f"state-{n}" for n in StateColors.model_fields} == set(THEME_VARIABLES)
    assert set(STATE_NAMES) == set(StateColors.model_fields)
    for theme in builtin_themes():
        missing = [v for v in THEME_VARIABLES if v not in theme.variables]
        assert not missing, (theme.name, missing)


def test_the_palette_offers_the_themes_theme_and_t_offer() -> None:
    """Textual's own themes define no state colours: the picker, `t` and --theme agree on
    ocwatch's (and the user's), and --theme dracula falls back with a warning."""
    app, _ = make_app()
    assert set(app.available_themes) == set(app.ocwatch_themes)
    assert {"ocwatch-dark", "ocwatch-light", "ocwatch-contrast"} <= set(app.ocwatch_themes)
    other, _ = make_app(theme="dracula")
    assert other.theme == "ocwatch-dark"
    assert any("dracula" in w for w in other.theme_warnings)
