"""What ships in deploy/: the alert rules pass promtool (check and their unit tests), and the
Grafana dashboard is a well-formed dashboard whose every query names metrics the exporter serves.
(tests/integration/test_prometheus.py runs both against a real Prometheus.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.app.views import NOW, A, row
from tui.core.view import ServerInfo, TransitionFeed, View
from tui.export.metrics import Metrics

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RULES = DEPLOY / "prometheus" / "ocwatch-rules.yml"
DASHBOARD = DEPLOY / "grafana" / "ocwatch.json"
#: PromQL functions and keywords (what else an expression's bare words may be)
PROMQL = {
    "sum",
    "max",
    "min",
    "count",
    "avg",
    "rate",
    "increase",
    "histogram_quantile",
    "label_values",
    "unless",
    "or",
    "and",
}


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing: .ci/run installs the prometheus package")
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    return found


def served_names() -> set[str]:
    """Every sample name the exporter serves (histogram buckets, counters' _total included)."""
    metrics = Metrics(clock=lambda: NOW, session_info=True)
    view = View(
        NOW,
        (ServerInfo(url=A, reachable=True, connected=True, last_event_at=NOW, snapshot_at=NOW),),
        {(A, "s"): row("s", "t", "busy")},
    )
    metrics.publish(view, TransitionFeed().feed(view))
    registry = CollectorRegistry()
    registry.register(metrics)
    text = generate_latest(registry).decode()
    return {s.name for f in text_string_to_metric_families(text) for s in f.samples}


def metric_names(expr: str) -> set[str]:
    """The metric names of a PromQL expression: its bare words once strings, label matchers,
    ranges and `by (...)`/`on (...)` groups are removed, less functions and keywords."""
    expr = re.sub(r'"[^"]*"|\{[^}]*\}|\[[^\]]*\]', "", expr)
    expr = re.sub(r"\b(?:by|on|without|ignoring)\s*\([^)]*\)", "", expr)
    return set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr)) - PROMQL


def test_the_rules_pass_promtool_check_and_their_unit_tests() -> None:
    tool = promtool()
    checked = subprocess.run(
        [tool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "6 rules found" in checked.stdout
    tested = subprocess.run(
        [tool, "test", "rules", RULES.with_suffix(".test.yml").name],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=RULES.parent,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_rules_name_only_served_metrics() -> None:
    served = served_names()
    exprs = re.findall(
        r"^\s+expr: (?:>-\n)?(.+?)(?=\n\s+(?:for|labels):)", RULES.read_text(), re.M | re.S
    )
    assert len(exprs) == 6
    for expr in exprs:
        names = metric_names(expr)
        assert names and names <= served, (expr, names - served)


def test_the_dashboard_is_well_formed_and_queries_served_metrics() -> None:
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] and dash["title"] and dash["schemaVersion"] >= 36
    variables = {v["name"] for v in dash["templating"]["list"]}
    assert variables == {"datasource", "server"}
    served = served_names()
    ids: set[int] = set()
    cells: set[tuple[int, int]] = set()
    queried: set[str] = set()
    for panel in dash["panels"]:
        assert panel["id"] not in ids
        ids.add(panel["id"])
        pos = panel["gridPos"]
        assert pos["x"] >= 0 and pos["x"] + pos["w"] <= 24 and pos["h"] >= 1
        for x in range(pos["x"], pos["x"] + pos["w"]):  # no two panels overlap
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, panel["title"]
                cells.add((x, y))
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = metric_names(target["expr"])
            assert names and names <= served, (panel["title"], names - served)
            queried |= names
    # every part the issue asks for is on it: states, input, stale, durations, server health
    for needed in (
        "ocwatch_sessions",
        "ocwatch_pending_requests",
        "ocwatch_sessions_stale",
        "ocwatch_run_duration_seconds_bucket",
        "ocwatch_server_up",
        "ocwatch_stream_up",
        "ocwatch_last_event_age_seconds",
    ):
        assert needed in queried


def test_the_name_check_catches_a_metric_that_is_not_served() -> None:
    assert metric_names('sum by (state) (ocwatch_sesions{server=~"$server"})') == {
        "ocwatch_sesions"
    }
    assert metric_names("histogram_quantile(0.5, sum by (le) (rate(x_bucket[5m])))") == {"x_bucket"}
