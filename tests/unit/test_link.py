"""The link state's pure transitions (tui.core.link): what a stream's loss, a failed or a good
snapshot, and a reconnect do to whether the rows are live, and since when the stream vouches."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tui.core.link import LinkState

T = 1_800_000_000.0


def test_a_stream_up_vouches_from_then_and_counts_connections() -> None:
    s = LinkState().opened(T)
    assert s.connected and s.connected_at == T and s.stream_connects == 1
    assert s.vouches(T) and s.vouches(T + 5) and not s.vouches(T - 1)
    assert s.opened(T + 9).stream_connects == 2


def test_a_lost_stream_leaves_the_rows_live_until_a_reconnect_cannot_reach_the_server() -> None:
    up = LinkState().opened(T)
    lost = up.dropped("stream closed", False, T + 1)
    assert (
        not lost.connected
        and lost.gap_since == T + 1
        and lost.stream_drop == (T + 1, "stream closed")
    )
    assert lost.vouch_since is None and lost.link().reachable  # a lost stream alone: still live
    assert lost.stream_error == "stream closed"
    again = lost.dropped("refused", False, T + 2)  # a reconnect that failed but reached it
    assert again.link().reachable and again.stream_drop == (T + 1, "stream closed")
    gone = lost.dropped("cannot connect", True, T + 3)  # the server could not be reached
    link = gone.link()
    assert not link.reachable and link.error == "cannot connect" and link.since == T + 3


def test_a_snapshot_covers_the_gap_only_when_it_began_after_the_stream_came_back() -> None:
    gone = LinkState().opened(T).dropped("x", False, T + 1).dropped("down", True, T + 2)
    back = gone.opened(T + 10)
    assert not back.link().reachable  # back, but the gap is not covered: runs may have ended
    old = back.installed(T + 9)
    assert old.error is None and old.gap_since is not None
    new = back.installed(T + 10)
    assert new.gap_since is None and new.link().reachable


def test_a_failing_snapshot_keeps_when_the_outage_began_and_fatal_says_so() -> None:
    s = LinkState().failed("timed out", False, T).failed("refused", False, T + 30)
    assert s.error == "refused" and s.error_since == T
    up = s.opened(T + 40)
    assert up.link().reachable  # connected, no gap, not fatal: the stream vouches for the rows
    auth = LinkState().opened(T).failed("401", True, T + 1)
    assert not auth.link().reachable and auth.fatal


def test_stream_health_and_time_down() -> None:
    assert LinkState().stream_health(T, 15, None) == "none"
    up = LinkState().opened(T)
    assert up.stream_health(T + 10, 15, T + 1) == "connected"
    assert up.stream_health(T + 17, 15, T + 1) == "stalled"
    assert up.dropped("x", False, T + 20).stream_health(T + 21, 15, T + 1) == "lost"
    down = LinkState().seen(False, None, T)
    assert down.down_since == T and down.seen(False, T - 5, T + 9).down_since == T
    assert down.seen(True, None, T + 10).down_since is None


STEPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "opened",
                "dropped",
                "unreachable",
                "failed",
                "fatal",
                "installed",
                "unvouched",
                "gave_up",
            ]
        ),
        st.floats(0, 100),
    ),
    max_size=30,
)


@given(STEPS)
def test_any_sequence_keeps_the_state_coherent(steps: list[tuple[str, float]]) -> None:
    s, now = LinkState(), T
    for step, dt in steps:
        now += dt
        if step == "opened":
            s = s.opened(now)
        elif step in ("dropped", "unreachable"):
            s = s.dropped("lost", step == "unreachable", now)
        elif step in ("failed", "fatal"):
            s = s.failed("failed", step == "fatal", now)
        elif step == "installed":
            s = s.installed(now - dt)
        elif step == "unvouched" and s.connected:
            s = s.unvouched(now)
        else:
            s = s.giving_up(True)
        assert (s.error is None) == (s.error_since is None)
        assert s.vouch_since is None or s.connected
        assert not s.connected or s.connected_at > 0
        if s.error is None:
            assert s.link().reachable
        if s.fatal:
            assert not s.link().reachable
        if not s.connected:
            assert not s.vouches(now)
