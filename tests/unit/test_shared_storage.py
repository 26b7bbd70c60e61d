"""Servers found by local discovery share this user's OpenCode storage: each lists every
project's sessions, and only the process running a session knows it is busy or asking (issue
44, seen by hand: two TUIs with --port 0 each showed the other's session, one as `unknown
(interrupted)` while the other asked for a permission). The fleet shows such a session once,
from the server running it."""

from __future__ import annotations

from tests.app.views import BLOG, SHOP, row
from tui.core.fleet import Fleet
from tui.core.view import SessionRow

A = "http://127.0.0.1:4096"
B = "http://127.0.0.1:4097"


def fleet_of(local: dict[str, str] | None, rows: dict[str, list[SessionRow]]) -> Fleet:
    """A fleet over A and B whose monitors answer `rows` (server -> its rows)."""
    fleet = Fleet([A, B], local=local)
    for m in fleet.monitors:
        m.rows = lambda now, url=m.url: {r.key: r for r in rows[url]}  # type: ignore[method-assign]
        m.take_changed = lambda: None  # type: ignore[method-assign]
    return fleet


def shown(fleet: Fleet) -> dict[str, tuple[str, str]]:
    """Session id -> (server, state) of each row of the fleet's View."""
    out: dict[str, tuple[str, str]] = {}
    for (server, sid), r in fleet.current().rows.items():
        assert sid not in out, f"{sid} shown twice"
        out[sid] = (server, r.state)
    return out


def test_a_session_two_local_servers_list_is_shown_once_from_the_one_running_it() -> None:
    rows = {
        A: [
            row("ses_pay", "pay", "unknown", server=A, directory=BLOG, reason="interrupted"),
            row("ses_shop", "shop", "idle", server=A, directory=SHOP, reason="completed"),
        ],
        B: [
            row("ses_pay", "pay", "input", server=B, directory=BLOG),
            row("ses_shop", "shop", "idle", server=B, directory=SHOP, reason="completed"),
        ],
    }
    fleet = fleet_of({A: SHOP, B: BLOG}, rows)
    # the asking copy, not the other process's `interrupted`; an idle one from its folder's
    assert shown(fleet) == {"ses_pay": (B, "input"), "ses_shop": (A, "idle")}

    # it ended: both say idle, and it stays where it was shown (no row moving between servers)
    rows[A][0] = row("ses_pay", "pay", "idle", server=A, directory=SHOP, reason="completed")
    rows[B][0] = row("ses_pay", "pay", "idle", server=B, directory=SHOP, reason="completed")
    assert shown(fleet) == {"ses_pay": (B, "idle"), "ses_shop": (A, "idle")}

    # it runs again, through A this time: A's copy is shown
    rows[A][0] = row("ses_pay", "pay", "busy", server=A, directory=SHOP)
    assert shown(fleet) == {"ses_pay": (A, "busy"), "ses_shop": (A, "idle")}
    gone = [t.key for t in fleet.last_changes.transitions if t.after is None]  # type: ignore[union-attr]
    assert gone == [(B, "ses_pay")]  # the move is seen, not left to a partial comparison


def test_a_sub_session_goes_with_its_parent() -> None:
    rows = {
        A: [
            row("ses_p", "parent", "busy", server=A, directory=BLOG),
            row("ses_c", "child", "idle", server=A, directory=BLOG, parent_id="ses_p"),
        ],
        B: [
            row("ses_p", "parent", "unknown", server=B, directory=BLOG),
            row("ses_c", "child", "idle", server=B, directory=BLOG, parent_id="ses_p"),
        ],
    }
    # B's folder is the session's, but the parent runs on A: its child is shown beside it
    assert shown(fleet_of({A: SHOP, B: BLOG}, rows)) == {
        "ses_p": (A, "busy"),
        "ses_c": (A, "idle"),
    }


def test_servers_not_found_by_discovery_keep_their_own_rows() -> None:
    """Configured servers are not known to share storage (two demo servers have the same
    session ids): each keeps its rows."""
    rows = {
        A: [row("ses_x", "x", "idle", server=A)],
        B: [row("ses_x", "x", "busy", server=B)],
    }
    assert len(fleet_of(None, rows).current().rows) == 2
    assert len(fleet_of({A: SHOP}, rows).current().rows) == 2  # one local server: nothing shared


