"""Runs that begin and end while events are missed are counted from the snapshot that shows their
end (ServerStore.count_unseen_runs, `ocwatch_runs_total`), once, and a run the stream saw is
left to its transition (issue 40, should-fix)."""

from __future__ import annotations

from tests.builders import T0, assistant, busy, message_event, session, snap, status_event
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


DOWN = Link(False, "snapshot failed: 503", T0 + 2)


def masked(first, events, second) -> ServerStore:
    """`first` installed and shown; then the server shown unreachable (snapshots failing, rows
    masked) while the stream, still live, carried `events`; then `second` installed."""
    store = ServerStore(Settings())
    store.install(first, 0, T0)
    store.rows(T0, Link())
    store.rows(T0 + 2, DOWN)
    for ev in events:
        store.journal.add(ev)
    store.rows(T0 + 3, DOWN)
    before = store.install(second, store.journal.seq, T0 + 10)
    assert before is not None
    store.count_unseen_runs(before, store.rows(T0 + 10, Link()))
    return store


def test_a_run_the_stream_saw_while_rows_were_shown_unreachable_is_counted() -> None:
    """Snapshots failing after a gap mask the rows (unknown, unreachable) even if the stream
    came back: a run it carried from start to end was shown to no one, so no transition
    counted it; the snapshot after the outage does (it failed in CI: the journal knew the
    run's message, so it was taken for one a transition had counted)."""
    first = snap([S], messages={"ses_1": DONE})
    second = snap([S], messages={"ses_1": FAILED}, started_at=T0 + 5)
    seen = (
        status_event("ses_1", "busy", T0 + 2.5),
        message_event(FAILED, T0 + 2.6),
        status_event("ses_1", "idle", T0 + 2.7),
    )
    assert masked(first, seen, second).unseen_runs == {"error": 1}


def test_a_run_shown_running_before_the_outage_is_left_to_its_transition() -> None:
    """A run shown busy before the rows were masked is counted by its transition (busy to idle,
    across the unsettled rows between): not a second time as unseen, even when the stream saw
    it end and its last step is a message the outage hid."""
    running = assistant("msg_2", "ses_1", created=T0 - 5)
    last = assistant("msg_4", "ses_1", created=T0 + 2.5, completed=T0 + 2.6, error="APIError")
    first = snap([S], messages={"ses_1": running}, status={"ses_1": busy()})
    second = snap([S], messages={"ses_1": last}, started_at=T0 + 5)
    seen = (message_event(last, T0 + 2.6), status_event("ses_1", "idle", T0 + 2.7))
    assert masked(first, seen, second).unseen_runs == {}
