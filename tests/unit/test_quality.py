"""ruff (lint and format) and mypy are part of the suite: a lint, layout or type error fails CI
like a test does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *cmd], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff_is_clean():
    proc = run("ruff", "check", "tui", "tests", "benchmarks", "screenshots")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_code_is_ruff_formatted():
    """One layout, kept by the tool (`ruff format tui tests benchmarks screenshots`)."""
    proc = run("ruff", "format", "--check", "tui", "tests", "benchmarks", "screenshots")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean():
    proc = run("mypy", "tui")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_core_is_held_to_every_flag_of_mypy_strict():
    """The headless core is held to `mypy --strict` (the app and CLI to the project's config)
    in test_mypy_is_clean's one run: pyproject.toml sets each flag --strict enables, as this
    mypy lists them, for `tui.core` (a second run of mypy with --strict cost the suite 8 s of
    CPU). A flag a later mypy adds to --strict fails this until it is set too."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "10000"},  # (argparse: the flag list on one line)
    )
    listed = re.search(r"--strict +Strict mode; enables the following flags: *(.*)", proc.stdout)
    assert listed, proc.stdout[:2000]
    flags = {f.strip().removeprefix("--").replace("-", "_") for f in listed[1].split(",")}
    assert len(flags) >= 10 and "disallow_untyped_defs" in flags, flags
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    (core,) = [o for o in config.get("overrides", []) if "tui.core.*" in o["module"]]
    assert "tui.core" in core["module"]
    unset = sorted(f for f in flags if core.get(f, config.get(f)) is not True)
    assert not unset, f"--strict flags not set for tui.core in pyproject.toml: {unset}"
