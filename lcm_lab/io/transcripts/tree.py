"""Leaf-path selection over an id/parent-id tree, with lossless-claw's fallbacks.

lossless-claw (src/transcript.ts) keeps only the branch that ends at the file's last entry:
when every entry has an id it walks from the last entry up the parent chain to a root; a
duplicated id resolves to its last occurrence; a parent that does not exist or a cycle makes it
give up on the tree and take all entries in file order. This module reproduces that rule and
says *why* it fell back, so the reader can report it.

The tree is held as columns (:class:`IdColumns`: typed arrays and packed strings, about 60 bytes
a node for short ids, no object per node) and walked with numpy, so a session of millions of
lines costs no Python object per line. Ids are matched by a 64-bit key (the string's hash) and
every match the keys make is checked against the strings, so the result is exact: ids whose keys
collide are keyed again, and a parent whose key matches an id of different text is dangling.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from lcm_lab.io.transcripts.packed import PackedStrings

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Positions = npt.NDArray[np.int64]
    Flags = npt.NDArray[np.uint8]


class TreeNode(Protocol):
    @property
    def line(self) -> int: ...

    @property
    def entry_id(self) -> str | None: ...

    @property
    def parent_id(self) -> str | None: ...


NodeT = TypeVar("NodeT", bound=TreeNode)

NO_ID_PROBLEM = "an entry has no id, so the id tree cannot be used; using all entries in file order"
ROOT, DANGLING = -1, -2  # parent_of of a node without a parent, or whose parent no node is
_KEYINGS = 8  # keyings tried before giving up (a second collision among 64-bit keys is already ~1e-26)


class IdColumns:
    """Each node's line, id and parent id, in file order, with the ids' 64-bit keys."""

    __slots__ = ("id_keys", "ids", "lines", "parent_keys", "parents")

    def __init__(self) -> None:
        self.lines = array("q")
        self.ids = PackedStrings()
        self.parents = PackedStrings()
        self.id_keys = array("q")
        self.parent_keys = array("q")

    @classmethod
    def of(cls, nodes: Sequence[TreeNode]) -> IdColumns:
        columns = cls()
        for node in nodes:
            columns.append(node.line, node.entry_id, node.parent_id)
        return columns

    def append(self, line: int, entry_id: str | None, parent_id: str | None) -> None:
        self.lines.append(line)
        self.ids.append(entry_id)
        self.parents.append(parent_id)
        self.id_keys.append(0 if entry_id is None else hash(entry_id))
        self.parent_keys.append(0 if parent_id is None else hash(parent_id))

    def set_parents(self, parents: Mapping[int, str]) -> None:
        """Give the nodes at these positions, which have no parent, that parent id."""
        if parents:
            self.parents = self.parents.filled(parents)
            for position, parent_id in parents.items():
                self.parent_keys[position] = hash(parent_id)

    def release_parents(self) -> None:
        """Free the parent ids and their keys once the walks are done (the ids, their keys and
        the lines stay): at the read's peak they were a third of what a line cost."""
        self.parents, self.parent_keys = PackedStrings(), array("q")

    def __len__(self) -> int:
        return len(self.lines)

    def keys(self, keying: int) -> tuple[Positions, Positions]:
        """The ids' and parents' keys: their hashes (keying 0, kept from :meth:`append`), else
        the hash of ``(keying, id)``."""
        import numpy as np

        if keying == 0:
            return np.frombuffer(self.id_keys, dtype=np.int64), np.frombuffer(self.parent_keys, dtype=np.int64)

        def rekeyed(column: PackedStrings) -> Positions:
            keys = (0 if (value := column[i]) is None else hash((keying, value)) for i in range(len(column)))
            return np.fromiter(keys, dtype=np.int64, count=len(column))

        return rekeyed(self.ids), rekeyed(self.parents)

    def present(self, wanted: Sequence[str]) -> set[str]:
        """Which of ``wanted`` are the id of some node (one vectorised pass for all of them)."""
        import numpy as np

        if not wanted or not len(self):
            return set()
        keys = np.frombuffer(self.id_keys, dtype=np.int64)
        ids = self.ids
        candidates = np.flatnonzero(np.isin(keys, np.array([hash(value) for value in wanted], dtype=np.int64)))
        found = {ids.raw(int(position)) for position in candidates}
        return {value for value in wanted if value.encode("utf-8", "surrogatepass") in found}


