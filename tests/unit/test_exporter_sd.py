"""The exporter and an inventory (issue 44 items 2 and 3): each server's extra labels on one
series (`ocwatch_server_labels`), one server's series for Prometheus's multi-target pattern
(`/metrics?target=host:port`, what a file_sd job on the inventory scrapes), and `/sd`, the
exporter's own target in the format of Prometheus's `http_sd_configs`."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import replace

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.app.views import NOW, A, B, row
from tui.core.view import ServerInfo, TransitionFeed, View
from tui.export.metrics import Metrics
from tui.export.serve import start_exporter

ALPHA = ServerInfo(url=A, name="alpha", reachable=True, labels=(("team", "infra"),))
BETA = ServerInfo(url=B, reachable=True, labels=(("region", "eu"), ("team", "web")))


def fed(*servers: ServerInfo) -> Metrics:
    metrics = Metrics(clock=lambda: NOW, version="9.9")
    rows = [replace(row("s1", "x", "busy"), server=A), replace(row("s2", "y", "idle"), server=B)]
    view = View(NOW, servers, {r.key: r for r in rows})
    metrics.publish(view, TransitionFeed().feed(view))
    return metrics


def text_of(metrics: Metrics) -> str:
    registry = CollectorRegistry()
    registry.register(metrics)
    return generate_latest(registry).decode()


def test_each_server_s_labels_are_one_series_joinable_on_server() -> None:
    text = text_of(fed(ALPHA, BETA, ServerInfo(url="http://h:1", name="bare")))
    got = {
        tuple(sorted(s.labels.items()))
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "ocwatch_server_labels"
    }
    assert got == {
        (("server", "alpha"), ("team", "infra")),
        (("region", "eu"), ("server", B), ("team", "web")),
        (("server", "bare"),),  # every server has one: a join keeps the servers with none
    }
    assert 'ocwatch_sessions{reason="",server="alpha",state="busy"}' in text  # no extra labels
    assert "team=" not in text.split("ocwatch_server_labels")[0]
    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing: .ci/run installs the prometheus package")
        return
    lint = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_one_server_s_series_for_prometheus_s_multi_target_pattern() -> None:
    exporter = start_exporter(fed(ALPHA, BETA), "127.0.0.1:0")
    try:
        base = exporter.url
        for target in ("127.0.0.1:4096", A, "alpha"):
            answer = httpx.get(base, params={"target": target}, timeout=5)
            assert answer.status_code == 200, answer.text
            servers = {
                s.labels.get("server")
                for f in text_string_to_metric_families(answer.text)
                for s in f.samples
            }
            assert servers == {"alpha"}  # its own series only (no build or process families)
            assert 'ocwatch_server_labels{server="alpha",team="infra"} 1.0' in answer.text
        missing = httpx.get(base, params={"target": "10.9.9.9:1"}, timeout=5)
        assert missing.status_code == 404
        assert "does not watch '10.9.9.9:1'" in missing.text
        whole = httpx.get(base, timeout=5).text  # without a target: everything, as before
        assert "ocwatch_build_info" in whole and 'server="alpha"' in whole and B in whole
    finally:
        exporter.close()


def test_sd_is_the_exporter_s_own_target_for_http_sd_configs() -> None:
    secret = replace(BETA, url="http://127.0.0.1:4097")
    exporter = start_exporter(fed(ALPHA, secret), "127.0.0.1:0")
    try:
        sd = exporter.url.replace("/metrics", "/sd")
        answer = httpx.get(sd, timeout=5)
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/json"
        own = f"127.0.0.1:{exporter.port}"
        assert answer.json() == [
            {
                "targets": [own],  # as its client reached it (the Host header)
                "labels": {
                    "__meta_ocwatch_version": "9.9",
                    "__meta_ocwatch_servers": "2",
                    "__meta_ocwatch_label_region": ",eu,",
                    "__meta_ocwatch_label_team": ",infra,web,",
                },
            }
        ]
        assert "4096" not in answer.text  # the watched servers' addresses are not in it
        named = httpx.get(sd, headers={"Host": "ocwatch.example:9464"}, timeout=5).json()
        assert named[0]["targets"] == ["ocwatch.example:9464"]
        odd = httpx.get(sd, headers={"Host": "x\\ty/evil"}, timeout=5)
        assert odd.status_code == 200 and odd.json() == []  # not an address: no target
        assert httpx.post(sd, timeout=5).status_code == 404
    finally:
        exporter.close()


def test_the_shipped_scrape_config_is_valid() -> None:
    from pathlib import Path

    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing: .ci/run installs the prometheus package")
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    shipped = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "prometheus.yml"
    check = subprocess.run(
        [promtool, "check", "config", str(shipped)], capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 0, check.stdout + check.stderr
    text = shipped.read_text()
    assert "http_sd_configs" in text and "/sd" in text and "file_sd_configs" in text


def test_a_server_that_leaves_takes_its_series_with_it() -> None:
    """Taken out of the inventory (or gone from discovery), a server's counters and
    histograms leave the exporter too: seen by hand, they stayed after the file's edit, and an
    exporter following discovery would keep a series for every server it ever saw."""
    metrics = Metrics(clock=lambda: NOW, version="9.9")
    feed = TransitionFeed()
    busy = [replace(row("s1", "x", "busy"), server=A), replace(row("s2", "y", "busy"), server=B)]
    idle = [replace(r, state="idle", reason="completed", since=NOW) for r in busy]
    for rows in (busy, idle):
        view = View(NOW, (ALPHA, BETA), {r.key: r for r in rows})
        metrics.publish(view, feed.feed(view))
    assert 'server="alpha"' in text_of(metrics) and f'server="{B}"' in text_of(metrics)
    view = View(NOW + 1, (BETA,), {idle[1].key: idle[1]})  # alpha taken out: its row gone
    metrics.publish(view, feed.feed(view))
    text = text_of(metrics)
    assert 'server="alpha"' not in text and A not in text  # (nor as its URL)
    assert f'ocwatch_runs_total{{outcome="completed",server="{B}"}} 1.0' in text
