"""Every text a server supplies reaches the terminal through the one escaping path, in every
output format (issue 40: the FOLDER column of `status` was printed raw: an OSC 52 in a folder
name wrote the user's clipboard). The walk puts every hostile kind in every server-supplied
field of a session and of a server, one at a time, and checks every format: a column added
later without escaping fails here."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import fields, replace

import pytest

from tests.unit.test_hostile import HOSTILE
from tui.cli.status import print_view
from tui.cli.watch import transition_json, transition_text
from tui.core import text
from tui.core.view import Pending, ServerInfo, SessionRow, Transition, View

T = 1_800_000_000.0
URL = "http://127.0.0.1:4096"

#: the fields of a row that hold no server text (ours, or numbers)
OURS = {
    "server",
    "state",
    "reason",
    "stale",
    "since",
    "updated",
    "cost",
    "tokens",
    "settled",
    "retry_attempt",
    "retry_next",
    "ended",
    "settling",
    "last_known",  # (a state, a reason, a flag)
}


def base_row(**over: object) -> SessionRow:
    row = SessionRow(
        URL,
        "ses_1",
        "title",
        "/p/a",
        None,
        "input",
        None,
        False,
        ("evidence",),
        (Pending("permission", "per_1", "ses_1", "permission bash: ls"),),
        T - 5,
        T - 5,
        0.1,
        10,
        error="Err: x",
        retry_message="overloaded",
        children=("ses_2",),
    )
    return replace(row, **over)


def placements(s: str) -> list[tuple[str, View]]:
    """A View per server-supplied field holding `s`."""
    out: list[tuple[str, View]] = []
    server = ServerInfo(URL, version="1.18.33", reachable=True, connected=True, snapshot_at=T)
    for f in fields(SessionRow):
        if f.name in OURS:
            continue
        if f.name in ("evidence", "children"):
            value: object = (s,)
        elif f.name == "pending":
            value = (Pending("permission", s, s, s),)
        else:
            value = s
        row = base_row(**{f.name: value})
        if f.name == "pending":
            row = replace(row, state="input")
        for variant in (
            row,
            replace(row, state="unknown", pending=()),
            replace(row, state="retry", pending=()),
            replace(row, state="idle", reason="error", pending=()),
        ):
            out.append(
                (f"row.{f.name}/{variant.state}", View(T, (server,), {variant.key: variant}))
            )
    for name in ("version", "error", "stream_error", "name"):
        bad = replace(server, **{name: s}, reachable=name not in ("error",))
        out.append((f"server.{name}", View(T, (bad,), {})))
    bad = replace(server, malformed=1, malformed_examples=(s,))
    out.append(("server.malformed_examples", View(T, (bad,), {})))
    bad = replace(server, drift_examples=(s,), drift_count=1)
    out.append(("server.drift_examples", View(T, (bad,), {})))
    return out


def outputs(view: View) -> list[tuple[str, str]]:
    got: list[tuple[str, str]] = []
    for form in ("table", "json", "tmux"):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            print_view(view, form)
        got += [(f"status {form}", out.getvalue()), (f"status {form} stderr", err.getvalue())]
    for row in view.rows.values():
        tr = Transition(row.key, None, row, T)
        got.append(("watch", transition_text(tr, True)))
        got.append(("watch --json", text.dumps(transition_json(tr))))
    return got


@pytest.mark.parametrize("s", HOSTILE + ["\x1b]52;c;b3duZWQ=\x07clip"])
def test_every_field_in_every_format_is_escaped(s: str) -> None:
    for where, view in placements(s):
        for fmt, printed in outputs(view):
            for line in printed.split("\n"):  # (the lines' own ends are the format's)
                assert not text.UNSAFE.search(line), (where, fmt, line)


def test_the_json_keeps_the_text_unchanged() -> None:
    s = "\x1b]52;c;b3duZWQ=\x07/p/a"
    view = View(T, (ServerInfo(URL, reachable=True),), {(URL, "ses_1"): base_row(directory=s)})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_view(view, "json")
    assert json.loads(out.getvalue())["sessions"][0]["directory"] == s


def test_status_shows_every_row_of_a_parent_cycle() -> None:
    """A→B→A, one parented to itself, and a child of the cycle waiting for input: every row
    is shown once (issue 40: the table showed 1 of 5, exit 0)."""
    from tui.cli.output import render_table, tree_order

    rows = [
        base_row(id="ses_a", parent_id="ses_b", pending=(), state="busy"),
        base_row(id="ses_b", parent_id="ses_a", pending=(), state="busy"),
        base_row(id="ses_self", parent_id="ses_self", pending=(), state="idle"),
        base_row(id="ses_kid", parent_id="ses_a"),
        base_row(id="ses_root", pending=(), state="idle"),
    ]
    view = View(T, (ServerInfo(URL, reachable=True),), {r.key: r for r in rows})
    ordered = [r.id for _, r in tree_order(rows)]
    assert sorted(ordered) == sorted(r.id for r in rows)
    table = render_table(view, T)
    assert all(r.id in table for r in rows), table
