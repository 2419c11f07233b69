"""Leaf-path selection over an id/parent-id tree, with lossless-claw's fallbacks.

lossless-claw (src/transcript.ts) keeps only the branch that ends at the file's last entry:
when every entry has an id it walks from the last entry up the parent chain to a root; a
duplicated id resolves to its last occurrence; a parent that does not exist or a cycle makes it
give up on the tree and take all entries in file order. This module reproduces that rule and
says *why* it fell back, so the reader can report it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar


class TreeNode(Protocol):
    @property
    def line(self) -> int: ...

    @property
    def entry_id(self) -> str | None: ...

    @property
    def parent_id(self) -> str | None: ...


NodeT = TypeVar("NodeT", bound=TreeNode)


@dataclass(frozen=True)
class LeafPath(Generic[NodeT]):
    """The selected entries and how they were chosen.

    ``mode`` is ``"tree"`` (walked the parent chain) or ``"file-order"`` (fallback);
    ``problem`` explains a fallback; ``duplicate_lines`` are lines whose id an earlier line
    already used (the later occurrence wins).
    """

    nodes: tuple[NodeT, ...]
    mode: str
    problem: str | None = None
    problem_line: int | None = None
    duplicate_lines: tuple[tuple[int, int, str], ...] = ()  # (earlier line, later line, id)


def select_leaf_path(nodes: Sequence[NodeT]) -> LeafPath[NodeT]:
    """Select the root→leaf path ending at the last node, as lossless-claw does.

    Nodes without an id make the whole selection fall back to file order.

    >>> from types import SimpleNamespace as N
    >>> a, b, c = N(line=1, entry_id="a", parent_id=None), N(line=2, entry_id="b", parent_id="a"), N(line=3, entry_id="c", parent_id="a")
    >>> [n.entry_id for n in select_leaf_path([a, b, c]).nodes]
    ['a', 'c']
    """
    if not nodes:
        return LeafPath((), "tree")
    by_id: dict[str, NodeT] = {}
    duplicates: list[tuple[int, int, str]] = []
    for node in nodes:
        if node.entry_id is None:
            return LeafPath(
                tuple(nodes),
                "file-order",
                "an entry has no id, so the id tree cannot be used; using all entries in file order",
                node.line,
            )
        earlier = by_id.get(node.entry_id)
        if earlier is not None:
            duplicates.append((earlier.line, node.line, node.entry_id))
        by_id[node.entry_id] = node

    path: list[NodeT] = []
    current: NodeT | None = nodes[-1]
    while current is not None:
        if len(path) == len(by_id):  # more steps than there are ids: the chain loops
            return _cycle(nodes, by_id, tuple(duplicates))
        path.append(current)
        parent_id = current.parent_id
        if parent_id is None:
            break
        parent = by_id.get(parent_id)
        if parent is None:
            return LeafPath(
                tuple(nodes),
                "file-order",
                f"parent id {parent_id!r} does not exist (dangling parent); using all entries in file order",
                current.line,
                tuple(duplicates),
            )
        current = parent
    path.reverse()
    return LeafPath(tuple(path), "tree", None, None, tuple(duplicates))


def _cycle(nodes: Sequence[NodeT], by_id: dict[str, NodeT], duplicates: tuple[tuple[int, int, str], ...]) -> LeafPath[NodeT]:
    """The file-order fallback for a parent chain that loops, naming the entry that closes the loop
    (walked again with the ids seen: the common walk keeps no set of them)."""
    seen: set[str] = set()
    closing = current = nodes[-1]
    while current.entry_id not in seen:
        assert current.entry_id is not None and current.parent_id is not None
        seen.add(current.entry_id)
        closing, current = current, by_id[current.parent_id]
    return LeafPath(
        tuple(nodes),
        "file-order",
        f"cycle in the parent chain: entry {closing.entry_id!r} points back to {current.entry_id!r}; "
        "using all entries in file order",
        closing.line,
        duplicates,
    )


def off_branch_issue(nodes: Sequence[NodeT], selection: LeafPath[NodeT]) -> tuple[int, str] | None:
    """``(line, message)`` saying how many of ``nodes`` a tree selection left out because they are
    on other branches, from which line (an id's earlier occurrence, which a later one replaced, is
    a duplicate, not a branch); ``None`` when there are none, as after a file-order fallback."""
    if selection.mode != "tree" or len(selection.nodes) == len(nodes):
        return None
    kept = {node.line for node in selection.nodes} | {earlier for earlier, _, _ in selection.duplicate_lines}
    off = [node.line for node in nodes if node.line not in kept]
    if not off:
        return None
    return off[0], (f"{len(off)} entries on other branches (from line {off[0]}) are left out: the conversation is "
                    "the branch that ends at its last entry, as lossless-claw reads it")
