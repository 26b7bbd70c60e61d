"""The exporter's HTTP server under load and under a slow-loris (issue 40, should-fix).

prometheus_client's own server listened with a backlog of 5 and no timeouts: of 100 concurrent
scrapers 11 % timed out, and 1,500 sockets trickling their headers held 1,500 threads whose
memory never came back. It is served by hypercorn now (tui.export.serve): connections cost no
thread, a request head must arrive within HEAD_DEADLINE, and a burst is queued, not refused."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from tui.export import serve
from tui.export.metrics import Metrics

SCRAPE = b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


@pytest.fixture
def exporter():
    ex = serve.start_exporter(Metrics(version="9.9"), "127.0.0.1:0")
    yield ex
    ex.close()


async def scrape(port: int) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(SCRAPE)
        await writer.drain()
        answer = await reader.read()  # (to the end: Connection: close)
    finally:
        writer.close()
    status = answer.split(b" ", 2)[1] if answer.startswith(b"HTTP/1.1 ") else b"0"
    assert b"ocwatch_build_info" in answer
    return int(status)


async def test_a_burst_of_scrapers_is_each_answered(exporter: serve.Exporter) -> None:
    got = await asyncio.wait_for(
        asyncio.gather(*(scrape(exporter.port) for _ in range(200))), timeout=120
    )
    assert got == [200] * 200


async def test_a_slow_loris_is_closed_and_holds_no_thread(exporter: serve.Exporter) -> None:
    threads = threading.active_count()
    attackers = []
    for _ in range(300):
        reader, writer = await asyncio.open_connection("127.0.0.1", exporter.port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the end of the head
        attackers.append((reader, writer))

    async def trickle() -> None:  # a byte a second from each, as a slow-loris does
        while True:
            for _reader, writer in attackers:
                if not writer.is_closing():
                    writer.write(b"X")
            await asyncio.sleep(1)

    trickling = asyncio.create_task(trickle())
    try:
        assert threading.active_count() <= threads  # none per connection
        # a real scrape is answered meanwhile
        assert await asyncio.wait_for(scrape(exporter.port), timeout=30) == 200
        # and every trickling connection is closed by the server, its head never complete
        began = time.monotonic()
        for reader, _writer in attackers:
            try:
                while await asyncio.wait_for(reader.read(65536), timeout=60):
                    pass  # (a 4xx it may answer first)
            except ConnectionResetError:
                pass  # closed with a reset (its unread trickle still in the server's buffer)
        took = time.monotonic() - began
        assert took < serve.HEAD_DEADLINE + 30, took
    finally:
        trickling.cancel()
        for _reader, writer in attackers:
            writer.close()
