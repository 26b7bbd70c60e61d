"""Start and stop a real, isolated, offline `opencode serve` for tests (and fixture recording).

`OpenCodeServer(bin, root, model_url).start()` prepares under `root`:

    root/home, root/xdg_config (with opencode/opencode.json), root/xdg_data, root/xdg_cache,
    root/xdg_state                        isolated HOME and XDG_*_HOME
    root/alpha                            git-initialised project folder, the server's cwd
    root/beta                             a second git-initialised project folder

and runs `opencode serve --port 0 --hostname 127.0.0.1` in its own process group, parsing the
`listening on http://...` line for the URL. `stop()` terminates the process group (SIGTERM, then
SIGKILL). `kill()` is SIGKILL to the group (a crash); `start()` again reuses the same data dirs.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parents[2]
PINNED_VERSION = "1.18.33"
LISTEN_RE = re.compile(r"listening on (http://\S+)")
OFFLINE_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
}
# Variables of the calling environment that must not leak into the isolated server.
_SCRUB_PREFIXES = ("OPENCODE_", "XDG_")


def find_opencode_bin() -> str | None:
    """`$OPENCODE_BIN`, else the pinned install of the README's test command
    (`.opencode/node_modules/.bin/opencode`), else `node_modules/.bin/opencode` at the repo root,
    else `opencode` on PATH; None when none is found."""
    env = os.environ.get("OPENCODE_BIN")
    if env:
        return env if os.access(env, os.X_OK) else None
    for local in (
        REPO_ROOT / ".opencode" / "node_modules" / ".bin" / "opencode",
        REPO_ROOT / "node_modules" / ".bin" / "opencode",
    ):
        if local.exists() and os.access(local, os.X_OK):
            return str(local)
    return shutil.which("opencode")


V2_VERSION = "2.0.15"
#: where the README's test command installs the pinned V2 server (its platform package)
V2_LOCAL = (
    REPO_ROOT
    / ".opencode2"
    / "node_modules"
    / "@opencode"
    / "cli-linux-x64-baseline"
    / "bin"
    / "opencode"
)


def find_opencode2_bin() -> str | None:
    """`$OPENCODE2_BIN`, else the pinned V2 install of the README's test command
    (`.opencode2/...`); None when none is found."""
    env = os.environ.get("OPENCODE2_BIN")
    if env:
        return env if os.access(env, os.X_OK) else None
    if V2_LOCAL.exists() and os.access(V2_LOCAL, os.X_OK):
        return str(V2_LOCAL)
    return None


def opencode_config(model_url: str, **extra: Any) -> dict[str, Any]:
    """The opencode.json pointing every model use at the scripted model."""
    cfg: dict[str, Any] = {
        "model": "fake/fake",
        "small_model": "fake/fake",
        "autoupdate": False,
        "share": "disabled",
        "permission": {"bash": "ask"},
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": model_url, "apiKey": "x"},
                "models": {
                    "fake": {
                        "name": "Fake",
                        "tool_call": True,
                        # a price so that Session/message `cost` is non-zero
                        "cost": {"input": 1, "output": 2},
                        "limit": {"context": 100000, "output": 4000},
                    }
                },
            }
        },
    }
    cfg.update(extra)
    return cfg


def free_port() -> int:
    """A loopback port nothing listens on now, never 4096 (OpenCode's default)."""
    import socket

    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port != 4096:
            return port


def git_init(folder: Path, name: str) -> None:
    """A git repo with one commit (distinct per folder, so each gets its own project id)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "README.md").write_text(f"# {name}\n\nocwatch integration test project {name}.\n")
    git = [
        "git",
        "-c",
        "user.name=ocwatch",
        "-c",
        "user.email=ocwatch@example.invalid",
        "-c",
        "init.defaultBranch=main",
        "-c",
        "commit.gpgsign=false",
    ]
    subprocess.run([*git, "init", "-q", str(folder)], check=True)
    subprocess.run([*git, "-C", str(folder), "add", "README.md"], check=True)
    subprocess.run([*git, "-C", str(folder), "commit", "-q", "-m", f"init {name}"], check=True)


#: The plugin SDK a V1 server installs into its config folder when it first loads a project
#: (it writes a package.json naming the SDK of its own version, then installs it: 31 MB of
#: downloads into HOME and ~9 s of a core in the server, where the start itself takes 3 s).
#: Every test server has a config folder of its own, so every one paid it; one install a
#: version, made once and linked into each folder, is taken as installed (`plugin_seed`).
PLUGIN = "@opencode-ai/plugin"
SEEDS = REPO_ROOT / ".opencode" / "plugin-seed"


def _package_json(version: str) -> str:
    """The package.json a V1 server writes into its config folder (as it writes it)."""
    return json.dumps({"dependencies": {PLUGIN: version}}, indent=2) + "\n"


@functools.cache
def server_version(binary: str) -> str | None:
    """The version of the OpenCode npm package `binary` belongs to (`opencode-ai`, or a
    platform package `@opencode/...`: the package.json above it), None when it belongs to
    none: a binary of another origin is not seeded (a wrong version would have the server
    install into the shared seed)."""
    for folder in Path(binary).resolve().parents:
        try:
            got = json.loads((folder / "package.json").read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(got, dict):
            return None
        name, version = got.get("name"), got.get("version")
        ours = isinstance(name, str) and (name == "opencode-ai" or name.startswith("@opencode/"))
        return version if ours and isinstance(version, str) else None
    return None


def plugin_seed(version: str) -> Path | None:
    """A folder holding the plugin SDK `version` installed as a V1 server installs it
    (package.json, package-lock.json, node_modules), made once by npm under SEEDS, under a
    lock (pytest-xdist's workers share it); None when it cannot be made (no npm, no registry,
    no room): the servers then install it themselves, as they always did."""
    seed = SEEDS / version
    done = [seed / "node_modules" / PLUGIN / "package.json", seed / "package-lock.json"]
    if all(f.exists() for f in done):
        return seed
    npm = shutil.which("npm")
    if npm is None:
        return None
    try:
        SEEDS.mkdir(parents=True, exist_ok=True)
        with open(SEEDS / f"{version}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # (released when the file closes)
            if all(f.exists() for f in done):
                return seed  # (another worker made it meanwhile)
            # what a run cut short left (a half-made seed, a killed install's folders)
            shutil.rmtree(seed, ignore_errors=True)
            for part in SEEDS.glob(f"{version}.part-*"):
                shutil.rmtree(part, ignore_errors=True)
            work = SEEDS / f"{version}.part-{os.getpid()}"
            work.mkdir()
            (work / "package.json").write_text(_package_json(version))
            try:
                subprocess.run(
                    [npm, "install", "--silent", "--no-audit", "--no-fund", "--package-lock"],
                    cwd=work,
                    capture_output=True,
                    timeout=300,
                    check=True,
                )
            except (OSError, subprocess.SubprocessError):
                shutil.rmtree(work, ignore_errors=True)
                return None
            work.rename(seed)
    except OSError:
        return None
    return seed if all(f.exists() for f in done) else None


def seed_plugin(config_dir: Path, binary: str) -> bool:
    """Lay the plugin SDK of `binary`'s version into a V1 server's config folder before it
    starts: its package.json and lock copied, its node_modules a link to the one seed (never
    written to: the server installs nothing when the SDK of its version is there). Whether
    it was laid (not when the folder has its own already, or no seed could be made)."""
    version = server_version(binary)
    if version is None or (config_dir / "node_modules").exists():
        return False
    seed = plugin_seed(version)
    if seed is None:
        return False
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(seed / name, config_dir / name)
    (config_dir / "node_modules").symlink_to(seed / "node_modules", target_is_directory=True)
    return True


class OpenCodeServer:
    def __init__(
        self,
        bin_path: str,
        root: Path,
        model_url: str,
        *,
        password: str | None = None,
        username: str | None = None,
        config_extra: dict[str, Any] | None = None,
        v2: bool = False,
        serve_args: tuple[str, ...] = (),
    ) -> None:
        """`v2`: the binary is a V2 server (2.x): it always wants a password (one is made up
        when none is given) and answers `/api/info`, not `/global/health`."""
        self.v2 = v2
        self.serve_args = serve_args  # more arguments of `serve` (V2: `--service`)
        if v2 and password is None:
            password = "v2-" + os.urandom(8).hex()
        self.bin = bin_path
        self.root = Path(root)
        self.model_url = model_url
        self.password = password
        self.username = username
        self.config_extra = config_extra or {}
        self.project = self.root / "alpha"
        self.project2 = self.root / "beta"
        self.proc: subprocess.Popen[str] | None = None
        self.url: str = ""
        self.output: collections.deque[str] = collections.deque(maxlen=400)
        self._prepared = False

    # -- setup ------------------------------------------------------------------------------------
    @property
    def auth(self) -> tuple[str, str] | None:
        if self.password is None:
            return None
        return (self.username or "opencode", self.password)

    @property
    def config_path(self) -> Path:
        return self.root / "xdg_config" / "opencode" / "opencode.json"

    @property
    def data_dir(self) -> Path:
        return self.root / "xdg_data"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB_PREFIXES)}
        env.update(OFFLINE_ENV)
        env["HOME"] = str(self.root / "home")
        env["XDG_CONFIG_HOME"] = str(self.root / "xdg_config")
        env["XDG_DATA_HOME"] = str(self.root / "xdg_data")
        env["XDG_CACHE_HOME"] = str(self.root / "xdg_cache")
        env["XDG_STATE_HOME"] = str(self.root / "xdg_state")
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        if self.password is not None:
            env["OPENCODE_SERVER_PASSWORD"] = self.password
        if self.username is not None:
            env["OPENCODE_SERVER_USERNAME"] = self.username
        return env

    def prepare(self) -> None:
        if self._prepared:
            return
        for d in ("home", "xdg_config/opencode", "xdg_data", "xdg_cache", "xdg_state"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(
            json.dumps(opencode_config(self.model_url, **self.config_extra), indent=2)
        )
        if not self.v2:  # (V2 installs nothing there)
            seed_plugin(self.config_path.parent, self.bin)
        if not (self.project / ".git").exists():
            git_init(self.project, "alpha")
        if not (self.project2 / ".git").exists():
            git_init(self.project2, "beta")
        self._prepared = True

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self, timeout: float = 90.0, port: int = 0) -> OpenCodeServer:
        """Start (or restart) the server; `port=0` picks one (never OpenCode's default 4096,
        which `--port 0` takes first when it is free: a test of "nothing configured" would
        find another test's server there), a restart may ask for the same."""
        self.prepare()
        self.url = ""
        if port == 0:
            port = free_port()
        self.proc = subprocess.Popen(
            [self.bin, "serve", "--port", str(port), "--hostname", "127.0.0.1", *self.serve_args],
            cwd=self.project,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            start_new_session=True,  # own process group: stop() can signal the whole tree
        )
        found = threading.Event()

        def pump(proc: subprocess.Popen[str]) -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                self.output.append(line.rstrip("\n"))
                if not found.is_set():
                    m = LISTEN_RE.search(line)
                    if m:
                        self.url = m.group(1).rstrip("/")
                        found.set()
            found.set()

        threading.Thread(target=pump, args=(self.proc,), name="opencode-out", daemon=True).start()
        deadline = time.monotonic() + timeout
        while not found.wait(0.1):
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"opencode serve did not start in {timeout}s:\n{self.tail()}")
        if not self.url:
            self.stop()
            raise RuntimeError(f"opencode serve exited before listening:\n{self.tail()}")
        if "--service" in self.serve_args:  # it makes up its own password, and says it there
            self.password = self._service_password(deadline)
        self._wait_healthy(deadline)
        return self

    @property
    def service_file(self) -> Path:
        """Where a V2 `serve --service` writes its address and password."""
        return self.root / "xdg_state" / "opencode" / "service.json"

    def _service_password(self, deadline: float) -> str:
        while time.monotonic() < deadline:
            try:
                got = json.loads(self.service_file.read_text())
                if got.get("url") == self.url and got.get("password"):
                    return str(got["password"])
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        raise RuntimeError(f"no {self.service_file} of this server:\n{self.tail()}")

    def _wait_healthy(self, deadline: float) -> None:
        last: Exception | str | None = None
        with httpx.Client(auth=self.auth, timeout=5) as c:
            while time.monotonic() < deadline:
                try:
                    if self.v2:
                        r = c.get(f"{self.url}/api/info")
                        if r.status_code == 200 and r.json().get("version"):
                            return
                    else:
                        r = c.get(f"{self.url}/global/health")
                        if r.status_code == 200 and r.json().get("healthy"):
                            return
                    last = f"{r.status_code} {r.text[:200]}"
                except (httpx.HTTPError, ValueError) as exc:
                    last = exc
                time.sleep(0.2)
        raise RuntimeError(f"opencode serve not healthy: {last}\n{self.tail()}")

    def stop(self, timeout: float = 5.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout)
        # anything left in the group (tool processes), and the server if it hung
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)

    def kill(self) -> None:
        """SIGKILL the whole process group: a crash, no cleanup."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)

    def restart(self) -> OpenCodeServer:
        self.stop()
        return self.start()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, n: int = 60) -> str:
        return "\n".join(list(self.output)[-n:])

    def __enter__(self) -> OpenCodeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def scripted_server(prefix: str = "ocwatch-bench-") -> Iterator[OpenCodeServer]:
    """A real `opencode serve` on a scripted model, in a fresh folder, for scripts that run by
    hand (the benchmarks); stopped, with its model, on the way out. Exits with a clear message
    when the pinned binary is not installed."""
    import sys
    import tempfile

    from .scripted_model import ScriptedModel

    binary = find_opencode_bin()
    if binary is None:
        sys.exit("opencode binary not found (run the README's test command first)")
    model = ScriptedModel().start()
    try:
        srv = OpenCodeServer(binary, Path(tempfile.mkdtemp(prefix=prefix)), model.url).start()
        try:
            yield srv
        finally:
            srv.stop()
    finally:
        model.stop()
