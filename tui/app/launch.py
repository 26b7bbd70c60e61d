"""Taking the user to a session: the real OpenCode TUI attached to it (`A`: not `o`, the
permission dialog's allow-once key, so `r` then a table key never answers), or the server's web
UI (`w`).

The attach command is a template (config `attach_command`, and `attach_command_v2` for a V2
server's sessions: OpenCode 2.x opens one with `opencode --server URL --session ID`): `{url}`,
`{session}` and `{dir}` are filled in; an argument that would be an empty `{dir}` is left out
with the flag before it. The server's credentials go through the environment of the child
(`OPENCODE_SERVER_USERNAME`, `OPENCODE_SERVER_PASSWORD`), never its argv, and only that
server's: credentials the user's environment holds for another server are taken out.
"""

from __future__ import annotations

import base64
import os
import shutil
import string
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

from tui.core.config import DEFAULT_ATTACH, DEFAULT_ATTACH_V2
from tui.core.settings import Auth

FIELDS = frozenset({"url", "session", "dir"})
CREDENTIALS = (
    "OPENCODE_SERVER_PASSWORD",
    "OPENCODE_SERVER_PASSWORD_FILE",
    "OPENCODE_SERVER_USERNAME",
)


class LaunchError(Exception):
    """Why a session cannot be opened (one line for the user)."""


@dataclass(frozen=True)
class Launch:
    """A command ready to run: its argv and its whole environment."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(repr=False)  # holds the server's password


def check_template(template: Sequence[str]) -> str | None:
    """What is wrong with an attach command template (None: nothing)."""
    if not template or not str(template[0]).strip():
        return "attach_command is empty"
    for arg in template:
        for _text, name, _spec, _conv in string.Formatter().parse(arg):
            if name is not None and name not in FIELDS:
                return (
                    f"attach_command: unknown field {{{name}}} in {arg!r} (fields: "
                    "{url}, {session}, {dir})"
                )
    return None


def attach_argv(template: Sequence[str], url: str, session: str, directory: str) -> list[str]:
    """The template filled in (values are never split or interpreted by a shell)."""
    values = {"url": url, "session": session, "dir": directory}
    out: list[str] = []
    for arg in template:
        if arg == "{dir}" and not directory:
            if out and out[-1].startswith("-"):
                out.pop()  # `--dir` with no folder: leave the pair out
            continue
        out.append(arg.format_map(values))
    return out


def child_env(base: Mapping[str, str], auth: Auth | None) -> dict[str, str]:
    """`base` without any OpenCode credentials, plus this server's own (if it has some)."""
    env = {k: v for k, v in base.items() if k not in CREDENTIALS}
    if auth is not None:
        env["OPENCODE_SERVER_USERNAME"] = auth.username
        env["OPENCODE_SERVER_PASSWORD"] = auth.password
    return env


def web_url(url: str, directory: str, session: str) -> str:
    """The server's web UI on this session: `URL/<folder, base64url>/session/ID`."""
    folder = base64.urlsafe_b64encode(directory.encode()).decode().rstrip("=")
    return f"{url.rstrip('/')}/{folder}/session/{quote(session, safe='')}"


def has_graphical_browser(env: Mapping[str, str]) -> bool:
    """Whether opening a browser shows a window: on a terminal-only Linux box Python's
    `webbrowser` would start a console browser on top of the dashboard."""
    if env.get("BROWSER"):
        return True
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


class Launcher:
    """Builds the attach command for a session of a watched server."""

    def __init__(
        self,
        template: Sequence[str] = DEFAULT_ATTACH,
        auth_of: Callable[[str], Auth | None] = lambda _url: None,
        env: Mapping[str, str] | None = None,
        refresh: Callable[[str], None] = lambda _url: None,
        *,
        template_v2: Sequence[str] = DEFAULT_ATTACH_V2,
        protocol_of: Callable[[str], str | None] = lambda _url: None,
        attach_in: str = "auto",
    ) -> None:
        """`auth_of`: a watched server's own credentials; `env`: the environment the child
        starts from (default: ours); `refresh`: called with the server's URL once the user is
        back (what they did there shows without waiting for the next resync); `protocol_of`:
        a watched server's protocol ("v2": `template_v2` opens its sessions)."""
        self.template = tuple(template)
        self.template_v2 = tuple(template_v2)
        self.auth_of = auth_of
        self.env = env
        self.refresh = refresh
        self.protocol_of = protocol_of
        self.attach_in = attach_in

    def place(self) -> str:
        """Where a session opens: `tmux-window`, `tmux-split` or `terminal` (auto: a tmux
        window inside tmux, this terminal outside)."""
        env = os.environ if self.env is None else self.env
        inside = bool(env.get("TMUX"))
        if self.attach_in == "auto":
            return "tmux-window" if inside else "terminal"
        if self.attach_in.startswith("tmux") and not inside:
            return "terminal"  # (not in tmux: there is no window to open)
        return self.attach_in

    def attach(self, url: str, session: str, directory: str) -> Launch:
        """The command that attaches OpenCode's TUI to the session. LaunchError when the
        template is wrong or its program is not installed."""
        template = self.template_v2 if self.protocol_of(url) == "v2" else self.template
        problem = check_template(template)
        if problem is not None:
            raise LaunchError(problem)
        for name, value in (("session id", session), ("folder", directory)):
            # from the server: never an option of the command, never a NUL (no such argv)
            if value.startswith("-") or "\0" in value:
                raise LaunchError(
                    f"The session's {name} {value[:80]!r} cannot be passed to a command safely."
                )
        base = dict(os.environ if self.env is None else self.env)
        argv = attach_argv(template, url, session, directory)
        program = argv[0]
        found = shutil.which(program, path=base.get("PATH"))
        if found is None:
            hint = (
                "install OpenCode (npm install -g opencode-ai)"
                if os.path.basename(program) == "opencode"
                else "check attach_command"
            )
            raise LaunchError(
                f"{program!r} is not installed or not on PATH: {hint}, or set "
                "attach_command in the config."
            )
        return Launch((found, *argv[1:]), child_env(base, self.auth_of(url)))
