"""The pending-summary tables of one conversation (lossless-claw 1.0,
``src/store/pending-summary-store.ts``): batches and their nodes, held in memory.

Statuses and the queries the coordinator relies on are the store's: the active batch is the
newest in ``planning``/``ready``/``publishing``; a node is claimable when ``planned`` (or
``failed`` with retries left and its backoff over) and none of its pending children is short of
``ready``; claims go by (ordinal_start, depth, node_id). Timestamps written with SQLite's
``datetime('now')`` keep second precision (``updated_at``, ``published_at``), which matters for
:meth:`PendingStore.published_since` and the 7-day retention.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lcm_lab.engine.compaction.pending.planner import Fingerprint, PlannerNode

__all__ = ["ACTIVE", "MAX_NODE_RETRIES", "PendingBatch", "PendingNode", "PendingStore", "RETENTION_MS"]

ACTIVE = ("planning", "ready", "publishing")
FINISHED = ("stale", "failed", "published")
MAX_NODE_RETRIES = 3
RETENTION_MS = 7 * 24 * 60 * 60 * 1000


def _second(now_ms: int) -> int:
    """``datetime('now')``: the instant truncated to the second (in ms)."""
    return now_ms - now_ms % 1000


def node_retry_backoff_ms(retries: int) -> int:
    return int(min(60_000 * 2 ** max(0, retries - 1), 900_000))


@dataclass
class PendingNode:
    """One ``pending_summary_nodes`` row with its message or child links."""

    node_id: str
    batch_id: str
    kind: str
    depth: int
    start: int
    end: int
    context_hash: tuple[Fingerprint, ...]  # the source items at planning
    message_seqs: tuple[int, ...] = ()
    children: tuple[tuple[str, str], ...] = ()  # ("node", id) | ("summary", summary_id)
    status: str = "planned"
    content: str | None = None
    tokens: int | None = None
    summary_id: str | None = None  # canonical_summary_id once promoted
    retries: int = 0
    next_attempt_ms: int | None = None
    failure: str | None = None

    @property
    def trace_id(self) -> str:
        """The node id without its random batch prefix (how reference traces name nodes)."""
        return self.node_id


@dataclass
class PendingBatch:
    """One ``pending_compaction_batches`` row."""

    batch_id: str
    seq: int  # creation order (the store orders by created_at, then batch_id)
    start: int
    end: int
    fingerprint: tuple[Fingerprint, ...]
    status: str = "planning"
    updated_s: int = 0  # updated_at, ms truncated to the second
    published_s: int | None = None
    failure: str | None = None
    nodes: dict[str, PendingNode] = field(default_factory=dict)


class PendingStore:
    """Batches of one conversation, in creation order."""

    def __init__(self) -> None:
        self.batches: list[PendingBatch] = []
        self._created = 0

    # -- batches -------------------------------------------------------------------------------
    def active(self) -> PendingBatch | None:
        for batch in reversed(self.batches):
            if batch.status in ACTIVE:
                return batch
        return None

    def create(self, start: int, end: int, fingerprint: tuple[Fingerprint, ...], now_ms: int) -> PendingBatch:
        self._created += 1
        batch = PendingBatch(f"pcb_{self._created}", self._created, start, end, fingerprint, updated_s=_second(now_ms))
        self.batches.append(batch)
        return batch

    def touch(self, batch: PendingBatch, now_ms: int) -> None:
        batch.updated_s = _second(now_ms)

    def mark_stale(self, batch: PendingBatch, reason: str, now_ms: int) -> None:
        batch.status = "stale"
        batch.failure = reason
        self.touch(batch, now_ms)
        for node in batch.nodes.values():
            if node.status in ("planned", "running", "ready", "failed"):
                node.status = "stale"

    def mark_published(self, batch: PendingBatch, now_ms: int) -> None:
        batch.status = "published"
        batch.failure = None
        batch.published_s = _second(now_ms)
        self.touch(batch, now_ms)

    def published_since(self, since_ms: int) -> bool:
        """``hasPublishedBatchSince``: a published batch whose (second-precision) ``published_at``
        is at or after ``since_ms``."""
        return any(b.status == "published" and b.published_s is not None and b.published_s >= since_ms for b in self.batches)

    def delete_finished(self, now_ms: int) -> None:
        """``deleteFinishedBatches``: finished batches last updated 7 days or more before now."""
        cutoff = _second(now_ms - RETENTION_MS)
        self.batches = [b for b in self.batches if not (b.status in FINISHED and b.updated_s <= cutoff)]

    # -- nodes ---------------------------------------------------------------------------------
    def insert(self, batch: PendingBatch, node: PlannerNode, context_hash: tuple[Fingerprint, ...]) -> None:
        batch.nodes[node.node_id] = PendingNode(
            node.node_id, batch.batch_id, node.kind, node.depth, node.start, node.end, context_hash,
            message_seqs=node.message_seqs, children=node.children,
        )  # fmt: skip

    @staticmethod
    def ordered(batch: PendingBatch) -> list[PendingNode]:
        """``getNodesByBatch``: by ordinal_start, depth, node_id."""
        return sorted(batch.nodes.values(), key=lambda n: (n.start, n.depth, n.node_id))

    def claim(self, now_ms: int) -> PendingNode | None:
        """``claimNextPlannedNode`` (leases never expire here: every claim finishes in its call)."""
        batch = self.active()
        if batch is None:
            return None
        for node in self.ordered(batch):
            claimable = node.status == "planned" or (
                node.status == "failed"
                and node.retries < MAX_NODE_RETRIES
                and (node.next_attempt_ms is None or node.next_attempt_ms <= now_ms)
            )
            if not claimable:
                continue
            if any(
                kind == "node" and (child := batch.nodes.get(ref)) is not None and child.status not in ("ready", "promoted")
                for kind, ref in node.children
            ):
                continue
            node.status = "running"
            return node
        return None

    def mark_ready(self, node: PendingNode, content: str, tokens: int) -> None:
        node.status, node.content, node.tokens, node.failure = "ready", content, tokens, None

    def mark_failed(self, node: PendingNode, reason: str, now_ms: int) -> None:
        node.retries += 1
        node.status, node.failure = "failed", reason
        node.next_attempt_ms = now_ms + node_retry_backoff_ms(node.retries)

    def prune_superseded(self, batch: PendingBatch) -> None:
        """``pruneSupersededNodes``: a ready condensed node loses to a wider ready/promoted one
        with the same start and depth, unless a live parent still links it."""
        nodes = list(batch.nodes.values())
        if not any(node.kind == "condensed" and node.status == "ready" for node in nodes):
            return
        doomed = []
        for node in nodes:
            if node.kind != "condensed" or node.status != "ready":
                continue
            wider = any(
                o is not node and o.status in ("ready", "promoted") and o.depth == node.depth
                and o.start == node.start and o.end > node.end
                for o in nodes
            )  # fmt: skip
            if not wider:
                continue
            linked = any(
                ("node", node.node_id) in parent.children and parent.status not in ("stale", "failed") for parent in nodes
            )
            if not linked:
                doomed.append(node.node_id)
        for node_id in doomed:
            del batch.nodes[node_id]

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """``pending_end``: batches by status; nodes of active batches by ``kind:depth:status``."""
        batches: dict[str, int] = {}
        nodes: dict[str, int] = {}
        for batch in self.batches:
            batches[batch.status] = batches.get(batch.status, 0) + 1
            if batch.status in ACTIVE:
                for node in batch.nodes.values():
                    key = f"{node.kind}:{node.depth}:{node.status}"
                    nodes[key] = nodes.get(key, 0) + 1
        return batches, nodes

    def row_counts(self) -> tuple[int, int]:
        """Rows of ``pending_compaction_batches`` and ``pending_summary_nodes``."""
        return len(self.batches), sum(len(b.nodes) for b in self.batches)