def test_the_fleet_knows_which_servers_discovery_found() -> None:
    from tui.core.targets import Servers, Target

    found = Target(A, name="shop", source="discovered", folder=SHOP)
    listed = Target(B, name="blog", source="file")
    fleet = Fleet([])
    fleet.reconcile([found, listed])
    assert fleet.local == {A: SHOP}
    fleet.reconcile([listed])
    assert fleet.local == {}
    # read once (status): through Servers.joined
    servers = Servers((B,)).joined([found, listed])
    assert Fleet.of_servers(servers).local == {A: SHOP}


def test_a_copy_still_loading_does_not_keep_the_session_from_its_own_server() -> None:
    """Seen by hand: a TUI started after the dashboard had its copies still loading (unknown)
    when they first met the other server's, which then kept the session for good."""
    loading = row("ses_pay", "pay", "unknown", server=A, directory=SHOP, settling="loading")
    rows = {
        A: [loading],
        B: [row("ses_pay", "pay", "idle", server=B, directory=SHOP, reason="completed")],
    }
    fleet = fleet_of({A: SHOP, B: BLOG}, rows)
    assert shown(fleet) == {"ses_pay": (B, "idle")}
    rows[A] = [row("ses_pay", "pay", "idle", server=A, directory=SHOP, reason="completed")]
    assert shown(fleet) == {"ses_pay": (A, "idle")}  # its folder's server, once read


def test_a_change_of_a_copy_not_shown_changes_nothing_shown() -> None:
    """Seen in the integration test: a monitor said its copy changed (the one dropped), and the
    feed, told only that row changed, looked it up in the View (KeyError)."""
    rows = {
        A: [row("ses_pay", "pay", "idle", server=A, directory=SHOP, reason="completed")],
        B: [row("ses_pay", "pay", "busy", server=B, directory=SHOP)],
    }
    fleet = fleet_of({A: SHOP, B: BLOG}, rows)
    assert shown(fleet) == {"ses_pay": (B, "busy")}
    for m in fleet.monitors:  # each monitor says its row changed
        m.take_changed = lambda url=m.url: [(url, "ses_pay")]  # type: ignore[method-assign]
    rows[A] = [row("ses_pay", "pay", "unknown", server=A, directory=SHOP, reason="interrupted")]
    assert shown(fleet) == {"ses_pay": (B, "busy")}
    assert fleet.last_changes is not None and fleet.last_changes.transitions == []


def test_a_busy_another_server_infers_from_the_storage_does_not_take_the_session() -> None:
    """Seen in the integration test on a loaded machine: a run ended on A while B, which reads
    the same storage, had read its last message unfinished. B's copy showed busy while the
    facts were still arriving (B's server never reported it busy), outranked A's idle and kept
    the session for good, first as busy, then as idle, from the server that did not run it."""
    finishing = row(
        "ses_pay", "pay", "busy", server=B, directory=SHOP, settled=False, settling="finishing"
    )
    rows = {
        A: [row("ses_pay", "pay", "busy", server=A, directory=SHOP)],
        B: [finishing],
    }
    fleet = fleet_of({A: SHOP, B: BLOG}, rows)
    assert shown(fleet) == {"ses_pay": (A, "busy")}
    rows[A] = [row("ses_pay", "pay", "idle", server=A, directory=SHOP, reason="completed")]
    assert shown(fleet) == {"ses_pay": (A, "idle")}  # not B's busy, which is no claim
    rows[B] = [row("ses_pay", "pay", "idle", server=B, directory=SHOP, reason="completed")]
    assert shown(fleet) == {"ses_pay": (A, "idle")}

    # the same from first sight, before either was shown: the idle of its folder's server
    rows = {A: [row("ses_pay", "pay", "idle", server=A, directory=SHOP, reason="completed")]}
    rows[B] = [finishing]
    assert shown(fleet_of({A: SHOP, B: BLOG}, rows)) == {"ses_pay": (A, "idle")}

    # a busy its server claims (settled) still takes it from an idle copy
    rows[B] = [row("ses_pay", "pay", "busy", server=B, directory=SHOP)]
    assert shown(fleet_of({A: SHOP, B: BLOG}, rows)) == {"ses_pay": (B, "busy")}
