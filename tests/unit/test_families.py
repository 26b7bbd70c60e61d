"""derive._families, the roll-up of requests and busy descendants, against the walk it replaced
(every node walked, leaves too): the same families for any tree, cycles included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import permission, session
from tui.core.derive import _children, _families

IDS = [f"ses_{i}" for i in range(8)]


def _families_walking_every_node(children, own, running):
    """The roll-up as it was before leaves were read in place (the reference)."""
    rolled: dict = {}
    busy_desc: dict = {}
    for root in children:
        if root in rolled:
            continue
        stack = [(root, False)]
        on_path: set = set()
        while stack:
            sid, done = stack.pop()
            if done:
                on_path.discard(sid)
                pend = list(own.get(sid, ()))
                below: list = []
                for c in children.get(sid, ()):
                    pend.extend(rolled.get(c, ()))
                    if running(c):
                        below.append(c)
                    below.extend(busy_desc.get(c, ()))
                rolled[sid] = tuple(pend)
                busy_desc[sid] = below
                continue
            if sid in rolled or sid in on_path:
                continue
            on_path.add(sid)
            stack.append((sid, True))
            for c in children.get(sid, ()):
                if c not in rolled and c not in on_path:
                    stack.append((c, False))
    out = {
        sid: (rolled[sid], tuple(busy_desc[sid]), tuple(sorted(kids)))
        for sid, kids in children.items()
    }
    for sid, asked in own.items():
        if sid not in out:
            out[sid] = (tuple(asked), (), ())
    return out


@given(
    st.lists(st.sampled_from(IDS), unique=True, min_size=1),
    st.data(),
)
@settings(max_examples=400, deadline=None)
def test_a_leaf_read_in_place_rolls_up_as_walking_it(present, data):
    """Any parent links among the listed sessions (chains, fans, cycles), any open requests and
    running sessions: the families equal the reference's."""
    sessions = {
        sid: session(sid, parent=data.draw(st.sampled_from([None, *IDS]))) for sid in present
    }
    own = {}
    for sid in data.draw(st.lists(st.sampled_from(present), unique=True)):
        n = data.draw(st.integers(1, 2))
        own[sid] = [(permission(f"per_{sid}_{k}", sid), None) for k in range(n)]
    busy = set(data.draw(st.lists(st.sampled_from(present), unique=True)))
    children = _children(sessions)
    assert _families(children, own, busy.__contains__) == _families_walking_every_node(
        children, own, busy.__contains__
    )
