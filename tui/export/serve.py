"""Serving: the exporter's HTTP endpoint, and the headless loop that keeps a Fleet's View current
and hands each new one (with its transitions) to whoever reads it (the metrics, the alerts)."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.registry import Collector

from ..core.client import OcwatchError
from ..core.fleet import Fleet
from ..core.view import Changes, View

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


def metrics_app(registry: CollectorRegistry) -> Any:
    """The ASGI app: `/metrics` and `/` answer the registry (prometheus_client's app: text or
    OpenMetrics as asked, gzip when accepted), anything else 404; lifespan is acknowledged."""
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
        if scope["path"] in ("/metrics", "/") and scope["method"] in ("GET", "HEAD"):
            async with asyncio.timeout(ANSWER_DEADLINE):
                await scrape(scope, receive, send)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 404,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")],
            }
        )
        await send({"type": "http.response.body", "body": b"not found: try /metrics\n"})

    return app


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
    return Exporter(metrics_app(registry), sock)


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
