"""Leaf-path selection (lossless-claw's rule, ``lcm_lab.io.transcripts.tree``) against a plain
walk that remembers every id it visited: the selection keeps no such set (a million-line session
saved 34 MB), so loops are found by counting steps and named by a second walk."""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from lcm_lab.io.transcripts.tree import IdColumns, LeafPath, select_leaf_path, select_leaf_positions


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


def _select_with_keys(nodes: list[SimpleNamespace], key: Callable[[str], int]) -> LeafPath[SimpleNamespace]:
    """The selection over columns whose 64-bit keys come from ``key`` instead of ``hash``."""
    columns = IdColumns.of(nodes)
    columns.id_keys = array("q", (0 if n.entry_id is None else key(n.entry_id) for n in nodes))
    columns.parent_keys = array("q", (0 if n.parent_id is None else key(n.parent_id) for n in nodes))
    chosen = select_leaf_positions(columns)
    return LeafPath(tuple(nodes[int(at)] for at in chosen.positions), chosen.mode, chosen.problem, chosen.problem_line,
                    tuple((nodes[e].line, nodes[later].line, str(nodes[later].entry_id)) for e, later in chosen.duplicates))  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_IDS, st.one_of(st.none(), _IDS, st.just("missing"))), max_size=12),
       st.sampled_from([lambda s: 7, lambda s: len(s), lambda s: ord(s[0]) % 2]))  # fmt: skip
def test_ids_whose_keys_collide_are_still_told_apart(pairs: list[tuple[str, str | None]], key: Callable[[str], int]) -> None:
    # Keys are only a shortcut: with keys that collide everywhere (one constant, the length, a
    # parity) the selection is still the plain walk's, duplicates and dangling parents included.
    nodes = [_node(line, entry_id, parent) for line, (entry_id, parent) in enumerate(pairs, start=1)]
    assert _select_with_keys(nodes, key) == _plain_walk(nodes)


def test_a_parent_whose_key_matches_an_id_of_other_text_is_dangling() -> None:
    # "zz" names no entry; its key is "a"'s: the walk must not take "a" for its parent.
    nodes = [_node(1, "a", None), _node(2, "b", "zz")]
    keys = {"a": 1, "b": 2, "zz": 1}
    chosen = _select_with_keys(nodes, keys.__getitem__)
    assert chosen == _plain_walk(nodes)
    assert chosen.mode == "file-order" and chosen.problem is not None and "'zz' does not exist" in chosen.problem


def test_one_chain_that_repeats_an_id_is_walked_not_taken_whole() -> None:
    # Each entry's parent is the one before it, but "a" comes twice: its parent link resolves to
    # the later "a", so the walk loops (the shortcut for one chain must not apply).
    nodes = [_node(1, "a", None), _node(2, "b", "a"), _node(3, "a", "b")]
    assert select_leaf_path(nodes) == _plain_walk(nodes)
    assert select_leaf_path(nodes).mode == "file-order"


def test_members_leave_nodes_out_of_the_tree() -> None:
    # Positions 1 and 3 are not members (the pi reader leaves entries without id or message
    # out): the chain is walked over the others alone, and no loose entry counts as a branch.
    import numpy as np

    nodes = [_node(1, "a", None), _node(2, None, None), _node(3, "b", "a"), _node(4, None, None), _node(5, "c", "b")]
    members = np.array([0, 2, 4], dtype=np.int64)
    chosen = select_leaf_positions(IdColumns.of(nodes), members)
    assert chosen.mode == "tree" and chosen.positions.tolist() == [0, 2, 4] and not len(chosen.left_out(members))


def test_a_path_through_every_entry_out_of_file_order_keeps_the_path_order(tmp_path: Path) -> None:
    # The last entry's chain visits every entry, but its root is on line 3: the conversation is
    # root first (lines 3, 2, 4), the entries held whole included, read again or not.
    from lcm_lab.io.transcripts.pi import read_pi_jsonl

    lines = [
        {"type": "session", "version": 3, "id": "s"},
        {"type": "message", "id": "b", "parentId": "a", "message": {"role": "assistant", "content": "two"}},
        {"type": "model_change", "id": "a", "parentId": None, "provider": "p", "modelId": "m"},
        {"type": "message", "id": "c", "parentId": "b", "message": {"role": "user", "content": "three"}},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for reread in (False, True):
        read = read_pi_jsonl(path, reread=reread).conversations[0]
        entries = list(read.conversation.entries)
        assert [(e.line, e.type, e.entry_id) for e in entries] == [(3, "model_change", "a"), (2, "message", "b"), (4, "message", "c")]
        assert read.meta["leaf_path"] == "tree" and read.meta["off_path_lines"] == () and 3 in read.meta["raw_entries"]
