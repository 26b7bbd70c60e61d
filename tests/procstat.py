"""What /proc says of a process (Linux): resident memory and CPU time, for soaks and tests."""

from __future__ import annotations

import os
from pathlib import Path


def rss_mb(pid: int | str = "self") -> float:
    """The process's resident memory now, in MB (this process by default)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_s(pid: int | str = "self") -> float:
    """The process's CPU time so far (user + system), in seconds."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
