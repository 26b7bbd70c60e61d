"""The Prometheus exporter's numbers, read off Views.

`Metrics` is a prometheus-client collector. Whoever keeps the View current (the headless
`ocwatch metrics` loop, or the dashboard with `--metrics`) hands it each new View with that View's
settled transitions (`publish`); a scrape then computes the gauges from the last View at that
moment (ages count up between Views) and reads the counters and histograms the transitions fed.
Nothing is counted per event and nothing is asked of the servers per scrape.

Label values are bounded: `server` is the configured name (else the URL), states, reasons and
kinds come from the vocabulary. Session ids and titles appear only in the opt-in
`ocwatch_session_info`, whose series grow with the fleet (documented as unbounded). An
inventory file's extra labels of a server (at most 10, bounded in size: tui.core.inventory)
are on one series per server, `ocwatch_server_labels`, never on every family: a query joins
them on `server`.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from ..core import words
from ..core.outcome import Outcome, outcome
from ..core.text import plain
from ..core.view import (
    REASONS,
    RUNNING,
    STATE_REASONS,
    STATES,
    Changes,
    ServerInfo,
    SessionRow,
    View,
    running,
)

#: Histogram buckets (seconds): a run lasts seconds to hours; a person answers in minutes.
RUN_BUCKETS: tuple[float, ...] = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400)
WAIT_BUCKETS: tuple[float, ...] = (5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200)
#: Every (state, reason) a row can have: each is served, zero or not, so a query or an alert
#: on a state that has no session yet reads 0, not "no data".
SESSION_STATES: tuple[tuple[str, str], ...] = STATE_REASONS
#: How a run ended (`ocwatch_runs_total{outcome}`): an idle or unknown row's reason, `stale`
#: (the server still says busy; its messages show the run ended), or the bare state.
OUTCOMES: tuple[str, ...] = (*REASONS, "stale", *(s for s in STATES if s not in RUNNING))
#: The label of each outcome: a stale row's is how its messages show the run ended (`stale`
#: when they do not say); a session that has never run, its bare state.
LABEL_OF: dict[Outcome, str] = {
    Outcome.COMPLETED: "completed",
    Outcome.ABORTED: "aborted",
    Outcome.ERROR: "error",
    Outcome.INTERRUPTED: "interrupted",
    Outcome.UNKNOWN: "unknown",
    Outcome.NEVER_RAN: "idle",
    Outcome.INPUT: "input",
    Outcome.STALE_COMPLETED: "completed",
    Outcome.STALE_ABORTED: "aborted",
    Outcome.STALE: "stale",
}


def run_label(row: SessionRow) -> str:
    """The outcome label of a settled row no longer running (its bare state if it has none)."""
    ended = outcome(row)
    return row.state if ended is None else LABEL_OF[ended]


KINDS: tuple[str, ...] = ("permission", "question")

Key = tuple[str, str]


@dataclass(slots=True)
class Histogram:
    """Observations in fixed buckets (counts per bucket, not cumulative, until served)."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        value = max(0.0, value)
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def buckets(self) -> list[tuple[str, float]]:
        """Cumulative buckets as the exposition format wants them, `+Inf` last."""
        out: list[tuple[str, float]] = []
        running = 0
        for bound, count in zip((*map(_le, self.bounds), "+Inf"), self.counts, strict=True):
            running += count
            out.append((bound, running))
        return out


def _le(bound: float) -> str:
    return str(float(bound))


