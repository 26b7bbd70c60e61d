"""The `ocwatch` command line: dashboard, demo, status, wait, watch, metrics, abort, reply,
answer."""

from __future__ import annotations

from ..core import gcpause

# The cyclic collector is paused while the command line's modules load (tui.core.gcpause): they
# make many objects, nearly none of them garbage, and the collections they would trigger walk
# them again and again for nothing. Once the module is loaded (the end of this file) they are
# frozen (kept out of every later collection: they live as long as the process) and the
# collector runs again. (An import that fails leaves it paused: the command cannot run then,
# and the process ends.)
_GC_WAS_ON = gcpause.pause_for_imports()

# ruff: noqa: E402 (the imports below come after the pause)
import argparse
import contextlib
import copy
import logging
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ..core.client import OcwatchError
from ..core.config import CORE, Options, load_config, resolve_options
from ..core.exitcodes import ExitCode
from ..core.settings import DEFAULT_URL, Auth
from . import actions
from .output import OUTPUT, say
from .status import run_status, run_status_replay
from .wait import run_wait

DEFAULT_LISTEN = "127.0.0.1:9464"


THEME_HELP = (
    "dashboard theme: ocwatch-dark (default), ocwatch-light, ocwatch-contrast, or one "
    "of yours (the themes/ folder beside the config)"
)


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}")
    return value


def _server_arg(p: argparse.ArgumentParser, many: bool) -> None:
    """`--server`, repeatable wherever it is given, so that a command on one server (`many`
    False) sees, and refuses, a second one (`_script_options`) rather than keep the last.
    (Given on both sides of the command, the ones after it win, as every option's.)"""
    p.add_argument(
        "--server",
        "-s",
        action="append",
        metavar="URL",
        default=argparse.SUPPRESS,
        help=f"server URL{' (repeatable' if many else ' (one'}; default $OPENCODE_SERVER_URL "
        f"or {DEFAULT_URL})",
    )


#: Commands that act on one server
ONE_SERVER = frozenset({"prompt", "abort", "reply", "answer"})


def _alert_args(p: argparse.ArgumentParser, default: object) -> None:
    """Alert sinks of the dashboard, each opt-in (the config file can switch them on too)."""
    p.add_argument(
        "--bell",
        action="store_true",
        default=default,
        help="ring the terminal bell on alerts (a session needs you, fails, goes stale)",
    )
    p.add_argument(
        "--osc9",
        action="store_true",
        default=default,
        help="send alerts as OSC 9 desktop notifications through the terminal",
    )
    p.add_argument(
        "--notify",
        action="store_true",
        default=default,
        help="send alerts with notify-send where it exists",
    )
    p.add_argument(
        "--osc777",
        action="store_true",
        default=default,
        help="send alerts as OSC 777 notifications (foot, Ghostty, urxvt, VTE)",
    )
    p.add_argument(
        "--osc99",
        action="store_true",
        default=default,
        help="send alerts as kitty's OSC 99 notifications",
    )
    p.add_argument(
        "--unfocused-only",
        action="store_true",
        default=default,
        help="terminal and desktop alerts only while the terminal is not focused",
    )
    _offterminal_args(p, None if default is False else default)


def _offterminal_args(p: argparse.ArgumentParser, default: object) -> None:
    """Alerts that reach a person off the terminal, each opt-in (or in the config file)."""
    p.add_argument(
        "--notify-cmd",
        metavar="CMD",
        default=default,
        help="run CMD (no shell) per alert, the alert as JSON on stdin and in "
        "OCWATCH_ALERT_* variables",
    )
    p.add_argument(
        "--webhook",
        metavar="URL",
        default=default,
        help="POST each alert as JSON to URL (ntfy's format for an ntfy topic); a "
        "bearer token from $OCWATCH_WEBHOOK_TOKEN",
    )
    p.add_argument(
        "--webhook-format",
        choices=["auto", "json", "ntfy"],
        default=default,
        help="the webhook's body (default auto: ntfy for ntfy hosts, else json)",
    )


