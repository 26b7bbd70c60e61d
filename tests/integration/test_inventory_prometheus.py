"""One inventory drives ocwatch and Prometheus (issue 44 items 2 and 3), as an operator runs
them: `ocwatch metrics --servers-file servers.json` and a real Prometheus with the shipped
deploy/prometheus/prometheus.yml (file_sd_configs on the same file, http_sd_configs on
ocwatch's /sd). A server added to the file appears in ocwatch's metrics and among
Prometheus's targets, and one removed leaves both, with neither restarted. The servers are
demo servers (real HTTP + SSE, one with a password given by password_file)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.cli_env import cli_env
from tui.demo.server import DemoServer

from .driver import wait_until
from .test_prometheus import Prometheus, exporter, need, prometheus_on, value

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "deploy" / "prometheus" / "prometheus.yml"
RULES = ROOT / "deploy" / "prometheus" / "ocwatch-rules.yml"


@contextlib.contextmanager
def demo_servers(*servers: DemoServer) -> Iterator[None]:
    """The servers running on an event loop of their own thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        for s in servers:
            asyncio.run_coroutine_threadsafe(s.start(), loop).result(30)
        yield
    finally:
        for s in servers:
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(s.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def shipped_config(exporter: str, inventory: Path) -> str:
    """The shipped scrape config, pointed at this exporter and inventory, refreshed fast."""
    text = SHIPPED.read_text()
    for old, new in (
        ("127.0.0.1:9464", exporter),
        ("/etc/ocwatch/servers.json", str(inventory)),
        ("refresh_interval: 1m", "refresh_interval: 1s"),
        ("scrape_interval: 15s", "scrape_interval: 1s"),
    ):
        assert old in text, old
        text = text.replace(old, new)
    return text


@contextlib.contextmanager
def prometheus_with(tmp_path: Path, config: str) -> Iterator[Prometheus]:
    (tmp_path / "ocwatch-rules.yml").write_text(RULES.read_text())
    with prometheus_on(tmp_path, config) as prom:
        yield prom


def targets(prom: Prometheus, job: str) -> dict[str, dict[str, Any]]:
    """The active targets of a job, by instance."""
    got = prom.api("/api/v1/targets", state="active")["activeTargets"]
    return {t["labels"]["instance"]: t for t in got if t["labels"]["job"] == job}


def test_one_inventory_drives_ocwatch_and_prometheus_live(tmp_path: Path) -> None:
    need("prometheus")
    one = DemoServer(speed=50, heartbeat=0.5)
    two = DemoServer(speed=50, heartbeat=0.5, password="two-secret")
    with demo_servers(one, two):
        at_one, at_two = one.url.split("//")[1], two.url.split("//")[1]
        (tmp_path / "two.pw").write_text("two-secret\n")
        inventory = tmp_path / "servers.json"
        first = [{"targets": [at_one], "labels": {"name": "one", "team": "infra"}}]
        inventory.write_text(json.dumps(first))
        with exporter(inventory, cli_env(), ("one",), "--servers-file", str(inventory)) as ex:
            proc, err = ex.proc, ex.stderr
            address = ex.url.removeprefix("http://").removesuffix("/metrics")

            def scrape() -> dict[Any, float]:
                assert proc.poll() is None, err.read_text()
                return ex.scrape()

            def servers_in_ocwatch() -> set[str]:
                return {
                    dict(labels)["server"]
                    for name, labels in scrape()
                    if name == "ocwatch_server_up"
                }

            wait_until(
                lambda: value(scrape(), "ocwatch_server_up", server="one") == 1,
                60,
                what="ocwatch reads the inventory's first server",
            )
            with prometheus_with(tmp_path, shipped_config(address, inventory)) as prom:

                def opencode_targets_up() -> dict[str, str]:
                    return {k: t["health"] for k, t in targets(prom, "opencode").items()}

                wait_until(
                    lambda: opencode_targets_up() == {at_one: "up"},
                    60,
                    what="Prometheus scrapes the inventory's server through ocwatch",
                )
                found = targets(prom, "ocwatch")
                assert list(found) == [address]  # found through /sd
                assert found[address]["discoveredLabels"]["__meta_ocwatch_servers"] == "1"
                labelled = targets(prom, "opencode")[at_one]["labels"]
                assert labelled["name"] == "one" and labelled["team"] == "infra"
                assert "password_file" not in labelled

                # a second server added to the file, with its password by reference
                inventory.write_text(
                    json.dumps(
                        [
                            *first,
                            {
                                "targets": [at_two],
                                "labels": {
                                    "name": "two",
                                    "team": "web",
                                    "password_file": str(tmp_path / "two.pw"),
                                },
                            },
                        ]
                    )
                )
                wait_until(
                    lambda: value(scrape(), "ocwatch_server_up", server="two") == 1,
                    60,
                    what="ocwatch watches (and logs in to) the added server",
                )
                assert value(scrape(), "ocwatch_server_labels", server="two", team="web") == 1
                wait_until(
                    lambda: opencode_targets_up() == {at_one: "up", at_two: "up"},
                    60,
                    what="Prometheus scrapes the added server",
                )
                wait_until(
                    lambda: (
                        targets(prom, "ocwatch")[address]["discoveredLabels"].get(
                            "__meta_ocwatch_servers"
                        )
                        == "2"
                    ),
                    60,
                    what="ocwatch's /sd counts two servers",
                )
                wait_until(
                    lambda: prom.query('opencode_server_up{name="two",team="web"} == 1'),
                    60,
                    what="the added server's series in Prometheus, with its inventory labels",
                )

                # the first server taken out of the file
                inventory.write_text(
                    json.dumps(
                        [
                            {
                                "targets": [at_two],
                                "labels": {
                                    "name": "two",
                                    "team": "web",
                                    "password_file": str(tmp_path / "two.pw"),
                                },
                            }
                        ]
                    )
                )
                wait_until(
                    lambda: servers_in_ocwatch() == {"two"},
                    60,
                    what="ocwatch stops watching the removed server",
                )
                wait_until(
                    lambda: opencode_targets_up() == {at_two: "up"},
                    60,
                    what="Prometheus drops the removed server's target",
                )
                assert proc.poll() is None  # never restarted
                said = err.read_text()
                assert "two-secret" not in said
                assert "was taken out of the servers file" in said, said
