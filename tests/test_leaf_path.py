"""Leaf-path selection (lossless-claw's rule, ``lcm_lab.io.transcripts.tree``) against a plain
walk that remembers every id it visited: the selection keeps no such set (a million-line session
saved 34 MB), so loops are found by counting steps and named by a second walk."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from lcm_lab.io.transcripts.tree import LeafPath, select_leaf_path


def _node(line: int, entry_id: str | None, parent_id: str | None) -> SimpleNamespace:
    return SimpleNamespace(line=line, entry_id=entry_id, parent_id=parent_id)


def _plain_walk(nodes: list[SimpleNamespace]) -> LeafPath[SimpleNamespace]:
    """The rule written the obvious way: walk up from the last node, stop at a repeat."""
    if not nodes:
        return LeafPath((), "tree")
    by_id: dict[str, SimpleNamespace] = {}
    duplicates = []
    for node in nodes:
        if node.entry_id is None:
            return LeafPath(tuple(nodes), "file-order",
                            "an entry has no id, so the id tree cannot be used; using all entries in file order", node.line)  # fmt: skip
        if node.entry_id in by_id:
            duplicates.append((by_id[node.entry_id].line, node.line, node.entry_id))
        by_id[node.entry_id] = node
    path: list[SimpleNamespace] = []
    visited: set[str] = set()
    current = nodes[-1]
    while True:
        if current.entry_id in visited:
            closing = path[-1]
            return LeafPath(tuple(nodes), "file-order",
                            f"cycle in the parent chain: entry {closing.entry_id!r} points back to {current.entry_id!r}; "
                            "using all entries in file order", closing.line, tuple(duplicates))  # fmt: skip
        visited.add(current.entry_id)
        path.append(current)
        if current.parent_id is None:
            break
        if current.parent_id not in by_id:
            return LeafPath(tuple(nodes), "file-order",
                            f"parent id {current.parent_id!r} does not exist (dangling parent); using all entries in file order",
                            current.line, tuple(duplicates))  # fmt: skip
        current = by_id[current.parent_id]
    return LeafPath(tuple(reversed(path)), "tree", None, None, tuple(duplicates))


def test_a_loop_names_the_entry_that_closes_it() -> None:
    nodes = [_node(1, "a", None), _node(2, "b", "c"), _node(3, "c", "d"), _node(4, "d", "b")]
    chosen = select_leaf_path(nodes)
    assert chosen.mode == "file-order" and chosen.nodes == tuple(nodes)
    # walked d -> b -> c, and c's parent is d again: c's pointer closes the loop
    assert chosen.problem is not None and "entry 'c' points back to 'd'" in chosen.problem
    assert chosen.problem_line == 3


def test_an_entry_that_is_its_own_parent_is_a_loop() -> None:
    chosen = select_leaf_path([_node(1, "a", None), _node(2, "b", "b")])
    assert chosen.mode == "file-order" and chosen.problem_line == 2


def test_a_chain_through_every_entry_is_not_mistaken_for_a_loop() -> None:
    nodes = [_node(1, "e0", None)] + [_node(i + 1, f"e{i}", f"e{i - 1}") for i in range(1, 5000)]
    chosen = select_leaf_path(nodes)
    assert chosen.mode == "tree" and chosen.nodes == tuple(nodes)


_IDS = st.sampled_from(["a", "b", "c", "d", "e", "f"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_IDS, st.one_of(st.none(), _IDS, st.just("missing"))), max_size=12))
def test_the_selection_equals_the_plain_walk_on_any_small_forest(pairs: list[tuple[str, str | None]]) -> None:
    # Random id/parent pairs from a small alphabet: duplicates, loops, self-parents, dangling
    # parents and several roots all come up.
    nodes = [_node(line, entry_id, parent) for line, (entry_id, parent) in enumerate(pairs, start=1)]
    assert select_leaf_path(nodes) == _plain_walk(nodes)
