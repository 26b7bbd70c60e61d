"""Each server gets only its own credentials; none travels to a proxy or in clear unsaid."""

from __future__ import annotations

import asyncio
import os

import httpx

from tests.fakes import FakeAPI, wire_session
from tui.core.client import Client
from tui.core.config import Config, ServerEntry, resolve_options
from tui.core.fleet import Fleet
from tui.core.settings import Auth

PW = Auth("opencode", "env-secret")


async def test_the_environment_password_goes_to_the_first_server_only():
    seen: dict[str, set[str]] = {}
    api = FakeAPI(sessions=[wire_session("ses_1")])

    def handle(request: httpx.Request) -> httpx.Response:
        seen.setdefault(request.url.host, set()).add(request.headers.get("authorization", ""))
        return api.handle(request)

    fleet = Fleet(
        ["http://one:4096", "http://two:4096"], auth=PW, transport=httpx.MockTransport(handle)
    )
    await fleet.snapshot_once()
    assert seen["one"] == {httpx.BasicAuth("opencode", "env-secret")._auth_header}
    assert seen["two"] == {""}


def test_a_server_entry_names_its_own_password():
    config = Config(
        servers=[
            "http://127.0.0.1:4096",
            ServerEntry(url="http://127.0.0.1:5000", password_env="B_PW"),
            ServerEntry(url="http://127.0.0.1:6000", password_env="UNSET_PW"),
        ]
    )
    opts = resolve_options(config, auth=PW, env={"B_PW": "b-secret"})
    assert opts.urls == ["http://127.0.0.1:4096", "http://127.0.0.1:5000", "http://127.0.0.1:6000"]
    assert opts.auths == {
        "http://127.0.0.1:4096": PW,
        "http://127.0.0.1:5000": Auth("opencode", "b-secret"),
        "http://127.0.0.1:6000": None,
    }
    assert any("$UNSET_PW is not set" in n for n in opts.notices)
    assert "b-secret" not in repr(opts) and "env-secret" not in repr(opts)


def test_a_server_named_twice_is_one_server_with_the_first_servers_password():
    """`--server A --server A/` (or `OCWATCH_SERVERS=A,A`): the second naming took index 1,
    no password, and overwrote the first's, so the one server read 401 (found by a review)."""
    for urls in (
        ["http://127.0.0.1:4096", "http://127.0.0.1:4096"],
        ["http://127.0.0.1:4096", "http://127.0.0.1:4096/"],
        ["http://127.0.0.1:4096", "http://127.0.0.1:5000", "http://127.0.0.1:4096"],
    ):
        opts = resolve_options(Config(), urls=urls, auth=PW, env={})
        assert opts.urls == list(dict.fromkeys(u.rstrip("/") for u in urls)), urls
        assert opts.auths["http://127.0.0.1:4096"] == PW, urls
        assert opts.auths.get("http://127.0.0.1:5000") is None


def test_a_password_over_plain_http_beyond_loopback_is_warned_of():
    opts = resolve_options(Config(), urls=["http://buildbox:4096"], auth=PW, env={})
    assert any("plain http" in n for n in opts.notices)
    quiet = resolve_options(
        Config(), urls=["http://127.0.0.1:4096", "https://buildbox:4096"], auth=PW, env={}
    )
    assert not any("plain http" in n for n in quiet.notices)


