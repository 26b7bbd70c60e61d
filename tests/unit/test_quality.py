"""ruff (lint and format) and mypy are part of the suite: a lint, layout or type error fails CI
like a test does."""

from __future__ import annotations

import subprocess
import sys
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


def test_mypy_strict_is_clean_on_the_core():
    """The headless core is held to `mypy --strict` (the app and CLI to the project's config)."""
    proc = run("mypy", "--strict", "tui/core")
    assert proc.returncode == 0, proc.stdout + proc.stderr
