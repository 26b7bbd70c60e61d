"""https with a private CA (issue 40, should-fix): `ca_file` and `$SSL_CERT_FILE` are honoured
with a password too, without turning the environment's proxies back on for it (a proxy would see
the Basic header); a certificate that is not trusted, and one issued for another host name, are
each named as such. A real https server on loopback (tests/hostile.py), with certificates a test
CA made (trustme)."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from tests.cli_env import cli_env
from tests.hostile import HostileServer
from tui.core import tls


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def serving(ca: trustme.CA, *names: str) -> HostileServer:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(ctx)
    return HostileServer(tls=ctx).start()


@pytest.fixture
def server(ca: trustme.CA) -> Iterator[HostileServer]:
    srv = serving(ca, "127.0.0.1", "localhost")
    yield srv
    srv.stop()


@pytest.fixture
def ca_pem(ca: trustme.CA, tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


def status(url: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = cli_env(password="sekrit-pw")
    full.pop("SSL_CERT_FILE", None)
    full.pop("SSL_CERT_DIR", None)
    full.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "tui.cli.main", "status", "--json", "--server", url],
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "sekrit-pw" not in proc.stdout + proc.stderr
    return proc


def test_a_private_ca_is_refused_until_it_is_trusted_and_said_so(server: HostileServer) -> None:
    proc = status(server.url)
    assert proc.returncode == 2
    assert "certificate is not trusted" in proc.stderr, proc.stderr
    assert "ca_file" in proc.stderr  # what to do about it


def test_ssl_cert_file_is_honoured_with_a_password(server: HostileServer, ca_pem: str) -> None:
    proc = status(server.url, SSL_CERT_FILE=ca_pem)
    assert proc.returncode == 0, proc.stderr
    assert [r["id"] for r in json.loads(proc.stdout)["sessions"]] == ["ses_ok"]
    # the password reached the server, over the verified connection
    assert any(h.get("authorization", "").startswith("Basic ") for _p, h in server.seen)


def test_the_configs_ca_file_is_honoured_and_proxies_stay_off(
    server: HostileServer, ca_pem: str, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"ca_file = {json.dumps(ca_pem)}\n")
    # a proxy that does not exist: were it used (the environment trusted again), nothing works
    proc = status(
        server.url,
        OCWATCH_CONFIG=str(config),
        HTTPS_PROXY="http://127.0.0.1:9",
        ALL_PROXY="http://127.0.0.1:9",
    )
    assert proc.returncode == 0, proc.stderr


def test_a_certificate_for_another_host_name_is_named_as_such(ca: trustme.CA, ca_pem: str) -> None:
    srv = serving(ca, "opencode.example")
    try:
        proc = status(srv.url, SSL_CERT_FILE=ca_pem)
    finally:
        srv.stop()
    assert proc.returncode == 2
    assert "not valid for this host name" in proc.stderr, proc.stderr


def test_a_ca_file_that_cannot_be_read_is_said(server: HostileServer, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('ca_file = "/nonexistent/ca.pem"\n')
    proc = status(server.url, OCWATCH_CONFIG=str(config))
    assert proc.returncode == 2
    assert "ca_file '/nonexistent/ca.pem': cannot read its certificates" in proc.stderr
    proc = status(server.url, SSL_CERT_FILE="/nonexistent/env.pem")
    assert proc.returncode == 2 and "$SSL_CERT_FILE '/nonexistent/env.pem'" in proc.stderr


def test_a_ca_file_that_is_a_fifo_or_a_device_is_said_not_waited_on(
    server: HostileServer, tmp_path: Path
) -> None:
    """A FIFO as the ca_file held every command in ssl's open of it (a hostile review)."""
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)
    for bundle in (str(fifo), "/dev/zero"):
        config = tmp_path / "config.toml"
        config.write_text(f"ca_file = {bundle!r}\n".replace("'", '"'))
        proc = status(server.url, OCWATCH_CONFIG=str(config))
        assert proc.returncode == 2
        assert f"ca_file '{bundle}': cannot read its certificates (not a regular file)" in (
            proc.stderr
        )


def test_verification_is_never_off() -> None:
    for ctx in (tls.context(None, {}), tls.trusted({})):
        assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
