"""A model-based test of the store (hypothesis stateful): random runs on a model server, events
delivered or lost at random, snapshots at random moments. Invariants:

- no session outlives a snapshot that lacks it, and every session the snapshot lists is shown;
- right after a snapshot, and whenever no event since it was lost, every settled row says what
  the server holds (busy, idle with the right reason, waiting for input);
- no idle reason contradicts the last message the monitor was given;
- the transition feed never emits an unsettled row.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from tests.builders import SERVER, T0, event, session, snap
from tui.core.derive import derive_server
from tui.core.journal import Journal
from tui.core.models import Message, PermissionRequest
from tui.core.settings import Settings
from tui.core.view import TransitionFeed, View

S = Settings(grace=3.0)
IDS = st.sampled_from(["ses_a", "ses_b"])


class Store(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = T0
        self.n = 0
        # the model server: session -> (status busy?, last message, open permission id)
        self.server: dict[str, tuple[bool, Message | None, str | None]] = {}
        self.journal = Journal()
        self.snapshot = snap([], started_at=self.now)
        self.lost_since_snapshot = False
        self.feed = TransitionFeed()
        self.rows: dict = {}
        self.gone: set[str] = set()  # OpenCode never gives an id twice

    # -- the server ------------------------------------------------------------------------------
    def _emit(self, delivered: bool, etype: str, props: dict) -> None:
        self.now += 0.05
        if delivered:
            self.journal.add(event(etype, props, self.now))
        else:
            self.lost_since_snapshot = True

    def _msg(self, sid: str, role: str, *, done: bool = False, error: str | None = None) -> Message:
        self.n += 1
        info: dict = {
            "id": f"msg_{self.n:06d}",
            "sessionID": sid,
            "role": role,
            "time": {"created": self.now * 1000},
        }
        if done:
            info["time"]["completed"] = self.now * 1000
            info["finish"] = "stop"
        if error:
            info["error"] = {"name": error, "data": {"message": "boom"}}
            info["time"]["completed"] = self.now * 1000
        return Message.parse({"info": info, "parts": []})

    @rule(sid=IDS, ok=st.booleans())
    def create(self, sid: str, ok: bool) -> None:
        if sid in self.server or sid in self.gone:
            return
        self.server[sid] = (False, None, None)
        self._emit(ok, "session.created", {"sessionID": sid, "info": session(sid).to_wire()})

    @rule(sid=IDS, ok1=st.booleans(), ok2=st.booleans())
    def prompt(self, sid: str, ok1: bool, ok2: bool) -> None:
        if sid not in self.server or self.server[sid][0]:
            return
        msg = self._msg(sid, "user")
        self.server[sid] = (True, msg, None)
        self._emit(ok1, "message.updated", {"sessionID": sid, "info": msg.info.to_wire()})
        self._emit(ok2, "session.status", {"sessionID": sid, "status": {"type": "busy"}})

    @rule(sid=IDS, ok=st.booleans())
    def ask(self, sid: str, ok: bool) -> None:
        if sid not in self.server or not self.server[sid][0] or self.server[sid][2]:
            return
        self.n += 1
        rid = f"per_{self.n:06d}"
        self.server[sid] = (True, self.server[sid][1], rid)
        self._emit(
            ok,
            "permission.asked",
            {"id": rid, "sessionID": sid, "permission": "bash", "patterns": ["ls"]},
        )

    @rule(
        sid=IDS,
        ok1=st.booleans(),
        ok2=st.booleans(),
        ok3=st.booleans(),
        how=st.sampled_from(["done", "APIError", "MessageAbortedError"]),
    )
    def finish(self, sid: str, ok1: bool, ok2: bool, ok3: bool, how: str) -> None:
        if sid not in self.server or not self.server[sid][0]:
            return
        rid = self.server[sid][2]
        if rid is not None:
            self._emit(
                ok3, "permission.replied", {"sessionID": sid, "requestID": rid, "reply": "once"}
            )
        msg = self._msg(sid, "assistant", done=how == "done", error=None if how == "done" else how)
        self.server[sid] = (False, msg, None)
        # 1.18.33's order on a failure: idle first, the final message after it
        self._emit(ok2, "session.status", {"sessionID": sid, "status": {"type": "idle"}})
        self._emit(ok1, "message.updated", {"sessionID": sid, "info": msg.info.to_wire()})

    @rule(sid=IDS, ok=st.booleans())
    def delete(self, sid: str, ok: bool) -> None:
        if sid not in self.server or self.server[sid][0]:
            return
        del self.server[sid]
        self.gone.add(sid)
        self._emit(ok, "session.deleted", {"sessionID": sid, "info": session(sid).to_wire()})

    @rule()
    def take_snapshot(self) -> None:
        self.now += 0.05
        seq = self.journal.seq
        perms = [
            PermissionRequest.parse({"id": rid, "sessionID": sid, "permission": "bash"})
            for sid, (_b, _m, rid) in self.server.items()
            if rid
        ]
        self.snapshot = snap(
            [session(sid) for sid in self.server],
            status={sid: _busy() for sid, (b, _m, _r) in self.server.items() if b},
            messages={sid: m for sid, (_b, m, _r) in self.server.items()},
            permissions=perms,
            started_at=self.now,
            journal_seq=seq,
        )
        self.journal.cut(seq)
        self.lost_since_snapshot = False
        self._derive()
        assert set(k[1] for k in self.rows) == set(self.server)  # nothing outlives it
        self._check_truth()

    @rule()
    def time_passes(self) -> None:
        self.now += 4.0  # past the grace period

    # -- the monitor -----------------------------------------------------------------------------
    def _derive(self) -> None:
        self.rows = derive_server(
            self.snapshot, self.journal.facts(), self.now, S, previous=self.rows
        )
        for tr in self.feed.feed(View(self.now, (), self.rows)).transitions:
            assert tr.after is None or tr.after.settled

    def _check_truth(self) -> None:
        for sid, (running, msg, rid) in self.server.items():
            row = self.rows.get((SERVER, sid))
            assert row is not None, sid
            if not row.settled:
                continue
            if rid is not None:
                assert row.state == "input", (sid, row)
            elif running:
                assert row.state == "busy" and not row.stale, (sid, row)
            elif msg is None:
                assert (row.state, row.reason) == ("idle", None), (sid, row)
            else:
                err = msg.info.error
                want = (
                    "completed"
                    if err is None
                    else "aborted"
                    if err.name == "MessageAbortedError"
                    else "error"
                )
                assert (row.state, row.reason) == ("idle", want), (sid, row)

    @invariant()
    def views_tell_the_truth(self) -> None:
        self._derive()
        if not self.lost_since_snapshot:  # every event since the snapshot arrived
            assert set(k[1] for k in self.rows) == set(self.server)
            self._check_truth()
        for (_srv, sid), row in self.rows.items():
            # (an unsettled row keeps its last settled state on purpose: a prompt is on its way)
            if (
                row.settled
                and row.state == "idle"
                and row.reason in ("completed", "error", "aborted")
            ):
                # the reason agrees with the last message the monitor was given
                seen = self.journal.facts().messages.get(sid)
                msg = seen[0] if seen else (self.snapshot.messages.get(sid) or None)
                info = msg.info if isinstance(msg, Message) else msg
                assert info is not None and info.role == "assistant", (sid, row)
                assert (info.error is None) == (row.reason == "completed"), (sid, row)


def _busy():
    from tests.builders import busy

    return busy()


TestStore = Store.TestCase
TestStore.settings = settings(max_examples=400, stateful_step_count=30, deadline=None)
