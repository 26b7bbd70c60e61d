"""The layers hold: the headless core never imports Textual (checked twice, as harlequin does:
the import-linter contracts in pyproject.toml over every import in the source, and a fresh
interpreter that imports every core and script-command module and looks at sys.modules)."""

from __future__ import annotations

import ast
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import tui.cli
import tui.core

ROOT = Path(__file__).resolve().parents[2]


def modules_of(package: object) -> list[str]:
    """Every module of a package, found on disk (a new module is covered without a list to
    keep up to date)."""
    return sorted(
        m.name
        for m in pkgutil.walk_packages(
            package.__path__,  # type: ignore[attr-defined]
            package.__name__ + ".",
        )
    )


def test_core_and_cli_commands_do_not_import_textual():
    """Nor Rich nor click: httpx would load its command-line tool with them (tui/__init__.py)."""
    names = modules_of(tui.core) + modules_of(tui.cli)
    assert "tui.core.derive" in names and "tui.cli.main" in names
    code = (
        "import sys, importlib\n"
        f"for m in {names!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules\n"
        "             if m in ('textual', 'tui.app', 'rich', 'click')\n"
        "             or m.startswith(('textual.', 'tui.app.', 'rich.', 'click.')))\n"
        "print(','.join(bad))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert proc.stdout.strip() == ""


def test_the_import_contracts_are_kept():
    """pyproject.toml's [tool.importlinter] contracts: the core imports neither Textual nor Rich
    nor its consumers; the package root and the demo server import neither app nor CLI."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe is not None, "import-linter is a test dependency (pip install -e '.[test]')"
    proc = subprocess.run([exe, "--no-cache"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_one_module_of_the_app_does_not_load_the_whole_app():
    """The app's root is lazy: `tui.app.format` (what the CLI and tests share) loads no screen
    and not the App (it cost ~2.3 s of imports when the root imported eagerly)."""
    code = (
        "import sys, tui.app.format\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith(('tui.app.app', "
        "'tui.app.screens')))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert proc.stdout.strip() == ""


def imports_of(path: Path) -> set[str]:
    """The top-level names of the modules a source imports (`import a.b`, `from a import b`:
    `a`), wherever in the file (a function's import counts too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition(".")[0])
    return names


def test_only_the_gc_policy_module_touches_the_garbage_collector():
    """How ocwatch handles CPython's cyclic collector is decided in one place,
    tui/core/gcpause.py; the rest call its named steps."""
    sources = sorted((ROOT / "tui").rglob("*.py"))
    touching = [str(p.relative_to(ROOT)) for p in sources if "gc" in imports_of(p)]
    assert touching == ["tui/core/gcpause.py"]


def test_an_import_of_gc_is_found(tmp_path: Path):
    (tmp_path / "a.py").write_text("def f():\n    import gc\n")
    (tmp_path / "b.py").write_text("from gc import freeze\n")
    (tmp_path / "c.py").write_text("from . import gc\nimport gcpause\n# import gc\n")
    assert [("gc" in imports_of(tmp_path / n)) for n in ("a.py", "b.py", "c.py")] == [
        True,
        True,
        False,
    ]