def test_no_password_goes_to_another_users_process_on_a_local_port(tmp_path, monkeypatch):
    """A process of another user listening on the port of one's own server got the password
    (a hostile review: `nobody` on 127.0.0.1:4096 read `opencode:MyRealSecret`). It is
    withheld, and said; one's own server on its port gets it as ever."""
    from tui.core import discover

    me = os.getuid()
    (tmp_path / "net").mkdir()
    head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
    rows = [  # 127.0.0.1:4096 by uid 65534; 0.0.0.0:5000 by me (LISTEN: 0A)
        f"   0: 0100007F:1000 00000000:0000 0A 00000000:00000000 00:00000000 00000000 "
        f"{65534 if me != 65534 else 65533} 0 111 1 0 100 0 0 10 0\n",
        f"   1: 00000000:1388 00000000:0000 0A 00000000:00000000 00:00000000 00000000 "
        f"{me} 0 222 1 0 100 0 0 10 0\n",
    ]
    (tmp_path / "net" / "tcp").write_text(head + "".join(rows))
    monkeypatch.setattr(discover, "PROC", tmp_path)
    for url in ("http://127.0.0.1:4096", "http://localhost:4096"):
        opts = resolve_options(Config(), urls=[url], auth=PW, env={})
        assert opts.auths[url] is None, url
        assert any("belongs to another user" in n and "not sent" in n for n in opts.notices)
        assert "env-secret" not in repr(opts)
    own = resolve_options(Config(), urls=["http://127.0.0.1:5000"], auth=PW, env={})
    assert own.auths["http://127.0.0.1:5000"] == PW
    assert not any("another user" in n for n in own.notices)


def test_proxies_from_the_environment_are_not_trusted_with_credentials(monkeypatch):
    monkeypatch.delenv("OCWATCH_TRUST_ENV", raising=False)

    async def check() -> tuple[bool, bool]:
        async with (
            Client("http://127.0.0.1:4096", PW) as with_pw,
            Client("http://127.0.0.1:4096") as without,
        ):
            return with_pw.http.trust_env, without.http.trust_env

    assert asyncio.run(check()) == (False, True)


def test_a_server_entry_reads_its_own_password_file(tmp_path):
    good = tmp_path / "pw"
    good.write_text("file-secret\n")
    config = Config(
        servers=[
            ServerEntry(url="http://127.0.0.1:5000", password_file=str(good), username="ci"),
            ServerEntry(url="http://127.0.0.1:6000", password_file=str(tmp_path / "missing")),
        ]
    )
    opts = resolve_options(config, env={})
    assert opts.auths == {
        "http://127.0.0.1:5000": Auth("ci", "file-secret"),
        "http://127.0.0.1:6000": None,
    }
    assert any("password_file" in n and "cannot read it" in n for n in opts.notices)


def test_a_password_file_written_with_a_byte_order_mark_reads_the_password(tmp_path):
    """A Windows editor's UTF-8 file starts with a BOM: it was sent as part of the password,
    and the server said 401 (a hostile review)."""
    bom = tmp_path / "pw"
    bom.write_bytes("\ufefffile-secret\r\n".encode())
    config = Config(servers=[ServerEntry(url="http://127.0.0.1:5000", password_file=str(bom))])
    assert resolve_options(config, env={}).auths["http://127.0.0.1:5000"] == Auth(
        "opencode", "file-secret"
    )


def test_a_named_server_is_picked_by_name_with_its_own_credentials():
    config = Config(
        servers=[
            ServerEntry(url="http://127.0.0.1:5000", name="prod", password_env="PROD_PW"),
            ServerEntry(url="http://127.0.0.1:6000", name="ci"),
        ]
    )
    opts = resolve_options(config, urls=["prod"], auth=PW, env={"PROD_PW": "p-secret"})
    assert opts.urls == ["http://127.0.0.1:5000"]
    assert opts.auth_for(opts.urls[0]) == Auth("opencode", "p-secret")
    assert opts.names == {"http://127.0.0.1:5000": "prod"}
    every = resolve_options(config, auth=PW, env={"PROD_PW": "p-secret"})
    assert every.names == {"http://127.0.0.1:5000": "prod", "http://127.0.0.1:6000": "ci"}
    # the first server's environment password never goes to a server with an entry of its own
    assert every.auth_for("http://127.0.0.1:6000") is None


def test_two_servers_of_one_name_are_said_and_the_second_goes_by_its_url():
    config = Config(
        servers=[
            ServerEntry(url="http://127.0.0.1:5000", name="dup"),
            ServerEntry(url="http://127.0.0.1:6000", name="dup"),
        ]
    )
    opts = resolve_options(config, env={})
    assert opts.names == {"http://127.0.0.1:5000": "dup"}
    assert any("two servers are named 'dup'" in n for n in opts.notices)


