"""Fleet: the live ViewSource over one or more servers.

`current(now)` derives a whole View from every server's snapshot and journal; its settled
changes (view.transitions, the transition contract) feed each row's timeline.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from .actions import ActionError
from .client import Client, normalize_url
from .monitor import Notify, ServerMonitor
from .raw import RawFacts, raw_facts
from .settings import Auth, Settings
from .targets import Keeper, Servers, Target
from .view import Changes, ServerInfo, SessionRow, Transition, TransitionFeed, View

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")

#: Servers that left remembered at most (`Fleet.gone`), the latest
GONE_KEPT = 100

#: A copy's claim to be the one shown (lower first): only the process running a session knows
#: it is busy, retrying or asking
_LIVE = {"busy": 0, "retry": 0, "input": 0, "idle": 1, "unknown": 2}


def live_rank(row: SessionRow) -> int:
    """How surely a copy's server runs the session (lower: surer). A busy shown while the facts
    are still arriving (the run starting or finishing, or asked about again) is what any server
    reading the storage infers from a run's messages, the running one's or another's: it ranks
    as an idle, not as the server's own claim. A row still loading shows what its server's maps
    say, which is its claim."""
    if not row.settled and row.settling != "loading" and row.state == "busy":
        return 1
    return _LIVE.get(row.state, 2)


class Fleet:
    """Monitors for several servers behind one ViewSource."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        auth: Auth | None = None,
        settings: Settings | None = None,
        clock: Callable[[], float] = time.time,
        transport: httpx.AsyncBaseTransport | None = None,
        history_limit: int = 50,
        auths: Mapping[str, Auth | None] | None = None,
        names: Mapping[str, str] | None = None,
        progressive: bool = False,
        keeper: Keeper | None = None,
        local: Mapping[str, str] | None = None,
        focus: Collection[str] | None = None,
    ) -> None:
        """`auth` is the first server's credentials only (a password is never sent to a
        server it was not given for); `auths` (normalized URL -> credentials) sets each
        server's, overriding that; `names` (normalized URL -> name) what each is called.
        `progressive`: show each server's first snapshot as it arrives (the dashboard: rows
        whose last message is not read yet say `loading`; ServerMonitor.progressive).
        `keeper`: reads where the servers come from (discovery, an inventory file) while the
        fleet runs, and reconciles the fleet to them (tui.core.targets). `local` (normalized
        URL -> project folder): the servers local discovery found (`local`). `focus`: the
        only sessions its readers look at (`ocwatch wait`'s): each server's snapshots are of
        them and their descendants (ServerMonitor's `focus`); None: of every session."""
        self.focus = None if focus is None else frozenset(focus)
        self.settings = settings or Settings()
        self.clock = clock
        seen: dict[str, ServerMonitor] = {}
        for i, url in enumerate(urls):
            key = normalize_url(url)
            own = auths[key] if auths is not None and key in auths else (auth if i == 0 else None)
            mon = ServerMonitor(
                url,
                auth=own,
                settings=self.settings,
                clock=clock,
                transport=transport,
                name=(names or {}).get(key, ""),
                progressive=progressive,
                focus=self.focus,
            )
            seen.setdefault(mon.url, mon)
        self.monitors: list[ServerMonitor] = list(seen.values())
        self._transport = transport
        self.keeper = keeper
        self._progressive = progressive
        self._notify: Notify | None = None
        self._group: asyncio.TaskGroup | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._members_moved = False
        self.gone: dict[str, tuple[float, str]] = {}
        """Servers taken out of the fleet (URL -> when, why): said, not silently dropped."""
        self._feed = TransitionFeed()
        self.last_changes: Changes | None = None
        self._history: dict[tuple[str, str], list[Transition]] = {}
        self._history_limit = history_limit
        self.local: dict[str, str] = {normalize_url(u): f for u, f in (local or {}).items()}
        """The servers local discovery found on this machine (URL -> the project folder its
        process runs in). They are this user's OpenCode processes, which share one storage:
        each lists every project's sessions, and only the process running a session knows it
        is busy or asking. A session two of them list is shown once (`_one_copy`)."""
        self._owner: dict[str, str] = {}  # session id -> the server its one copy came from
        self._dropped: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def of_servers(
        cls,
        servers: Servers,
        *,
        clock: Callable[[], float] = time.time,
        transport: httpx.AsyncBaseTransport | None = None,
        progressive: bool = False,
        keeper: Keeper | None = None,
        focus: Collection[str] | None = None,
    ) -> Fleet:
        """A Fleet over `servers` (their credentials, names and settings); `keeper`, when the
        servers' sources are followed while it runs (`servers.keeper(note)`); `focus`, the only
        sessions looked at."""
        return cls(
            servers.urls,
            auth=servers.auth,
            settings=servers.settings,
            clock=clock,
            transport=transport,
            auths=servers.auths,
            names=servers.names,
            progressive=progressive,
            keeper=keeper,
            local=servers.local,
            focus=focus,
        )

    @classmethod
    def of(
        cls,
        monitors: Sequence[ServerMonitor],
        settings: Settings,
        clock: Callable[[], float],
        focus: Collection[str] | None = None,
    ) -> Fleet:
        """A Fleet over monitors made elsewhere (a replay's, on its recorded clock; `focus`,
        the one they were made with)."""
        fleet = cls([], settings=settings, clock=clock, focus=focus)
        fleet.monitors = list(monitors)
        return fleet

    def monitor(self, server: str) -> ServerMonitor | None:
        for m in self.monitors:
            if m.url == server:
                return m
        return None

    def servers(self) -> tuple[ServerInfo, ...]:
        """Each server as published now (link state, first snapshot, loading), in order: what
        a reader of the fleet reads, never a monitor's own fields. A name another server
        (listed before it) has already is not this one's: it is called by its URL (a config's
        server and an inventory's or a discovered folder of one name made two series of one
        label, and Prometheus kept only the first: a server down hidden behind one up)."""
        infos = tuple(m.info() for m in self.monitors)
        if len(infos) > 1:
            labels = [i.label for i in infos]
            if len(set(labels)) < len(labels):
                taken: set[str] = set()
                fixed = []
                for info in infos:
                    if info.label in taken:
                        info = dataclasses.replace(info, name="")
                    taken.add(info.label)
                    fixed.append(info)
                infos = tuple(fixed)
        return infos

    def current(self, now: float | None = None) -> View:
        now = self.clock() if now is None else now
        rows: dict[tuple[str, str], SessionRow] = {}
        changed: list[tuple[str, str]] | None = []
        if len(self.monitors) == 1:
            # its rows as derived: a new dict each time, which nothing changes after (derive
            # copies its previous rows, never writes them), so the View takes it as it is
            m = self.monitors[0]
            rows, changed = m.rows(now), m.take_changed()
        else:
            for m in self.monitors:  # the rows in monitor order, and the changed ones in theirs
                rows.update(m.rows(now))
                theirs = m.take_changed()
                changed = None if theirs is None or changed is None else changed + theirs
        if len(self.local) > 1:
            if self._one_copy(rows):
                changed = None  # which server's copy shows moved: every row is compared
            elif changed is not None and self._dropped:  # a copy not shown changed: nothing
                changed = [k for k in changed if k not in self._dropped]  # shown did
        if self._members_moved:  # a server added or removed: every row is compared (its
            changed, self._members_moved = None, False  # rows came or went all at once)
        view = View(now, self.servers(), rows)
        self.last_changes = changes = self._feed.feed(view, changed)
        for tr in changes.transitions:
            if tr.after is None:
                self._history.pop(tr.key, None)
                continue
            # a list, trimmed, not a deque(maxlen=...): a deque allocates a block of 64 slots
            # at once, and most sessions have one or two transitions
            kept = self._history.setdefault(tr.key, [])
            kept.append(tr)
            if len(kept) > self._history_limit:
                del kept[0]
        return view

    def _one_copy(self, rows: dict[tuple[str, str], SessionRow]) -> bool:
        """Keep one copy of each session that several locally discovered servers list (they
        read one storage; the ids are random, so one id is one session): the copy of the
        server running it (busy, retrying or asking, which only that process knows: the
        others say it is idle, or interrupted when its last message is not finished, or busy
        for a moment while they read a run's last message: `live_rank`), else
        the server shown last time (once every copy was read), else the one whose folder is
        the session's, else the first. A sub-session goes with its parent. True when the
        copies dropped changed."""
        local = self.local
        copies: dict[str, dict[str, SessionRow]] = {}
        for (server, sid), row in rows.items():
            if server in local:
                copies.setdefault(sid, {})[server] = row
        order = {m.url: i for i, m in enumerate(self.monitors)}
        owner: dict[str, str] = {}
        remembered: dict[str, str] = {}

        def owner_of(sid: str, depth: int = 0) -> str:
            got = owner.get(sid)
            if got is not None:
                return got
            copy = copies[sid]
            parent = next(iter(copy.values())).parent_id
            if parent is not None and depth < 64 and len(copies.get(parent, ())) > 1:
                theirs = owner_of(parent, depth + 1)
                if theirs in copy:
                    owner[sid] = theirs
                    return theirs
            was = self._owner.get(sid)
            got = min(
                copy,
                key=lambda s: (
                    live_rank(copy[s]),
                    s != was,
                    copy[s].directory != local[s],
                    order.get(s, 0),
                ),
            )
            owner[sid] = got
            if not any(c.settling == "loading" for c in copy.values()):
                remembered[sid] = got
            elif was is not None:  # a copy not read yet claims nothing: chosen again once read
                remembered[sid] = was
            return got

        dropped: set[tuple[str, str]] = set()
        for sid, copy in copies.items():
            if len(copy) > 1:
                keep = owner_of(sid)
                dropped.update((s, sid) for s in copy if s != keep)
        for key in dropped:
            del rows[key]
        self._owner = remembered
        moved = frozenset(dropped) != self._dropped
        self._dropped = frozenset(dropped)
        return moved

    async def act(
        self, server: str, act: Callable[[Client], Awaitable[T]], *, resync: bool = True
    ) -> T:
        """Do `act` through the watched server's own client; once the server accepted it, ask
        that server for a snapshot (the row changes when the server confirms, not before;
        `resync` False: a read, nothing to confirm)."""
        monitor = self.monitor(server)
        if monitor is None:
            raise ActionError(f"{server} is not one of the watched servers")
        result = await act(monitor.client)
        if resync:
            monitor.request_snapshot()
        return result

    def auth_of(self, server: str) -> Auth | None:
        """The credentials of a watched server (None: it has none, or it is not watched)."""
        monitor = self.monitor(server)
        return monitor.auth if monitor is not None else None

    def protocol_of(self, server: str) -> str | None:
        """The protocol a watched server speaks ("v1", "v2"; None: not probed, or not
        watched)."""
        monitor = self.monitor(server)
        proto = monitor.protocol if monitor is not None else None
        return proto.name if proto is not None else None

    def resync(self, server: str) -> None:
        """Ask a watched server for a snapshot soon (e.g. after the user worked on it)."""
        monitor = self.monitor(server)
        if monitor is not None:
            monitor.request_snapshot()

    def history(self, key: tuple[str, str]) -> list[Transition]:
        return list(self._history.get(key, ()))

    def raw(self, key: tuple[str, str], limit: int = 20) -> RawFacts | None:
        """What the server said about one session, raw (None: not a watched server)."""
        monitor = self.monitor(key[0])
        if monitor is None:
            return None
        return raw_facts(key[1], monitor.recent, monitor.snapshot, limit, monitor.journal.facts())

    async def run(self, notify: Notify) -> None:
        """Run every server's monitor, and those `add`ed meanwhile, until cancelled (a
        monitor's failure ends the run, as before)."""
        self._notify = notify
        try:
            async with asyncio.TaskGroup() as tg:
                self._group = tg
                for m in self.monitors:
                    self._start(m)
                tg.create_task(asyncio.Event().wait())  # a fleet may be empty for a while
                if self.keeper is not None:
                    tg.create_task(self.keeper.keep(self, self.clock))
        finally:
            self._group, self._notify = None, None
            self._tasks.clear()

    def _start(self, monitor: ServerMonitor) -> None:
        if self._group is not None and self._notify is not None:
            self._tasks[monitor.url] = self._group.create_task(monitor.run(self._notify))

    def add(
        self,
        url: str,
        *,
        auth: Auth | None = None,
        name: str = "",
        labels: tuple[tuple[str, str], ...] = (),
        local: str | None = None,
    ) -> ServerMonitor:
        """Watch one more server (running at once when the fleet runs); the monitor already
        watching that URL when there is one. `labels`: its extra labels (the exporter's);
        `local`: found by local discovery, the project folder its process runs in."""
        key = normalize_url(url)
        if local is not None:
            self.local[key] = local
        for m in self.monitors:
            if m.url == key:
                return m
        monitor = ServerMonitor(
            url,
            auth=auth,
            settings=self.settings,
            clock=self.clock,
            transport=self._transport,
            name=name,
            progressive=self._progressive,
            focus=self.focus,
        )
        monitor.labels = labels
        self.monitors.append(monitor)
        self._members_moved = True
        self.gone.pop(monitor.url, None)
        self._start(monitor)
        if self._notify is not None:
            self._notify()
        return monitor

    def remove(self, url: str, why: str = "no longer listed") -> bool:
        """Stop watching a server: its rows leave the View (each a transition to gone), and
        it is remembered in `gone` with `why`. False: it was not watched."""
        monitor = self.monitor(normalize_url(url))
        if monitor is None:
            return False
        self.monitors.remove(monitor)
        self.local.pop(monitor.url, None)
        self._members_moved = True
        task = self._tasks.pop(monitor.url, None)
        if task is not None:
            task.cancel()
        self.gone[monitor.url] = (self.clock(), why)
        if len(self.gone) > GONE_KEPT:  # (discovery for months: a port per server that ran)
            del self.gone[min(self.gone, key=lambda url: self.gone[url][0])]
        try:
            closing = asyncio.get_running_loop().create_task(monitor.client.aclose())
        except RuntimeError:  # no loop: nothing was opened
            pass
        else:
            closing.add_done_callback(lambda f: f.cancelled() or f.exception())
        if self._notify is not None:
            self._notify()
        return True

    def reconcile(
        self, targets: Sequence[Target], why: Callable[[str], str] | None = None
    ) -> tuple[list[str], list[str]]:
        """Make the watched servers exactly `targets` (full reconciliation, never a patch):
        the missing ones added, the ones not listed removed (why: their target source's
        word); a listed one whose name or labels changed in its source (an inventory file's)
        takes them, keeping its state; one whose credentials changed there is watched afresh
        with the new ones. `why(url)`: why one not listed left, in its source's words (kept
        in `gone`). Returns (added URLs, removed URLs)."""
        wanted = {normalize_url(t.url): t for t in targets}
        removed = [m.url for m in list(self.monitors) if m.url not in wanted]
        for url in removed:
            self.remove(url, why(url) if why is not None else "no longer listed")
        have = {m.url: m for m in self.monitors}
        added = []
        for key, t in wanted.items():
            m = have.get(key)
            if m is not None and t.source != "config" and m.auth != t.auth:
                # its source gives new credentials (a V2 service restarted, or its file read
                # before its password was written): watched afresh with them, not said
                self.remove(key, "its credentials changed")
                local = t.folder if t.source == "discovered" else None
                self.add(t.url, auth=t.auth, name=t.name, labels=t.labels, local=local)
            elif m is None:
                local = t.folder if t.source == "discovered" else None
                self.add(t.url, auth=t.auth, name=t.name, labels=t.labels, local=local)
                added.append(key)
            elif t.source != "config" and (m.name, m.labels) != (t.name, t.labels):
                m.name, m.labels = t.name, t.labels  # (the config's keep theirs)
                self._members_moved = True
        return added, removed

    async def snapshot_once(self, notify: Notify | None = None) -> View:
        """One snapshot per server, no stream (what `status` does). `notify` is called as the
        monitors' state changes (e.g. ServerMonitor.loading)."""
        try:
            await asyncio.gather(*(m.snapshot_once(notify) for m in self.monitors))
        finally:
            await self.aclose()
        return self.current()

    async def aclose(self) -> None:
        """Close every server's connections (errors closing are nobody's concern)."""
        await asyncio.gather(*(m.client.aclose() for m in self.monitors), return_exceptions=True)