#: Flags that set alert settings (AlertConfig fields), by argparse's name for them
ALERT_FLAGS = {
    "bell": "bell",
    "osc9": "osc9",
    "notify": "desktop",
    "osc777": "osc777",
    "osc99": "osc99",
    "unfocused_only": "unfocused_only",
    "notify_cmd": "notify_cmd",
    "webhook": "webhook",
    "webhook_format": "webhook_format",
}


def alert_flags(args: argparse.Namespace) -> dict[str, object]:
    """The alert settings the command line gives (those the command has)."""
    return {
        key: getattr(args, flag)
        for flag, key in ALERT_FLAGS.items()
        if getattr(args, flag, None) is not None
    }


def _metrics_arg(p: argparse.ArgumentParser, default: object) -> None:
    p.add_argument(
        "--metrics",
        metavar="HOST:PORT",
        default=default,
        help="also serve Prometheus metrics on HOST:PORT (as `ocwatch metrics`)",
    )


class _Version(argparse.Action):
    """`--version`: the version is read from the package metadata only when asked for."""

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        from .. import __version__

        print(f"ocwatch {__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ocwatch",
        description="A truthful monitor for OpenCode server sessions. Without a command it opens "
        "the dashboard. The password comes from $OPENCODE_SERVER_PASSWORD (or the file "
        "named by $OPENCODE_SERVER_PASSWORD_FILE), never from a flag.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    parser.add_argument(
        "--grace",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="seconds a finished run may still read busy before it is flagged "
        f"stale (default {CORE.grace:g})",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    parser.add_argument(
        "--server",
        "-s",
        action="append",
        metavar="URL",
        default=None,
        help=f"server URL (repeatable; default $OPENCODE_SERVER_URL or {DEFAULT_URL})",
    )
    parser.add_argument(
        "--servers-file",
        metavar="PATH",
        default=None,
        help="also watch the servers of PATH, an inventory in Prometheus's file_sd JSON "
        "format, re-read when it changes (config: servers_file)",
    )
    parser.add_argument(
        "--discover",
        choices=("auto", "local", "none"),
        default=None,
        help="local discovery of this user's OpenCode servers on this machine (/proc, V2's "
        "service.json): auto (default) when nothing names a server, local beside the named "
        "ones, none: off (config: discover)",
    )
    parser.add_argument("--theme", help=THEME_HELP)
    parser.add_argument(
        "--read-only",
        action="store_true",
        default=False,
        help="turn every action off (abort, reply, answer, attach): for wall screens",
    )
    _metrics_arg(parser, None)
    _alert_args(parser, False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="dashboard against a built-in simulated server")
    demo.add_argument("--theme", default=argparse.SUPPRESS, help=THEME_HELP)
    _metrics_arg(demo, argparse.SUPPRESS)
    _alert_args(demo, argparse.SUPPRESS)
    demo.add_argument("--speed", type=float, default=1.0, help="scenario speed factor")
    demo.add_argument(
        "--protocol",
        choices=("v1", "v2"),
        default="v1",
        help="the simulated server speaks OpenCode 1.x (v1, default) or 2.x (v2)",
    )
    demo.add_argument(
        "--read-only", action="store_true", default=argparse.SUPPRESS, help="turn every action off"
    )

    st = sub.add_parser("status", help="print every session's state")
    _server_arg(st, many=True)
    st.add_argument("--json", action="store_true", help="print one JSON object")
    st.add_argument(
        "--format",
        choices=("table", "json", "tmux"),
        default=None,
        help="table (default), json (as --json), or tmux: one short line for a "
        "status bar (`? 2 ⚠ 1 ● 5`)",
    )
    st.add_argument(
        "--replay",
        metavar="FILE",
        type=Path,
        help="the View of a recording (ocwatch record) instead of a live server",
    )
    st.add_argument(
        "--at",
        metavar="TIME",
        help="with --replay: the View at TIME (ISO 8601, epoch seconds, or +SECONDS "
        "after the start; default: the end)",
    )

    sv = sub.add_parser(
        "servers", help="list the servers ocwatch would watch, and how each was found"
    )
    _server_arg(sv, many=True)
    sv.add_argument("--json", action="store_true", help="print one JSON object")

    w = sub.add_parser("wait", help="block until sessions settle; the exit code tells how")
    w.add_argument("session_ids", metavar="SESSION_ID", nargs="+")
    _server_arg(w, many=True)
    mode = w.add_mutually_exclusive_group()
    mode.add_argument(
        "--all",
        dest="any_",
        action="store_false",
        default=False,
        help="until every session has settled; exit with the worst code (default)",
    )
    mode.add_argument(
        "--any",
        dest="any_",
        action="store_true",
        help="until the first session settles; exit with its code",
    )
    w.add_argument(
        "--timeout",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="exit 124 if the session has not settled by then (0: look once)",
    )
    w.add_argument("--json", action="store_true", help="print the final row as JSON")

    m = sub.add_parser("metrics", help="serve Prometheus metrics of every session, headless")
    _server_arg(m, many=True)
    m.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default=DEFAULT_LISTEN,
        help=f"where to serve /metrics (default {DEFAULT_LISTEN}; :PORT: every interface)",
    )
    m.add_argument(
        "--session-info",
        action="store_true",
        help="also serve ocwatch_session_info, one series per session with its id "
        "and title as labels (unbounded: for small fleets)",
    )
    # (SUPPRESS: given before the command they stay, not overwritten by this parser's defaults)
    _offterminal_args(m, argparse.SUPPRESS)

    wt = sub.add_parser("watch", help="print one line per settled state change, until Ctrl-C")
    _server_arg(wt, many=True)
    wt.add_argument(
        "--session",
        action="append",
        metavar="ID",
        default=[],
        help="only this session (repeatable)",
    )
    wt.add_argument("--json", action="store_true", help="NDJSON: one object per transition")
    wt.add_argument(
        "--replay",
        metavar="FILE",
        type=Path,
        help="the transitions of a recording (ocwatch record), at full speed",
    )

    rep = sub.add_parser("report", help="a bug-report bundle for one session (JSON)")
    rep.add_argument("session_id", metavar="SESSION_ID")
    _server_arg(rep, many=True)
    rep.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        type=Path,
        help="write it to FILE (a new file); FILE.ndjson[.gz]: the capture as a "
        "recording that `ocwatch replay` opens",
    )
    rep.add_argument(
        "--redact",
        action="store_true",
        help="replace the text of messages, events and requests by its length",
    )
    rep.add_argument(
        "--for",
        dest="seconds",
        type=seconds,
        default=3.0,
        metavar="SECONDS",
        help="how long to watch the server first (default 3)",
    )

    rp = sub.add_parser("replay", help="the dashboard driven by a recording (no server)")
    rp.add_argument("file", metavar="FILE", type=Path, help="a recording (ocwatch record)")
    rp.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="times the recorded pace (default 1; p pauses, + and - change it)",
    )
    rp.add_argument(
        "--from",
        dest="start",
        metavar="TIME",
        help="start at TIME (ISO 8601, epoch seconds, or +SECONDS after the start)",
    )
    rp.add_argument("--theme", default=argparse.SUPPRESS, help=THEME_HELP)

    rec = sub.add_parser("record", help="record every raw event and snapshot answer to a file")
    rec.add_argument(
        "file",
        metavar="FILE",
        type=Path,
        help="NDJSON (gzip when it ends in .gz); a new file, never overwritten",
    )
    _server_arg(rec, many=True)
    rec.add_argument(
        "--max-size",
        metavar="SIZE",
        default=None,
        help="stop (cleanly) once the file reaches SIZE (e.g. 500M, 2G)",
    )

    pr = sub.add_parser(
        "prompt",
        help="send a session a prompt; with --wait, exit as `wait` does when its run settles",
    )
    pr.add_argument(
        "target",
        nargs="+",
        metavar="SESSION_ID TEXT",
        help="the session and the prompt (- reads it from stdin); with --new, the prompt only",
    )
    pr.add_argument(
        "--new",
        metavar="FOLDER",
        default=None,
        help="send it to a new session in this project folder (its id is printed)",
    )
    _server_arg(pr, many=False)
    pr.add_argument(
        "--wait", action="store_true", help="follow the run it starts; exit with its outcome"
    )
    pr.add_argument(
        "--timeout",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="with --wait: exit 124 if the run has not settled by then",
    )
    pr.add_argument("--json", action="store_true", help="with --wait: print the final row as JSON")

    a = sub.add_parser("abort", help="abort a session's run")
    a.add_argument("session_id", metavar="SESSION_ID")
    _server_arg(a, many=False)

    r = sub.add_parser("reply", help="reply to a permission request")
    r.add_argument("request_id", metavar="REQUEST_ID")
    r.add_argument("reply", choices=["once", "always", "reject"])
    r.add_argument("--message", help="a message for the agent (with reject)")
    _server_arg(r, many=False)

    q = sub.add_parser(
        "answer", help="answer a question request (a V2 form: its fields, in order), or reject it"
    )
    q.add_argument("request_id", metavar="REQUEST_ID")
    q.add_argument(
        "--option",
        action="append",
        metavar="LABEL",
        help="choose an option by label, in any case if only one label matches (repeatable)",
    )
    q.add_argument(
        "--text",
        action="append",
        metavar="TEXT",
        help="a typed answer: one for every question without a chosen option, or one each, in "
        "order (repeatable)",
    )
    q.add_argument("--reject", action="store_true", help="reject the question (dismiss a V2 form)")
    _server_arg(q, many=False)
    for command, command_parser in sub.choices.items():
        _take_globals(parser, command_parser, command)
    return parser


