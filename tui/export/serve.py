"""Serving: the exporter's HTTP endpoint, and the headless loop that keeps a Fleet's View current
and hands each new one (with its transitions) to whoever reads it (the metrics, the alerts)."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import Callable, Sequence
from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server
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


def start_exporter(
    collector: Collector, listen: str, flag: str = "--listen"
) -> tuple[WSGIServer, Thread]:
    """Serve `/metrics` (this collector, and the process's own CPU and memory) on a thread.
    Raises OcwatchError (one line) when the address cannot be listened on."""
    host, port = parse_listen(listen, flag)
    registry = CollectorRegistry()
    registry.register(collector)
    ProcessCollector(registry=registry)
    try:
        server, thread = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise OcwatchError(f"cannot listen on {listen}: {exc.strerror or exc}") from None
    return server, thread


def served_url(server: WSGIServer) -> str:
    host, port = server.server_address[:2]
    name = host.decode() if isinstance(host, bytes) else str(host)
    shown = f"[{name}]" if ":" in name else name
    return f"http://{shown}:{port}/metrics"


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