@dataclass(frozen=True)
class LeafPositions:
    """A selection over :class:`IdColumns`: the chosen positions, root first.

    ``mode`` is ``"tree"`` (walked the parent chain) or ``"file-order"`` (fallback: every member,
    in file order); ``problem`` explains a fallback; ``duplicates`` are ``(earlier, later)``
    positions of nodes sharing an id (the later occurrence wins), in the later one's order.
    """

    positions: Positions
    mode: str
    problem: str | None = None
    problem_line: int | None = None
    duplicates: tuple[tuple[int, int], ...] = ()

    def left_out(self, members: Positions) -> Positions:
        """``members`` that a tree selection left out because they are on other branches (an
        id's earlier occurrence, which a later one replaced, is a duplicate, not a branch)."""
        import numpy as np

        if self.mode != "tree" or len(self.positions) == len(members):
            return np.empty(0, dtype=np.int64)
        kept = np.concatenate([self.positions, np.array([earlier for earlier, _ in self.duplicates], dtype=np.int64)])
        return members[~np.isin(members, kept)]


def off_branch_issue(left_out_lines: Sequence[int] | Positions) -> tuple[int, str] | None:
    """``(line, message)`` saying how many entries a tree selection left out because they are on
    other branches (:meth:`LeafPositions.left_out`), from which line; ``None`` when there are none."""
    if not len(left_out_lines):
        return None
    first = int(left_out_lines[0])
    return first, (f"{len(left_out_lines)} entries on other branches (from line {first}) are left out: the "
                   "conversation is the branch that ends at its last entry, as lossless-claw reads it")  # fmt: skip


def select_leaf_positions(columns: IdColumns, members: Positions | None = None) -> LeafPositions:
    """Select the root→leaf path ending at the last of ``members`` (positions in ``columns``,
    increasing; default all), as lossless-claw does. A member without an id makes the selection
    fall back to file order."""
    import numpy as np

    if members is None:
        members = np.arange(len(columns), dtype=np.int64)
    if not len(members):
        return LeafPositions(members, "tree")
    no_id = np.frombuffer(columns.ids.missing, dtype=np.uint8)[members]
    if no_id.any():
        return LeafPositions(members, "file-order", NO_ID_PROBLEM, columns.lines[int(members[int(np.argmax(no_id))])])
    if one_chain(columns, members):
        return LeafPositions(members, "tree")
    return _walk(columns, members, link_members(columns, members))


def one_chain(columns: IdColumns, members: Positions) -> bool:
    """True when ``members`` are consecutive nodes forming one chain (the first a root, each the
    parent of the next, no id twice): the usual file, whose path is every member. Checked on
    whole columns (the parent ids against the ids one place back as two runs of packed strings,
    the ids' keys sorted for repeats) without walking or looking up a parent."""
    import numpy as np

    start, count = int(members[0]), len(members)
    if int(members[-1]) - start != count - 1:
        return False
    no_parent = np.frombuffer(columns.parents.missing, dtype=np.uint8)[start : start + count]
    if no_parent[0] != 1 or no_parent[1:].any() or not columns.parents.same_run(start + 1, columns.ids, start, count - 1):
        return False
    keys = np.sort(np.frombuffer(columns.id_keys, dtype=np.int64)[start : start + count])
    return not bool((keys[1:] == keys[:-1]).any())  # (equal keys: a repeated id, or a collision for _link)


@dataclass(frozen=True)
class Links:
    """Members linked to their parents by :func:`link_members` (indices are into ``members``).

    ``parent_of``: the index of the last occurrence of each member's parent id, ``ROOT`` (no
    parent) or ``DANGLING`` (no member has that id as far as the keys tell; a key match is checked
    against the text only where a walk uses it). ``last_of``: the index of the last occurrence of
    each member's own id. ``duplicates``: ``(earlier, later)`` positions of members sharing an id.
    """

    parent_of: Positions
    last_of: Positions
    duplicates: tuple[tuple[int, int], ...]
    ids: int  # distinct ids



def link_members(columns: IdColumns, members: Positions) -> Links:
    """Each member's parent and last occurrence, exact: keys that collide are keyed again."""
    every = len(members) == len(columns)
    for keying in range(_KEYINGS):
        id_keys, parent_keys = columns.keys(keying)
        links = _link(columns, members, *((id_keys, parent_keys) if every else (id_keys[members], parent_keys[members])))
        if links is not None:
            return links
    raise RuntimeError(f"node ids kept colliding under {_KEYINGS} keyings")  # pragma: no cover - ~1e-26 per file


