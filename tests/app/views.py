"""Deterministic Views for the dashboard tests: every state, built by hand, at a fixed time."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tui.core.models import PermissionRequest, QuestionRequest
from tui.core.view import LastKnown, Pending, ServerInfo, SessionRow, Transition, View

NOW = 1_736_942_400.0  # 2025-01-15 12:00:00 UTC
A = "http://127.0.0.1:4096"
B = "http://127.0.0.1:4097"
SHOP = "/home/dev/src/shop"
BLOG = "/home/dev/src/blog"
MARKUP_TITLE = "[bold red]x[/] \x1b[31mred\x1b[0m and [link=http://evil]click[/link]"


def clock() -> float:
    """The fixed clock the app reads in tests."""
    return NOW


def row(
    id: str,
    title: str,
    state: str,
    *,
    server: str = A,
    directory: str = SHOP,
    reason: str | None = None,
    stale: bool = False,
    evidence: tuple[str, ...] = (),
    pending: tuple[Pending, ...] = (),
    since: float = -60,
    updated: float = -5,
    cost: float | None = 0.0,
    tokens: int | None = 0,
    **extra: Any,
) -> SessionRow:
    """A SessionRow with times given relative to NOW."""
    return SessionRow(
        server=server,
        id=id,
        title=title,
        directory=directory,
        parent_id=extra.pop("parent_id", None),
        state=state,
        reason=reason,
        stale=stale,
        evidence=evidence,
        pending=pending,
        since=NOW + since,
        updated=NOW + updated,
        cost=cost,
        tokens=tokens,
        **extra,
    )


def permission_request(rid: str, sid: str, **wire: Any) -> PermissionRequest:
    """A permission request as the server sends it (the wire fields, then parsed)."""
    return PermissionRequest.parse({"id": rid, "sessionID": sid, **wire})


def question_request(rid: str, sid: str, **wire: Any) -> QuestionRequest:
    return QuestionRequest.parse({"id": rid, "sessionID": sid, **wire})


PERMISSION = Pending(
    kind="permission",
    id="per_7Hq2",
    session_id="ses_perm",
    summary="bash: rm -rf build/",
    request=permission_request(
        "per_7Hq2",
        "ses_perm",
        permission="bash",
        patterns=["rm -rf build/*"],
        metadata={"command": "rm -rf build/", "description": "Remove build output"},
        always=["rm *"],
        tool={"messageID": "msg_1", "callID": "call_1"},
    ),
)
QUESTION = Pending(
    kind="question",
    id="que_3Kx9",
    session_id="ses_question",
    summary="Which database?",
    request=question_request(
        "que_3Kx9",
        "ses_question",
        **{
            "questions": [
                {
                    "question": "Which database should the service use?",
                    "header": "Database",
                    "options": [
                        {"label": "PostgreSQL", "description": "relational, the team knows it"},
                        {"label": "SQLite", "description": "no server, one file"},
                    ],
                    "multiple": False,
                    "custom": True,
                }
            ]
        },
    ),
)

EDIT = Pending(
    kind="permission",
    id="per_9Zt1",
    session_id="ses_child1",
    summary="permission edit: /home/dev/src/blog/api/v1.py",
    request=permission_request(
        "per_9Zt1",
        "ses_child1",
        permission="edit",
        patterns=["api/v1.py"],
        always=["*"],
        metadata={
            "filepath": "/home/dev/src/blog/api/v1.py",
            "diff": "--- api/v1.py\n+++ api/v1.py\n"
            + "".join(
                f"-    ROUTE_{i} = '/v1/r{i}'\n+    ROUTE_{i} = '/v2/r{i}'\n" for i in range(20)
            ),
        },
    ),
)
"""An edit permission asked by a sub-agent, with a diff longer than any dialog."""

SEVERAL = Pending(
    kind="question",
    id="que_8Rm4",
    session_id="ses_question",
    summary="question: Which checks should run? (+2 more)",
    request=question_request(
        "que_8Rm4",
        "ses_question",
        questions=[
            {
                "question": "Which checks should run?",
                "header": "Checks",
                "multiple": True,
                "custom": True,
                "options": [
                    {"label": "lint", "description": "ruff"},
                    {"label": "types", "description": "mypy"},
                    {"label": "tests", "description": "pytest"},
                ],
            },
            {
                "question": "Which branch?",
                "header": "Branch",
                "multiple": False,
                "custom": True,
                "options": [
                    {"label": "main", "description": ""},
                    {"label": "release", "description": "the next release"},
                ],
            },
            {
                "question": "Ship it?",
                "header": "",
                "multiple": False,
                "custom": False,
                "options": [
                    {"label": "yes", "description": ""},
                    {"label": "no", "description": ""},
                ],
            },
        ],
    ),
)
"""A request of three questions: several answers, one of two, one without a typed answer."""

STALE_EVIDENCE = (
    "the server has said busy since 11:55:00",
    "last assistant message completed at 11:57:30 with finish=stop",
    "no tool part is pending or running; nothing is asked; no child is busy",
    "this has held for 2m30s (grace 3s)",
)

ROWS = [
    row(
        "ses_busy",
        "Refactor the payment module",
        "busy",
        since=-125,
        updated=-3,
        cost=0.4213,
        tokens=48213,
    ),
    row(
        "ses_retry",
        "Summarise the release notes",
        "retry",
        directory=BLOG,
        since=-40,
        updated=-8,
        cost=0.0125,
        tokens=1520,
        retry_attempt=3,
        retry_message="Rate limited: 429 Too Many Requests",
        retry_next=NOW + 12,
    ),
    row(
        "ses_perm",
        "Clean up build artefacts",
        "input",
        pending=(PERMISSION,),
        since=-75,
        updated=-75,
        cost=0.031,
        tokens=3900,
    ),
    row(
        "ses_question",
        "Pick a database for the service",
        "input",
        directory=BLOG,
        pending=(QUESTION,),
        since=-300,
        updated=-300,
        cost=0.05,
        tokens=5210,
    ),
    row(
        "ses_done",
        "Write the README",
        "idle",
        reason="completed",
        since=-3600,
        updated=-3600,
        cost=1.27,
        tokens=131_000,
    ),
    row(
        "ses_abort",
        "Migrate CI to the new runners",
        "idle",
        reason="aborted",
        directory=BLOG,
        since=-900,
        updated=-900,
        cost=0.2,
        tokens=20400,
        error="MessageAbortedError: The operation was aborted.",
    ),
    row(
        "ses_error",
        "Translate the docs to German",
        "idle",
        reason="error",
        since=-420,
        updated=-420,
        cost=0.002,
        tokens=310,
        error="APIError: 400 Bad Request: model 'fake-large' not found",
        evidence=("last assistant message failed with APIError at 11:53:00",),
    ),
    row(
        "ses_lost",
        "Index the monorepo",
        "unknown",
        reason="interrupted",
        since=-1800,
        updated=-1830,
        cost=0.9,
        tokens=88000,
        evidence=(
            "not in the status map, but the last assistant message never completed "
            "(started 11:29:30)",
            "the server restarted at 11:30:00 (version 1.18.33)",
        ),
    ),
    row(
        "ses_stale",
        "Fix the flaky checkout test",
        "busy",
        stale=True,
        evidence=STALE_EVIDENCE,
        since=-300,
        updated=-150,
        cost=0.12,
        tokens=15000,
    ),
    row(
        "ses_parent",
        "Plan the v2 API",
        "busy",
        directory=BLOG,
        since=-200,
        updated=-1,
        cost=0.6,
        tokens=70000,
        children=("ses_child1", "ses_child2"),
    ),
    row(
        "ses_child1",
        "explore: list the v1 endpoints",
        "busy",
        directory=BLOG,
        parent_id="ses_parent",
        since=-50,
        updated=-1,
        cost=0.05,
        tokens=8000,
    ),
    row(
        "ses_child2",
        "general: draft the schema",
        "idle",
        reason="completed",
        directory=BLOG,
        parent_id="ses_parent",
        since=-20,
        updated=-20,
        cost=0.07,
        tokens=9100,
    ),
    row("ses_markup", MARKUP_TITLE, "idle", since=-30, updated=-30, cost=None, tokens=None),
]

SERVERS = (
    ServerInfo(
        url=A,
        version="1.18.33",
        reachable=True,
        connected=True,
        last_event_at=NOW - 2,
        snapshot_at=NOW - 20,
    ),
    ServerInfo(url=B, reachable=False, error="ConnectError: [Errno 111] Connection refused"),
)


def every_state() -> View:
    """Two servers (one unreachable) and a session in every state."""
    return View(generated_at=NOW, servers=SERVERS, rows={r.key: r for r in ROWS})


def unreachable() -> View:
    """No server reachable, no rows."""
    return View(
        generated_at=NOW,
        servers=(
            ServerInfo(
                url=A, reachable=False, error="ConnectError: [Errno 111] Connection refused"
            ),
        ),
        rows={},
    )


def loading(done: int = 812, total: int = 2005) -> View:
    """The first snapshot of a large server under way: no rows yet, its last messages arriving."""
    return View(
        generated_at=NOW,
        servers=(ServerInfo(url=A, reachable=False, loading=(done, total)),),
        rows={},
    )


def partly_loaded() -> View:
    """A first snapshot shown as it arrives: the maps decided the waiting, retrying and busy
    rows; three finished sessions are read; the rest still load (unsettled, `loading`)."""
    ev = ("not in the status map", "last message not read yet (the first snapshot is loading)")
    rows = [r for r in ROWS if r.server == A and r.state in ("input", "retry")]
    rows += [
        row(
            "ses_run1",
            "Add Stripe checkout flow",
            "busy",
            settled=False,
            settling="loading",
            since=-1,
            evidence=("server reports busy", ev[1]),
        ),
        row(
            "ses_run2",
            "Migrate login to OAuth 2.1",
            "busy",
            settled=False,
            settling="loading",
            since=-1,
            evidence=("server reports busy", ev[1]),
        ),
        row("ses_ok1", "Refactor cart totals", "idle", reason="completed", since=-3600),
        row("ses_ok2", "Write the release notes", "idle", reason="completed", since=-7200),
        row("ses_err", "Tune Prometheus alert rules", "idle", reason="error", since=-900),
    ]
    rows += [
        row(
            f"ses_l{i}",
            f"Older session {i}",
            "unknown",
            settled=False,
            settling="loading",
            since=-86_400 - i,
            updated=-86_400 - i,
            evidence=ev,
        )
        for i in range(8)
    ]
    server = replace(SERVERS[0], loading=(5, 2005))
    return View(generated_at=NOW, servers=(server,), rows={r.key: r for r in rows})


def with_drift() -> View:
    """Every state; server A has seen drift and skipped events (for the servers view)."""
    a = replace(
        SERVERS[0],
        drift_count=3,
        skipped_events=2,
        unknown_events=5,
        drift_examples=(
            "ses_busy: events said busy, snapshot says idle/completed",
            "ses_lost: events said busy, snapshot says unknown/interrupted",
            "ses_\x1b[31mred: events said idle, snapshot says busy",
        ),
    )
    return View(generated_at=NOW, servers=(a, SERVERS[1]), rows={r.key: r for r in ROWS})


def with_row(view: View, key: tuple[str, str], **changes: Any) -> View:
    """A copy of `view` with one row changed."""
    rows = dict(view.rows)
    rows[key] = replace(rows[key], **changes)
    return View(generated_at=view.generated_at, servers=view.servers, rows=rows)


def history() -> dict[tuple[str, str], list[Transition]]:
    """Timelines for the stale, input and errored sessions."""
    by_id = {r.id: r for r in ROWS}

    def at(row: SessionRow, **changes: Any) -> SessionRow:
        return replace(row, **changes)

    stale = by_id["ses_stale"]
    busy = at(stale, stale=False, evidence=())
    perm = by_id["ses_perm"]
    err = by_id["ses_error"]
    return {
        stale.key: [
            Transition(stale.key, None, at(busy, state="idle", reason="completed"), NOW - 900),
            Transition(stale.key, at(busy, state="idle", reason="completed"), busy, NOW - 300),
            Transition(stale.key, busy, stale, NOW - 147),
        ],
        perm.key: [
            Transition(perm.key, None, at(perm, state="busy", pending=()), NOW - 400),
            Transition(perm.key, at(perm, state="busy", pending=()), perm, NOW - 75),
        ],
        err.key: [
            Transition(err.key, None, at(err, state="busy", reason=None), NOW - 480),
            Transition(err.key, at(err, state="busy", reason=None), err, NOW - 420),
        ],
    }


def several_questions() -> View:
    """Every state, the question session asking SEVERAL."""
    return with_row(every_state(), (A, "ses_question"), pending=(SEVERAL,))


def sub_agent_edit() -> View:
    """Every state, the v2 API parent waiting for its sub-agent's EDIT permission."""
    return with_row(every_state(), (A, "ses_parent"), state="input", pending=(EDIT,))


