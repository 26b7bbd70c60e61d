"""The headless core never imports Textual (checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys


def test_core_and_cli_commands_do_not_import_textual():
    code = (
        "import sys, importlib\n"
        "for m in ['tui.core.models', 'tui.core.events', 'tui.core.journal', 'tui.core.client',\n"
        "          'tui.core.snapshot', 'tui.core.derive', 'tui.core.view', 'tui.core.monitor',\n"
        "          'tui.core.fleet', 'tui.core.actions', 'tui.core.source', 'tui.cli.wait',\n"
        "          'tui.cli.output', 'tui.cli.actions', 'tui.cli.main']:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""