def test_a_name_that_is_not_a_label_is_refused_by_the_config():
    import pydantic
    import pytest

    for bad in ("", "has space", "new\nline", "x" * 65):
        with pytest.raises(pydantic.ValidationError):
            ServerEntry(url="http://127.0.0.1:1", name=bad)


async def test_the_name_reaches_the_view_and_status_json():
    api = FakeAPI(sessions=[wire_session("ses_1")])
    fleet = Fleet(
        ["http://one:4096"],
        transport=httpx.MockTransport(api.handle),
        names={"http://one:4096": "alpha"},
    )
    view = await fleet.snapshot_once()
    assert view.servers[0].label == "alpha"
    assert view.to_json()["servers"][0]["name"] == "alpha"
    plain = await Fleet(
        ["http://one:4096"], transport=httpx.MockTransport(api.handle)
    ).snapshot_once()
    assert plain.to_json()["servers"][0]["name"] == "http://one:4096"


def test_a_client_that_never_speaks_tls_trusts_no_certificate(monkeypatch):
    """Plain http with no proxy gets a strict context with no trusted roots (loading the
    system's costs ~30 ms a command): TLS it were led into would fail closed. https, or a proxy
    httpx would go through, keeps httpx's verified default."""
    import ssl

    import tui.core.client as client_mod

    made: list[ssl.SSLContext] = []

    real = client_mod.no_tls

    def spy() -> ssl.SSLContext:
        made.append(real())
        return made[-1]

    monkeypatch.setattr(client_mod, "no_tls", spy)
    monkeypatch.setenv("HTTP_PROXY", "https://proxy.invalid:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    async def build(url: str, auth: Auth | None) -> None:
        async with Client(url, auth) as client:
            client.http  # noqa: B018 (made on first use)

    asyncio.run(build("https://127.0.0.1:4096", PW))
    asyncio.run(build("http://127.0.0.1:4096", None))  # trusts the environment: via the proxy
    assert made == []
    asyncio.run(build("http://127.0.0.1:4096", PW))  # credentials: no proxy, plain http
    assert len(made) == 1


def test_the_context_of_a_client_without_tls_verifies_and_trusts_nothing():
    import ssl

    from tui.core.client import no_tls

    ctx = no_tls()
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] == 0


def test_a_password_file_that_is_no_regular_file_is_refused_not_waited_on(tmp_path) -> None:
    """Issue 40: a FIFO as the password file hung ocwatch, /dev/zero gave a traceback. Only a
    regular file of at most 64 KiB is read; the rest is said in one line, exit 2."""
    import os
    import subprocess
    import sys

    from tests.cli_env import cli_env

    fifo = tmp_path / "pw.fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big"
    big.write_bytes(b"x" * (65 * 1024))
    good = tmp_path / "pw"
    good.write_text("s3cret\n")
    for path, says in (
        (fifo, "it is not a regular file"),
        ("/dev/zero", "it is not a regular file"),
        (big, "it is larger than 64 KiB"),
    ):
        env = cli_env()
        env["OPENCODE_SERVER_PASSWORD_FILE"] = str(path)
        proc = subprocess.run(
            [sys.executable, "-m", "tui.cli.main", "status", "--server", "http://127.0.0.1:9"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert proc.returncode == 2, proc.stderr
        assert f"cannot read the password file: {says}" in proc.stderr
        assert "Traceback" not in proc.stderr
    from tui.core.settings import Auth

    got = Auth.from_env({"OPENCODE_SERVER_PASSWORD_FILE": str(good)})
    assert got is not None and got.password == "s3cret"


def test_only_loopback_addresses_are_spared_the_plain_http_warning() -> None:
    """Issue 40: any host name starting with `127.` was taken for loopback."""
    from tui.core.config import _cleartext

    for url in (
        "http://127.0.0.1:4096",
        "http://127.8.9.10:1",
        "http://[::1]:4096",
        "http://localhost:4096",
    ):
        assert not _cleartext(url), url
    for url in ("http://127.evil.example:4096", "http://127.0.0.1.nip.io:1", "http://10.0.0.2:1"):
        assert _cleartext(url), url
    assert not _cleartext("https://127.evil.example")
