"""Async HTTP client for one OpenCode server, with one-line errors for everything that goes wrong.

Unknown paths on an OpenCode server answer 200 with the web UI's HTML, so every answer is checked
to be JSON before it is trusted.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import os
import re
import ssl
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

from . import text, tls
from .exitcodes import ExitCode
from .models import Session
from .quick import QuickGet, Stalled, head_text, no_proxy
from .settings import Auth
from .tap import KEPT_HEADERS, SNAPSHOT, Tap

if TYPE_CHECKING:
    import httpx

#: The largest answer read, decompressed (a snapshot's biggest is a page of 1,000 sessions or one
#: last message with its tool output: a few MB)
MAX_BODY = 64 * 2**20
#: The bytes a whole session listing (every page of it) may take: a server that pages on for
#: ever (a new cursor with every page) would otherwise be read until memory runs out. 10,000
#: real sessions list in about 10 MB.
MAX_LISTING = 256 * 2**20
#: Lines of the event stream read before the event loop is let run (and the events read so far
#: handed over): a read of many small events does not hold the dashboard
BATCH_LINES = 1024


def no_tls() -> ssl.SSLContext:
    """The TLS context of a client that never speaks TLS (plain http, no proxy: httpx does not
    follow redirects here): strict, and trusting no certificate, so any TLS it were asked for
    would fail closed. It spares loading the system's trusted certificates, which httpx's
    default does for every client of every `status` and `wait`."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies peers and host names by default


class OcwatchError(Exception):
    """An error with a one-line message fit for users. Never carries credentials."""

    exit_code: int = ExitCode.USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Unreachable(OcwatchError):
    """The server could not be reached (refused, DNS, timeout)."""


class AuthFailed(OcwatchError):
    """401: password missing or wrong."""


class BadResponse(OcwatchError):
    """The answer was not what the API promises (HTML instead of JSON, wrong shape, 5xx).
    `retry_after`: the seconds the server asked to wait before asking again (its
    `Retry-After`, with a 429 or a 503), when it said; `status`: the HTTP status of an error
    answer (None: the answer was a 2xx that could not be read)."""

    retry_after: float | None = None
    status: int | None = None


#: The longest `Retry-After` honoured (a server asking for a day is asked again in ten minutes)
MAX_RETRY_AFTER = 600.0


