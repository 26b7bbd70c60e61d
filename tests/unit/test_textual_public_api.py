"""The app is built on Textual's public API only: any Textual release may move a private name.

Checked over every module under tui/ (by their source, no widget is run):
- no import of a private Textual module (`textual._x`, `textual.widgets._x`) or private name;
- no class that derives from a Textual class defines, sets or reads a private name of its
  Textual bases (`def _render_cell`, `self._data = ...`, `self._update_count`): overriding or
  touching Textual's internals, or clobbering them by accident with a name of its own;
- no private name of a Textual class read off another object (`self.app._notifications`)
  unless tui itself defines that name.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import textwrap
from functools import cache
from pathlib import Path

import textual

import tui

ROOT = Path(tui.__file__).parent


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def modules() -> list[str]:
    """Every module under tui/ but the `__main__` ones (importing one runs it)."""
    return sorted(
        m.name
        for m in pkgutil.walk_packages([str(ROOT)], "tui.")
        if not m.name.endswith(".__main__")
    )


def sources() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        out[str(path.relative_to(ROOT.parent))] = ast.parse(path.read_text(), str(path))
    return out


def textual_module(name: str) -> bool:
    return name == "textual" or name.startswith("textual.")


@cache
def privates_of(cls: type) -> frozenset[str]:
    """The private names a Textual class defines or uses on `self`."""
    names = {n for n in vars(cls) if private(n)}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return frozenset(names)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            names.add(node.attr)
    return frozenset(names)


def textual_bases(cls: type) -> list[type]:
    return [c for c in cls.__mro__ if textual_module(c.__module__)]


def test_no_private_textual_module_or_name_is_imported() -> None:
    found = []
    for where, tree in sources().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [
                    (where, node.lineno, a.name)
                    for a in node.names
                    if textual_module(a.name) and any(map(private, a.name.split(".")))
                ]
            elif isinstance(node, ast.ImportFrom) and node.module and textual_module(node.module):
                if any(map(private, node.module.split("."))):
                    found.append((where, node.lineno, node.module))
                found += [
                    (where, node.lineno, f"{node.module}.{a.name}")
                    for a in node.names
                    if private(a.name)
                ]
    assert not found, found


def test_no_class_overrides_sets_or_reads_a_private_name_of_its_textual_bases() -> None:
    found = []
    for name in modules():
        module = importlib.import_module(name)
        for cls in vars(module).values():
            if not (inspect.isclass(cls) and cls.__module__ == name):
                continue
            bases = textual_bases(cls)
            if not bases:
                continue
            theirs = frozenset().union(*(privates_of(b) for b in bases))
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
            body = tree.body[0]
            assert isinstance(body, ast.ClassDef)
            for node in ast.walk(body):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    hit = node.name
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    hit = node.id  # a class attribute (or a local: harmless, but rare)
                elif (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in ("self", "cls")
                ):
                    hit = node.attr
                else:
                    continue
                if hit in theirs:
                    found.append((name, cls.__name__, hit))
    assert not found, found


def test_no_private_textual_name_is_read_off_another_object() -> None:
    ours: set[str] = set()
    reads: list[tuple[str, int, str]] = []
    trees = sources()
    for where, tree in trees.items():
        other_modules = {
            (a.asname or a.name).split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for a in node.names
            if not textual_module(a.name)
        }  # os._exit is not Textual's
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                ours.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                ours.add(node.id)
            elif isinstance(node, ast.Attribute) and private(node.attr):
                if isinstance(node.ctx, ast.Store):
                    ours.add(node.attr)
                elif not (
                    isinstance(node.value, ast.Name)
                    and node.value.id in ("self", "cls", *other_modules)
                ):
                    reads.append((where, node.lineno, node.attr))
    theirs: set[str] = set()
    for name in modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if inspect.isclass(value):
                for base in textual_bases(value):
                    theirs |= privates_of(base)
    found = [r for r in reads if r[2] in theirs and r[2] not in ours]
    assert not found, found


def test_the_check_sees_a_private_use() -> None:
    """The scan is not vacuous: it knows DataTable's internals."""
    from textual.widgets import DataTable

    assert {"_render_cell", "_row_locations", "_update_count"} <= privates_of(DataTable)
    assert textual.__name__ == "textual"
