"""What servers to watch, and where that list comes from: the config and flags, local
discovery, an inventory file. Each source says its current list; the fleet is reconciled to
their union (`Fleet.reconcile`), so a source's change adds and removes servers live."""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .client import normalize_url
from .settings import Auth, Settings


@dataclass(frozen=True)
class Target:
    """One server to watch: where, with which credentials (never shown), what it is called,
    its extra labels, and which source listed it (`config`, `discovered`, `file`)."""

    url: str
    auth: Auth | None = field(default=None, repr=False)
    name: str = ""
    labels: tuple[tuple[str, str], ...] = ()
    source: str = "config"
    how: str = ""  # how it was found (`opencode serve, pid 123, /home/me/app`), for people
    folder: str = ""  # discovered on this machine: the project folder the process runs in


class TargetError(Exception):
    """A source could not say its list (said once; its last good list is kept)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class TargetSource(Protocol):
    """Where a list of servers comes from. `read()` is called every `every` seconds, off the
    event loop (it may read files or /proc); it raises TargetError when it cannot say. A
    source may say how a server it no longer lists left in a `gone` attribute (discovery:
    `went away ...`; default: `is no longer listed`)."""

    label: str
    every: float

    def read(self) -> list[Target]: ...


@dataclass
class Fixed:
    """The servers the config and flags name: the same list every time."""

    targets: list[Target]
    label: str = "config"
    every: float = math.inf

    def read(self) -> list[Target]:
        return list(self.targets)


Note = Callable[[str], None]


class Keeper:
    """Reads each source when it is due and reconciles the fleet to their union (the first
    source naming a URL wins it). A source that fails keeps its last good list, and its
    error is said once until it changes; servers added and removed are said too."""

    def __init__(self, sources: Sequence[TargetSource], note: Note | None = None) -> None:
        self.sources = list(sources)
        self.note = note or (lambda _text: None)
        self.last: dict[int, list[Target]] = {}
        self.errors: dict[int, str] = {}
        self._due: dict[int, float] = {}

    def wanted(self) -> list[Target]:
        """The union of every source's last good list, in source order, one per URL."""
        return [t for t, _source in self.listed().values()]

    def listed(self) -> dict[str, tuple[Target, TargetSource]]:
        """Each wanted URL (normalized) -> its target and the source that lists it."""
        out: dict[str, tuple[Target, TargetSource]] = {}
        for i, source in enumerate(self.sources):
            for t in self.last.get(i, ()):
                out.setdefault(normalize_url(t.url), (t, source))
        return out

    async def read_due(self, now: float) -> bool:
        """Read the sources that are due; True when a list changed."""
        moved = False
        for i, source in enumerate(self.sources):
            if self._due.get(i, -math.inf) > now:
                continue
            self._due[i] = now + source.every
            try:
                got = await asyncio.to_thread(source.read)
            except TargetError as exc:
                if self.errors.get(i) != exc.why:
                    self.errors[i] = exc.why
                    kept = len(self.last.get(i, ()))
                    self.note(f"{source.label}: {exc.why} (keeping the {kept} server(s) it gave)")
                continue
            if self.errors.pop(i, None) is not None:
                self.note(f"{source.label}: readable again")
            if got != self.last.get(i):
                self.last[i] = got
                moved = True
        return moved

    def next_due(self) -> float:
        return min(self._due.values(), default=math.inf)

    async def keep(self, fleet: Reconciled, clock: Callable[[], float]) -> None:
        """Until cancelled: read the sources when due, reconcile the fleet when a list moved."""
        while True:
            await self.step(fleet, clock)
            wait = self.next_due() - clock()
            if math.isinf(wait):
                return
            await asyncio.sleep(max(0.05, wait))

    async def step(self, fleet: Reconciled, clock: Callable[[], float]) -> None:
        """Read the sources that are due and reconcile the fleet, saying what came and went
        (a command that looks at the servers at once, `watch` or `wait`, steps once before
        its fleet runs: the first servers discovered are there from the start)."""
        before = self.listed()
        if await self.read_due(clock()):
            now = self.listed()

            def why(url: str) -> str:
                t, source = before.get(url, (None, None))
                # the source's own words (discovery: the server went away)
                return f"{_who(url, t)} {getattr(source, 'gone', None) or 'is no longer listed'}"

            added, removed = fleet.reconcile([t for t, _source in now.values()], why)
            for url in added:
                self.note(f"watching {_who(url, now.get(url, (None, None))[0])}")
            for url in removed:
                self.note(f"{why(url)}: not watched any more")


def _who(url: str, target: Target | None) -> str:
    """`name URL (how it was found)`, as much as the target says."""
    named = f"{target.name} " if target is not None and target.name else ""
    how = f" ({target.how})" if target is not None and target.how else ""
    return f"{named}{url}{how}"


class Reconciled(Protocol):
    def reconcile(
        self, targets: Sequence[Target], why: Callable[[str], str] | None = None
    ) -> tuple[list[str], list[str]]: ...


def keeper_for(
    urls: Sequence[str], sources: Sequence[TargetSource], note: Note | None = None
) -> Keeper | None:
    """The keeper of a fleet made over `urls` (the config's and flags' servers, which stay)
    when other sources add to them (discovery, an inventory file); None: nothing moves."""
    if not sources:
        return None
    return Keeper([Fixed([Target(u) for u in urls]), *sources], note)


@dataclass(frozen=True)
class Servers:
    """The servers a command watches and how to reach each: made once from the options
    (`Options.servers()`), handed to the command and on to its fleet (`Fleet.of_servers`).

    `auth` is the first server's credentials only (a password is never sent to a server it
    was not given for); `auths` (normalized URL -> credentials) sets each server's, overriding
    that; `names` (normalized URL -> name) what each is called; `sources` where more servers
    come from while the command runs (discovery, an inventory file); `local` (normalized URL
    -> project folder) the servers local discovery found, read once (Fleet.local)."""

    urls: tuple[str, ...]
    settings: Settings = field(default_factory=Settings)
    auth: Auth | None = field(default=None, repr=False)
    auths: Mapping[str, Auth | None] = field(default_factory=dict, repr=False)
    names: Mapping[str, str] = field(default_factory=dict)
    sources: tuple[TargetSource, ...] = ()
    local: Mapping[str, str] = field(default_factory=dict)

    def keeper(self, note: Note | None = None) -> Keeper | None:
        """The keeper of a fleet over these servers (None: no source adds to them)."""
        return keeper_for(self.urls, self.sources, note)

    def joined(self, targets: Sequence[Target]) -> Servers:
        """These servers and `targets` (a source's list, read once) after them; a target at a
        URL already here adds nothing (the server named first, with its own name and
        credentials, holds)."""
        if not targets:
            return self
        urls = list(self.urls)
        auths = dict(self.auths)
        names = dict(self.names)
        local = dict(self.local)
        for t in targets:
            key = normalize_url(t.url)
            if key in {normalize_url(u) for u in urls}:
                continue
            urls.append(t.url)
            auths[key] = t.auth
            if t.name:
                names[key] = t.name
            if t.source == "discovered":
                local[key] = t.folder
        return dataclasses.replace(self, urls=tuple(urls), auths=auths, names=names, local=local)