def retry_after(value: str | None, now: float) -> float | None:
    """A `Retry-After` header's wait in seconds (delay-seconds or an HTTP date), at most
    MAX_RETRY_AFTER; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():  # (ASCII digits only: `²` is a digit to str.isdigit, not to float)
        return min(float(value), MAX_RETRY_AFTER) if value.isascii() else None
    try:
        from email.utils import parsedate_to_datetime

        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return max(0.0, min(when - now, MAX_RETRY_AFTER))


class Redirected(BadResponse):
    """3xx: something between ocwatch and the server (a proxy, a login page) sent it away."""


class Endless(BadResponse):
    """A session listing past MAX_LISTING: said as it is, not read again another way."""


class WrongProtocol(BadResponse):
    """A route of one protocol answered as a server of another does (V2 answers every V1 route
    with its web UI's HTML; V1 every unknown one): probe the other."""


class Neither(BadResponse):
    """The server answers, but speaks neither OpenCode protocol: said in one line, never
    "unreachable"."""


class NotFound(OcwatchError):
    """404 with the server's error tag (e.g. PermissionNotFoundError)."""

    def __init__(self, message: str, tag: str | None = None) -> None:
        super().__init__(message)
        self.tag = tag


#: What no host name has (white space, controls, URL delimiters): `not a url` is not a server
_NOT_HOST = re.compile(r"[\s\x00-\x1f\x7f<>\"{}|\\^`]")


def normalize_url(url: str) -> str:
    """`host:port` or `http(s)://host:port[/prefix]`, checked; raises OcwatchError (one line).

    A password in the URL is refused: it would show in `ps`, shell history and ocwatch's own
    output. It belongs in $OPENCODE_SERVER_PASSWORD (or a password file)."""
    given = url
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError when out of range
        host = parts.hostname
    except ValueError as exc:
        raise OcwatchError(f"invalid server URL {_no_userinfo(url)!r}: {exc}") from None
    if parts.username is not None or parts.password is not None:
        raise OcwatchError(
            f"invalid server URL {_no_userinfo(url)!r}: credentials do not go in the URL; "
            "set OPENCODE_SERVER_PASSWORD (and OPENCODE_SERVER_USERNAME)"
        )
    if parts.scheme not in ("http", "https") or not host or _NOT_HOST.search(host):
        raise OcwatchError(f"invalid server URL {_no_userinfo(given)!r}: expected http://HOST:PORT")
    if port == 0:  # (no server listens there: a connect to it fails on every platform)
        raise OcwatchError(f"invalid server URL {_no_userinfo(given)!r}: port 0 is no server's")
    if not url.isascii() or not url.isprintable() or " " in url:
        # (a request line and its Host header are ASCII: such a URL crashed a read)
        raise OcwatchError(
            f"invalid server URL {_no_userinfo(url)!r}: only printable ASCII, no spaces (a "
            "host of other letters goes in its xn-- form, a path's characters %-encoded)"
        )
    del port
    return url


def _no_userinfo(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    return f"{scheme}{sep}{netloc}{slash}{path}"


def describe_transport_error(url: str, exc: BaseException) -> OcwatchError:
    """Turn an httpx transport error into a one-line Unreachable."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return Unreachable(f"{url}: timed out ({type(exc).__name__})")
    if isinstance(exc, httpx.ConnectError):
        said = tls.describe(exc)
        if said is not None:
            return Unreachable(f"{url}: {said}")
        return Unreachable(f"{url}: cannot connect ({_os_reason(exc) or 'connection refused'})")
    if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
        return Unreachable(f"{url}: invalid server URL ({_short(exc)})")
    return Unreachable(f"{url}: connection failed ({type(exc).__name__}: {_short(exc)})")


def _os_reason(exc: BaseException) -> str:
    """Why a connection failed, in the system's words (`connection refused`, `name or service
    not known`) when the error under `exc` says it, not in the reader's (httpx's `All
    connection attempts failed`, asyncio's `[Errno 111] Connect call failed ('127.0.0.1',
    1)`): the same words for every reader. Else `exc`'s first line."""
    seen: BaseException | None = exc
    for _ in range(8):  # (a short chain: httpx's errors over anyio's over the OSError)
        if seen is None:
            break
        if isinstance(seen, OSError) and isinstance(seen.errno, int):
            words = os.strerror(seen.errno) if seen.errno > 0 else seen.strerror
            if words and not words.startswith("Unknown error"):
                return words[0].lower() + words[1:]
        seen = seen.__cause__ or seen.__context__
    return _short(exc)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:160] if text else ""


#: zlib's window bits for each content encoding it inflates: gzip (RFC 9110: x-gzip is gzip)
#: and deflate (zlib's format, or a raw deflate stream as some servers send: `_inflated`)
_WBITS = {"gzip": 16 + 15, "x-gzip": 16 + 15, "deflate": 15}


async def _inflated(
    raw: AsyncIterator[bytes], wbits: int, bound: int, where: str
) -> AsyncIterator[bytes]:
    """The answer's raw bytes inflated, at most `bound` + 1 bytes at a time: httpx inflates each
    chunk whole before its size can be checked (a 64 KB chunk of gzip: 64 MiB at once)."""
    import zlib

    inflate = zlib.decompressobj(wbits)
    first = True
    try:
        async for chunk in raw:
            if first and wbits == 15 and len(chunk) >= 2 and not _zlib_header(chunk):
                inflate = zlib.decompressobj(-15)  # (deflate without zlib's header)
            first = False
            data = chunk
            while data:
                yield inflate.decompress(data, bound + 1)
                data = inflate.unconsumed_tail
        yield inflate.flush()
    except zlib.error as exc:
        raise BadResponse(
            f"{where}: answer not decodable as its content-encoding ({exc})"
        ) from None


def _zlib_header(head: bytes) -> bool:
    """Whether the bytes begin with a zlib header (RFC 1950: deflate, its check bits right)."""
    return (head[0] & 0x0F) == 8 and ((head[0] << 8) | head[1]) % 31 == 0


class Client:
    """Thin async wrapper over the v1 API. Every method raises OcwatchError, nothing else.

    A plain-http server's GETs are read the quick way first (tui.core.quick); httpx, whose import
    is much of `ocwatch status`'s start-up, is imported and its client made only when needed:
    an answer that is not a clean 200 JSON one (it is asked again and said exactly), the event
    stream, an action, https, a proxy, a test's transport or a recording."""

    def __init__(
        self,
        url: str,
        auth: Auth | None = None,
        *,
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
        deadline: float = 60.0,
        max_body: int = MAX_BODY,
    ) -> None:
        """`timeout` bounds each read and the connection; `deadline` a whole request, answer
        included (a server trickling one byte at a time cannot hold it longer); `max_body` the
        bytes of an answer after decompression (a gzip bomb is refused, not inflated)."""
        self.url = normalize_url(url)
        self.timeout = timeout
        self.deadline = deadline
        self.max_body = max_body
        self._user = auth.username if auth else None
        self.requests = 0  # how many HTTP requests this client sent (benchmarks read it)
        self._received = 0  # the bytes of the answers read through httpx (bytes_received)
        self.tap: Tap | None = None  # a recording: told every answer (tui.core.tap)
        self.protocol: str | None = None  # the server's, once probed (tui.core.protocols)
        self.clock = time.time  # the receive times a tap is given
        # with credentials, proxies from the environment are not trusted (a Basic header would
        # reach the proxy) unless $OCWATCH_TRUST_ENV=1 asks for them
        trust_env = auth is None or os.environ.get("OCWATCH_TRUST_ENV") == "1"
        plain = QuickGet.usable(self.url, trust_env)  # plain http, and no proxy in between
        self._made = (auth, trust_env, transport, plain)  # what the httpx client is made of
        self._http: httpx.AsyncClient | None = None
        self._closed = False
        # GETs read on plain kept-alive connections (far cheaper than through httpx,
        # tui.core.quick); not through a test's or a replay's transport, nor while recording
        self._quick = (
            QuickGet(self.url, auth, timeout=timeout, deadline=deadline, max_body=max_body)
            if transport is None and plain and os.environ.get("OCWATCH_QUICK_READS") != "0"
            else None
        )

    @property
    def http(self) -> httpx.AsyncClient:
        """The httpx client, made (and httpx imported) on first use (not after `aclose()`: a
        read that was in flight then is not asked again through a client nobody closes)."""
        if self._http is None:
            if self._closed:
                raise Unreachable(f"{self.url}: the connection was closed (ocwatch is stopping)")
            import httpx

            auth, trust_env, transport, plain = self._made
            try:
                verify = no_tls() if plain else tls.trusted()
            except tls.TrustError as exc:
                raise OcwatchError(f"{self.url}: {exc}") from None
            self._http = httpx.AsyncClient(
                base_url=self.url,
                auth=httpx.BasicAuth(auth.username, auth.password) if auth else None,
                trust_env=trust_env,
                timeout=httpx.Timeout(self.timeout),
                transport=transport,
                headers={"accept": "application/json"},
                limits=httpx.Limits(max_connections=16, max_keepalive_connections=16),
                verify=verify,
            )
        return self._http

    async def aclose(self) -> None:
        self._closed = True
        if self._quick is not None:
            self._quick.close()
        if self._http is not None:
            await self._http.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- plumbing -------------------------------------------------------------------------------
    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        expect_json: bool = True,
    ) -> Any:
        data, _headers = await self.request_with_headers(
            method, path, params=params, body=body, expect_json=expect_json
        )
        return data

    async def request_with_headers(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        expect_json: bool = True,
    ) -> tuple[Any, httpx.Headers]:
        import httpx

        http = self.http
        self.requests += 1
        where = f"{self.url} {method} {path}"
        try:
            async with asyncio.timeout(self.deadline):
                req = http.build_request(
                    method, path, params=params, json=body if body is not None else None
                )
                resp = await http.send(req, stream=True)
                try:
                    if 300 <= resp.status_code < 400:
                        self._tapped(req, resp, b"")
                        raise self.redirected(resp, method, path)
                    try:
                        content = await self._read(resp, where)
                    except BadResponse as exc:  # refused (too large): a replay refuses it too
                        self._tapped(req, resp, b"", exc.message)
                        raise
                finally:
                    await resp.aclose()
                self._tapped(req, resp, content)
        except TimeoutError:
            raise Unreachable(
                f"{where}: no complete answer within {self.deadline:g}s "
                "(the server is too slow or stalled)"
            ) from None
        except httpx.HTTPError as exc:
            raise describe_transport_error(self.url, exc) from None
        except httpx.InvalidURL as exc:
            # (not an HTTPError: a folder or an id the server gave, too long for a URL; it
            # went up as a traceback)
            raise BadResponse(
                f"{self.url} {method} {text.literal(path[:120])}: cannot be asked ({exc}); refused"
            ) from None
        return self._check(resp, content, method, path, expect_json), resp.headers

    def redirected(self, resp: httpx.Response, method: str, path: str) -> Redirected:
        """What a 3xx answer means (an OpenCode server does not redirect)."""
        to = resp.headers.get("location") or "nowhere"
        return Redirected(
            f"{self.url} {method} {path}: redirected (HTTP {resp.status_code}) to "
            f"{_no_userinfo(to)[:200]!r}; an OpenCode server answers itself "
            "(a proxy or a login page in the way?)"
        )

    def _tapped(
        self, req: httpx.Request, resp: httpx.Response, content: bytes, refused: str | None = None
    ) -> None:
        if self.tap is None:
            return
        kept = {k: v for k in KEPT_HEADERS if (v := resp.headers.get(k)) is not None}
        self.tap.http(
            self.url,
            self.clock(),
            SNAPSHOT.get(),
            req.method,
            req.url.path,
            req.url.query.decode("ascii", "replace"),
            resp.status_code,
            kept,
            content,
            refused,
        )

    async def _read(self, resp: httpx.Response, where: str) -> bytes:
        """The decoded answer, refused past `max_body` bytes. Content encodings stacked one
        on another are refused unread: each layer multiplies what one chunk inflates to before
        the size is checked (two layers of gzip: 2 GiB from 3 KB)."""
        coding = resp.headers.get("content-encoding", "")
        if "," in coding:
            raise BadResponse(
                f"{where}: answer compressed several times over ({text.literal(coding[:60])}); "
                "refused"
            )
        wbits = _WBITS.get(coding.strip().lower())
        if wbits is None or resp.is_stream_consumed:
            # (identity; an encoding httpx reads and this does not; an answer made whole, as a
            # test's transport makes it, which httpx decoded as it was made)
            chunks = resp.aiter_bytes()
        else:
            chunks = _inflated(resp.aiter_raw(), wbits, self.max_body, where)
        out = bytearray()
        async for chunk in chunks:
            out += chunk
            if len(out) > self.max_body:
                raise BadResponse(
                    f"{where}: answer larger than {self.max_body // 2**20} MiB "
                    "(decompressed); refused"
                )
        self._received += len(out)
        return bytes(out)

    @property
    def bytes_received(self) -> int:
        """The bytes of the answers' bodies read so far (decompressed), both ways."""
        return self._received + (self._quick.received if self._quick is not None else 0)

    def _listing_budget(self, started: int, route: str, pages: int) -> None:
        """Refuse a session listing past MAX_LISTING bytes since `started` (bytes_received)."""
        if self.bytes_received - started > MAX_LISTING:
            raise Endless(
                f"{self.url} GET {route}: the session list passed {MAX_LISTING // 2**20} MiB "
                f"over {pages} page(s); refused (does the server page on for ever?)"
            )

    def _next_page(self, seen: set[str], cursor: str, route: str, pages: int) -> str:
        """The cursor of a listing's next page; one that came before is refused (Endless): the
        pages went round in a circle, read again and again until the page limit, and what
        they had listed was then taken as every session."""
        if cursor in seen:
            raise Endless(
                f"{self.url} GET {route}: the session list's cursor came back to a page read "
                f"before, after {pages} page(s); refused"
            )
        seen.add(cursor)
        return cursor

    def _too_many_pages(self, route: str, pages: int) -> Endless:
        """A listing still saying there is more after `pages` pages: not every session."""
        return Endless(
            f"{self.url} GET {route}: the session list had more than {pages} pages; refused "
            "(does the server page on for ever?)"
        )

    @contextlib.asynccontextmanager
    async def events(
        self,
        *,
        read_timeout: float,
        max_event: int,
        path: str = "/global/event",
        comments: bool = False,
    ) -> AsyncIterator[AsyncIterator[str]]:
        """event_batches, an event at a time."""
        async with self.event_batches(
            read_timeout=read_timeout, max_event=max_event, path=path, comments=comments
        ) as batches:
            yield _one_by_one(batches)

    @contextlib.asynccontextmanager
    async def event_batches(
        self,
        *,
        read_timeout: float,
        max_event: int,
        path: str = "/global/event",
        comments: bool = False,
    ) -> AsyncIterator[AsyncIterator[list[str]]]:
        """The watch: the server's event stream (`path`: V1's `/global/event`, V2's
        `/api/event`), opened and checked, as the `data` of each event, in lists: the events
        each read of the stream brought whole, in order (`comments`: an SSE comment, V2's
        heartbeat, comes as an empty string). Raises AuthFailed on a 401,
        BadResponse when the answer is
        an error or not an event stream (is it an OpenCode server?); a read waits at most
        `read_timeout` s, and an event over `max_event` bytes ends the stream (OcwatchError).
        A server reached without a proxy or a test's transport is read straight from its
        socket (tui.core.stream: an eighth of httpx's CPU an event); else through httpx.
        Transport failures are httpx's errors either way."""
        import httpx

        # uncompressed: a few KB of gzip inflate to GB of blank lines, read in one go
        headers = {
            "accept": "text/event-stream",
            "cache-control": "no-store",
            "accept-encoding": "identity",
        }
        if self._direct_stream():
            from . import stream

            if self._closed:
                raise Unreachable(f"{self.url}: the connection was closed (ocwatch is stopping)")
            auth, _trust_env, _transport, plain = self._made
            try:
                verify = None if plain else tls.trusted()
            except tls.TrustError as exc:
                raise OcwatchError(f"{self.url}: {exc}") from None
            sent = list(headers.items())
            if auth is not None:  # (as httpx.BasicAuth says it: UTF-8, base64)
                token = f"{auth.username}:{auth.password}".encode()
                sent.append(("authorization", "Basic " + base64.b64encode(token).decode()))
            base = urlsplit(self.url).path.rstrip("/")
            direct = await stream.open_stream(
                self.url,
                base + path,
                sent,
                tls=verify,
                connect_timeout=self.timeout,
                read_timeout=read_timeout,
            )
            try:
                self._check_stream(direct.status_code, direct.headers, path)
                yield _sse_batches(direct.body(), self.url, max_event, comments)
            finally:
                direct.aclose()
            return
        timeout = httpx.Timeout(self.timeout, read=read_timeout)
        async with self.http.stream("GET", path, timeout=timeout, headers=headers) as response:
            self._check_stream(response.status_code, response.headers, path)
            yield _sse_batches(_body(response), self.url, max_event, comments)

    def _direct_stream(self) -> bool:
        """Whether the event stream is read straight from its socket (tui.core.stream): an
        http or https server reached without a proxy, not through a test's transport."""
        _auth, trust_env, transport, plain = self._made
        if transport is not None or os.environ.get("OCWATCH_DIRECT_STREAM") == "0":
            return False
        return plain or no_proxy(self.url, "https", trust_env)

    def _check_stream(self, status: int, headers: Mapping[str, str], path: str) -> None:
        """Refuse an event stream's answer that is an error, not an event stream, or
        compressed."""
        if status == 401:
            raise self.auth_failed()
        if status >= 400:
            exc = BadResponse(f"{self.url}: event stream answered HTTP {status}")
            exc.retry_after = retry_after(headers.get("retry-after"), time.time())
            raise exc
        ctype = headers.get("content-type", "")
        if "text/event-stream" not in ctype:
            raise BadResponse(
                f"{self.url}: {path} answered {ctype or 'no content type'}, not an "
                "event stream (is this an OpenCode server?)"
            )
        encoding = headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            raise BadResponse(
                f"{self.url}: the event stream came compressed ({encoding[:40]!r}) though "
                "asked for none; refused"
            )

    def auth_failed(self) -> AuthFailed:
        """What a 401 from this server means, for any route (the event stream's too)."""
        if self._user is None:
            return AuthFailed(
                f"{self.url}: authentication failed (HTTP 401): the server wants a password; "
                "set OPENCODE_SERVER_PASSWORD (and OPENCODE_SERVER_USERNAME if not "
                "'opencode')"
            )
        return AuthFailed(
            f"{self.url}: authentication failed (HTTP 401): the server refused user "
            f"{self._user!r} with the password from OPENCODE_SERVER_PASSWORD (or its file)"
        )

    def _check(
        self, resp: httpx.Response, content: bytes, method: str, path: str, expect_json: bool
    ) -> Any:
        where = f"{self.url} {method} {path}"
        if resp.status_code == 401:
            raise self.auth_failed()
        if resp.status_code == 404:
            tag, msg = _error_fields(content)
            raise NotFound(f"{where}: not found{': ' + msg if msg else ''}", tag)
        if resp.status_code >= 400:
            tag, msg = _error_fields(content)
            detail = msg or tag or resp.reason_phrase
            exc = BadResponse(f"{where}: HTTP {resp.status_code} {detail}".rstrip())
            exc.retry_after = retry_after(resp.headers.get("retry-after"), time.time())
            exc.status = resp.status_code
            raise exc
        if not expect_json:
            return None
        if resp.status_code == 204 or not content.strip():
            if method == "GET":  # a route that lists things answers a list, never nothing
                raise BadResponse(
                    f"{where}: answered HTTP {resp.status_code} with no body "
                    "where JSON was expected"
                )
            return None
        ctype = resp.headers.get("content-type", "")
        body = content.decode("utf-8", errors="replace")
        if "html" in ctype or body.lstrip()[:1] == "<":
            raise BadResponse(
                f"{where}: expected JSON but got HTML (is this an OpenCode server, and a version "
                "that has this route?)"
            )
        try:
            return text.loads(body)
        except text.TooMany as exc:
            raise BadResponse(f"{where}: {exc}") from None
        except text.Refused as exc:
            raise BadResponse(f"{where}: expected JSON but got {exc}") from None
        except ValueError:
            raise BadResponse(f"{where}: expected JSON but got unparseable text") from None

    # -- routes ---------------------------------------------------------------------------------
    @staticmethod
    def _dir(directory: str | None) -> dict[str, Any] | None:
        return {"directory": directory} if directory else None

    async def get(
        self, path: str, params: dict[str, Any] | None = None
    ) -> tuple[Any, Mapping[str, str]]:
        """`GET path` and its answer's headers (names lower-cased): the quick way first
        (tui.core.quick), else asked again through httpx, which says what went wrong."""
        if self._quick is not None and self.tap is None:
            target = f"{path}?{urlencode(params, quote_via=quote)}" if params else path
            seen: dict[bytes, bytes] = {}
            got = await self._quick_get(target, seen)
            if got is not None:
                return got, head_text(seen)
        return await self.request_with_headers("GET", path, params=params)

    async def _get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        data, _headers = await self.get(path, params)
        return data

    async def _probe(self, path: str) -> Any:
        """`GET path`, a protocol's probe: WrongProtocol when it answered 404 or HTML (what a
        server of the other protocol, or none, answers a route it does not have)."""
        try:
            return await self._get(path)
        except NotFound as exc:
            raise WrongProtocol(exc.message) from None
        except BadResponse as exc:
            if "got HTML" in exc.message and not isinstance(exc, Redirected):
                raise WrongProtocol(exc.message) from None
            raise

    async def health(self) -> dict[str, Any]:
        """`GET /global/health` (V1). WrongProtocol: it answered HTML, as a V2 server does, or
        404 (every V1 server has it)."""
        data = await self._probe("/global/health")
        if not isinstance(data, dict):
            raise BadResponse(f"{self.url}: /global/health did not answer an object")
        return data

    # -- V2 routes (OpenCode 2.x, under /api) ---------------------------------------------------
    async def info(self) -> dict[str, Any]:
        """`GET /api/info` (V2): `{version, pid, ...}`. WrongProtocol: HTML, as V1 answers, or
        404."""
        data = await self._probe("/api/info")
        if not isinstance(data, dict) or not isinstance(data.get("version"), str):
            raise BadResponse(f"{self.url}: /api/info did not answer an object with a version")
        return data

    async def v2_sessions(self, page: int = 500, max_pages: int = 1000) -> list[dict[str, Any]]:
        """Every session (`GET /api/session`, all folders), paged by its cursor, oldest change
        first (a session changed while the pages are read moves to the end: read again, never
        skipped). Refused past MAX_LISTING bytes (Endless)."""
        out: dict[str, dict[str, Any]] = {}
        cursor: str | None = None
        seen: set[str] = set()
        started = self.bytes_received
        for n in range(1, max_pages + 1):
            params: dict[str, Any] = {"limit": page, "order": "asc"}
            if cursor:
                params["cursor"] = cursor
            answer = await self._get("/api/session", params)
            self._listing_budget(started, "/api/session", n)
            items = _list(_v2_data(answer, self.url, "/api/session"), self.url, "/api/session")
            for item in items:
                out[str(item.get("id"))] = item  # (a later page's copy is the newer)
            cur = answer.get("cursor")
            nxt = cur.get("next") if isinstance(cur, dict) else None
            if not isinstance(nxt, str) or not nxt or len(items) < page or nxt == cursor:
                return list(out.values())
            cursor = self._next_page(seen, nxt, "/api/session", n)
        raise self._too_many_pages("/api/session", max_pages)

    async def v2_active(self) -> set[str]:
        """The sessions `GET /api/session/active` lists as running (server-wide)."""
        data = _v2_data(await self._get("/api/session/active"), self.url, "/api/session/active")
        if not isinstance(data, dict):
            raise BadResponse(f"{self.url}: /api/session/active did not answer an object")
        return {str(k) for k in data}

    async def v2_pending(self, route: str, directory: str | None) -> list[dict[str, Any]]:
        """The open requests of one folder: `route` is `/api/permission/request` or
        `/api/form` (each answers for one folder: the server's own without one)."""
        params = {"location[directory]": directory} if directory else None
        return _list(_v2_data(await self._get(route, params), self.url, route), self.url, route)

    async def v2_messages(self, session_id: str, limit: int) -> list[dict[str, Any]]:
        """The session's newest `limit` transcript entries, newest first."""
        sid = _segment(session_id)
        path = f"/api/session/{sid}/message"
        data = await self._get(path, {"order": "desc", "limit": limit})
        return _list(_v2_data(data, self.url, path), self.url, path)

    # -- V2 actions -----------------------------------------------------------------------------
    async def v2_interrupt(self, session_id: str) -> bool | None:
        """`POST /api/session/{id}/interrupt`: whether the server says a run was interrupted
        (None: it did not say)."""
        got = await self.request("POST", f"/api/session/{_segment(session_id)}/interrupt")
        flag = got.get("interrupted") if isinstance(got, dict) else None
        return flag if isinstance(flag, bool) else None

    async def v2_reply_permission(
        self, session_id: str, request_id: str, decision: str, message: str | None = None
    ) -> None:
        """`POST /api/session/{sid}/permission/{rid}/reply {decision, message?}`."""
        body: dict[str, Any] = {"decision": decision}
        if message:
            body["message"] = message
        path = f"/api/session/{_segment(session_id)}/permission/{_segment(request_id)}/reply"
        await self.request("POST", path, body=body)

    async def v2_reply_form(self, session_id: str, form_id: str, answer: dict[str, Any]) -> None:
        """`POST /api/session/{sid}/form/{fid}/reply {answer: {field key: value}}`."""
        path = f"/api/session/{_segment(session_id)}/form/{_segment(form_id)}/reply"
        await self.request("POST", path, body={"answer": answer})

    async def v2_dismiss_form(self, session_id: str, form_id: str) -> None:
        """`DELETE /api/session/{sid}/form/{fid}`."""
        path = f"/api/session/{_segment(session_id)}/form/{_segment(form_id)}"
        await self.request("DELETE", path, expect_json=False)

    async def sessions(
        self,
        directory: str | None = None,
        *,
        project: bool = False,
    ) -> list[dict[str, Any]]:
        """`GET /session`: one project's (or one folder's) sessions, without the default limit
        of 100."""
        params: dict[str, Any] = {"limit": 1_000_000}
        if directory:
            params["directory"] = directory
            if project:
                params["scope"] = "project"
        return _list(await self._get("/session", params), self.url, "/session")

    async def all_sessions(self, page: int = 1000, max_pages: int = 1000) -> list[dict[str, Any]]:
        """Every session of every project.

        `GET /session` answers for one project only, so this pages through
        `GET /experimental/session` (cursor in the `x-next-cursor` header). Servers without that
        route (a 404) are listed project by project (`GET /project`, then
        `/session?scope=project`). Any other failure of the route is an error, said as it is:
        the project-by-project listing misses every session of a folder that is no git
        repository (OpenCode's `global` project), and a partial list is never the whole one.
        """
        try:
            return await self._experimental_sessions(page, max_pages)
        except NotFound:
            pass  # an older server
        started = self.bytes_received
        seen: dict[str, dict[str, Any]] = {}
        for item in await self.sessions():
            seen[str(item.get("id"))] = item
        for n, wt in enumerate(await self.worktrees(), 2):
            for item in await self.sessions(wt, project=True):
                seen[str(item.get("id"))] = item
            self._listing_budget(started, "/session", n)
        return list(seen.values())

    async def worktrees(self) -> list[str]:
        """The project folders of `GET /project` (not the `global` project's `/`); none when
        the server has no such route."""
        try:
            projects = await self.projects()
        except NotFound:
            return []
        return [
            wt for p in projects if isinstance(wt := p.get("worktree"), str) and wt and wt != "/"
        ]

    async def folders(self, sessions: Iterable[Session]) -> list[str | None]:
        """Every project folder to ask per-folder routes for: the sessions' folders and the
        projects' (`[None]`, the server's own folder, when there are none)."""
        found = {s.directory for s in sessions if s.directory} | set(await self.worktrees())
        return [*sorted(found)] or [None]

    async def _experimental_sessions(self, page: int, max_pages: int) -> list[dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        cursor: str | None = None
        seen: set[str] = set()
        started = self.bytes_received
        for n in range(1, max_pages + 1):
            params: dict[str, Any] = {"limit": page}
            if cursor:
                params["cursor"] = cursor
            data, headers = await self.get("/experimental/session", params)
            self._listing_budget(started, "/experimental/session", n)
            items = _list(data, self.url, "/experimental/session")
            for item in items:
                out.setdefault(str(item.get("id")), item)
            nxt = headers.get("x-next-cursor")
            if not nxt or not items or nxt == cursor:
                return list(out.values())
            cursor = self._next_page(seen, nxt, "/experimental/session", n)
        raise self._too_many_pages("/experimental/session", max_pages)

    async def projects(self) -> list[dict[str, Any]]:
        return _list(await self._get("/project"), self.url, "/project")

    async def status(self, directory: str | None = None) -> dict[str, Any]:
        data = await self._get("/session/status", self._dir(directory))
        if not isinstance(data, dict):
            raise BadResponse(f"{self.url}: /session/status did not answer an object")
        return data

    async def permissions(self, directory: str | None = None) -> list[dict[str, Any]]:
        data = await self._get("/permission", self._dir(directory))
        return _list(data, self.url, "/permission")

    async def questions(self, directory: str | None = None) -> list[dict[str, Any]]:
        data = await self._get("/question", self._dir(directory))
        return _list(data, self.url, "/question")

    async def messages(
        self,
        session_id: str,
        limit: int | None = 1,
        directory: str | None = None,
    ) -> list[dict[str, Any]]:
        """The session's newest `limit` messages, oldest first (None: all of them), in V1's
        shape whatever the protocol (a V2 server's transcript turned by tui.core.protocols.v2.
        wire: its markers left out)."""
        if self.protocol == "v2":
            from .protocols.v2 import wire

            entries = await self.v2_messages(session_id, 10_000 if limit is None else limit)
            turns = [wire.message(e, session_id) for e in reversed(entries)]
            return [t for t in turns if t is not None]
        params: dict[str, Any] = {} if limit is None else {"limit": limit}
        if directory:
            params["directory"] = directory
        sid = _segment(session_id)
        path = f"/session/{sid}/message"
        if self._quick is not None and self.tap is None:
            got = await self._quick_get(f"{path}?{_message_query(limit, directory)}")
            if isinstance(got, list):
                return _list(got, self.url, path)
        return _list(await self.request("GET", path, params=params), self.url, path)

    async def conversation(
        self, session_id: str, limit: int | None, directory: str | None = None
    ) -> list[dict[str, Any]]:
        """The session's newest `limit` entries as a conversation shows them, oldest first: its
        messages in V1's shape; on V2 also the transcript's `idle` entries (role `idle`, with
        their `outcome`), the retry an unfinished reply waits on (its info's `retry`) and each
        tool call's output and metadata (`wire.tool_part`'s `full`)."""
        if self.protocol != "v2":
            return await self.messages(session_id, limit, directory)
        from .protocols.v2 import wire

        out: list[dict[str, Any]] = []
        got = await self.v2_messages(session_id, 10_000 if limit is None else limit)
        for raw in reversed(got):
            if raw.get("type") == "idle":
                t = raw.get("time") if isinstance(raw.get("time"), dict) else {}
                info = {"id": raw.get("id"), "sessionID": session_id, "role": "idle", "time": t}
                out.append({"info": {**info, "outcome": raw.get("outcome")}, "parts": []})
                continue
            msg = wire.message(raw, session_id, full=True)
            if msg is None:
                continue
            retry = wire.retry_of(raw)
            if retry is not None:
                msg["info"]["retry"] = retry
            out.append(msg)
        return out

    async def _quick_get(self, target: str, seen: dict[bytes, bytes] | None = None) -> Any | None:
        """A quick read (tui.core.quick); None: ask the usual way. A stalled server is said at
        once, as httpx would have said it, not asked twice."""
        quick = self._quick
        assert quick is not None
        self.requests += 1
        try:
            return await quick.get(target, seen)
        except Stalled as exc:
            if exc.why == "deadline":
                raise Unreachable(
                    f"{self.url} GET {target.partition('?')[0]}: no complete answer within "
                    f"{self.deadline:g}s (the server is too slow or stalled)"
                ) from None
            raise Unreachable(f"{self.url}: timed out ({exc.why})") from None

    async def active(self, directory: str | None = None) -> set[str] | None:
        """Sessions listed by the newer `/api/session/active`; None when the route is absent."""
        try:
            data = await self._get("/api/session/active", self._dir(directory))
        except Redirected:
            raise
        except (NotFound, BadResponse):
            return None
        if isinstance(data, dict) and isinstance(data.get("data"), dict):
            return {str(k) for k in data["data"]}
        return None

    async def abort(self, session_id: str, directory: str | None = None) -> Any:
        path = f"/session/{_segment(session_id)}/abort"
        return await self.request("POST", path, params=self._dir(directory), body={})

    async def create_session(self, directory: str, title: str | None = None) -> str:
        """A new session in the project folder `directory`; its id. V1's `POST /session
        ?directory=`, V2's `POST /api/session {title, location: {directory}}`."""
        body: dict[str, Any] = {"title": title} if title else {}
        if self.protocol == "v2":
            got = await self.request(
                "POST", "/api/session", body={**body, "location": {"directory": directory}}
            )
            got = got.get("data") if isinstance(got, dict) else None
        else:
            got = await self.request("POST", "/session", params=self._dir(directory), body=body)
        sid = got.get("id") if isinstance(got, dict) else None
        if not isinstance(sid, str) or not sid:
            raise BadResponse(f"{self.url}: the new session's answer has no id")
        if len(sid) > 200 or not _PLAIN_SEGMENT.fullmatch(sid):
            # (it is printed for scripts to use, and asked for again: a server's escape
            # sequences or markup never reach the terminal through it)
            shown = text.literal(sid[:80], escapes=True)
            raise BadResponse(f"{self.url}: the new session's id is not one ({shown})")
        return sid

    async def prompt(self, session_id: str, text: str, directory: str | None = None) -> None:
        """Send a prompt (the run starts; the answer does not wait for it): V1's
        `POST /session/{id}/prompt_async {parts}`, V2's `POST /api/session/{id}/prompt {text}`."""
        sid = _segment(session_id)
        if self.protocol == "v2":
            await self.request("POST", f"/api/session/{sid}/prompt", body={"text": text})
            return
        body = {"parts": [{"type": "text", "text": text}]}
        await self.request(
            "POST", f"/session/{sid}/prompt_async", params=self._dir(directory), body=body
        )

    async def reply_permission(
        self,
        request_id: str,
        reply: str,
        message: str | None = None,
        directory: str | None = None,
    ) -> Any:
        body: dict[str, Any] = {"reply": reply}
        if message:
            body["message"] = message
        path = f"/permission/{_segment(request_id)}/reply"
        return await self.request("POST", path, params=self._dir(directory), body=body)

    async def reply_question(
        self,
        request_id: str,
        answers: list[list[str]],
        directory: str | None = None,
    ) -> Any:
        path = f"/question/{_segment(request_id)}/reply"
        return await self.request(
            "POST", path, params=self._dir(directory), body={"answers": answers}
        )

    async def reject_question(self, request_id: str, directory: str | None = None) -> Any:
        path = f"/question/{_segment(request_id)}/reject"
        return await self.request("POST", path, params=self._dir(directory), body={})


#: A path segment that percent-encoding leaves as it is (session ids are)
_PLAIN_SEGMENT = re.compile(r"[A-Za-z0-9_.~-]+")


def _segment(value: str) -> str:
    """An id as one path segment (percent-encoded when it is not plain)."""
    return value if _PLAIN_SEGMENT.fullmatch(value) else quote(value, safe="")


@functools.lru_cache(maxsize=64)
def _message_query(limit: int | None, directory: str | None) -> str:
    """The query of a last-message read: the same for every session of a folder (made once,
    not once per session: urlencode is slow beside the rest of a quick read)."""
    params: dict[str, Any] = {} if limit is None else {"limit": limit}
    if directory:
        params["directory"] = directory
    return urlencode(params, quote_via=quote)


def _v2_data(data: Any, url: str, path: str) -> Any:
    """A V2 answer's `data` (V2 wraps every answer: `{data, cursor?}`)."""
    if not isinstance(data, dict) or "data" not in data:
        raise BadResponse(f"{url}: {path} did not answer a V2 object (`data` missing)")
    return data["data"]


def _list(data: Any, url: str, path: str) -> list[dict[str, Any]]:
    if not isinstance(data, list):
        raise BadResponse(f"{url}: {path} did not answer a list")
    return [x for x in data if isinstance(x, dict)]


def _error_fields(content: bytes) -> tuple[str | None, str | None]:
    try:
        data = text.loads(content)
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    tag = data.get("_tag") or data.get("name")
    msg = data.get("message")
    if msg is None and isinstance(data.get("data"), dict):
        msg = data["data"].get("message")
    return (str(tag) if tag else None, str(msg)[:200] if msg else None)


def sse_data(
    response: httpx.Response, url: str, limit: int, comments: bool = False
) -> AsyncIterator[str]:
    """The `data` of each Server-Sent Event of `response` (other fields are skipped, and
    comments too unless `comments`: then each comes as an empty string, a sign of life). An
    event or a line longer than `limit` bytes ends the stream with an OcwatchError
    instead of growing without bound (its bytes are dropped). (The stream is asked
    uncompressed and refused otherwise: its raw bytes are its bytes. An answer whose body was
    read already, one made whole rather than streamed, is read from what was kept.)"""
    return _one_by_one(_sse_batches(_body(response), url, limit, comments))


def _body(response: httpx.Response) -> AsyncIterator[bytes]:
    return response.aiter_bytes() if response.is_stream_consumed else response.aiter_raw()


async def _one_by_one(batches: AsyncIterator[list[str]]) -> AsyncIterator[str]:
    async for batch in batches:
        for data in batch:
            yield data


#: What a data line costs against an event's limit besides its bytes: what keeping it does
#: (its bytes object and its slot, the newline joining it), so that an event of many short or
#: empty lines is bounded in memory as one long line is
LINE_COST = 64


async def _sse_batches(
    chunks: AsyncIterator[bytes], url: str, limit: int, comments: bool
) -> AsyncIterator[list[str]]:
    """sse_data's reading of `chunks`, the body's bytes as they come, in lists: each chunk is
    split into lines at once, and the events it ends come as one list (at most BATCH_LINES
    lines' worth: a chunk of many lines does not hold the event loop); a line not ended yet
    waits, its pieces kept apart (joined once it ends), bounded by `limit`. An event over the
    limit ends the stream after the events before it."""
    pending: list[bytes] = []  # the pieces of a line not ended yet
    waiting = 0  # their bytes
    data: list[bytes] = []  # the data lines of the event being read
    size = 0  # their bytes
    lines_seen = 0
    out: list[str] = []  # the events ended so far by this chunk
    async for chunk in chunks:
        if b"\n" not in chunk:
            pending.append(chunk)
            waiting += len(chunk)
            if waiting > limit:
                break
            continue
        if pending:
            pending.append(chunk)
            chunk = b"".join(pending)
            pending.clear()
        lines = chunk.split(b"\n")
        rest = lines.pop()
        for line in lines:
            lines_seen += 1
            if not lines_seen % BATCH_LINES:
                if out:
                    yield out
                    out = []
                await asyncio.sleep(0)
            if line[-1:] == b"\r":
                line = line[:-1]
            if not line:
                if data:
                    value = data[0] if len(data) == 1 else b"\n".join(data)
                    data, size = [], 0
                    out.append(value.decode("utf-8", errors="replace"))
                continue
            if line[:5] == b"data:":
                value = line[6:] if line[5:6] == b" " else line[5:]
                size += len(value) + LINE_COST
                if size > limit:
                    break
                data.append(value)
            elif comments and line[:1] == b":":
                out.append("")
        if size > limit:
            break
        if out:
            yield out
            out = []
        if rest:
            pending.append(rest)
        waiting = len(rest)
        if waiting > limit:
            break
    if out:
        yield out
    if size > limit or waiting > limit:
        raise OcwatchError(
            f"{url}: an event of the stream is larger than "
            f"{limit // 2**20} MiB; dropped, reconnecting"
        )
