"""Alerts that reach a person off the terminal: a command (`--notify-cmd`) and a webhook
(`--webhook`, ntfy-compatible).

`Deliverer` sits behind the core `Alerter` as one of its sinks, so the dedupe and rate limits
are the ones every alert has. Taking an alert only queues it (bounded; the overflow is counted,
never waited for): a task of its own delivers, one alert at a time, each sink time-boxed, so a
dead or slow receiver never slows the dashboard or the exporter. A sink that fails is reported
once, and again only after it has worked in between. The text sent is bounded and sanitised:
no control or invisible character of a title or a reply reaches the receiver.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx
from prometheus_client.core import CounterMetricFamily
from prometheus_client.metrics_core import Metric

from ..core.alerts import Alert
from ..core.client import OcwatchError
from ..core.config import AlertConfig
from ..core.fleet import Fleet
from ..core.text import keep_count, plain
from ..core.view import iso

#: Bounds of what is sent: a title, the alert's text, what is asked, the end of the reply.
TITLE_MAX, TEXT_MAX, REPLY_MAX = 120, 300, 300
#: Alerts waiting for delivery at most (a receiver that is down: the rest are dropped, counted)
QUEUE_MAX = 100
COMMAND_TIMEOUT = 10.0
WEBHOOK_TIMEOUT = 5.0
#: Priority 4 (high) on ntfy for what needs a person; 3 (default) for the rest
_URGENT = {"input", "error", "stale", "unknown"}

Enrich = Callable[[Alert], Awaitable[str | None]]
Report = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Payload:
    """An alert as it leaves ocwatch, every text bounded and sanitised."""

    kind: str
    server: str  # the configured name (else the URL)
    server_url: str
    session_id: str
    title: str
    text: str
    asked: tuple[str, ...]
    reply: str | None
    at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "server": self.server,
            "server_url": self.server_url,
            "session_id": self.session_id,
            "title": self.title,
            "text": self.text,
            "asked": list(self.asked),
            "reply": self.reply,
            "at": iso(self.at),
        }

    def env(self) -> dict[str, str]:
        """The same as environment variables (OCWATCH_ALERT_*)."""
        return {
            "OCWATCH_ALERT_KIND": self.kind,
            "OCWATCH_ALERT_SERVER": self.server,
            "OCWATCH_ALERT_SERVER_URL": self.server_url,
            "OCWATCH_ALERT_SESSION_ID": self.session_id,
            "OCWATCH_ALERT_TITLE": self.title,
            "OCWATCH_ALERT_TEXT": self.text,
            "OCWATCH_ALERT_ASKED": " | ".join(self.asked),
            "OCWATCH_ALERT_REPLY": self.reply or "",
            "OCWATCH_ALERT_AT": iso(self.at) or "",
        }


def payload(alert: Alert, server_name: str, reply: str | None, at: float) -> Payload:
    def bound(text: str, limit: int) -> str:
        text = " ".join(plain(text).split())
        return text if len(text) <= limit else keep_count(text, limit) or text[: limit - 1] + "…"

    tail = None
    if reply:
        flat = " ".join(plain(reply).split())
        tail = flat if len(flat) <= REPLY_MAX else "…" + flat[-(REPLY_MAX - 1) :]
    return Payload(
        alert.kind,
        bound(server_name, TITLE_MAX),
        alert.key[0],
        bound(alert.key[1], TITLE_MAX),
        bound(alert.title, TITLE_MAX),
        bound(alert.text, TEXT_MAX),
        tuple(bound(a, TEXT_MAX) for a in alert.asked),
        tail,
        at,
    )


class Sink(Protocol):
    name: str

    def describe(self) -> str:
        """What the sink is, for messages (never a secret)."""
        ...

    async def send(self, p: Payload) -> None:
        """Deliver, or raise DeliveryFailed (one line saying why)."""
        ...


class DeliveryFailed(Exception):
    pass


@dataclass
class CommandSink:
    """Runs a program (no shell) per alert: the alert as JSON on stdin and in OCWATCH_ALERT_*
    variables. Exit status 0 is delivered; anything else, or no exit within the timeout, failed
    (the program is killed)."""

    argv: Sequence[str]
    timeout: float = COMMAND_TIMEOUT
    name: str = "command"

    def describe(self) -> str:
        return f"--notify-cmd {plain(self.argv[0], 200)}"

    async def send(self, p: Payload) -> None:
        # an allowlist: the receiver gets no server's password (whatever variable a config
        # names for it), no token, nothing of ocwatch's but the alert
        env = {k: v for k, v in os.environ.items() if k in _ENV_KEPT or k.startswith("LC_")}
        env.update(p.env())
        # its stderr is read as it comes, its last STDERR_KEPT bytes kept: a pipe nobody read
        # filled at 64 KiB and held the program (and every alert after it) for good; and not
        # through asyncio's pipe, whose wait() waits for every holder of the pipe to close it (a
        # child left in the background held it)
        err = _Tail()
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=err.write_end,
                env=env,
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:  # ValueError: a NUL in an argument
            err.close()
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise DeliveryFailed(f"cannot run it: {plain(why, 120)}") from None
        err.started()
        data = (json.dumps(p.to_json(), ensure_ascii=False) + "\n").encode()
        try:
            async with asyncio.timeout(self.timeout):
                assert proc.stdin is not None
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    proc.stdin.write(data)
                    await proc.stdin.drain()
                    proc.stdin.close()
                code = await proc.wait()  # not EOF: a child left in the background is fine
        except TimeoutError:
            raise DeliveryFailed(f"no exit within {self.timeout:g}s (killed)") from None
        finally:
            if proc.returncode is None:  # timed out or cancelled: the whole group goes
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(TimeoutError):  # (its stdin closes with it)
                    await asyncio.wait_for(proc.wait(), 5)
            said = err.close()
        if code != 0:
            raise DeliveryFailed(f"exit status {code}" + (f": {said}" if said else ""))


#: The bytes of a notify command's stderr kept (its last line says why it failed)
STDERR_KEPT = 4096


class _Tail:
    """A pipe for a program's stderr, read on the event loop as it comes (never blocking the
    program), its last STDERR_KEPT bytes kept."""

    def __init__(self) -> None:
        self._read, self.write_end = os.pipe()
        os.set_blocking(self._read, False)
        self._kept = bytearray()
        self._loop: asyncio.AbstractEventLoop | None = None

    def started(self) -> None:
        """The program has the write end: ours closes (EOF once the program's does), and the
        read end is read whenever it has bytes."""
        os.close(self.write_end)
        self.write_end = -1
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._read, self._drain)

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            while chunk := os.read(self._read, 65536):
                self._kept += chunk
                del self._kept[:-STDERR_KEPT]
            if self._loop is not None:  # EOF
                self._loop.remove_reader(self._read)

    def close(self) -> str:
        """Stop reading (what is in the pipe now is read first); the last line kept."""
        if self._read >= 0:
            self._drain()
            if self._loop is not None:
                self._loop.remove_reader(self._read)
            os.close(self._read)
            self._read = -1
        if self.write_end >= 0:
            os.close(self.write_end)
            self.write_end = -1
        lines = self._kept.decode("utf-8", "replace").strip().splitlines()
        return plain(lines[-1], 200) if lines else ""


#: What a notify command inherits of ocwatch's environment (and LC_*): enough to run a program
#: and reach the desktop, nothing that may be a credential
_ENV_KEPT = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "SHELL",
        "TMPDIR",
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "DBUS_SESSION_BUS_ADDRESS",
        "XDG_RUNTIME_DIR",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
    }
)


WebhookFormat = Literal["auto", "json", "ntfy"]


def is_ntfy(url: str) -> bool:
    """`auto`: ntfy when the host is ntfy.sh or named ntfy.* (a self-hosted ntfy elsewhere:
    say `ntfy`)."""
    host = (urlsplit(url).hostname or "").lower()
    return host == "ntfy.sh" or host.startswith("ntfy.")


@dataclass
class WebhookSink:
    """POSTs each alert: the payload as JSON, or, for an ntfy topic URL, ntfy's JSON publish
    (title, message, tags, priority) to the server root. A bearer token comes from
    $OCWATCH_WEBHOOK_TOKEN, never a flag. Redirects are not followed; any 2xx is delivered."""

    url: str
    format: WebhookFormat = "auto"
    token: str | None = None
    timeout: float = WEBHOOK_TIMEOUT
    transport: httpx.AsyncBaseTransport | None = None
    name: str = "webhook"
    _client: httpx.AsyncClient | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        try:
            port_ok = parts.port is None or parts.port > 0
        except ValueError:
            port_ok = False
        if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
            raise ValueError("--webhook: expected an http(s) URL with a valid host and port")
        if self.token is not None:
            self.token = self.token.strip()
            if not self.token or not all(33 <= ord(c) < 127 for c in self.token):
                raise ValueError(
                    "$OCWATCH_WEBHOOK_TOKEN: a token is visible ASCII, without "
                    "spaces or line breaks (not shown here)"
                )
        if self.format == "auto":
            self.format = "ntfy" if is_ntfy(self.url) else "json"

    def describe(self) -> str:
        """The URL without its path, query or user info (a webhook path is often its secret)."""
        parts = urlsplit(self.url)
        host = parts.hostname or "?"
        try:
            netloc = f"{host}:{parts.port}" if parts.port else host
        except ValueError:
            netloc = host
        return f"--webhook {urlunsplit((parts.scheme, netloc, '/…' if parts.path else '', '', ''))}"

    def request(self, p: Payload) -> tuple[str, dict[str, Any]]:
        """Where to POST, and the JSON body."""
        if self.format != "ntfy":
            return self.url, p.to_json()
        parts = urlsplit(self.url)
        base, _, topic = parts.path.rstrip("/").rpartition("/")
        message = p.text if p.reply is None else f"{p.text}\n{p.reply}"
        return urlunsplit((parts.scheme, parts.netloc, base + "/", "", "")), {
            "topic": topic,
            "title": f"ocwatch {p.kind}: {p.title}"[: TITLE_MAX + 20],
            "message": message,
            "tags": [p.kind, p.server][:2],
            "priority": 4 if p.kind in _URGENT else 3,
        }

    async def send(self, p: Payload) -> None:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=self.timeout,
                follow_redirects=False,
                transport=self.transport,
                headers={"user-agent": "ocwatch"},
            )
        url, body = self.request(p)
        headers = {"authorization": f"Bearer {self.token}"} if self.token else {}
        try:
            async with asyncio.timeout(self.timeout):
                async with self._client.stream("POST", url, json=body, headers=headers) as r:
                    status = r.status_code  # the body is not read: nothing in it is needed
        except (httpx.HTTPError, TimeoutError, OSError) as exc:
            if isinstance(exc, TimeoutError | httpx.TimeoutException):
                why = f"no answer within {self.timeout:g}s"
            elif isinstance(exc, httpx.ConnectError):
                why = "cannot connect"
            else:  # by its kind only: an exception's words may hold the URL's path or a header
                why = type(exc).__name__
            raise DeliveryFailed(why) from None
        if not 200 <= status < 300:
            raise DeliveryFailed(f"HTTP {status}")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


@dataclass
class Deliverer:
    """An Alerter sink that delivers to the off-terminal sinks on a task of its own (`run`)."""

    sinks: Sequence[Sink]
    report: Report
    server_name: Callable[[str], str] = lambda url: url
    enrich: Enrich | None = None
    clock: Callable[[], float] = time.time
    queue_max: int = QUEUE_MAX
    counts: dict[tuple[str, str], int] = field(default_factory=dict)  # (sink, result) -> n
    _queue: asyncio.Queue[tuple[Alert, float]] | None = None
    _failing: set[str] = field(default_factory=set)
    _idle: asyncio.Event = field(default_factory=asyncio.Event)
    _unsent: int = 0  # taken, not yet tried

    def __call__(self, alert: Alert) -> None:
        """Take an alert (never blocks): queued, or dropped and counted when the queue is full."""
        if self._queue is None:
            self._queue = asyncio.Queue(self.queue_max)
        try:
            self._queue.put_nowait((alert, self.clock()))
            self._unsent += 1
            self._idle.clear()
        except asyncio.QueueFull:
            for sink in self.sinks:
                self._count(sink.name, "dropped")

    def _count(self, sink: str, result: str) -> None:
        self.counts[(sink, result)] = self.counts.get((sink, result), 0) + 1

    async def run(self) -> None:
        """Deliver until cancelled."""
        if self._queue is None:
            self._queue = asyncio.Queue(self.queue_max)
        try:
            while True:
                alert, at = await self._queue.get()
                reply = None
                if self.enrich is not None and alert.kind in ("completed", "error", "aborted"):
                    with contextlib.suppress(Exception):  # the alert goes out without it
                        reply = await asyncio.wait_for(self.enrich(alert), WEBHOOK_TIMEOUT)
                try:
                    p = payload(alert, self.server_name(alert.key[0]), reply, at)
                    for sink in self.sinks:
                        await self._send(sink, p)
                finally:
                    self._unsent -= 1
                    if not self._unsent:
                        self._idle.set()
        finally:
            for sink in self.sinks:
                closer = getattr(sink, "aclose", None)
                if closer is not None:
                    with contextlib.suppress(Exception):
                        await closer()

    async def drained(self) -> None:
        """Wait until every queued alert was tried (tests, and a clean exit)."""
        if self._unsent:
            await self._idle.wait()

    async def _send(self, sink: Sink, p: Payload) -> None:
        try:
            await sink.send(p)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a delivery never ends the deliverer
            if not isinstance(exc, DeliveryFailed):
                exc = DeliveryFailed(f"{type(exc).__name__} while delivering")
            self._count(sink.name, "failed")
            if sink.describe() not in self._failing:
                self._failing.add(sink.describe())
                self.report(
                    f"{sink.describe()}: the alert was not delivered ({exc}); further "
                    "failures are not reported until it works again"
                )
            return
        self._count(sink.name, "sent")
        if sink.describe() in self._failing:
            self._failing.discard(sink.describe())
            self.report(f"{sink.describe()}: delivering alerts again")

    def metrics(self) -> list[Metric]:
        """`ocwatch_alert_deliveries_total{sink,result}` (sent, failed, dropped)."""
        fam = CounterMetricFamily(
            "ocwatch_alert_deliveries",
            "Alerts handed to an off-terminal sink: sent, failed, or dropped (the queue was full).",
            labels=["sink", "result"],
        )
        for sink in self.sinks:
            for result in ("sent", "failed", "dropped"):
                fam.add_metric([sink.name, result], self.counts.get((sink.name, result), 0))
        return [fam]


def command_argv(cmd: str | Sequence[str]) -> list[str]:
    """A command as given: a list (config) as is, a string split like a shell would (no shell
    runs it: no expansion, no pipes)."""
    argv = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
    if not argv:
        raise ValueError("--notify-cmd: empty command")
    return argv


def sinks_from(
    notify_cmd: str | Sequence[str] | None,
    webhook: str | None,
    webhook_format: WebhookFormat = "auto",
    env: Mapping[str, str] | None = None,
) -> list[Sink]:
    """The configured off-terminal sinks (ValueError: one line saying what is wrong)."""
    env = os.environ if env is None else env
    out: list[Sink] = []
    if notify_cmd:
        out.append(CommandSink(command_argv(notify_cmd)))
    if webhook:
        out.append(WebhookSink(webhook, webhook_format, env.get("OCWATCH_WEBHOOK_TOKEN") or None))
    return out


def last_reply(messages: Sequence[Any]) -> str | None:
    """The text of the last assistant message among `GET /session/{id}/message` entries (its
    text parts, joined), or None."""
    for entry in reversed(messages):
        if not isinstance(entry, dict):
            continue
        info, parts = entry.get("info"), entry.get("parts")
        if not isinstance(info, dict) or info.get("role") != "assistant":
            continue
        texts = [
            p.get("text")
            for p in parts or ()
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        ]
        if texts:
            return "\n".join(t for t in texts if t)[-4 * REPLY_MAX :]
    return None


def fleet_enrich(fleet: Fleet) -> Enrich:
    """Fetch the end of the run's reply for an alert, through the watched server's own client
    (one request per alert that is sent; alerts are rate limited)."""

    async def enrich(alert: Alert) -> str | None:
        server, sid = alert.key
        messages = await fleet.act(
            server,
            lambda c: c.messages(sid, limit=3, directory=alert.directory or None),
            resync=False,
        )
        return last_reply(messages)

    return enrich


def deliverer_for(alerts: AlertConfig, fleet: Fleet, report: Report) -> Deliverer | None:
    """The off-terminal deliveries the alert settings ask for (None: none), reading the end of
    a run's reply through the fleet. OcwatchError (one line) for a setting that cannot work."""
    try:
        sinks = sinks_from(alerts.notify_cmd, alerts.webhook, alerts.webhook_format)
    except ValueError as exc:
        raise OcwatchError(str(exc)) from None
    if not sinks:
        return None
    names = {m.url: m.name or m.url for m in fleet.monitors}
    return Deliverer(
        sinks, report, server_name=lambda url: names.get(url, url), enrich=fleet_enrich(fleet)
    )