class Metrics(Collector):
    """The exporter's collector. `publish()` runs where the View is made (one thread);
    `collect()` on the scrape's thread; a lock keeps the two apart."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        session_info: bool = False,
        version: str = "",
        extra: Sequence[Callable[[], Iterable[Metric]]] = (),
    ) -> None:
        self.clock = clock
        self.session_info = session_info
        self.version = version
        self.extra = list(extra)  # more families served beside these (e.g. alert deliveries)
        self._lock = threading.Lock()
        self._view: View | None = None
        self._transitions: dict[tuple[str, str, str], int] = {}
        self._runs: dict[tuple[str, str], int] = {}
        self._run_seconds: dict[str, Histogram] = {}
        self._wait_seconds: dict[str, Histogram] = {}
        self._run_start: dict[Key, float] = {}
        self._wait_start: dict[Key, float] = {}
        self._watched: frozenset[str] = frozenset()  # the servers' labels of the last View

    # -- fed by the View's maker --------------------------------------------------------------
    def publish(self, view: View, changes: Changes | None) -> None:
        """Take a new View and its settled transitions (`changes` None: none computed)."""
        names = {s.url: s.label for s in view.servers}
        with self._lock:
            self._view = view
            watched = frozenset(names.values())
            if watched != self._watched:
                self._forget(watched)
            for server in names.values():
                self._run_seconds.setdefault(server, Histogram(RUN_BUCKETS))
                self._wait_seconds.setdefault(server, Histogram(WAIT_BUCKETS))
            for tr in changes.transitions if changes is not None else ():
                label = names.get(tr.key[0])
                if label is None:  # its server left the fleet, and its series with it
                    self._run_start.pop(tr.key, None)
                    self._wait_start.pop(tr.key, None)
                    continue
                server = label
                before, after = tr.before, tr.after
                edge = (server, words.metric(before, "none"), words.metric(after, "gone"))
                self._transitions[edge] = self._transitions.get(edge, 0) + 1
                self._run_edge(tr.key, server, before, after, tr.at)
                self._wait_edge(tr.key, server, before, after, tr.at)

    def _forget(self, watched: frozenset[str]) -> None:
        """Drop the counters and histograms of the servers no longer watched (taken out of an
        inventory, gone from discovery, renamed): a server that leaves ocwatch leaves its
        series too, and an exporter following discovery for months does not keep a series
        for every server it ever saw. (Prometheus reads the counters of one that comes back
        from zero as a reset.)"""
        self._watched = watched
        for edge in [e for e in self._transitions if e[0] not in watched]:
            del self._transitions[edge]
        for mark in [m for m in self._runs if m[0] not in watched]:
            del self._runs[mark]
        for hists in (self._run_seconds, self._wait_seconds):
            for server in [s for s in hists if s not in watched]:
                del hists[server]

    def _run_edge(
        self, key: Key, server: str, before: SessionRow | None, after: SessionRow | None, at: float
    ) -> None:
        if running(after) and not running(before):
            assert after is not None
            self._run_start[key] = after.since if after.since is not None else at
        elif running(before) and not running(after):
            start = self._run_start.pop(key, None)
            if after is None:  # deleted mid-run: no outcome to tell
                return
            mark = (server, run_label(after))
            self._runs[mark] = self._runs.get(mark, 0) + 1
            if start is not None:
                self._run_seconds[server].observe(at - start)

    def _wait_edge(
        self, key: Key, server: str, before: SessionRow | None, after: SessionRow | None, at: float
    ) -> None:
        waits_before = before is not None and before.state == "input"
        waits_after = after is not None and after.state == "input"
        if waits_after and not waits_before:
            assert after is not None
            self._wait_start[key] = after.since if after.since is not None else at
        elif waits_before and not waits_after:
            start = self._wait_start.pop(key, None)
            if start is not None and after is not None:
                self._wait_seconds[server].observe(at - start)

    # -- read by the scrape -------------------------------------------------------------------
    def servers(self) -> tuple[ServerInfo, ...]:
        """The servers of the last View (none before the first)."""
        with self._lock:
            view = self._view
        return view.servers if view is not None else ()

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            view = self._view
            transitions = dict(self._transitions)
            runs = dict(self._runs)
            run_hist = {s: (h.buckets(), h.total) for s, h in self._run_seconds.items()}
            wait_hist = {s: (h.buckets(), h.total) for s, h in self._wait_seconds.items()}
        build = GaugeMetricFamily(
            "ocwatch_build_info", "The exporter's version (value 1).", labels=["version"]
        )
        build.add_metric([self.version], 1)
        yield build
        if view is not None:
            yield from self._from_view(view, self.clock())
        tr = CounterMetricFamily(
            "ocwatch_state_transitions",
            "Settled state changes of sessions (from/to: busy, "
            "retry, input, idle, unknown, stale; none = first seen, gone = deleted).",
            labels=["server", "from", "to"],
        )
        for (server, before, after), n in sorted(transitions.items()):
            tr.add_metric([server, before, after], n)
        yield tr
        ended = CounterMetricFamily(
            "ocwatch_runs",
            "Runs that ended, by how (an idle or unknown reason, or stale).",
            labels=["server", "outcome"],
        )
        for info in view.servers if view is not None else ():
            for ended_as, n in info.unseen_runs:  # ended while events were missed
                mark = (info.label, LABEL_OF[Outcome(ended_as)])
                runs[mark] = runs.get(mark, 0) + n
        for server in sorted(run_hist):
            for label in OUTCOMES:
                ended.add_metric([server, label], runs.get((server, label), 0))
        yield ended
        for name, doc, hists in (
            (
                "ocwatch_run_duration_seconds",
                "How long runs took, start to end "
                "(busy, retrying or waiting for input, until idle, unknown or stale).",
                run_hist,
            ),
            (
                "ocwatch_input_wait_seconds",
                "How long sessions waited for a person to answer a permission or a question.",
                wait_hist,
            ),
        ):
            fam = HistogramMetricFamily(name, doc, labels=["server"])
            for server, (buckets, total) in sorted(hists.items()):
                fam.add_metric([server], buckets, total)
            yield fam
        for more in self.extra:
            yield from more()

    def _from_view(self, view: View, now: float) -> Iterator[Metric]:
        names = {s.url: s.label for s in view.servers}
        counts: dict[tuple[str, str, str], int] = {}
        stale: dict[str, int] = dict.fromkeys(names.values(), 0)
        pending: dict[tuple[str, str], int] = {}
        oldest: dict[tuple[str, str], float] = {}
        seen: set[tuple[str, str]] = set()
        rows = view.rows
        info = GaugeMetricFamily(
            "ocwatch_session_info",
            "One series per session (opt-in: --session-info; "
            "unbounded: ids and titles are labels).",
            labels=["server", "session_id", "parent_id", "title", "state", "reason", "stale"],
        )
        for row in rows.values():
            if row.settling == "loading" and row.state == "unknown":
                continue  # the dashboard's first snapshot has not read its last message yet
            server = names.get(row.server, row.server)
            mark = (server, row.state, row.reason or "")
            counts[mark] = counts.get(mark, 0) + 1
            if row.stale:
                stale[server] = stale.get(server, 0) + 1
            for p in row.pending:
                if (row.server, p.id) in seen:  # rolled up to its ancestors too: count it once
                    continue
                seen.add((row.server, p.id))
                where = (server, p.kind)
                pending[where] = pending.get(where, 0) + 1
                owner = rows.get((row.server, p.session_id), row)
                since = owner.since if owner.state == "input" else row.since
                if since is not None:
                    oldest[where] = max(oldest.get(where, 0.0), now - since)
            if self.session_info:
                info.add_metric(
                    [
                        server,
                        row.id,
                        row.parent_id or "",
                        plain(row.title, 80),
                        row.state,
                        row.reason or "",
                        str(row.stale).lower(),
                    ],
                    1,
                )
        sessions = GaugeMetricFamily(
            "ocwatch_sessions",
            "Sessions by state and reason (a stale session counts as busy: "
            "see ocwatch_sessions_stale).",
            labels=["server", "state", "reason"],
        )
        for server in sorted(names.values()):
            for state, reason in SESSION_STATES:
                sessions.add_metric([server, state, reason], counts.pop((server, state, reason), 0))
        for (server, state, reason), n in sorted(counts.items()):  # anything unforeseen too
            sessions.add_metric([server, state, reason], n)
        yield sessions
        yield _gauge(
            "ocwatch_sessions_stale",
            "Sessions the server reports busy although their run visibly ended (stale-busy).",
            stale,
        )
        req = GaugeMetricFamily(
            "ocwatch_pending_requests",
            "Open permission and question "
            "requests (each once, though it also shows on its ancestors).",
            labels=["server", "kind"],
        )
        age = GaugeMetricFamily(
            "ocwatch_oldest_pending_seconds",
            "How long the longest-waiting open request of each kind has waited (0: none open).",
            labels=["server", "kind"],
        )
        for server in sorted(names.values()):
            for kind in KINDS:
                req.add_metric([server, kind], pending.get((server, kind), 0))
                age.add_metric([server, kind], round(oldest.get((server, kind), 0.0), 3))
        yield req
        yield age
        if self.session_info:
            yield info
        yield from self._servers(view, now)

    @staticmethod
    def _servers(view: View, now: float) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "ocwatch_server_up",
            "1 when the server's sessions are live "
            "(a snapshot is in and the server answers), else 0.",
            labels=["server"],
        )
        srv = GaugeMetricFamily(
            "ocwatch_server_info",
            "The server's URL, protocol (v1, v2; empty until probed) and version (value 1).",
            labels=["server", "url", "version", "protocol"],
        )
        snap_up = GaugeMetricFamily(
            "ocwatch_snapshot_up",
            "1 when the last snapshot of the server succeeded, else 0 (while its event stream "
            "beats, failing snapshots leave the sessions live but unchecked).",
            labels=["server"],
        )
        stream = GaugeMetricFamily(
            "ocwatch_stream_up",
            "1 while the server's event stream is connected, else 0.",
            labels=["server"],
        )
        event_age = GaugeMetricFamily(
            "ocwatch_last_event_age_seconds",
            "Seconds since the last event of the stream (a heartbeat comes every 10 s on V1, "
            "15 s on V2).",
            labels=["server"],
        )
        snap_age = GaugeMetricFamily(
            "ocwatch_snapshot_age_seconds",
            "Seconds since the last snapshot began.",
            labels=["server"],
        )
        malformed = GaugeMetricFamily(
            "ocwatch_snapshot_malformed_records",
            "Records of the last snapshot that could not be read (skipped).",
            labels=["server"],
        )
        reconnects = CounterMetricFamily(
            "ocwatch_stream_reconnects", "Event streams opened after the first.", labels=["server"]
        )
        snapshots = CounterMetricFamily("ocwatch_snapshots", "Snapshots taken.", labels=["server"])
        requests = CounterMetricFamily(
            "ocwatch_server_requests",
            "HTTP requests sent to the server (the load ocwatch puts on it).",
            labels=["server"],
        )
        drift = CounterMetricFamily(
            "ocwatch_drift",
            "Snapshots that disagreed with what the events had said.",
            labels=["server"],
        )
        labelled = Metric(
            "ocwatch_server_labels",
            "The server's extra labels, from the inventory file (value 1; join on server: "
            "`... * on(server) group_left(team) ocwatch_server_labels`).",
            "gauge",
        )
        skipped = CounterMetricFamily(
            "ocwatch_events_skipped",
            "Stream frames not used: malformed (unreadable) or unknown_type.",
            labels=["server", "reason"],
        )
        for s in sorted(view.servers, key=lambda s: s.label):
            name = s.label
            up.add_metric([name], int(s.reachable))
            srv.add_metric([name, s.url, plain(s.version or "", 80), s.protocol or ""], 1)
            extra = {k: v for k, v in s.labels if k != "server"}
            labelled.add_sample("ocwatch_server_labels", {"server": name, **extra}, 1)
            stream.add_metric([name], int(s.connected))
            snap_up.add_metric([name], int(s.error is None and s.snapshot_at is not None))
            if s.last_event_at is not None:
                event_age.add_metric([name], round(max(0.0, now - s.last_event_at), 3))
            if s.snapshot_at is not None:
                snap_age.add_metric([name], round(max(0.0, now - s.snapshot_at), 3))
            malformed.add_metric([name], s.malformed)
            reconnects.add_metric([name], s.reconnects)
            snapshots.add_metric([name], s.snapshots)
            requests.add_metric([name], s.requests)
            drift.add_metric([name], s.drift_count)
            skipped.add_metric([name, "malformed"], s.skipped_events)
            skipped.add_metric([name, "unknown_type"], s.unknown_events)
        yield from (
            up,
            srv,
            labelled,
            snap_up,
            stream,
            event_age,
            snap_age,
            malformed,
            reconnects,
            snapshots,
            requests,
            drift,
            skipped,
        )


def _gauge(name: str, doc: str, values: dict[str, int]) -> GaugeMetricFamily:
    fam = GaugeMetricFamily(name, doc, labels=["server"])
    for server, n in sorted(values.items()):
        fam.add_metric([server], n)
    return fam
