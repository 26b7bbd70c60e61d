"""Alerts and unread marks in the dashboard: once per transition, only for what changed."""

from __future__ import annotations

from dataclasses import replace

from tui.app import OcwatchApp
from tui.app.alerts import app_sinks
from tui.core.alerts import Alert
from tui.core.config import AlertConfig
from tui.core.view import View

from . import views
from .conftest import make_app
from .test_actions import pulled, until

A = views.A
BUSY = (A, "ses_busy")
DONE = (A, "ses_done")
PERM = (A, "ses_perm")
LOUD = AlertConfig(bell=True, osc9=True, on=["input", "error", "completed"], min_interval=0)


def spy(app: OcwatchApp) -> list[str]:
    """Everything the alert sinks send to the terminal: `BEL` for a bell, the OSC sequences."""
    written: list[str] = []
    app.bell = lambda: written.append("BEL")  # type: ignore[method-assign]
    app.write_terminal = written.append  # type: ignore[method-assign]
    return written


def later(view: View, dt: float, **changes: object) -> View:
    """`view`, `dt` seconds later, with rows changed: {key: {field: value}}."""
    rows = dict(view.rows)
    for key, fields in changes.items():
        k = (A, key)
        rows[k] = replace(rows[k], **fields)  # type: ignore[arg-type]
    return View(view.generated_at + dt, view.servers, rows)


async def test_bell_and_osc9_once_per_transition() -> None:
    app, source = make_app(alerts=LOUD)
    written = spy(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.view is not None)
        await pilot.pause()
        assert written == []  # the first View is what is, not a change
        failed = later(
            source.current(),
            1,
            ses_busy={"state": "idle", "reason": "error", "error": "APIError: boom"},
        )
        source.set(failed)
        await until(pilot, lambda: len(written) == 2)
        assert written[0] == "BEL"
        assert written[1].startswith("\x1b]9;ocwatch: Refactor the payment module: error")
        assert written[1].endswith("\x07")
        # The server says idle again (and again): the same View, nothing new.
        for again in (later(failed, 1), later(failed, 2)):
            source.set(again)
            await pulled(pilot, app, again)
        assert len(written) == 2
        # Another session starts waiting for input: one more alert, no more.
        asking = later(
            failed, 3, ses_done={"state": "input", "reason": None, "pending": (views.PERMISSION,)}
        )
        source.set(asking)
        await until(pilot, lambda: len(written) == 4)
        assert "Write the README" in written[3]
        again = later(asking, 1)
        source.set(again)
        await pulled(pilot, app, again)
        assert len(written) == 4
        assert app.attention.alerter.sent == 2


