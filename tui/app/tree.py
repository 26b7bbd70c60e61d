"""Order View rows as a tree for display: filtering, sorting siblings, collapsed parents.

Pure functions over `SessionRow`s; the table widget turns the resulting lines into keyed rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tui.core.view import SessionRow

from .format import attention_rank, reason_key, server_label, short_folder

Key = tuple[str, str]

SORT_COLUMNS = (
    "state",
    "reason",  # a stale row's flag is in this column and sorts first
    "title",
    "folder",
    "in_state",
    "activity",
    "cost",
    "tokens",
)
"""Columns the table can be sorted by (also the table's column keys)."""


@dataclass(frozen=True, slots=True)
class TreeLine:
    """One displayed line: a row and where it sits in the tree."""

    key: Key
    depth: int
    last: bool  # last among its siblings (draws `└` rather than `├`)
    has_children: bool
    expanded: bool
    hidden: int  # descendants hidden because this line is collapsed
    context: bool  # shown only because a descendant matches the filter


def sort_value(row: SessionRow, column: str) -> Any:
    """The value a column sorts by (None-safe, comparable within a column, and independent of
    the clock: a layout stays valid while the rows do not change)."""
    if column == "state":
        return (attention_rank(row), row.state)
    if column == "reason":
        return reason_key(row)
    if column == "title":
        return row.title.casefold()
    if column == "folder":
        return row.directory.casefold()
    if column == "in_state":  # longest in its state first (a number: highest first)
        return (1, 0.0) if row.since is None else (0, row.since)
    if column == "activity":
        return 0.0 if row.updated is None else -row.updated  # most recent first
    if column == "cost":
        return -(row.cost or 0.0)  # most expensive first
    if column == "tokens":
        return -(row.tokens or 0)
    raise ValueError(f"unknown sort column {column!r}")


DESCENDING = frozenset({"in_state", "cost", "tokens"})
"""Columns whose own order (not reversed) puts the largest value they show first: the longest
in its state, the most cost, the most tokens. (Activity shows an age: the newest, the smallest,
first.)"""


def sort_arrow(column: str, reverse: bool) -> str:
    """The header's arrow: ▲ when the column's values go up down the table (a to z, smallest
    first), ▼ when they go down; a column of kinds (state, reason) is ▲ in its own order."""
    return "▼" if (column in DESCENDING) != reverse else "▲"


GROUP = "\x1egroup"
"""The `server` of a group's line (grouping by folder or server): no URL reads like it."""


def is_group(key: Key) -> bool:
    """Whether a table line is a group's (not a session's)."""
    return key[0] == GROUP


def parent_key(row: SessionRow, rows: Mapping[Key, SessionRow]) -> Key | None:
    """The key of the row's parent when that parent is in the View, else None (a root)."""
    if row.parent_id is None:
        return None
    key = (row.server, row.parent_id)
    return key if key in rows else None


_NO_KIDS: list[Key] = []


def _by_id(key: Key) -> tuple[str, str]:
    return (key[1], key[0])


def layout(
    rows: Mapping[Key, SessionRow],
    *,
    sort: str = "state",
    reverse: bool = False,
    collapsed: Iterable[Key] = (),
    match: Callable[[SessionRow], bool] | None = None,
    group_of: Callable[[SessionRow], Key] | None = None,
) -> list[TreeLine]:
    """Rows in display order: roots then their descendants, depth first.

    With `match`, only matching rows and their ancestors (as `context`) are shown. Siblings are
    sorted by `sort` (ties by session id: stable under a stream of events). Children of a
    collapsed key are hidden and counted in its `hidden`. With `group_of`, `rows` holds group
    lines too (keys `is_group`): each root session goes under its group's line, and a group
    is shown when one of its sessions is (never as context: it is a heading).
    """

    def parent(row: SessionRow) -> Key | None:
        up = parent_key(row, rows)
        if up is None and group_of is not None and row.server != GROUP:
            return group_of(row)
        return up

    children: dict[Key | None, list[Key]] = {}
    for key, row in rows.items():
        children.setdefault(parent(row), []).append(key)

    shown: set[Key] | None = None
    if match is not None:
        shown = set()
        for key, row in rows.items():
            if row.server != GROUP and match(row):
                k: Key | None = key
                seen: set[Key] = set()
                while k is not None and k not in seen and k in rows:
                    seen.add(k)
                    shown.add(k)
                    k = parent(rows[k])
        matched = {key for key in shown if is_group(key) or match(rows[key])}
    else:
        matched = set(rows)

    def order(keys: list[Key]) -> list[Key]:
        keep = list(keys) if shown is None else [k for k in keys if k in shown]
        if len(keep) > 1:
            # ties by id, not by last activity: under a stream of events the activity of busy
            # rows changes on every redraw, and rows would keep trading places (each move also
            # re-renders the table). OpenCode's session ids sort newest first.
            keep.sort(key=_by_id)
            keep.sort(key=lambda k: sort_value(rows[k], sort), reverse=reverse)
        return keep

    folded = set(collapsed)
    out: list[TreeLine] = []
    visited: set[Key] = set()

    def descendants(key: Key) -> set[Key]:
        found: set[Key] = set()
        stack = order(children.get(key, []))
        while stack:
            k = stack.pop()
            if k != key and k not in found:
                found.add(k)
                stack.extend(order(children.get(k, [])))
        return found

    def walk(top: Key, last_top: bool) -> None:
        """`top` and what hangs under it, depth first, with a stack of its own (a chain of a
        thousand sub-sessions overflowed Python's: the dashboard crashed, RecursionError)."""
        stack: list[tuple[Key, int, bool]] = [(top, 0, last_top)]
        while stack:
            key, depth, last = stack.pop()
            if key in visited:  # a parent cycle: show each row once
                continue
            visited.add(key)
            kids = order(children[key]) if key in children else _NO_KIDS
            is_folded = key in folded and bool(kids)
            hidden = descendants(key) - visited if is_folded else set()
            visited.update(hidden)  # placed (folded away), not orphans
            out.append(
                TreeLine(
                    key, depth, last, bool(kids), not is_folded, len(hidden), key not in matched
                )
            )
            if not is_folded:  # (the first child on top: walked first)
                stack.extend(
                    (kid, depth + 1, i == len(kids) - 1)
                    for i, kid in reversed(list(enumerate(kids)))
                )

    roots = order(children.get(None, []))
    for i, root in enumerate(roots):
        walk(root, i == len(roots) - 1)
    # Rows caught in a parent cycle have no root; show them at the top level.
    for key in order([k for k in rows if k not in visited]):
        if key not in visited:
            walk(key, True)
    return out


class Layouts:
    """`layout()` that hands back its previous lines (the same list, the same TreeLines) while
    nothing a layout reads has changed: the same rows, each with the same parent, sort value
    and filter result. Rows are compared by identity first (a View reuses the rows of sessions
    that did not change), so a quiet refresh of thousands of rows costs one pass over them."""

    def __init__(self) -> None:
        self._params: tuple[object, ...] | None = None
        self._seen: dict[Key, tuple[SessionRow, tuple[object, ...]]] = {}
        self.lines: list[TreeLine] = []

    def __call__(
        self,
        rows: Mapping[Key, SessionRow],
        *,
        sort: str = "state",
        reverse: bool = False,
        collapsed: Iterable[Key] = (),
        match: Callable[[SessionRow], bool] | None = None,
        match_key: object = None,
        changed: Iterable[Key] | None = None,
        group_of: Callable[[SessionRow], Key] | None = None,
        group_key: object = None,
    ) -> list[TreeLine]:
        """As `layout()`; `match_key` identifies the filter `match` applies (equal keys, equal
        filters), `group_key` the grouping `group_of` makes. `changed`: the caller knows these
        are the only rows that are other objects than at the last call, over the same
        sessions (only they are looked at)."""
        folded = frozenset(collapsed)
        params = (sort, reverse, folded, match_key, match is None, group_key)
        if params != self._params:
            self._params, self._seen, changed = params, {}, None
        old = self._seen

        def relayout() -> list[TreeLine]:
            return layout(
                rows,
                sort=sort,
                reverse=reverse,
                collapsed=folded,
                match=match,
                group_of=group_of,
            )

        def facts_of(row: SessionRow) -> tuple[object, ...]:
            return (
                row.parent_id,
                sort_value(row, sort),
                match(row) if match else True,
                group_of(row) if group_of is not None and row.server != GROUP else None,
            )

        if changed is not None and old:
            same = True
            for key in changed:
                row = rows[key]
                kept = old[key]
                if kept[0] is row:
                    continue
                facts = facts_of(row)
                if kept[1] != facts:
                    same = False
                old[key] = (row, facts)
            if not same:
                self.lines = relayout()
            return self.lines
        same = len(rows) == len(old)
        seen: dict[Key, tuple[SessionRow, tuple[object, ...]]] = {}
        for key, row in rows.items():
            before = old.get(key)
            if before is not None and before[0] is row:
                seen[key] = before
                continue
            facts = facts_of(row)
            if before is None or before[1] != facts:
                same = False
            seen[key] = (row, facts)
        if not same or not old:
            self.lines = relayout()
        self._seen = seen
        return self.lines


GROUPINGS = ("none", "folder", "server")
"""How the table can group its sessions (`f` cycles them)."""


class Grouping:
    """The group lines of one View for one grouping: a row per folder (per server and folder
    when several servers are shown) or per server, under which its root sessions hang. A
    group's row sums its sessions (cost, tokens, the latest activity), takes the state of its
    most urgent session (what the state sort orders groups by) and counts them by state in
    `evidence` (`● 2  ? 1  idle 9`, shown beside its name)."""

    def __init__(
        self, by: str, rows: Mapping[Key, SessionRow], names: Mapping[str, str] | None = None
    ) -> None:
        self.by = by
        names = names or {}
        multi = len({k[0] for k in rows}) > 1
        members: dict[Key, list[SessionRow]] = {}
        titles: dict[Key, tuple[str, str]] = {}
        for row in rows.values():
            gid = self.of(row)
            members.setdefault(gid, []).append(row)
            if gid not in titles:
                server = names.get(row.server) or server_label(row.server)
                if by == "server":
                    titles[gid] = (server, "")
                else:
                    name = short_folder(row.directory)
                    titles[gid] = (f"{server} {name}" if multi else name, row.directory)
        self.rows: dict[Key, SessionRow] = {}
        for gid, group in members.items():
            lead = min(group, key=attention_rank)
            counts: dict[str, int] = {}
            for r in group:
                word = "stale" if r.stale else r.state
                counts[word] = counts.get(word, 0) + 1
            updated = [r.updated for r in group if r.updated is not None]
            costs = [r.cost for r in group if r.cost is not None]
            tokens = [r.tokens for r in group if r.tokens is not None]
            title, directory = titles[gid]
            self.rows[gid] = SessionRow(
                GROUP,
                gid[1],
                title,
                directory,
                None,
                lead.state,
                lead.reason,
                lead.stale,
                tuple(f"{word} {n}" for word, n in sorted(counts.items())),
                (),
                None,
                max(updated) if updated else None,
                sum(costs) if costs else None,
                sum(tokens) if tokens else None,
            )

    def of(self, row: SessionRow) -> Key:
        """The key of the group a session belongs to."""
        if self.by == "server":
            return (GROUP, f"server\x1f{row.server}")
        return (GROUP, f"folder\x1f{row.server}\x1f{row.directory}")
