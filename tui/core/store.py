"""ServerStore: one server's store, written by its ServerMonitor alone (client-go's store to the
monitor's reflector).

It holds the current snapshot, the journal of what the event stream said since that snapshot's
fetch began, and the rows last derived from both (with the memo that reuses unchanged rows).
A new snapshot replaces the store's snapshot whole and cuts the journal (full reconciliation,
never incremental sets); what the events had derived differently from it is counted as drift.
It does no I/O and keeps no clock: the monitor passes the time and how it reaches the server.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping

from .decide import clock_text
from .derive import DeriveMemo, Link, derive_server
from .gcpause import gc_paused
from .journal import Facts, Journal, merge_message
from .outcome import Outcome, outcome
from .settings import Settings
from .snapshot import Snapshot
from .view import SessionRow, running
from .words import drifted as _word

Key = tuple[str, str]
Rows = dict[Key, SessionRow]


class ServerStore:
    """The snapshot, the journal and the derived rows of one server."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.journal = Journal(settings.journal_limit)
        self.snapshot: Snapshot | None = None
        self.drift_count = 0
        self.drift_examples: deque[str] = deque(maxlen=5)
        self.unseen_runs: dict[Outcome, int] = {}  # count_unseen_runs: outcome -> runs
        # each session's last message id as the old snapshot and the journal knew it, at the
        # last install (count_unseen_runs compares the new snapshot's with it)
        self._last_ids: dict[str, str | None] = {}
        # the rows last shown live and their last message ids, kept when the rows were first
        # masked (unknown, unreachable) and until the next install: what the consumers last
        # saw, for count_unseen_runs (a run the stream carried while the rows were masked was
        # shown to no one, so no transition counted it)
        self._shown: tuple[Rows, dict[str, str | None]] | None = None
        self._masked: tuple[Rows, dict[str, str | None]] | None = None
        self._rows: Rows = {}
        self._memo = DeriveMemo()
        # the keys of rows changed since take_changed() (None: any), and those confirming a
        # run's end with the server (kept up to date from the memo's changed rows)
        self._changed: set[Key] | None = None
        self._confirming: set[Key] = set()

    # -- reading -------------------------------------------------------------------------------
    def rows(self, now: float, link: Link) -> Rows:
        """Derive the rows at `now` (they are the `previous` of the next derive: time in
        state, the settled state an unsettled row keeps)."""
        if self.snapshot is None:
            self._changed = None
            return {}
        if not link.reachable and self._shown is None and not self.snapshot.loading:
            self._shown = (
                self._rows,
                _last_ids(self.snapshot, self.journal.facts(), self._last_ids),
            )
        with gc_paused():
            self._rows = rows = derive_server(
                self.snapshot,
                self.journal.facts(),
                now,
                self.settings,
                previous=self._rows,
                link=link,
                memo=self._memo,
            )
        changed = self._memo.changed
        if changed is None:  # every row derived again
            self._changed = None
            self._confirming = {k for k, r in rows.items() if r.settling == "confirming"}
        else:
            if self._changed is not None:
                self._changed.update(changed)
            for key in changed:
                if rows[key].settling == "confirming":
                    self._confirming.add(key)
                else:
                    self._confirming.discard(key)
        return rows

    @property
    def confirming(self) -> bool:
        """Some row's run ended and only events from before its end call it busy: the server
        should be asked (a snapshot) before it is called stale on old news."""
        return bool(self._confirming)

    def take_changed(self) -> list[Key] | None:
        """The keys whose rows changed since the last call, in the rows' order (every other row
        is the same object as then); None: any may have (rows derived whole, sessions came or
        went)."""
        changed, self._changed = self._changed, set()
        if changed is None:
            return None
        order = self._memo.order
        return sorted(changed, key=lambda key: order[key[1]])

    # -- writing (the monitor) -----------------------------------------------------------------
    def show_partial(self, snap: Snapshot) -> None:
        """A first snapshot, shown before its last messages are all in (Snapshot.loading)."""
        self.snapshot = snap
        self.journal.cut(snap.journal_seq, snap.status, _ids(snap))

    def install(self, snap: Snapshot, seq: int, now: float) -> Rows | None:
        """Make `snap` the current snapshot, the journal cut at `seq` (where its fetch began).
        Returns what the events had made of the old snapshot, now (None: there was no complete
        one): the new snapshot's rows differ from these only by what the snapshot itself
        corrected; `count_drift` them against the next `rows()` (which reuses them: memo)."""
        old = self.snapshot
        if old is not None and old.loading:
            old = None  # a first snapshot shown as it arrived: no complete one to compare
        before: Rows | None = None
        self._masked, self._shown = self._shown, None
        if old is None:
            self._last_ids = {}
        else:
            # a session the old snapshot could not read keeps the id known before it: "could
            # not read" is no claim that nothing new happened
            self._last_ids = _last_ids(old, self.journal.facts(), self._last_ids)
            with gc_paused():
                before = derive_server(
                    old,
                    self.journal.facts(),
                    now,
                    self.settings,
                    previous=self._rows,
                    memo=self._memo,
                )
        self.snapshot = snap
        self.journal.cut(seq, snap.status, _ids(snap))
        if before is not None:
            self._rows = before
        return before

    def count_unseen_runs(self, before: Rows, after: Rows) -> None:
        """Count the runs that began and ended while events were missed (a reconnect's gap,
        snapshots failing): a session the new snapshot shows settled and not running whose last
        message is not the one the old snapshot and the journal knew, and that no transition
        counts (it was not running before, or is new). One per session and install at most (a
        snapshot shows one last message); its outcome (core/outcome.py). After rows were masked
        (unknown, unreachable) `before` and the ids known are those last shown live: a run the
        stream carried meanwhile was shown to no one."""
        snap = self.snapshot
        if snap is None or snap.loading:
            return
        known = self._last_ids
        if self._masked is not None:  # the rows were masked: what was last shown live
            before, known = self._masked
        for key, row in after.items():
            if not row.settled or running(row):
                continue
            sid = key[1]
            msg = snap.messages.get(sid)
            if msg is None or sid in snap.unreadable:
                continue
            old = before.get(key)
            if old is None:
                if sid in known:
                    continue  # (derived from the old snapshot, but not shown: no claim)
            elif running(old) or not old.settled or known.get(sid, msg.info.id) == msg.info.id:
                continue  # a transition counts it, or no claim, or the same last message
            ended = outcome(row)
            if ended is not None:
                self.unseen_runs[ended] = self.unseen_runs.get(ended, 0) + 1

    def count_drift(self, before: Rows, after: Rows, outage: float | None = None) -> None:
        """Count rows whose settled state the journal had derived differently from the new
        snapshot. A row still settling made no claim to contradict, except a finished run that
        only events called busy (its idle event was lost). After an outage (`outage`: since
        when the server could not be reached) every difference is one drift: events were
        missed."""
        changed: list[str] = []
        for key, row in after.items():
            old = before.get(key)
            if old is None or not row.settled:
                continue
            if not old.settled:
                # a finished run only events called busy: the snapshot calling it idle is drift
                # (its idle event was lost); calling it stale confirms it
                if old.settling == "confirming" and row.state != old.state:
                    changed.append(
                        f"{key[1]}: events said busy (no idle event came), "
                        f"snapshot says {_word(row)}"
                    )
                continue
            if old.settled_as != row.settled_as:
                changed.append(f"{key[1]}: events said {_word(old)}, snapshot says {_word(row)}")
            elif (
                outage is not None
                and row.state in ("busy", "retry")
                and old.since
                and row.since
                and row.since > old.since
            ):
                # busy again, but since a later prompt: a run ended and the next began unseen
                changed.append(
                    f"{key[1]}: a run ended and the next began while events were "
                    f"missed ({_word(row)} since {clock_text(row.since)})"
                )
        if not changed:
            return
        if outage is not None:  # one gap in the events, however many sessions it hid
            self.drift_count += 1
            self.drift_examples.append(
                f"events missed from {clock_text(outage)} (stream lost or server unreachable): "
                f"{len(changed)} session{'s' if len(changed) != 1 else ''} changed unseen, "
                f"e.g. {changed[0]}"
            )
            return
        self.drift_count += len(changed)
        self.drift_examples.extend(changed)


def _last_ids(
    snap: Snapshot, facts: Facts, earlier: Mapping[str, str | None]
) -> dict[str, str | None]:
    """Each session's last message id, as the snapshot and the journal over it say; one the
    snapshot could not read (still loading, unreadable), as `earlier` knew it, if it did."""
    laid = bool(facts.messages or facts.parts)
    out: dict[str, str | None] = {}
    for sid, msg in snap.messages.items():
        if sid in snap.loading or sid in snap.unreadable:
            if sid in earlier:
                out[sid] = earlier[sid]
            continue
        if laid:
            msg = merge_message(msg, facts, sid)
        out[sid] = msg.info.id if msg is not None else None
    return out


def _ids(snap: Snapshot) -> Iterator[str]:
    """The ids of the sessions and requests a snapshot lists (Journal.cut's `known`)."""
    yield from snap.sessions
    yield from snap.permissions
    yield from snap.questions
