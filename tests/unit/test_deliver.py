"""Alerts off the terminal: a command and a webhook, each time-boxed, behind the Alerter's dedupe
and rate limits; what they carry is bounded and sanitised; failures are said once; a dead or slow
receiver never holds the caller. And the terminal's own: OSC 777, OSC 99, tmux passthrough."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.app.views import NOW, A, row
from tui.core.alerts import Alert, Alerter, osc99, osc777, sequences, tmux_passthrough
from tui.core.config import AlertConfig
from tui.core.view import Pending, Transition
from tui.export.deliver import (
    CommandSink,
    Deliverer,
    Payload,
    WebhookSink,
    last_reply,
    payload,
)

HOSTILE = "evil\x1b]0;owned\x07\x1b[2J\u202etxt.exe\nsecond line"
ASK = Pending("permission", "per_1", "s1", "permission bash: npm test")


def input_alert(title: str = "deploy") -> Alert:
    return Alert("input", (A, "s1"), ("per_1",), title, ASK.summary, (ASK.summary,), "/p")


def record_script(tmp_path: Path, exit_code: int = 0, sleep: float = 0) -> list[str]:
    """A program that appends its stdin and OCWATCH_ALERT_* variables to a file as JSON."""
    out = tmp_path / "got.ndjson"
    script = tmp_path / "notify.py"
    script.write_text(
        "import json, os, sys, time\n"
        f"time.sleep({sleep})\n"
        "data = json.loads(sys.stdin.read())\n"
        "env = {k: v for k, v in os.environ.items()\n"
        "       if k.startswith(('OCWATCH_', 'OPENCODE_')) or k == 'PROD_OC_PW'}\n"
        f"open({str(out)!r}, 'a').write(json.dumps({{'stdin': data, 'env': env}}) + '\\n')\n"
        f"sys.stderr.write('receiver said no\\n')\n"
        f"sys.exit({exit_code})\n"
    )
    return [sys.executable, str(script)]


def received(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "got.ndjson"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def deliver(d: Deliverer, *alerts: Alert) -> None:
    task = asyncio.create_task(d.run())
    for a in alerts:
        d(a)
    await asyncio.sleep(0)
    await asyncio.wait_for(d.drained(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_the_command_gets_the_alert_on_stdin_and_in_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCODE_SERVER_PASSWORD", "hunter2")
    monkeypatch.setenv("PROD_OC_PW", "a config's password_env")
    reports: list[str] = []
    d = Deliverer(
        [CommandSink(record_script(tmp_path))], reports.append, server_name=lambda url: "prod"
    )
    await deliver(d, input_alert(HOSTILE))
    (got,) = received(tmp_path)
    body, env = got["stdin"], got["env"]
    assert body["kind"] == "input" and body["server"] == "prod" and body["session_id"] == "s1"
    assert body["asked"] == ["permission bash: npm test"]
    assert body["text"] == "permission bash: npm test"
    for text in (body["title"], env["OCWATCH_ALERT_TITLE"]):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
        assert "\n" not in text and text.startswith("evil")
    assert env["OCWATCH_ALERT_KIND"] == "input"
    assert env["OCWATCH_ALERT_ASKED"] == "permission bash: npm test"
    assert "OPENCODE_SERVER_PASSWORD" not in env  # a receiver gets no server's password,
    assert "PROD_OC_PW" not in env  # whatever variable the config names for it
    assert reports == [] and d.counts == {("command", "sent"): 1}


async def test_a_failing_command_is_said_once_until_it_works_again(tmp_path: Path) -> None:
    reports: list[str] = []
    bad = CommandSink(record_script(tmp_path, exit_code=3))
    d = Deliverer([bad], reports.append)
    await deliver(d, input_alert("a"), input_alert("b"), input_alert("c"))
    assert len(received(tmp_path)) == 3  # each was tried
    assert len(reports) == 1
    assert "exit status 3: receiver said no" in reports[0]
    assert "further failures are not reported" in reports[0]
    bad.argv = record_script(tmp_path, exit_code=0)
    await deliver(d, input_alert("d"))
    assert reports[1].endswith("delivering alerts again")
    assert d.counts == {("command", "failed"): 3, ("command", "sent"): 1}


async def test_a_command_that_hangs_is_killed_at_its_timeout(tmp_path: Path) -> None:
    reports: list[str] = []
    d = Deliverer([CommandSink(record_script(tmp_path, sleep=60), timeout=0.5)], reports.append)
    started = time.monotonic()
    await deliver(d, input_alert())
    assert time.monotonic() - started < 10
    assert "no exit within 0.5s (killed)" in reports[0]


async def test_a_command_that_writes_much_to_stderr_is_never_held() -> None:
    """Its stderr is read as it comes (a pipe nobody read held a program writing 300 KB, and
    every alert after it, for good); a failure says its last line."""
    loud = "import sys; sys.stderr.write('x' * 300_000 + '\\nthe last word\\n'); sys.exit({})"
    reports: list[str] = []
    ok = CommandSink([sys.executable, "-c", loud.format(0)], timeout=20)
    bad = CommandSink([sys.executable, "-c", loud.format(3)], timeout=20)
    d = Deliverer([ok, bad], reports.append)
    started = time.monotonic()
    await deliver(d, input_alert())
    assert time.monotonic() - started < 15
    assert d.counts == {("command", "sent"): 1, ("command", "failed"): 1}
    assert "exit status 3: the last word" in reports[0]


async def test_a_child_left_in_the_background_holds_nothing(tmp_path: Path) -> None:
    """A command that exits, leaving a child that still holds its stderr, is done when it
    exits (asyncio's own pipe waited for the child too, and the command read as hung)."""
    script = tmp_path / "leave-a-child.sh"
    script.write_text("#!/bin/sh\n(sleep 30 &)\necho refused >&2\nexit 3\n")
    script.chmod(0o755)
    reports: list[str] = []
    d = Deliverer([CommandSink([str(script)], timeout=10)], reports.append)
    started = time.monotonic()
    await deliver(d, input_alert())
    assert time.monotonic() - started < 8
    assert "exit status 3: refused" in reports[0]


async def test_a_missing_program_is_one_clear_line(tmp_path: Path) -> None:
    reports: list[str] = []
    d = Deliverer([CommandSink([str(tmp_path / "no-such-notifier")])], reports.append)
    await deliver(d, input_alert())
    assert "cannot run it" in reports[0] and "no-such-notifier" in reports[0]


class Receiver:
    """A webhook receiver on loopback: records each POST; `hold` makes it never answer."""

    def __init__(self, hold: bool = False) -> None:
        self.posts: list[tuple[str, dict[str, str], Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                owner.posts.append(
                    (self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(body))
                )
                if hold:
                    time.sleep(30)
                    return
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


async def test_the_webhook_posts_json_with_the_token(receiver: Receiver) -> None:
    reports: list[str] = []
    sink = WebhookSink(receiver.url + "/hooks/secret-path", token="tok-123")
    d = Deliverer([sink], reports.append, server_name=lambda url: "prod")
    await deliver(d, input_alert(HOSTILE))
    (path, headers, body) = receiver.posts[0]
    assert path == "/hooks/secret-path"
    assert headers["authorization"] == "Bearer tok-123"
    assert body["asked"] == ["permission bash: npm test"] and "\x1b" not in body["title"]
    assert reports == []
    assert "secret-path" not in sink.describe()  # a webhook's path is often its secret


async def test_verbose_logging_never_writes_a_webhooks_url(
    receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    """`-v` logs at INFO; httpx logs each request's URL there, and a webhook's URL is its
    secret (a hostile review found `-v` wrote it on every delivery)."""
    from tui.cli.main import configure_logging

    configure_logging(verbose=True)
    caplog.set_level(logging.INFO)  # (the root at INFO, as -v sets it)
    try:
        d = Deliverer([WebhookSink(receiver.url + "/hooks/T0/secret-path")], lambda _: None)
        await deliver(d, input_alert())
        assert receiver.posts and d.counts == {("webhook", "sent"): 1}
        assert not [r for r in caplog.records if "secret-path" in r.getMessage()]
    finally:
        for name in ("httpx", "httpcore"):
            logging.getLogger(name).setLevel(logging.NOTSET)


async def test_an_ntfy_topic_gets_ntfys_json_publish(receiver: Receiver) -> None:
    sink = WebhookSink(receiver.url + "/ocwatch-alerts", format="ntfy")
    await deliver(Deliverer([sink], print), input_alert())
    (path, _headers, body) = receiver.posts[0]
    assert path == "/"
    assert body["topic"] == "ocwatch-alerts"
    assert body["title"] == "ocwatch input: deploy"
    assert body["message"] == "permission bash: npm test"
    assert body["priority"] == 4 and body["tags"][0] == "input"
    assert WebhookSink("https://ntfy.sh/mytopic").format == "ntfy"
    assert WebhookSink("https://hooks.example.com/x").format == "json"


async def test_a_dead_or_silent_receiver_never_holds_the_caller() -> None:
    silent = Receiver(hold=True)
    reports: list[str] = []
    try:
        sinks = [
            WebhookSink(silent.url + "/x", timeout=1.0),
            WebhookSink("http://127.0.0.1:9/x", timeout=1.0),
        ]  # nothing listens on 9
        d = Deliverer(sinks, reports.append, queue_max=5)
        task = asyncio.create_task(d.run())
        lag = 0.0
        started = time.monotonic()
        for _ in range(40):  # a burst: taking an alert never waits
            d(input_alert())
        # (a wait on a delivery would be the sinks' 1 s timeout; the margin is a loaded machine's)
        assert time.monotonic() - started < 0.5
        while time.monotonic() - started < 2.5:  # the loop keeps running meanwhile
            before = time.monotonic()
            await asyncio.sleep(0.01)
            lag = max(lag, time.monotonic() - before - 0.01)
        task.cancel()
        assert lag < 0.5  # (a delivery holding the loop holds it for its 1 s timeout)
        assert d.counts[("webhook", "dropped")] == 2 * 35  # beyond the queue: counted, dropped
        assert len(reports) == 2  # one per sink, not one per alert
        assert any("no answer within 1s" in r for r in reports)
    finally:
        silent.close()


def test_the_webhook_refuses_what_is_not_a_url() -> None:
    with pytest.raises(ValueError, match="expected an http"):
        WebhookSink("ftp://x/y")


async def test_a_finished_run_carries_the_end_of_its_reply() -> None:
    got: list[Payload] = []

    class Keep:
        name = "keep"

        def describe(self) -> str:
            return "keep"

        async def send(self, p: Payload) -> None:
            got.append(p)

    async def enrich(alert: Alert) -> str | None:
        return "x" * 5000 + " and the tests pass.\x1b[31m"

    done = Alert("completed", (A, "s1"), (NOW,), "t", "completed")
    await deliver(Deliverer([Keep()], print, enrich=enrich), done)
    reply = got[0].reply
    assert reply is not None and reply.endswith("and the tests pass. [31m")
    assert len(reply) <= 300 and reply.startswith("…")


def test_the_last_reply_is_the_last_assistant_text() -> None:
    messages = [
        {"info": {"role": "user"}, "parts": [{"type": "text", "text": "do it"}]},
        {
            "info": {"role": "assistant"},
            "parts": [
                {"type": "tool", "tool": "bash"},
                {"type": "text", "text": "Done: all green."},
            ],
        },
        {"info": {"role": "user"}, "parts": [{"type": "text", "text": "thanks"}]},
        "not a message",
    ]
    assert last_reply(messages) == "Done: all green."
    assert last_reply([{"info": {"role": "assistant"}, "parts": "junk"}]) is None


def test_one_alert_per_real_transition_even_if_the_server_repeats_itself() -> None:
    sent: list[Alert] = []
    alerter = Alerter(
        AlertConfig(on=["input", "completed"], min_interval=0), [sent.append], time.monotonic
    )
    busy = row("s1", "t", "busy")
    asked = row("s1", "t", "input", pending=(ASK,))
    again = row("s1", "t", "input", pending=(ASK,))
    alerter.feed([Transition((A, "s1"), busy, asked, NOW)])
    alerter.feed([Transition((A, "s1"), asked, again, NOW + 1)])  # the same request again
    assert [a.asked for a in sent] == [("permission bash: npm test",)]


def test_payload_bounds_every_text() -> None:
    alert = Alert("error", (A, "s" * 500), (), "t" * 500, "e" * 5000)
    p = payload(alert, "n" * 500, None, NOW)
    assert max(len(p.title), len(p.server), len(p.session_id)) <= 120 and len(p.text) <= 300


def test_osc777_osc99_and_tmux_passthrough() -> None:
    alert = input_alert("a;b\x1b]x\x07")
    seq = osc777(alert)
    assert seq.startswith("\x1b]777;notify;ocwatch input: a b") and seq.endswith("\x07")
    assert seq.count("\x1b") == 1 and seq.count("\x07") == 1  # nothing injected
    kitty = osc99(alert)
    assert kitty.count("\x1b]99;") == 2 and kitty.count("\x1b\\") == 2
    wrapped = tmux_passthrough("\x1b]9;hi\x07")
    assert wrapped == "\x1bPtmux;\x1b\x1b]9;hi\x07\x1b\\"
    config = AlertConfig(osc9=True, osc777=True)
    assert [m(alert)[:6] for m in sequences(config, inside_tmux=False)] == [
        "\x1b]9;oc",
        "\x1b]777;",
    ]
    assert all(m(alert).startswith("\x1bPtmux;") for m in sequences(config, inside_tmux=True))


async def test_the_shipped_example_script_shows_the_alert_with_notify_send(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    got = tmp_path / "args"
    fake = tmp_path / "bin" / "notify-send"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {got}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    script = Path(__file__).resolve().parents[2] / "deploy" / "notify" / "notify-send.sh"
    reports: list[str] = []
    await deliver(
        Deliverer([CommandSink([str(script)])], reports.append, server_name=lambda url: "prod"),
        input_alert(),
    )
    assert reports == []
    assert got.read_text().splitlines() == [
        "--app-name=ocwatch",
        "-u",
        "critical",
        "ocwatch input: deploy (prod)",
        "permission bash: npm test",
    ]


def test_a_token_that_cannot_be_a_header_is_refused_without_showing_it() -> None:
    assert WebhookSink("https://h.example/x", token="s3cr3t\r\n").token == "s3cr3t"
    for token in ("s3c\r\nr3t", "two words", "n\u00f6t-ascii"):
        with pytest.raises(ValueError) as got:
            WebhookSink("https://hooks.example.com/x", token=token)
        assert token.strip() not in str(got.value)
    with pytest.raises(ValueError, match="valid host and port"):
        WebhookSink("http://hooks.example.com:99999/x")


async def test_a_sink_that_raises_anything_is_a_failure_not_the_end(tmp_path: Path) -> None:
    class Broken:
        name = "broken"

        def describe(self) -> str:
            return "broken"

        async def send(self, p: Payload) -> None:
            raise UnicodeEncodeError("ascii", "x", 0, 1, "no")

    reports: list[str] = []
    d = Deliverer([Broken()], reports.append)
    await deliver(d, input_alert(), input_alert())
    assert d.counts == {("broken", "failed"): 2} and len(reports) == 1