#: A command that reads as one harmless `echo` when its lines are joined (issue 41)
SNEAKY_COMMAND = "echo cleaning build cache\nrm -rf ~/projects"


def sneaky_permission(command: str = SNEAKY_COMMAND) -> View:
    """Every state, the permission row asking to run a command of two lines (or `command`)."""
    from tui.core.decide import pending_of

    req = permission_request(
        "per_sneaky",
        "ses_perm",
        permission="bash",
        patterns=[command],
        metadata={"command": command, "description": "Clean the build cache"},
        always=["echo *", "rm *"],
        tool={"messageID": "msg_1", "callID": "call_1"},
    )
    return with_row(every_state(), (A, "ses_perm"), state="input", pending=(pending_of(req),))


def down(view: View, url: str, since: float) -> View:
    """`view` with server `url` gone down at `since`: its rows unknown (unreachable), each
    with what it was (as derive makes them), the server unreachable."""
    rows = {
        key: replace(
            r,
            state="unknown",
            reason=None,
            stale=False,
            settled=False,
            settling="unreachable",
            since=since,
            last_known=LastKnown(r.state, r.reason, r.stale),
        )
        if r.server == url
        else r
        for key, r in view.rows.items()
    }
    servers = tuple(
        replace(
            s,
            reachable=False,
            connected=False,
            stream="lost",
            error="ConnectError: [Errno 111] Connection refused",
            error_since=since,
        )
        if s.url == url
        else s
        for s in view.servers
    )
    return View(generated_at=view.generated_at, servers=servers, rows=rows)


def fleet() -> View:
    """Five servers: three healthy (one drifting a lot), one failing snapshots, one
    unreachable; the sessions of every_state spread over the healthy ones."""
    healthy = [
        ServerInfo(
            url=f"http://build-{i}:4096",
            name=f"build-{i}",
            version="1.18.33",
            reachable=True,
            connected=True,
            last_event_at=NOW - 2,
            snapshot_at=NOW - 20,
            drift_count=25 if i == 2 else 0,
        )
        for i in (1, 2, 3)
    ]
    failing = replace(healthy[0], url="http://build-4:4096", name="build-4", error="ReadTimeout")
    down = ServerInfo(
        url="http://build-5:4096", name="build-5", reachable=False, error="ConnectError"
    )
    rows = {}
    for i, r in enumerate(ROWS):
        server = healthy[i % 3].url
        moved = replace(r, server=server)
        rows[moved.key] = moved
    # a child stays on its parent's server
    for key, r in list(rows.items()):
        if r.parent_id is not None:
            parent = next(p for p in rows.values() if p.id == r.parent_id)
            del rows[key]
            rows[(parent.server, r.id)] = replace(r, server=parent.server)
    return View(generated_at=NOW, servers=(*healthy, failing, down), rows=rows)