def _take_globals(top: argparse.ArgumentParser, p: argparse.ArgumentParser, command: str) -> None:
    """Every option of the top level is taken after the command too (`ocwatch status --grace
    30` as `ocwatch --grace 30 status`): a twin of it in the command's parser, unless the
    command has its own, that sets nothing unless given (SUPPRESS: a value given before the
    command stays). A command that does not honour it hides it from its help, and
    `_refuse_ignored` refuses it as it refuses it before the command."""
    for action in top._actions:
        flags = action.option_strings
        if not flags or action.dest == "help" or any(f in p._option_string_actions for f in flags):
            continue
        twin = copy.copy(action)
        twin.default = argparse.SUPPRESS
        if action.dest == "version" or not honours(command, action.dest):
            twin.help = argparse.SUPPRESS
        p._add_action(twin)


def _flag_urls(args: argparse.Namespace) -> list[str] | None:
    """Servers given with --server (before or after the command), or None."""
    got = getattr(args, "server", None)
    if isinstance(got, str):
        return [got]
    return list(got) if got else None


#: Options of the dashboard given before the command (their argparse names), and the commands
#: that honour them; given to any other command they are refused, not silently ignored
DASHBOARD_OPTIONS = {
    "server": (
        "--server",
        {None}
        | {"status", "wait", "metrics", "watch", "report", "record", "prompt", "servers"}
        | {"abort", "reply", "answer"},
    ),
    "servers_file": ("--servers-file", {None, "status", "wait", "metrics", "watch", "servers"}),
    "discover": ("--discover", {None, "status", "wait", "metrics", "watch", "servers"}),
    "theme": ("--theme", {None, "demo", "replay"}),
    "read_only": ("--read-only", {None, "demo"}),
    "metrics": ("--metrics", {None, "demo"}),
    "bell": ("--bell", {None, "demo"}),
    "osc9": ("--osc9", {None, "demo"}),
    "notify": ("--notify", {None, "demo"}),
    "osc777": ("--osc777", {None, "demo"}),
    "osc99": ("--osc99", {None, "demo"}),
    "unfocused_only": ("--unfocused-only", {None, "demo"}),
    "notify_cmd": ("--notify-cmd", {None, "demo", "metrics"}),
    "webhook": ("--webhook", {None, "demo", "metrics"}),
    "webhook_format": ("--webhook-format", {None, "demo", "metrics"}),
}