def _link(columns: IdColumns, members: Positions, keys: Positions, parent_keys: Positions) -> Links | None:
    """:class:`Links` with these keys, or None when two different ids share a key."""
    import numpy as np

    ids = columns.ids
    order = np.argsort(keys, kind="stable")  # equal ids stay in file order
    ordered = keys[order]
    repeats = np.flatnonzero(ordered[1:] == ordered[:-1])
    duplicates = sorted(
        ((int(members[order[at]]), int(members[order[at + 1]])) for at in repeats), key=lambda pair: pair[1]
    )
    if any(ids.raw(earlier) != ids.raw(later) for earlier, later in duplicates):
        return None  # a collision, not a duplicate
    last = np.ones(len(keys), dtype=bool)
    last[repeats] = False  # the last occurrence of each id is the one parents lead to
    unique_keys, unique_at = ordered[last], order[last]
    del order, ordered
    where = np.minimum(np.searchsorted(unique_keys, parent_keys), len(unique_keys) - 1)
    parent_of = np.where(unique_keys[where] == parent_keys, unique_at[where], DANGLING)
    parent_of[np.frombuffer(columns.parents.missing, dtype=np.uint8)[members] == 1] = ROOT
    last_of = unique_at[np.searchsorted(unique_keys, keys)]
    return Links(parent_of, last_of, tuple(duplicates), len(unique_keys))


def parent_matches(columns: IdColumns, child: int, parent: int) -> bool:
    """Whether node ``parent`` really has the id node ``child`` names as its parent (keys that
    matched a different id's text: the parent is dangling)."""
    return columns.parents.raw(child) == columns.ids.raw(parent)


def _walk(columns: IdColumns, members: Positions, links: Links) -> LeafPositions:
    """The path from the last member up its parents (or the fallback to file order)."""
    import numpy as np

    parent_of, duplicates, lines = links.parent_of, links.duplicates, columns.lines

    def fallback(problem: str, at: int) -> LeafPositions:
        return LeafPositions(members, "file-order", problem, lines[int(members[at])], duplicates)

    path = array("q")
    current = len(members) - 1
    while True:
        if len(path) == links.ids:  # more steps than there are ids: the chain loops
            return fallback(*_cycle(columns, members, parent_of))
        path.append(current)
        parent = int(parent_of[current])
        if parent == ROOT:
            break
        child_at = int(members[current])
        if parent == DANGLING or not parent_matches(columns, child_at, int(members[parent])):
            # (a parent whose key matches an id of other text names no id either)
            return fallback(f"parent id {columns.parents[child_at]!r} does not exist (dangling parent); "
                            "using all entries in file order", current)  # fmt: skip
        current = parent
    chosen = members[np.frombuffer(path, dtype=np.int64)[::-1]]
    return LeafPositions(chosen, "tree", None, None, duplicates)


def _cycle(columns: IdColumns, members: Positions, parent_of: Positions) -> tuple[str, int]:
    """The problem and member index for a parent chain that loops, naming the entry that closes
    the loop (walked again with the ids seen: the common walk keeps no set of them)."""
    seen: set[str | None] = set()
    closing = current = len(members) - 1
    while (entry_id := columns.ids[int(members[current])]) not in seen:
        seen.add(entry_id)
        closing, current = current, int(parent_of[current])
    closing_id = columns.ids[int(members[closing])]
    return (f"cycle in the parent chain: entry {closing_id!r} points back to {entry_id!r}; "
            "using all entries in file order"), closing  # fmt: skip


@dataclass(frozen=True)
class LeafPath(Generic[NodeT]):
    """The selected entries and how they were chosen (:class:`LeafPositions` over node objects).

    ``duplicate_lines`` are ``(earlier line, later line, id)`` of lines whose id an earlier line
    already used (the later occurrence wins).
    """

    nodes: tuple[NodeT, ...]
    mode: str
    problem: str | None = None
    problem_line: int | None = None
    duplicate_lines: tuple[tuple[int, int, str], ...] = ()  # (earlier line, later line, id)
    # Lines on other branches (LeafPositions.left_out): derived from the rest, so not compared.
    left_out_lines: tuple[int, ...] = field(default=(), compare=False)


def select_leaf_path(nodes: Sequence[NodeT]) -> LeafPath[NodeT]:
    """Select the root→leaf path ending at the last node, as lossless-claw does.

    Nodes without an id make the whole selection fall back to file order.

    >>> from types import SimpleNamespace as N
    >>> a, b, c = N(line=1, entry_id="a", parent_id=None), N(line=2, entry_id="b", parent_id="a"), N(line=3, entry_id="c", parent_id="a")
    >>> [n.entry_id for n in select_leaf_path([a, b, c]).nodes]
    ['a', 'c']
    """
    import numpy as np

    columns = IdColumns.of(nodes)
    selection = select_leaf_positions(columns)
    return LeafPath(
        tuple(nodes[int(at)] for at in selection.positions),
        selection.mode,
        selection.problem,
        selection.problem_line,
        tuple((nodes[earlier].line, nodes[later].line, str(nodes[later].entry_id)) for earlier, later in selection.duplicates),
        tuple(columns.lines[int(at)] for at in selection.left_out(np.arange(len(nodes), dtype=np.int64))),
    )
