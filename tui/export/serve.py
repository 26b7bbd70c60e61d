"""Serving: the exporter's HTTP endpoint, and the headless loop that keeps a Fleet's View current
and hands each new one (with its transitions) to whoever reads it (the metrics, the alerts)."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import os
import re
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from ..core.client import OcwatchError
from ..core.fleet import Fleet
from ..core.view import Changes, ServerInfo, View
from .metrics import Metrics

DEFAULT_LISTEN = "127.0.0.1:9464"
#: Seconds between two Views at most (ages count up, grace periods end) ...
TICK = 1.0
#: ... and at least (a flood of events becomes at most this many Views a second).
SPACING = 0.1

Observer = Callable[[View, Changes | None], None]


def parse_listen(text: str, flag: str = "--listen") -> tuple[str, int]:
    """`HOST:PORT`, `[V6]:PORT`, `:PORT` (every interface) or `PORT` (loopback); errors name
    `flag`."""
    text = text.strip()
    host, sep, port = text.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if not sep:
        host, port = "127.0.0.1", text
    elif bracketed:
        host = host[1:-1]
    elif not host:
        host = "0.0.0.0"
    elif ":" in host:
        raise OcwatchError(f"{flag} {text!r}: write an IPv6 address as [ADDR]:PORT")
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise OcwatchError(f"{flag} {text!r}: expected HOST:PORT (e.g. {DEFAULT_LISTEN})")
    if ":" in host:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise OcwatchError(f"{flag} {text!r}: write an IPv6 address as [ADDR]:PORT") from None
    return host, number


#: Seconds a connection may take to send a whole request head (and stay idle between two
#: requests): a client that trickles its headers (slow-loris) is closed then, whatever it sends
HEAD_DEADLINE = 5.0
#: Seconds one read may wait, and a whole answer may take to be made and sent
READ_TIMEOUT = 10
ANSWER_DEADLINE = 30.0
#: Connections waiting to be accepted (a burst of scrapers is queued, not refused)
BACKLOG = 1024

_log = logging.getLogger("ocwatch.exporter")


class Exporter:
    """The exporter's HTTP endpoint: `/metrics` (and `/`) served by hypercorn, a well-kept ASGI
    server, on an event loop of its own thread (a scrape never waits on the dashboard's loop,
    nor the loop on a scrape). Connections cost a coroutine each, not a thread; a request head
    must arrive within HEAD_DEADLINE, each read within READ_TIMEOUT and each answer within
    ANSWER_DEADLINE; a head past 16 KiB is refused."""

    def __init__(self, app: Any, sock: socket.socket) -> None:
        from hypercorn.config import Config

        self.host, self.port = sock.getsockname()[:2]
        config = Config()
        # hypercorn takes the socket over by its descriptor: a copy of it, whose closing is
        # hypercorn's (the listening socket stays open through it)
        config.bind = [f"fd://{os.dup(sock.fileno())}"]
        sock.close()
        config.backlog = BACKLOG
        config.keep_alive_timeout = HEAD_DEADLINE
        config.read_timeout = READ_TIMEOUT
        config.graceful_timeout = 1.0
        config.include_server_header = False
        config.accesslog = None
        config.errorlog = _log
        self._config = config
        self._app = app
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        started = threading.Event()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(
            target=self._serve, args=(started,), name="ocwatch-exporter", daemon=True
        )
        self._thread.start()
        started.wait(10)
        if self._failed is not None:
            raise OcwatchError(f"cannot serve the exporter: {self._failed}")

    def _serve(self, started: threading.Event) -> None:
        from hypercorn.asyncio import serve

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            started.set()
            await serve(self._app, self._config, shutdown_trigger=self._stop.wait, mode="asgi")

        try:
            asyncio.run(main())
        except Exception as exc:  # (said by the constructor when it fails at once)
            self._failed = exc
            _log.error("the exporter stopped: %s", exc)
        finally:
            started.set()

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in str(self.host) else str(self.host)
        return f"http://{shown}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving (what is being answered gets a second to finish) and free the port."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):  # (its loop ended already)
                loop.call_soon_threadsafe(stop.set)
            self._thread.join(5)


def metrics_app(registry: CollectorRegistry, metrics: Metrics | None = None, own: str = "") -> Any:
    """The ASGI app: `/metrics` and `/` answer the registry (prometheus_client's app: text or
    OpenMetrics as asked, gzip when accepted), anything else 404; lifespan is acknowledged.
    With `metrics` (the exporter's collector) also `/metrics?target=SERVER`, that server's
    series only (404 when it is not watched), and `/sd`, Prometheus's HTTP service discovery
    (sd_groups; `own`: the listening address, when the request names none)."""
    from prometheus_client import make_asgi_app

    scrape = make_asgi_app(registry)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        reads = scope["method"] in ("GET", "HEAD")
        target = _target_of(scope)
        if scope["path"] in ("/metrics", "/") and reads and (target is None or metrics is None):
            async with asyncio.timeout(ANSWER_DEADLINE):
                await scrape(scope, receive, send)
            return
        status, kind, body = 404, b"text/plain; charset=utf-8", b"not found: try /metrics\n"
        if scope["path"] in ("/metrics", "/") and reads and metrics is not None:
            status, kind, body = _one_server(metrics, target or "", _header(scope, b"accept"))
        elif scope["path"] == "/sd" and reads and metrics is not None:
            groups = sd_groups(metrics, _header(scope, b"host") or own)
            status, kind, body = 200, b"application/json", json.dumps(groups).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", kind), (b"content-length", b"%d" % len(body))],
            }
        )
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body}
        )

    return app


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return ""


def _target_of(scope: dict[str, Any]) -> str | None:
    """The `target` of the query (the multi-target pattern's `__param_target`), or None."""
    query = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1"))
    got = query.get("target")
    return got[0] if got else None


def _one_server(metrics: Metrics, target: str, accept: str) -> tuple[int, bytes, bytes]:
    """(status, content type, body) of `/metrics?target=...`: the series of the watched server
    that target names (its `host:port`, URL or name), or 404 saying it is not watched."""
    from prometheus_client.exposition import choose_encoder

    server = pick(metrics.servers(), target)
    if server is None:
        body = f"not found: ocwatch does not watch {target!r} (yet)\n"
        return 404, b"text/plain; charset=utf-8", body.encode()
    encoder, kind = choose_encoder(accept)
    return 200, kind.encode(), encoder(OneServer(metrics, server.label))


def pick(servers: Sequence[ServerInfo], target: str) -> ServerInfo | None:
    """The watched server `target` names: its `host:port` (what an inventory file lists), its
    URL or its name."""
    for s in servers:
        if target in (s.url, s.name, urlsplit(s.url).netloc):
            return s
    return None


class OneServer:
    """A registry of one server's series (the families of `metrics` whose `server` label is
    it; the others, and the families of no server, left out)."""

    def __init__(self, metrics: Metrics, label: str) -> None:
        self.metrics, self.label = metrics, label

    def collect(self) -> Iterator[Metric]:
        for family in self.metrics.collect():
            kept = [x for x in family.samples if x.labels.get("server") == self.label]
            if kept:
                family.samples = kept
                yield family


#: Distinct values of an extra label said at most in `/sd`'s meta labels (its servers')
SD_VALUES = 50
HOST = re.compile(r"[A-Za-z0-9.\-]+(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?")


def sd_groups(metrics: Metrics, host: str) -> list[dict[str, Any]]:
    """Prometheus's HTTP SD answer (`http_sd_configs`): one group, this exporter at `host`
    (the address its client reached it by), with meta labels for relabelling: its version,
    how many servers it watches, and for each extra label of theirs its values as
    `,a,b,` (Consul's tag form: `.*,infra,.*` matches). Never a URL's credentials nor a
    password: names and the inventory's labels only."""
    if not HOST.fullmatch(host):
        return []
    servers = metrics.servers()
    labels: dict[str, str] = {
        "__meta_ocwatch_version": metrics.version,
        "__meta_ocwatch_servers": str(len(servers)),
    }
    values: dict[str, set[str]] = {}
    for s in servers:
        for key, value in s.labels:
            values.setdefault(key, set()).add(value)
    for key, got in sorted(values.items()):
        shown = sorted(got)[:SD_VALUES]
        labels[f"__meta_ocwatch_label_{key}"] = "," + ",".join(shown) + ","
    return [{"targets": [host], "labels": labels}]


def start_exporter(collector: Collector, listen: str, flag: str = "--listen") -> Exporter:
    """Serve `/metrics` (this collector, and the process's own CPU and memory) on a thread
    (Exporter). Raises OcwatchError (one line) when the address cannot be listened on."""
    host, port = parse_listen(listen, flag)
    registry = CollectorRegistry()
    registry.register(collector)
    ProcessCollector(registry=registry)
    try:
        sock = socket.create_server(
            (host, port),
            family=socket.AF_INET6 if ":" in host else socket.AF_INET,
            backlog=BACKLOG,
        )
    except OSError as exc:
        raise OcwatchError(f"cannot listen on {listen}: {exc.strerror or exc}") from None
    own = sock.getsockname()
    shown = f"[{own[0]}]:{own[1]}" if ":" in own[0] else f"{own[0]}:{own[1]}"
    mine = collector if isinstance(collector, Metrics) else None
    return Exporter(metrics_app(registry, mine, shown), sock)


async def follow(
    fleet: Fleet, observers: Sequence[Observer], *, stop: asyncio.Event | None = None
) -> None:
    """Run the fleet's monitors and hand every new View to the observers: after a change
    (coalesced: at most one View per SPACING) and at least once per TICK. Until `stop` is set
    (or the task is cancelled)."""
    dirty = asyncio.Event()
    stop = stop or asyncio.Event()
    runner = asyncio.create_task(fleet.run(dirty.set))
    stopping = asyncio.create_task(stop.wait())
    try:
        while not stop.is_set():
            waiter = asyncio.create_task(dirty.wait())
            done, _ = await asyncio.wait(
                {waiter, runner, stopping}, timeout=TICK, return_when=asyncio.FIRST_COMPLETED
            )
            waiter.cancel()
            if runner in done:
                runner.result()  # a monitor's crash is not swallowed
            dirty.clear()
            view = fleet.current()
            for observe in observers:
                observe(view, fleet.last_changes)
            await asyncio.sleep(SPACING)
    finally:
        for task in (runner, stopping):
            task.cancel()
        for task in (runner, stopping):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await fleet.aclose()