def honours(command: str | None, dest: str) -> bool:
    """Whether `command` (None: the dashboard) honours the option of argparse name `dest`."""
    return dest not in DASHBOARD_OPTIONS or command in DASHBOARD_OPTIONS[dest][1]


def _refuse_ignored(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """An option given (before the command) to a command that does not honour it is a usage
    error (exit 2), never dropped in silence (issue 40: `ocwatch --notify-cmd X metrics`
    delivered nothing)."""
    for name, (flag, _) in DASHBOARD_OPTIONS.items():
        if not honours(args.command, name) and getattr(args, name, None) not in (None, False):
            parser.error(f"{flag} has no effect on `ocwatch {args.command}`")


#: Loggers of libraries that write request URLs at INFO: a webhook's URL is its secret (a Slack
#: hook's path), and `-v` wrote it to stderr on every delivery; their warnings still show
QUIET_LIBRARIES = ("httpx", "httpcore")


def configure_logging(verbose: bool) -> None:
    """Log to stderr, at INFO with `-v` (else errors only); the libraries that would log a
    secret URL at INFO only from WARNING up."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.ERROR,
        stream=sys.stderr,
        format="ocwatch: %(levelname)s %(name)s: %(message)s",
    )
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _refuse_ignored(parser, args)
    configure_logging(args.verbose)
    try:
        auth = Auth.from_env()
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else getattr(exc, "why", str(exc))
        say("", f"cannot read the password file: {why}")
        return ExitCode.USAGE
    try:
        code = _dispatch(args, auth)
    except KeyboardInterrupt:
        return 130
    except OcwatchError as exc:
        say("", exc.message)
        return exc.exit_code
    if code == ExitCode.OK and OUTPUT.lost is not None and args.command not in ANSWERED_BY_CODE:
        return ExitCode.USAGE  # (its output is its answer, and it was not written: said)
    return code


#: Commands whose exit code is their answer (`wait`'s outcome): an output that could not be
#: written does not change it
ANSWERED_BY_CODE = frozenset({"wait", "prompt", "abort", "reply", "answer"})


def _dispatch(args: argparse.Namespace, auth: Auth | None) -> int:
    return COMMANDS[args.command](args, auth)


# The commands. Each is a function (args, auth) -> int, the exit code, registered in COMMANDS
# under its name (None: no command, the dashboard). A command for scripts starts with
# `_script_options`: the config file's servers, grace and password_file apply to it too.


def _dashboard(args: argparse.Namespace, auth: Auth | None) -> int:
    from ..app.run import run_dashboard

    return run_dashboard(
        args.server,
        auth=auth,
        grace=args.grace,
        theme=args.theme,
        bell=args.bell,
        osc9=args.osc9,
        desktop=args.notify,
        metrics=args.metrics,
        alert_flags=alert_flags(args),
        read_only=args.read_only,
        servers_file=args.servers_file,
        discover=args.discover,
    )


def _demo(args: argparse.Namespace, auth: Auth | None) -> int:
    from ..app.run import run_demo

    return run_demo(
        theme=args.theme,
        speed=args.speed,
        protocol=args.protocol,
        grace=args.grace,
        bell=args.bell,
        osc9=args.osc9,
        desktop=args.notify,
        metrics=args.metrics,
        alert_flags=alert_flags(args),
        read_only=args.read_only,
    )


def _replay(args: argparse.Namespace, auth: Auth | None) -> int:
    from ..app.run import run_replay

    if not (args.speed > 0 and math.isfinite(args.speed)):
        print("ocwatch: --speed must be a number above 0", file=sys.stderr)
        return ExitCode.USAGE
    return run_replay(args.file, speed=args.speed, start=args.start, theme=args.theme)


def _script_options(args: argparse.Namespace, auth: Auth | None) -> Options:
    """The options of a command for scripts: the config file's servers, grace and
    password_file apply too (flags win); its notices are said."""
    cmd = args.command
    urls = _flag_urls(args)
    if cmd in ONE_SERVER and urls is not None and len(urls) > 1:
        raise OcwatchError(f"`ocwatch {cmd}` acts on one server: give one --server")
    config, warnings = load_config()
    if not honours(cmd, "servers_file"):  # (a command on one server, a report, a recording)
        config = config.model_copy(update={"servers_file": None})
    opts = resolve_options(
        config,
        urls=urls,
        grace=args.grace,
        auth=auth,
        notices=warnings,
        alert_flags=alert_flags(args),
        servers_file=args.servers_file if honours(cmd, "servers_file") else None,
        # (a command on one server, a report, a recording: the servers named, or the default)
        discover=args.discover if honours(cmd, "discover") else "none",
    )
    for notice in opts.notices:
        say("", notice)
    return opts


def _replay_alone(args: argparse.Namespace) -> bool:
    """`--replay FILE` (status, watch) with what the recording decides: the servers (--server,
    --servers-file, --discover) and how its runs are read (--grace): said, a usage error,
    where they were dropped in silence."""
    if args.replay is None:
        return True
    given = {
        "--server": _flag_urls(args),
        "--servers-file": args.servers_file,
        "--discover": args.discover,
        "--grace": args.grace,
    }
    for flag, value in given.items():
        if value is not None:
            say("", f"{flag} does not go with --replay FILE (the recording says it)")
            return False
    return True


def _status(args: argparse.Namespace, auth: Auth | None) -> int:
    opts = _script_options(args, auth)
    if args.format is not None and args.json and args.format != "json":
        say("", "--json and --format tmux/table: choose one")
        return ExitCode.USAGE
    args.format = "json" if args.json else (args.format or "table")
    if not _replay_alone(args):
        return ExitCode.USAGE
    if args.replay is not None:
        return run_status_replay(args.replay, args.at, args.format)
    if args.at is not None:
        say("", "--at goes with --replay FILE")
        return ExitCode.USAGE
    return run_status(opts.servers(), form=args.format)


def _watch(args: argparse.Namespace, auth: Auth | None) -> int:
    opts = _script_options(args, auth)
    if not _replay_alone(args):
        return ExitCode.USAGE
    if args.replay is not None:
        from .record import run_watch_replay

        return run_watch_replay(args.replay, args.session, args.json)
    from .watch import run_watch

    return run_watch(opts.servers(), sessions=args.session, as_json=args.json)


def _report(args: argparse.Namespace, auth: Auth | None) -> int:
    from .report import run_report

    opts = _script_options(args, auth)
    return run_report(
        args.session_id,
        opts.servers(),
        seconds=args.seconds,
        output=args.output,
        redacted=args.redact,
    )


def _record(args: argparse.Namespace, auth: Auth | None) -> int:
    from ..record.writer import parse_size
    from .record import run_record

    opts = _script_options(args, auth)
    try:
        limit = parse_size(args.max_size) if args.max_size is not None else None
    except ValueError as exc:
        print(f"ocwatch: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    return run_record(args.file, opts.servers(), max_size=limit)


def _servers(args: argparse.Namespace, auth: Auth | None) -> int:
    from .servers import run_servers

    opts = _script_options(args, auth)
    return run_servers(
        opts.urls, origins=opts.origins, names=opts.names, sources=opts.sources, as_json=args.json
    )


def _wait(args: argparse.Namespace, auth: Auth | None) -> int:
    opts = _script_options(args, auth)
    return run_wait(
        args.session_ids, opts.servers(), timeout=args.timeout, as_json=args.json, any_=args.any_
    )


def _metrics(args: argparse.Namespace, auth: Auth | None) -> int:
    from .metrics import run_metrics

    opts = _script_options(args, auth)
    return run_metrics(
        opts.servers(),
        listen=args.listen,
        session_info=args.session_info,
        alerts=opts.alerts,
    )


def _prompt(args: argparse.Namespace, auth: Auth | None) -> int:
    from .prompt import run_prompt

    opts = _script_options(args, auth)
    if len(args.target) != (1 if args.new else 2):
        print("ocwatch prompt: give SESSION_ID TEXT, or --new FOLDER TEXT", file=sys.stderr)
        return ExitCode.USAGE
    for flag, given in (("--timeout", args.timeout is not None), ("--json", args.json)):
        if given and not args.wait:
            print(f"ocwatch prompt: {flag} goes with --wait", file=sys.stderr)
            return ExitCode.USAGE
    return run_prompt(
        None if args.new else args.target[0],
        args.target[-1],
        opts.urls[0],
        new_in=args.new,
        auth=opts.auth_for(opts.urls[0]),
        settings=opts.settings,
        wait=args.wait,
        timeout=args.timeout,
        as_json=args.json,
    )


def _abort(args: argparse.Namespace, auth: Auth | None) -> int:
    opts = _script_options(args, auth)
    return actions.run_abort(args.session_id, opts.urls[0], auth=opts.auth_for(opts.urls[0]))


def _reply(args: argparse.Namespace, auth: Auth | None) -> int:
    opts = _script_options(args, auth)
    url = opts.urls[0]
    return actions.run_reply(
        args.request_id, args.reply, args.message, url, auth=opts.auth_for(url)
    )


def _answer(args: argparse.Namespace, auth: Auth | None) -> int:
    opts = _script_options(args, auth)
    if args.reject == bool(args.option or args.text):
        print(
            "ocwatch answer: give --option and/or --text, or --reject (not both)",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    url = opts.urls[0]
    return actions.run_answer(
        args.request_id, args.option, args.text, args.reject, url, auth=opts.auth_for(url)
    )


#: Every command by name (None: the dashboard), each a function (args, auth) -> exit code; a
#: new command is a parser in build_parser and a function here (tests/unit/test_cli.py checks
#: that the two agree)
COMMANDS: dict[str | None, Callable[[argparse.Namespace, Auth | None], int]] = {
    None: _dashboard,
    "demo": _demo,
    "replay": _replay,
    "status": _status,
    "servers": _servers,
    "wait": _wait,
    "metrics": _metrics,
    "watch": _watch,
    "report": _report,
    "record": _record,
    "prompt": _prompt,
    "abort": _abort,
    "reply": _reply,
    "answer": _answer,
}


def entry() -> None:  # pragma: no cover - the process's own exit
    """The `ocwatch` program: run the command, flush what it printed, and exit at once.

    The answer is out by then (and a dashboard has restored the terminal), so the interpreter's
    teardown (freeing every module, pydantic's schemas among them, one object at a time) is
    skipped: a script that waits on `ocwatch wait` learns the exit code as soon as it is
    known."""
    try:
        code = main()
    except SystemExit as stop:  # argparse: --help, --version, a usage error
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
    except KeyboardInterrupt:
        code = 130
    for stream in (sys.stdout, sys.stderr):
        # a reader that closed the pipe, or no stream at all (`>&-`): nothing more to say
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    logging.shutdown()
    os._exit(code)


gcpause.imports_loaded(_GC_WAS_ON)  # frozen, and the collector runs again

if __name__ == "__main__":  # pragma: no cover
    entry()
