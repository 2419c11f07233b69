"""Planning of hidden pending summaries (lossless-claw 1.0, ``src/pending-summary-planner.ts``).

Pure functions over a snapshot of the context items: where the fresh tail starts
(``resolvePendingFreshTailOrdinal``), which leaf nodes cover the raw runs outside it
(``planPendingLeafNodes``: chunks reach *at least* ``leafChunkTokens``, an undersized trailing run
stays raw, undersized runs before the last full leaf become bridge leaves), which condensed
parents group adjacent same-depth nodes (``planPendingCondensedNodes``), and which nodes publish
a contiguous prefix (``selectPendingPublishCoverageTarget`` / ``selectPendingPublishFrontier``).

Ordinals are context positions (the plugin resequences ``context_items`` after every rewrite).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from lcm_lab.engine.tail import NO_TAIL, fresh_tail_start

__all__ = [
    "Fingerprint",
    "PlannerItem",
    "PlannerNode",
    "coverage_target",
    "fresh_tail_ordinal",
    "plan_condensed_nodes",
    "plan_leaf_nodes",
    "publish_frontier",
]

MAX_CONDENSED_LAYERS = 32
Fingerprint = tuple[int, str, "int | str"]  # (ordinal, item kind, message seq or summary id)  # the planner's guard against a layering loop that never ends


class PlannerItem(NamedTuple):
    """One context item as the planner sees it (``PendingSummaryPlannerSnapshotItem``)."""

    ordinal: int
    kind: str  # "message" | "summary"
    tokens: int
    ref: int | str  # message seq or summary id
    role: str | None = None
    depth: int = 0
    summary_kind: str | None = None  # canonical summaries: "leaf" | "condensed"

    @property
    def fingerprint(self) -> Fingerprint:
        # Stored rows never change once written, so position + identity stands for the
        # plugin's content digest of the item.
        return (self.ordinal, self.kind, self.ref)


@dataclass
class PlannerNode:
    """A planned node (``PendingSummaryPlannerNode``); ``canonical`` names an existing summary."""

    node_id: str
    kind: str
    depth: int
    start: int
    end: int
    tokens: int
    fingerprints: tuple[Fingerprint, ...] = ()
    message_seqs: tuple[int, ...] = ()
    children: tuple[tuple[str, str], ...] = ()  # ("node", node_id) | ("summary", summary_id)
    canonical: str | None = None

    @property
    def identity(self) -> tuple[str, int, int, int]:
        return (self.kind, self.depth, self.start, self.end)


def _planning_order(node: PlannerNode) -> tuple[int, int, int, str]:
    return (node.depth, node.start, node.end, node.node_id)


def fresh_tail_ordinal(items: Sequence[PlannerItem], fresh_tail_count: int, fresh_tail_max_tokens: int | None) -> int:
    """First protected ordinal (``NO_TAIL`` when nothing is protected): the compaction tail rule
    over raw messages with their stored token counts."""
    messages = [item for item in items if item.kind == "message"]
    cap = None if fresh_tail_max_tokens is None else max(0, int(fresh_tail_max_tokens))
    return fresh_tail_start(
        [(m.ordinal, m.role == "user") for m in messages],
        lambda i: max(0, messages[i].tokens),
        max(0, int(fresh_tail_count)),
        cap,
    )


def _leaf(prefix: str, run: Sequence[PlannerItem], tokens: int) -> PlannerNode:
    start, end = run[0].ordinal, run[-1].ordinal
    return PlannerNode(
        node_id=f"{prefix}leaf-{start}-{end}",
        kind="leaf",
        depth=0,
        start=start,
        end=end,
        tokens=tokens,
        fingerprints=tuple(item.fingerprint for item in run),
        message_seqs=tuple(int(item.ref) for item in run),
    )


def plan_leaf_nodes(
    items: Sequence[PlannerItem],
    fresh_tail_count: int,
    fresh_tail_max_tokens: int | None,
    leaf_chunk_tokens: int,
    prefix: str,
    tail: int | None = None,
) -> list[PlannerNode]:
    """Leaves over every raw run outside the tail, plus the bridge leaves that keep the prefix
    contiguous (``tail``: the fresh-tail ordinal when the caller already knows it)."""
    items = sorted(items, key=lambda item: item.ordinal)
    if tail is None:
        tail = fresh_tail_ordinal(items, fresh_tail_count, fresh_tail_max_tokens) if fresh_tail_count > 0 else NO_TAIL
    budget = leaf_chunk_tokens if leaf_chunk_tokens > 0 else 1
    nodes: list[PlannerNode] = []
    chunk: list[PlannerItem] = []
    total = 0
    for item in items:
        if item.ordinal >= tail:
            break
        if item.kind != "message":
            if chunk and total >= budget:
                nodes.append(_leaf(prefix, chunk, total))
            chunk, total = [], 0
            continue
        chunk.append(item)
        total += max(0, item.tokens)
        if total >= budget:
            nodes.append(_leaf(prefix, chunk, total))
            chunk, total = [], 0
    if chunk and total >= budget:
        nodes.append(_leaf(prefix, chunk, total))
    if not nodes:
        return nodes
    last = max(node.end for node in nodes)
    covered = {o for node in nodes for o in range(node.start, node.end + 1)}
    bridges: list[PlannerNode] = []
    bridge: list[PlannerItem] = []
    bridge_tokens = 0
    for item in items:
        if item.ordinal > last:
            break
        if item.kind != "message" or item.ordinal in covered:
            if bridge:
                bridges.append(_leaf(prefix, bridge, bridge_tokens))
            bridge, bridge_tokens = [], 0
            continue
        bridge.append(item)
        bridge_tokens += max(0, item.tokens)
    if bridge:
        bridges.append(_leaf(prefix, bridge, bridge_tokens))
    return sorted([*nodes, *bridges], key=_planning_order)


def _parent(prefix: str, depth: int, group: Sequence[PlannerNode], tokens: int) -> PlannerNode:
    start, end = group[0].start, group[-1].end
    return PlannerNode(
        node_id=f"{prefix}condensed-d{depth}-{start}-{end}",
        kind="condensed",
        depth=depth,
        start=start,
        end=end,
        tokens=tokens,
        fingerprints=tuple(f for child in group for f in child.fingerprints),
        message_seqs=tuple(s for child in group for s in child.message_seqs),
        children=tuple(
            ("summary", child.canonical) if child.canonical is not None else ("node", child.node_id) for child in group
        ),
    )


def _one_layer(
    nodes: Sequence[PlannerNode], min_fanout: int, min_tokens: int, chunk_budget: int, prefix: str
) -> list[PlannerNode]:
    result: list[PlannerNode] = []
    for depth in sorted({node.depth for node in nodes}):
        group: list[PlannerNode] = []
        total = 0
        for node in sorted((n for n in nodes if n.depth == depth), key=_planning_order):
            expected = node.start if not group else group[-1].end + 1
            if node.start != expected or (group and total + node.tokens > chunk_budget):
                if len(group) >= min_fanout and total >= min_tokens:
                    result.append(_parent(prefix, depth + 1, group, total))
                group, total = [], 0
            group.append(node)
            total += max(0, node.tokens)
            if total >= chunk_budget:
                if len(group) >= min_fanout and total >= min_tokens:
                    result.append(_parent(prefix, depth + 1, group, total))
                group, total = [], 0
        if len(group) >= min_fanout and total >= min_tokens:
            result.append(_parent(prefix, depth + 1, group, total))
    existing = {(n.depth, n.start, n.end) for n in nodes}
    return [node for node in result if (node.depth, node.start, node.end) not in existing]


def plan_condensed_nodes(
    nodes: Sequence[PlannerNode], min_fanout: int, min_tokens: int, chunk_budget: int, prefix: str
) -> list[PlannerNode]:
    """Condensed parents, layer by layer, over adjacent same-depth nodes (fanout ≥ max(2, ``min_fanout``))."""
    fanout = max(2, min_fanout if min_fanout > 0 else 2)
    floor_tokens = max(0, min_tokens)
    budget = chunk_budget if chunk_budget > 0 else 1
    planned: list[PlannerNode] = []
    candidates = sorted(nodes, key=_planning_order)
    for _ in range(MAX_CONDENSED_LAYERS):
        layer = _one_layer(candidates, fanout, floor_tokens, budget, prefix)
        if not layer:
            break
        planned.extend(layer)
        candidates = sorted([*candidates, *layer], key=_planning_order)
    return planned


@dataclass
class Coverage:
    end: int
    frontier: list[PlannerNode] = field(default_factory=list)


def coverage_target(nodes: Sequence[PlannerNode], start: int, end: int) -> Coverage | None:
    """From ``start``, repeatedly the deepest then widest node beginning at the cursor (≤ ``end``)."""
    start, end = max(0, start), max(0, end)
    if end < start:
        return None
    by_start: dict[int, list[PlannerNode]] = {}
    for node in nodes:
        if node.end <= end and node.end >= node.start:
            by_start.setdefault(node.start, []).append(node)
    frontier: list[PlannerNode] = []
    cursor = start
    while cursor <= end:
        options = by_start.get(cursor)
        if not options:
            break
        best = min(options, key=lambda n: (-n.depth, -n.end, n.node_id))
        frontier.append(best)
        cursor = best.end + 1
    if not frontier:
        return None
    return Coverage(cursor - 1, frontier)


def publish_frontier(nodes: Sequence[PlannerNode], start: int, end: int) -> list[PlannerNode] | None:
    """The coverage frontier when it ends exactly at ``end``, else None."""
    target = coverage_target(nodes, start, end)
    if target is None or target.end != max(0, end):
        return None
    return target.frontier
