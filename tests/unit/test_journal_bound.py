"""The journal's fold stays bounded while no snapshot cuts it (issue 40, should-fix).

With snapshots failing, a stream naming session after session grew the fold by every id for good
(+45-65 MB per 175,000 ids in the trial; 147 MB here). An overflowing journal now folds again
what it kept once the fold holds facts of more than `max_sessions` sessions, keeping what it knew
of the sessions and requests the last snapshot listed: those rows keep their truth; facts of ids
no snapshot listed go, and the snapshot the overflow asks for reads them.
"""

from __future__ import annotations

from tests.builders import T0, busy, event, permission, session, snap, status_event
from tui.core.derive import derive_server
from tui.core.journal import Journal
from tui.core.settings import Settings


def flood(journal: Journal, n: int, at: float) -> None:
    for i in range(n):
        journal.add(status_event(f"ses_flood{i:07d}", "busy", at), 200)


def test_a_flood_of_new_ids_leaves_the_fold_bounded() -> None:
    journal = Journal(limit=200, max_sessions=1_000)
    journal.cut(0, {}, ["ses_known"])
    flood(journal, 50_000, T0)
    facts = journal.facts()
    assert len(facts.versions) <= 1_000 + 200, len(facts.versions)
    assert len(facts.status) <= 1_000 + 200
    assert len(facts.changed) <= 4 * 1_000 + 200  # (max(20 * limit, 4 * max_sessions))
    assert journal.forgot > 40_000


def test_what_the_last_snapshot_listed_keeps_its_facts() -> None:
    known = session("ses_known")
    shot = snap([known], status={"ses_known": busy()}, permissions=[permission("per_k", "x")])
    journal = Journal(limit=200, max_sessions=1_000)
    journal.cut(0, shot.status, ["ses_known", "per_k"])
    journal.add(status_event("ses_known", "idle", T0 + 1), 100)
    journal.add(event("permission.replied", {"requestID": "per_k", "reply": "once"}, T0 + 1))
    flood(journal, 20_000, T0 + 2)
    facts = journal.facts()
    assert facts.status["ses_known"].status is None  # still idle, as the stream said
    assert "per_k" in facts.answered
    row = derive_server(shot, facts, T0 + 10, Settings())[(shot.server, "ses_known")]
    assert row.state != "busy"  # not turned back into the snapshot's busy


def test_a_journal_within_its_bound_folds_as_before() -> None:
    journal = Journal(limit=200, max_sessions=100_000)
    flood(journal, 5_000, T0)
    assert len(journal.facts().versions) == 5_000 and journal.forgot == 0
