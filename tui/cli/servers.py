"""`ocwatch servers`: each server ocwatch would watch, and how it was found (the config, a
flag, the environment, local discovery, an inventory file); with discovery on, what it looked
at. Nothing is probed: this is the list, not the servers' state (`ocwatch status`)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ..core import text
from ..core.client import OcwatchError, normalize_url
from ..core.discover import LocalDiscovery
from ..core.exitcodes import ExitCode
from ..core.targets import Target, TargetError, TargetSource
from ..core.text import literal
from .output import pipe_safe


def _key(url: str) -> str:
    try:
        return normalize_url(url)
    except OcwatchError:
        return url


def listed(
    urls: Sequence[str],
    origins: Mapping[str, str],
    names: Mapping[str, str],
    sources: Sequence[TargetSource],
) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """(the servers, one dict each: url, name, found, how), (each source read once: label,
    error, and discovery's `looked` lines)."""
    servers: list[dict[str, str]] = []
    seen: set[str] = set()
    reads: list[dict[str, Any]] = []
    for url in urls:
        try:
            key = normalize_url(url)
        except OcwatchError as exc:  # (said as every command says it: credentials masked)
            reads.append({"source": "named servers", "error": exc.message})
            continue
        if key in seen:
            continue
        seen.add(key)
        servers.append(
            {"url": url, "name": names.get(key, ""), "found": origins.get(key, "config"), "how": ""}
        )
    for source in sources:
        read: dict[str, Any] = {"source": source.label, "error": None}
        got: list[Target] = []
        try:
            got = source.read()
        except TargetError as exc:
            read["error"] = exc.why
        if isinstance(source, LocalDiscovery):
            read["looked"] = source.last.lines() if source.last is not None else []
        reads.append(read)
        for t in got:
            key = _key(t.url)
            if key in seen:
                continue
            seen.add(key)
            servers.append({"url": t.url, "name": t.name, "found": t.source, "how": t.how})
    return servers, reads


def run_servers(
    urls: Sequence[str],
    *,
    origins: Mapping[str, str],
    names: Mapping[str, str],
    sources: Sequence[TargetSource],
    as_json: bool = False,
) -> int:
    """Print the list; exit 0, or 2 when a source (discovery, an inventory file) could not
    say its list (said on stderr, and in the JSON)."""
    servers, reads = listed(urls, origins, names, sources)
    with pipe_safe():
        if as_json:
            print(text.dumps({"servers": servers, "sources": reads}, indent=2))
        else:
            print(render(servers, reads))
    failed = [r for r in reads if r["error"] is not None]
    for r in failed:
        print(f"ocwatch: {literal(r['source'] + ': ' + r['error'], escapes=True)}", file=sys.stderr)
    return ExitCode.USAGE if failed else ExitCode.OK


def render(servers: list[dict[str, str]], reads: list[dict[str, Any]]) -> str:
    """The table, then what discovery looked at."""
    out: list[str] = []
    if servers:
        rows = [
            (
                literal(s["name"] or "-", escapes=True),
                literal(s["url"], escapes=True),
                literal(s["found"] + (f": {s['how']}" if s["how"] else ""), escapes=True),
            )
            for s in servers
        ]
        head = ("NAME", "URL", "FOUND BY")
        width = [max(len(r[i]) for r in [head, *rows]) for i in range(2)]
        for r in [head, *rows]:
            out.append(f"{r[0]:<{width[0]}}  {r[1]:<{width[1]}}  {r[2]}".rstrip())
    else:
        out.append("No server to watch.")
    for read in reads:
        looked = read.get("looked")
        if looked:
            out.append("")
            out.append(f"Local discovery looked at (every {LocalDiscovery.every:g} s):")
            out += [f"  {literal(line, escapes=True)}" for line in looked]
    return "\n".join(out)