async def test_no_alert_without_a_flag_or_config() -> None:
    app, source = make_app()
    written = spy(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        failed = later(source.current(), 1, ses_busy={"state": "idle", "reason": "error"})
        source.set(failed)
        await pulled(pilot, app, failed)
        assert written == [] and not app.attention.alerting


async def test_headless_write_is_harmless() -> None:
    """Headless (tests, a pipe), an alert's escape sequence is dropped: nothing reaches the
    driver, and the screen is what it was."""
    app, source = make_app(alerts=LOUD)
    async with app.run_test() as pilot:
        await pilot.pause()
        assert app._driver is not None
        sent: list[str] = []
        app._driver.write = sent.append  # type: ignore[method-assign]
        # A real alert, through the app's own sinks (bell and OSC 9): it is sent, and dropped.
        source.set(
            later(
                source.current(),
                1,
                ses_busy={"state": "idle", "reason": "error", "error": "APIError: boom"},
            )
        )
        await until(pilot, lambda: app.attention.alerter.sent == 1)
        await pilot.pause()
        assert sent == []
        # What the sinks call, called again: the screen is what it was.
        before = app.export_screenshot()
        app.write_terminal("\x1b]9;x\x07")
        app.bell()
        await pilot.pause()
        assert sent == [] and app.export_screenshot() == before


def test_app_sinks_follow_the_config() -> None:
    rung: list[str] = []
    alert = Alert("error", BUSY, (), "t", "x")
    for config, expected in (
        (AlertConfig(), []),
        (AlertConfig(bell=True), ["BEL"]),
        (AlertConfig(osc9=True), ["\x1b]9;ocwatch: t: x\x07"]),
    ):
        rung.clear()
        for sink in app_sinks(config, lambda: rung.append("BEL"), rung.append):
            sink(alert)
        assert rung == expected


# -- unread marks ----------------------------------------------------------------------------


def title(app: OcwatchApp, key: tuple[str, str]) -> str:
    return app.main_screen.table.get_cell(f"{key[0]}\x1f{key[1]}", "title").plain


async def test_unread_marks_rows_changed_elsewhere_and_clears_on_highlight() -> None:
    app, source = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = app.main_screen.table
        table.select_key(PERM)
        await pilot.pause()
        assert app.unread == set()
        # Two rows change: the one under the cursor is seen, the other is marked.
        source.set(
            later(
                source.current(),
                1,
                ses_done={"state": "busy", "reason": None},
                ses_perm={"state": "busy", "pending": ()},
            )
        )
        await until(pilot, lambda: DONE in app.unread)
        assert app.unread == {DONE}
        assert title(app, DONE).strip().startswith("• Write the README")
        assert "•" not in title(app, PERM)
        # A change that is not a transition (cost, time) marks nothing.
        cost = later(source.current(), 1, ses_busy={"cost": 5.0})
        source.set(cost)
        await pulled(pilot, app, cost)
        assert app.unread == {DONE}
        table.select_key(DONE)
        await until(pilot, lambda: not app.unread)
        assert "•" not in title(app, DONE)


async def test_unread_while_in_details_or_away_and_cleared_by_opening() -> None:
    app, source = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.main_screen.table.select_key(PERM)
        app.open_details((A, "ses_error"))
        await pilot.pause()
        # The detail view's own session is seen; the cursor row behind it is not.
        source.set(
            later(
                source.current(),
                1,
                ses_perm={"state": "busy", "pending": ()},
                ses_error={"state": "busy", "reason": None},
            )
        )
        await until(pilot, lambda: PERM in app.unread)
        assert app.unread == {PERM}
        await pilot.press("escape")
        app.open_details(PERM)
        await pilot.pause()
        assert app.unread == set()
        await pilot.press("escape")
        await pilot.pause()
        # The terminal lost the focus: even the highlighted row is marked.
        app.app_focus = False
        source.set(later(source.current(), 1, ses_perm={"state": "idle", "reason": "completed"}))
        await until(pilot, lambda: PERM in app.unread)
        # A row that leaves the View loses its mark.
        rows = dict(source.current().rows)
        rows.pop(PERM)
        source.set(View(source.current().generated_at + 1, source.current().servers, rows))
        await until(pilot, lambda: PERM not in app.unread)


def test_unfocused_only_holds_terminal_alerts_while_the_terminal_has_the_focus() -> None:
    written: list[str] = []
    focused = [True]
    config = AlertConfig(bell=True, osc777=True, unfocused_only=True)
    sinks = app_sinks(
        config,
        lambda: written.append("BEL"),
        written.append,
        focused=lambda: focused[0],
        inside_tmux=False,
    )
    alert = Alert("input", (A, "ses_perm"), ("per_1",), "deploy", "permission bash: ls")
    for sink in sinks:
        sink(alert)
    assert written == []
    focused[0] = False
    for sink in sinks:
        sink(alert)
    assert written[0] == "BEL" and written[1].startswith("\x1b]777;notify;ocwatch input: deploy")


async def test_a_receiver_that_never_answers_never_slows_the_dashboard() -> None:
    """--webhook to a receiver that accepts and never answers: the alert is queued and tried
    on a worker; keys keep answering at once, and the failure is said once, as a notification."""
    import socket

    from tui.export.deliver import Deliverer, WebhookSink

    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(16)  # accepts connections (the kernel does) and never reads or answers
    try:
        sink = WebhookSink(f"http://127.0.0.1:{hole.getsockname()[1]}/hook", timeout=8.0)
        deliverer = Deliverer([sink], lambda _text: None)
        app, source = make_app(
            alerts=AlertConfig(on=["error"], min_interval=0), deliverer=deliverer
        )
        notes: list[tuple[str, object]] = []
        app.notify = lambda message, **kw: notes.append(  # type: ignore[method-assign]
            (message, kw.get("title"))
        )
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.view is not None)
            for n in range(5):  # five failures while the receiver hangs
                changed = later(
                    source.current(),
                    1,
                    ses_busy={
                        "state": "idle" if n % 2 == 0 else "busy",
                        "reason": "error" if n % 2 == 0 else None,
                    },
                )
                source.set(changed)
                await pulled(pilot, app, changed)
            for _ in range(10):
                before = app.main_screen.table.cursor_row
                await pilot.press("down" if before < 3 else "up")
                assert app.main_screen.table.cursor_row != before
            # every key answered while the first alert still waited for its receiver (no
            # timing: a delivery on the loop would have held the keys until it gave up)
            assert deliverer.counts.get(("webhook", "failed"), 0) == 0
            await until(
                pilot, lambda: deliverer.counts.get(("webhook", "failed"), 0) >= 1, timeout=30
            )
            said = [text for text, title in notes if title == "Alerts"]
            assert len(said) == 1 and "no answer within 8s" in said[0]
    finally:
        hole.close()


async def test_a_pull_after_the_screens_are_gone_shows_nothing_and_raises_nothing() -> None:
    """A pull can come while the app shuts down, after its screens are gone (a dirty pull or the
    tick already queued: seen once against a real server, as ScreenStackError out of
    looking_at): there is no one to show a change to, and nothing is raised."""
    app, source = make_app(alerts=LOUD)
    written = spy(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        shown = app.view
    assert app.screen_stack == []
    source.set(later(source.current(), 1, ses_busy={"state": "idle", "reason": "error"}))
    app.pull()
    assert app.view is shown and written == [] and not app.unread
