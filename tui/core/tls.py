"""Which certificates an https server is verified against, and how a TLS failure is said.

httpx reads `$SSL_CERT_FILE` and `$SSL_CERT_DIR` only when it trusts the environment, and a client
holding a password does not (a proxy from the environment would see its Basic header): a user
with a private CA and a password could not connect at all. So the trust is chosen here, whatever
the proxy setting: the config's `ca_file`, else `$SSL_CERT_FILE` / `$SSL_CERT_DIR`, else the
certifi bundle httpx uses by default. Verification (of the chain and of the host name) is never
turned off.
"""

from __future__ import annotations

import functools
import os
import ssl
import stat
from collections.abc import Mapping

#: The config's `ca_file`, set once when the config is read (use_ca_file); every https client of
#: the process verifies against it
_ca_file: str | None = None
#: The largest certificate bundle read (the system's is about 200 KB)
CA_FILE_MAX = 16 * 2**20


class TrustError(Exception):
    """The certificates to trust could not be read (a message fit for users)."""


def use_ca_file(path: str | None) -> None:
    """Verify every https server against `path` (a PEM bundle; None: the environment's or the
    default). Raises TrustError when it cannot be read, at once rather than at first connect."""
    global _ca_file
    if path is not None:
        context(path, {})  # (read now: a wrong path is said at start-up)
    _ca_file = path


def trusted(env: Mapping[str, str] | None = None) -> ssl.SSLContext:
    """The TLS context an https client verifies its server with (see the module's docstring)."""
    return context(_ca_file, os.environ if env is None else env)


def context(ca_file: str | None, env: Mapping[str, str]) -> ssl.SSLContext:
    if ca_file:
        return _load(ca_file, None, "ca_file")
    if env.get("SSL_CERT_FILE"):
        return _load(env["SSL_CERT_FILE"], None, "$SSL_CERT_FILE")
    if env.get("SSL_CERT_DIR"):
        return _load(None, env["SSL_CERT_DIR"], "$SSL_CERT_DIR")
    import certifi

    return _load(certifi.where(), None, "certifi")


@functools.lru_cache(maxsize=8)
def _load(cafile: str | None, capath: str | None, where: str) -> ssl.SSLContext:
    """A verifying context (cached: loading a bundle parses every certificate in it, and the
    contexts are only read once made)."""
    try:
        if cafile is not None:
            info = os.stat(cafile)
            # (a FIFO held every command in ssl's open of it; /dev/zero never ends)
            if not stat.S_ISREG(info.st_mode):
                raise ValueError("not a regular file")
            if info.st_size > CA_FILE_MAX:
                raise ValueError(f"larger than {CA_FILE_MAX // 2**20} MiB")
        return ssl.create_default_context(cafile=cafile, capath=capath)
    except (OSError, ssl.SSLError, ValueError) as exc:
        name = cafile or capath
        why = getattr(exc, "strerror", None) or str(exc).strip() or type(exc).__name__
        raise TrustError(f"{where} {name!r}: cannot read its certificates ({why})") from None


def describe(exc: BaseException) -> str | None:
    """What a TLS verification failure somewhere in `exc`'s chain means, in one line (None: it
    is no such failure)."""
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 10:
        if isinstance(cur, ssl.SSLCertVerificationError):
            why = (cur.verify_message or "").strip()
            if "hostname mismatch" in why.lower() or "ip address mismatch" in why.lower():
                return (
                    f"TLS: the server's certificate is not valid for this host name ({why}); "
                    "connect by a name the certificate lists"
                )
            return (
                f"TLS: the server's certificate is not trusted ({why or 'verify failed'}); "
                "set ca_file in the config, or $SSL_CERT_FILE, to its CA"
            )
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return None
