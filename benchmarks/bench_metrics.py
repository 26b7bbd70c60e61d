"""Benchmark: the Prometheus exporter (issue 13).

    python benchmarks/bench_metrics.py [--servers 10] [--sessions 500] [--scrapes 30]

1. Scrape time: a View of `servers` x `sessions` (the realistic mix of bench_derive: busy,
   retrying, stale, waiting, failed, interrupted, completed; one transition each) published to
   the collector, then `GET /metrics` over HTTP against the real exporter thread, `scrapes`
   times: min / median / max [target < 50 ms at 10 x 500]. The requests the servers saw during
   20 scrapes of the RSS setup are counted [target: none].
2. RSS: the exporter's own process watching servers (in-process fake servers speaking the wire
   format through httpx MockTransport) holding `servers` x `sessions` sessions in all, after the
   first snapshots and a few Views; reported as the process's RSS, and the RSS the fake servers'
   data took before the monitors started.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_derive import world  # noqa: E402
from tests.builders import T0  # noqa: E402
from tests.fakes import FakeAPI, wire_session  # noqa: E402
from tests.procstat import rss_mb  # noqa: E402
from tui.core.derive import derive_server  # noqa: E402
from tui.core.fleet import Fleet  # noqa: E402
from tui.core.journal import Journal  # noqa: E402
from tui.core.settings import Settings  # noqa: E402
from tui.core.view import ServerInfo, TransitionFeed, View  # noqa: E402
from tui.export.metrics import Metrics  # noqa: E402
from tui.export.serve import start_exporter  # noqa: E402


def big_view(servers: int, sessions: int) -> View:
    base, _ = world(sessions)
    rows = {}
    infos = []
    for k in range(servers):
        url = f"http://server-{k}:4096"
        snapshot = dataclasses.replace(base, server=url)
        rows.update(derive_server(snapshot, Journal(5000).facts(), T0, Settings()))
        infos.append(
            ServerInfo(
                url=url,
                name=f"s{k}",
                version="1.18.33",
                reachable=True,
                connected=True,
                last_event_at=T0 - 2,
                snapshot_at=T0 - 10,
            )
        )
    return View(T0, tuple(infos), rows)


def scrape_times(servers: int, sessions: int, scrapes: int) -> tuple[list[float], int, int]:
    view = big_view(servers, sessions)
    metrics = Metrics(clock=lambda: T0 + 5)
    feed = TransitionFeed()
    metrics.publish(view, feed.feed(view))
    exporter = start_exporter(metrics, "127.0.0.1:0")
    url = exporter.url
    times = []
    size = 0
    with httpx.Client() as client:
        client.get(url)
        for _ in range(scrapes):
            start = time.perf_counter()
            answer = client.get(url)
            times.append(time.perf_counter() - start)
            size = len(answer.content)
    exporter.close()
    return times, size, len(view.rows)


async def exporter_rss(servers: int, sessions: int) -> tuple[float, float, float, int, int]:
    base = rss_mb()
    apis = []
    for k in range(servers):
        wire = [
            wire_session(f"ses_{k}_{i:05d}", f"/p/{'ab'[i % 2]}", updated=1e12 + i)
            for i in range(sessions)
        ]
        messages = {
            s["id"]: [
                {
                    "info": {
                        "id": "msg_1",
                        "sessionID": s["id"],
                        "role": "assistant",
                        "time": {"created": 1_000, "completed": 2_000},
                        "finish": "stop",
                    },
                    "parts": [],
                }
            ]
            for s in wire
        }
        apis.append(
            FakeAPI(
                sessions=wire,
                messages=messages,
                projects=[{"id": "a", "worktree": "/p/a"}, {"id": "b", "worktree": "/p/b"}],
            )
        )
    data = rss_mb()

    def route(request: httpx.Request) -> httpx.Response:
        return apis[int(request.url.host.split("-")[1])].handle(request)

    urls = [f"http://server-{k}:4096" for k in range(servers)]
    fleet = Fleet(urls, transport=httpx.MockTransport(route))
    metrics = Metrics()
    await fleet.snapshot_once()
    for _ in range(3):
        view = fleet.current()
        metrics.publish(view, fleet.last_changes)
    exporter = start_exporter(metrics, "127.0.0.1:0")
    url = exporter.url
    before = sum(sum(api.hits.values()) for api in apis)

    def scrape() -> None:
        with httpx.Client() as client:
            for _ in range(20):
                client.get(url).raise_for_status()

    await asyncio.to_thread(scrape)
    asked = sum(sum(api.hits.values()) for api in apis) - before
    exporter.close()
    return base, data, rss_mb(), len(view.rows), asked


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--servers", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--scrapes", type=int, default=30)
    parser.add_argument(
        "--rss-sessions",
        type=int,
        default=1000,
        help="sessions per server for the RSS figure (10 x 1,000 = 10,000)",
    )
    args = parser.parse_args()
    times, size, rows = scrape_times(args.servers, args.sessions, args.scrapes)
    ms = sorted(t * 1000 for t in times)
    print(
        f"scrape of {args.servers} servers x {args.sessions} sessions ({rows:,} rows, "
        f"{size / 1024:.0f} KiB): min {ms[0]:.1f} / median {statistics.median(ms):.1f} / "
        f"max {ms[-1]:.1f} ms over {len(ms)} scrapes [target < 50 ms]"
    )
    base, data, total, n, asked = asyncio.run(exporter_rss(args.servers, args.rss_sessions))
    print(
        f"exporter RSS with {n:,} sessions: {total:.0f} MB (interpreter and imports "
        f"{base:.0f} MB; the fake servers' data {data - base:.0f} MB of it)"
    )
    print(f"requests the servers received during 20 scrapes: {asked} [target 0]")


if __name__ == "__main__":
    main()
