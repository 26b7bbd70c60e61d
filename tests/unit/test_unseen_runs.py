"""Runs that begin and end while events are missed are counted from the snapshot that shows their
end (ServerStore.count_unseen_runs, `ocwatch_runs_total`), once, and a run the stream saw is
left to its transition (issue 40, should-fix)."""

from __future__ import annotations

from tests.builders import T0, assistant, message_event, session, snap, status_event
from tui.core.derive import Link
from tui.core.settings import Settings
from tui.core.store import ServerStore


def store_after(*shots, events=()) -> ServerStore:
    """A store that installed the first snapshot, saw `events`, then installed each next one
    (counting unseen runs as the monitor does)."""
    store = ServerStore(Settings())
    store.install(shots[0], 0, T0)
    store.rows(T0, Link())
    for ev in events:
        store.journal.add(ev)
    for i, shot in enumerate(shots[1:], 1):
        before = store.install(shot, store.journal.seq, T0 + 10 * i)
        assert before is not None
        store.count_unseen_runs(before, store.rows(T0 + 10 * i, Link()))
    return store


S = session("ses_1")
DONE = assistant("msg_1", "ses_1", created=T0 - 60, completed=T0 - 50, finish="stop")
FAILED = assistant("msg_2", "ses_1", created=T0 - 30, completed=T0 - 29, error="APIError")
FAILED_AGAIN = assistant("msg_3", "ses_1", created=T0 - 20, completed=T0 - 19, error="APIError")


def test_a_run_unseen_between_two_snapshots_is_counted_once() -> None:
    first = snap([S], messages={"ses_1": DONE})
    second = snap([S], messages={"ses_1": FAILED}, started_at=T0 + 5)
    store = store_after(first, second, second)  # (the same snapshot again: no new run)
    assert store.unseen_runs == {"error": 1}


def test_an_error_after_an_error_unseen_is_still_a_run() -> None:
    first = snap([S], messages={"ses_1": FAILED})
    second = snap([S], messages={"ses_1": FAILED_AGAIN}, started_at=T0 + 5)
    assert store_after(first, second).unseen_runs == {"error": 1}


def test_a_run_the_stream_saw_is_not_counted_again() -> None:
    first = snap([S], messages={"ses_1": DONE})
    second = snap([S], messages={"ses_1": FAILED}, started_at=T0 + 5)
    seen = (
        status_event("ses_1", "busy", T0 - 31),
        message_event(FAILED, T0 - 29),
        status_event("ses_1", "idle", T0 - 29),
    )
    assert store_after(first, second, events=seen).unseen_runs == {}


def test_a_session_created_and_run_unseen_is_counted() -> None:
    other = session("ses_2")
    ran = assistant("msg_9", "ses_2", created=T0 - 30, completed=T0 - 29, finish="stop")
    first = snap([S], messages={"ses_1": DONE})
    second = snap([S, other], messages={"ses_1": DONE, "ses_2": ran}, started_at=T0 + 5)
    assert store_after(first, second).unseen_runs == {"completed": 1}


def test_a_run_whose_last_message_could_not_be_read_is_counted_by_the_next_snapshot() -> None:
    """A snapshot that could not read the session's last message (unreadable: a timeout under
    load) makes no claim; the next one that reads it still finds the run (it failed in CI:
    the run was never counted, "could not read" taken for "nothing new")."""
    from dataclasses import replace

    first = snap([S], messages={"ses_1": DONE})
    blind = replace(
        snap([S], messages={"ses_1": DONE}, started_at=T0 + 5),
        unreadable={"ses_1": "timed out"},
    )
    third = snap([S], messages={"ses_1": FAILED}, started_at=T0 + 15)
    assert store_after(first, blind, third).unseen_runs == {"error": 1}
    assert store_after(first, blind, third, third).unseen_runs == {"error": 1}
