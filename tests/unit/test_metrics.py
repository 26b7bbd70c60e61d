"""The exporter's numbers: gauges from the last View at scrape time, counters and histograms from
the settled transitions, label values bounded, the exposition readable by Prometheus' parser."""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.app.views import NOW, A, row
from tui.core.client import OcwatchError
from tui.core.view import Pending, ServerInfo, SessionRow, TransitionFeed, View
from tui.export.metrics import Metrics
from tui.export.serve import parse_listen, start_exporter

Sample = tuple[str, tuple[tuple[str, str], ...]]


def scrape(metrics: Metrics) -> dict[Sample, float]:
    """Every sample, by name and sorted labels, parsed back by prometheus_client's parser."""
    registry = CollectorRegistry()
    registry.register(metrics)
    text = generate_latest(registry).decode()
    out: dict[Sample, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples: dict[Sample, float], name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


class Feeder:
    """Views one after another, as a Fleet makes them, handed to the metrics."""

    def __init__(self, metrics: Metrics, server: ServerInfo | None = None) -> None:
        self.metrics = metrics
        self.feed = TransitionFeed()
        self.server = server or ServerInfo(url=A, name="alpha", reachable=True, connected=True)

    def show(self, at: float, *rows: SessionRow) -> None:
        view = View(NOW + at, (self.server,), {r.key: r for r in rows})
        self.metrics.publish(view, self.feed.feed(view))


def test_a_run_is_counted_by_its_transitions_and_timed() -> None:
    clock = [NOW]
    metrics = Metrics(clock=lambda: clock[0])
    f = Feeder(metrics)
    ask = Pending("permission", "per_1", "s1", "bash: npm test")
    f.show(0, row("s1", "run", "idle", reason="completed", since=-100))
    f.show(10, row("s1", "run", "busy", since=10))
    f.show(40, row("s1", "run", "input", pending=(ask,), since=40))
    f.show(70, row("s1", "run", "busy", since=70))
    f.show(100, row("s1", "run", "idle", reason="error", since=100))
    got = scrape(metrics)
    edges = {
        (lbl["from"], lbl["to"]): v
        for (name, labels), v in got.items()
        if name == "ocwatch_state_transitions_total"
        for lbl in [dict(labels)]
    }
    assert edges == {
        ("none", "idle"): 1,
        ("idle", "busy"): 1,
        ("busy", "input"): 1,
        ("input", "busy"): 1,
        ("busy", "idle"): 1,
    }
    assert value(got, "ocwatch_runs_total", server="alpha", outcome="error") == 1
    assert value(got, "ocwatch_runs_total", server="alpha", outcome="completed") == 0
    # the run lasted from busy (10) to idle (100), waiting in between did not end it
    assert value(got, "ocwatch_run_duration_seconds_count", server="alpha") == 1
    assert value(got, "ocwatch_run_duration_seconds_sum", server="alpha") == 90
    assert value(got, "ocwatch_run_duration_seconds_bucket", server="alpha", le="60.0") == 0
    assert value(got, "ocwatch_run_duration_seconds_bucket", server="alpha", le="120.0") == 1
    assert value(got, "ocwatch_input_wait_seconds_sum", server="alpha") == 30
    assert value(got, "ocwatch_input_wait_seconds_count", server="alpha") == 1


def test_a_session_first_seen_in_a_state_is_no_run_that_ended() -> None:
    metrics = Metrics(clock=lambda: NOW)
    f = Feeder(metrics)
    f.show(
        0,
        row("s1", "failed before", "idle", reason="error"),
        row("s2", "stale", "busy", stale=True, ended="completed"),
    )
    got = scrape(metrics)
    assert all(v == 0 for (name, _), v in got.items() if name == "ocwatch_runs_total")
    assert value(got, "ocwatch_run_duration_seconds_count", server="alpha") == 0


def test_a_run_that_goes_stale_ends_as_its_messages_show() -> None:
    metrics = Metrics(clock=lambda: NOW)
    f = Feeder(metrics)
    f.show(0, row("s1", "x", "busy", since=0))
    f.show(20, row("s1", "x", "busy", stale=True, ended="completed", since=0))
    f.show(30, row("s1", "x", "idle", reason="completed", since=30))  # no second end
    got = scrape(metrics)
    assert value(got, "ocwatch_runs_total", server="alpha", outcome="completed") == 1
    assert value(got, "ocwatch_run_duration_seconds_count", server="alpha") == 1
    assert (
        value(
            got,
            "ocwatch_state_transitions_total",
            server="alpha",
            **{"from": "busy", "to": "stale"},
        )
        == 1
    )
    assert (
        value(
            got,
            "ocwatch_state_transitions_total",
            server="alpha",
            **{"from": "stale", "to": "idle"},
        )
        == 1
    )


def test_gauges_are_the_view_at_scrape_time() -> None:
    clock = [NOW]
    metrics = Metrics(clock=lambda: clock[0])
    server = ServerInfo(
        url=A,
        name="alpha",
        version="1.18.33",
        reachable=True,
        connected=True,
        last_event_at=NOW - 4,
        snapshot_at=NOW - 20,
        drift_count=2,
        skipped_events=3,
        unknown_events=1,
        reconnects=5,
        snapshots=7,
        requests=41,
    )
    f = Feeder(metrics, server)
    ask = Pending("permission", "per_1", "child", "bash: npm test")
    question = Pending("question", "que_1", "s3", "Which region?")
    f.show(
        0,
        row("parent", "p", "input", pending=(ask,), since=-10),  # rolled up from the child
        row("child", "c", "input", pending=(ask,), since=-300, parent_id="parent"),
        row("s3", "q", "input", pending=(question,), since=-50),
        row("s4", "b", "busy", stale=True, ended="completed"),
        row("s5", "b", "busy"),
        row("s6", "i", "idle", reason="aborted"),
        row("s7", "u", "unknown", reason="interrupted"),
    )
    clock[0] = NOW + 30  # half a minute after the View: ages count on
    got = scrape(metrics)
    assert value(got, "ocwatch_sessions", server="alpha", state="input", reason="") == 3
    assert value(got, "ocwatch_sessions", server="alpha", state="busy", reason="") == 2
    assert value(got, "ocwatch_sessions", server="alpha", state="idle", reason="aborted") == 1
    assert value(got, "ocwatch_sessions", server="alpha", state="idle", reason="error") == 0
    assert (
        value(got, "ocwatch_sessions", server="alpha", state="unknown", reason="interrupted") == 1
    )
    assert value(got, "ocwatch_sessions_stale", server="alpha") == 1
    # the child's request shows on the parent too: one request, waiting since the child asked
    assert value(got, "ocwatch_pending_requests", server="alpha", kind="permission") == 1
    assert value(got, "ocwatch_oldest_pending_seconds", server="alpha", kind="permission") == 330
    assert value(got, "ocwatch_oldest_pending_seconds", server="alpha", kind="question") == 80
    assert value(got, "ocwatch_last_event_age_seconds", server="alpha") == 34
    assert value(got, "ocwatch_snapshot_age_seconds", server="alpha") == 50
    assert value(got, "ocwatch_server_up", server="alpha") == 1
    assert value(got, "ocwatch_stream_up", server="alpha") == 1
    assert (
        value(got, "ocwatch_server_info", server="alpha", url=A, version="1.18.33", protocol="")
        == 1
    )
    assert value(got, "ocwatch_drift_total", server="alpha") == 2
    assert value(got, "ocwatch_snapshots_total", server="alpha") == 7
    assert value(got, "ocwatch_server_requests_total", server="alpha") == 41
    assert value(got, "ocwatch_stream_reconnects_total", server="alpha") == 5
    assert value(got, "ocwatch_events_skipped_total", server="alpha", reason="malformed") == 3
    assert value(got, "ocwatch_events_skipped_total", server="alpha", reason="unknown_type") == 1


def test_no_session_id_or_title_is_a_label_unless_asked() -> None:
    hostile = 'evil\x1b]0;owned\x07\n"} 1\nocwatch_server_up 0 # [bold]x'
    for opted in (False, True):
        metrics = Metrics(clock=lambda: NOW, session_info=opted)
        Feeder(metrics).show(0, row("ses_secret", hostile, "busy"))
        got = scrape(metrics)
        labels = {v for (_, lbls) in got for _, v in lbls}
        assert ("ses_secret" in labels) is opted
        if opted:
            (info,) = [dict(lbls) for (name, lbls) in got if name == "ocwatch_session_info"]
            assert "\x1b" not in info["title"] and "\n" not in info["title"]
            assert info["state"] == "busy"
        # the title could not forge a sample: the server is still up
        assert value(got, "ocwatch_server_up", server="alpha") == 1


def test_the_servers_version_is_a_plain_label() -> None:
    """The version the server reports is its text: escape sequences (a clipboard write, a
    screen clear), bidi overrides and 300 characters of it would reach whoever curls the
    exporter in a terminal (found by a review)."""
    version = "1.0\x1b]52;c;b3duZWQ=\x07\x1b[2J\u202e\x9b" + "x" * 300
    metrics = Metrics(clock=lambda: NOW)
    server = ServerInfo(url=A, name="alpha", reachable=True, connected=True, version=version)
    Feeder(metrics, server).show(0)
    (info,) = [dict(lbls) for (name, lbls) in scrape(metrics) if name == "ocwatch_server_info"]
    assert info["version"].startswith("1.0") and len(info["version"]) <= 80
    assert not any(c in info["version"] for c in "\x1b\x07\u202e\x9b")


def test_an_unreachable_server_reads_down_and_keeps_its_counters() -> None:
    metrics = Metrics(clock=lambda: NOW)
    down = ServerInfo(url=A, reachable=False, error="connection refused", reconnects=2)
    Feeder(metrics, down).show(0)
    got = scrape(metrics)
    assert value(got, "ocwatch_server_up", server=A) == 0  # no name: called by its URL
    assert value(got, "ocwatch_stream_up", server=A) == 0
    assert value(got, "ocwatch_stream_reconnects_total", server=A) == 2
    assert ("ocwatch_last_event_age_seconds", (("server", A),)) not in got


def test_a_session_deleted_mid_run_ends_no_run() -> None:
    metrics = Metrics(clock=lambda: NOW)
    f = Feeder(metrics)
    f.show(0, row("s1", "x", "busy", since=0))
    f.show(5)
    got = scrape(metrics)
    assert (
        value(
            got, "ocwatch_state_transitions_total", server="alpha", **{"from": "busy", "to": "gone"}
        )
        == 1
    )
    assert value(got, "ocwatch_run_duration_seconds_count", server="alpha") == 0
    assert all(v == 0 for (name, _), v in got.items() if name == "ocwatch_runs_total")


def test_the_exporter_serves_over_http() -> None:
    metrics = Metrics(clock=lambda: NOW, version="9.9")
    Feeder(metrics).show(0, replace(row("s1", "x", "busy"), server=A))
    server = start_exporter(metrics, "127.0.0.1:0")
    try:
        answer = httpx.get(server.url, timeout=5)
        assert answer.status_code == 200
        assert 'ocwatch_build_info{version="9.9"} 1.0' in answer.text
        assert 'ocwatch_sessions{reason="",server="alpha",state="busy"} 1.0' in answer.text
        assert "process_resident_memory_bytes" in answer.text
        assert httpx.get(server.url.replace("/metrics", "/nope"), timeout=5).status_code == 404
    finally:
        server.close()


@pytest.mark.parametrize(
    ("given", "want"),
    [
        ("127.0.0.1:9464", ("127.0.0.1", 9464)),
        (":9000", ("0.0.0.0", 9000)),
        ("9100", ("127.0.0.1", 9100)),
        ("[::1]:9464", ("::1", 9464)),
        ("localhost:1", ("localhost", 1)),
    ],
)
def test_listen_addresses(given: str, want: tuple[str, int]) -> None:
    assert parse_listen(given) == want


@pytest.mark.parametrize("bad", ["host:port", "127.0.0.1:70000", "::1:9464", ""])
def test_a_bad_listen_address_is_one_clear_line(bad: str) -> None:
    with pytest.raises(OcwatchError) as got:
        parse_listen(bad)
    assert "--listen" in got.value.message


def test_a_port_in_use_is_one_clear_line() -> None:
    metrics = Metrics()
    server = start_exporter(metrics, "127.0.0.1:0")
    try:
        with pytest.raises(OcwatchError) as got:
            start_exporter(metrics, f"127.0.0.1:{server.port}")
        assert "cannot listen on" in got.value.message
    finally:
        server.close()
    again = start_exporter(metrics, f"127.0.0.1:{server.port}")  # the port is free once closed
    again.close()


async def test_a_server_that_never_answers_holds_no_other_server() -> None:
    import asyncio

    from tests.fakes import FakeAPI, wire_session
    from tui.core.fleet import Fleet
    from tui.export.serve import follow

    good = FakeAPI(sessions=[wire_session("ses_good")])

    async def handle(request: httpx.Request) -> httpx.Response:
        if request.url.host == "stuck":
            await asyncio.sleep(3600)  # accepts, never answers
        return good.handle(request)

    fleet = Fleet(
        ["http://stuck:4096", "http://good:4096"],
        transport=httpx.MockTransport(handle),
        names={"http://good:4096": "good"},
    )
    metrics = Metrics()
    stop = asyncio.Event()
    seen = asyncio.Event()

    def observe(view: View, _changes: object) -> None:
        if any(k[1] == "ses_good" for k in view.rows):
            seen.set()
            stop.set()

    runner = asyncio.create_task(follow(fleet, [metrics.publish, observe], stop=stop))
    await asyncio.wait_for(seen.wait(), 10)
    await asyncio.wait_for(runner, 10)
    got = scrape(metrics)
    assert value(got, "ocwatch_server_up", server="good") == 1
    assert value(got, "ocwatch_server_up", server="http://stuck:4096") == 0
    assert value(got, "ocwatch_sessions", server="good", state="idle", reason="") == 1


def test_the_log_says_a_server_lost_and_back_once_each_naming_it_once() -> None:
    """`ocwatch metrics` on stderr: a server lost, then back, once each; its URL once (the
    error named it already: it read `http://…:1: http://…:1: cannot connect`)."""
    import io

    from tui.cli.metrics import server_log

    err = io.StringIO()
    observe = server_log(err)
    up = ServerInfo(url=A, reachable=True)
    down = ServerInfo(url=A, reachable=False, error=f"{A}: cannot connect (refused)")
    named = ServerInfo(url=A, name="prod", reachable=False, error=f"{A}: cannot connect")
    for s in (up, down, down, up, named):
        observe(View(NOW, (s,), {}), None)
    assert err.getvalue().splitlines() == [
        f"ocwatch metrics: {A}: cannot connect (refused)",
        f"ocwatch metrics: {A}: reachable again",
        f"ocwatch metrics: prod: {A}: cannot connect",
    ]


def test_snapshots_failing_while_the_stream_beats_read_snapshot_up_0() -> None:
    """Issue 40: 150 s of HTTP 500 on every REST route while the stream beat said nothing
    (`server_up 1`). `ocwatch_snapshot_up` says it (OpenCodeSnapshotsFailing fires on it)."""
    metrics = Metrics(clock=lambda: NOW)
    failing = ServerInfo(
        url=A,
        name="alpha",
        reachable=True,
        connected=True,
        last_event_at=NOW,
        snapshot_at=NOW - 90,
        error=f"{A} GET /session/status: HTTP 500",
        error_since=NOW - 60,
    )
    Feeder(metrics, failing).show(0)
    got = scrape(metrics)
    assert value(got, "ocwatch_server_up", server="alpha") == 1
    assert value(got, "ocwatch_snapshot_up", server="alpha") == 0
    fine = ServerInfo(url=A, name="alpha", reachable=True, connected=True, snapshot_at=NOW)
    Feeder(metrics, fine).show(0)
    assert value(scrape(metrics), "ocwatch_snapshot_up", server="alpha") == 1
