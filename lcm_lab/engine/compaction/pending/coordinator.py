"""One step of the pending-summary pipeline (lossless-claw 1.0, ``src/pending-summary-coordinator.ts``
``PendingCompactionCoordinator.runOnce``, ``src/pending-summary-worker.ts``,
``src/pending-summary-publisher.ts``).

A step plans a batch over the compactable prefix (everything before the fresh tail), prepares
one claimable node with one summarizer call, extends a ready batch whose compactable range grew
by at least ``leafChunkTokens`` of raw tokens (``extendReadyBatchIfRangeGrew``), marks a batch
stale when its range or sources changed (``getActiveBatchStaleReason``), or publishes the ready
frontier into canonical summaries (``publishIfReady``). Nothing here is visible to the model until
a publication replaces context ranges.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lcm_lab.engine.compaction.pending.planner import (
    Fingerprint,
    PlannerItem,
    PlannerNode,
    coverage_target,
    fresh_tail_ordinal,
    plan_condensed_nodes,
    plan_leaf_nodes,
    publish_frontier,
)
from lcm_lab.engine.compaction.pending.store import PendingBatch, PendingNode, PendingStore
from lcm_lab.engine.compaction.source_text import (
    leaf_message_content,
    meaningful_message_text,
    strip_injected_context,
)
from lcm_lab.engine.js.strings import js_trim
from lcm_lab.engine.protocol import SummarizerAuthError
from lcm_lab.engine.tail import NO_TAIL
from lcm_lab.engine.timefmt import to_iso_ms
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import StoredMessage, Summary

if TYPE_CHECKING:
    from lcm_lab.engine.compaction.sweep import Compactor

__all__ = ["Coordinator", "Policy", "leaf_source_block"]

Policy = str  # "prepare-only" | "publish-if-ready" | "publish-ready-only"
Selection = tuple[list["PlannerNode"], list["PlannerNode"]]  # (frontier, its pending nodes)
Result = dict[str, Any]


@dataclass(frozen=True)
class PendingSettings:
    """The coordinator's config (``executePendingCompactionCore``)."""

    fresh_tail_count: int
    fresh_tail_max_tokens: int | None
    leaf_chunk_tokens: int
    condensed_min_fanout: int
    condensed_min_tokens: int  # max(condensedTargetTokens, floor(0.1 × leafChunkTokens))
    strip_tags: tuple[str, ...]


def settings_for(config: Any, fresh_tail_count: int | None = None, leaf_chunk_tokens: int | None = None) -> PendingSettings:
    leaf = leaf_chunk_tokens or config.leaf_chunk_tokens
    floor_leaf = math.floor(config.leaf_chunk_tokens) if config.leaf_chunk_tokens > 0 else 20_000
    target = math.floor(config.condensed_target_tokens) if config.condensed_target_tokens > 0 else 2_000
    return PendingSettings(
        fresh_tail_count=fresh_tail_count or config.fresh_tail_count,
        fresh_tail_max_tokens=config.fresh_tail_max_tokens,
        leaf_chunk_tokens=leaf,
        condensed_min_fanout=config.condensed_min_fanout,
        condensed_min_tokens=max(target, math.floor(floor_leaf * 0.1)),
        strip_tags=tuple(config.strip_injected_context_tags),
    )


def leaf_source_block(message: StoredMessage, strip_tags: tuple[str, ...]) -> str:
    """``formatMessageForSummary``: ``[<ISO createdAt> | <role>]`` + the message's meaningful text."""
    text = js_trim(meaningful_message_text(strip_injected_context(leaf_message_content(message), strip_tags)))
    if not text:
        return ""
    return js_trim(f"[{to_iso_ms(message.created_at or '1970-01-01 00:00:00')} | {message.role}]\n{text}")


@dataclass
class Snapshot:
    """``buildProjectionSnapshot``: the context items (ordinal = position), where the fresh tail
    starts, and the compactable range before it."""

    items: list[PlannerItem]
    fingerprints: list[Fingerprint]  # items[i].fingerprint
    summary_positions: list[int]  # ordinals of summary items, ascending
    message_sums: list[int]  # message_sums[i] = raw message tokens of items[:i]
    tail: int  # NO_TAIL when nothing is protected
    start: int | None
    end: int | None

    def range_fingerprint(self, start: int, end: int) -> tuple[Fingerprint, ...]:
        return tuple(self.fingerprints[max(0, start) : end + 1])


class _ItemIndex:
    """The snapshot's items, kept across calls: rebuilt after a rewrite of the context, extended
    when it only grew at the end (``EngineState.rewrites``)."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.rewrites = -1
        self.items: list[PlannerItem] = []
        self.fingerprints: list[Fingerprint] = []
        self.summary_positions: list[int] = []
        self.message_sums: list[int] = [0]

    def current(self) -> tuple[list[PlannerItem], list[Fingerprint], list[int], list[int]]:
        state = self.state
        if state.rewrites != self.rewrites:
            self.rewrites = state.rewrites
            self.items, self.fingerprints, self.summary_positions, self.message_sums = [], [], [], [0]
        context = state.context
        for ordinal in range(len(self.items), len(context)):
            item = context[ordinal]
            if item.kind == "message":
                message = state.messages[int(item.ref)]
                planner = PlannerItem(ordinal, "message", max(0, message.token_count), message.seq, role=message.role)
            else:
                summary = state.summaries[str(item.ref)]
                planner = PlannerItem(ordinal, "summary", max(0, summary.token_count), summary.summary_id,
                                      depth=summary.depth, summary_kind=summary.kind)  # fmt: skip
                self.summary_positions.append(ordinal)
            self.items.append(planner)
            self.fingerprints.append(planner.fingerprint)
            self.message_sums.append(self.message_sums[-1] + (planner.tokens if planner.kind == "message" else 0))
        return self.items, self.fingerprints, self.summary_positions, self.message_sums


class Coordinator:
    """``PendingCompactionCoordinator`` over one conversation's state and pending store."""

    def __init__(self, compactor: Compactor, store: PendingStore, settings: PendingSettings, owner: Any) -> None:
        self.compactor = compactor
        self.state = compactor.state
        self.store = store
        self.settings = settings
        self.owner = owner  # the PendingEngine: clock, phase, recorder
        self._index = _ItemIndex(compactor.state)
        self._snapshot: Snapshot | None = None
        self._snapshot_key: tuple[int, int] | None = None
        self._validated: tuple[str, int, int, int, int] | None = None  # (batch, rewrites, start, end, nodes) found current
        self._frontier_memo: tuple[tuple[Any, ...], Selection | None] | None = None

    # -- snapshot --------------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        state = self.state
        key = (state.version, len(state.context))
        if self._snapshot is not None and self._snapshot_key == key:
            return self._snapshot
        items, fingerprints, summaries, sums = self._index.current()
        s = self.settings
        if s.fresh_tail_count <= 0:
            tail = NO_TAIL
        elif s.fresh_tail_max_tokens is None:
            # Without a token cap the tail depends on roles and counts only: the compactor's
            # memoised tail (same rule) serves.
            tail = self.compactor.tail_start(s.fresh_tail_count)
        else:
            tail = fresh_tail_ordinal(items, s.fresh_tail_count, s.fresh_tail_max_tokens)
        end = min(tail, len(items)) - 1
        start, last = (0, end) if end >= 0 else (None, None)
        self._snapshot = Snapshot(items, fingerprints, summaries, sums, tail, start, last)
        self._snapshot_key = key
        return self._snapshot

    @staticmethod
    def canonical_nodes(snapshot: Snapshot) -> list[PlannerNode]:
        out = []
        for ordinal in snapshot.summary_positions:
            if ordinal >= snapshot.tail:
                break
            item = snapshot.items[ordinal]
            out.append(PlannerNode(
                node_id=f"canonical-{item.ref}", kind=item.summary_kind or "leaf", depth=item.depth,
                start=ordinal, end=ordinal, tokens=item.tokens, fingerprints=(item.fingerprint,),
                canonical=str(item.ref),
            ))  # fmt: skip
        return out

    @staticmethod
    def _as_planner(node: PendingNode) -> PlannerNode:
        return PlannerNode(node.node_id, node.kind, node.depth, node.start, node.end, max(0, node.tokens or 0),
                           canonical=node.summary_id)  # fmt: skip

    # -- one step ----------------------------------------------------------------------------------
    def run_once(self, policy: Policy) -> Result:
        now = self.owner.now_ms
        batch = self.store.active()
        if batch is None:
            self.store.delete_finished(now)
            if policy == "publish-ready-only":
                return {"status": "idle", "reason": "no active pending summary batch"}
            snapshot = self.snapshot()
            if snapshot.start is None or snapshot.end is None:
                return {"status": "idle", "reason": "no compactable context outside fresh tail"}
            return self._plan(snapshot)
        self.store.prune_superseded(batch)
        if policy == "publish-ready-only":
            return self._publish_active() or {"status": "idle", "reason": "no ready pending summary frontier"}
        prepared = self._prepare_one()
        if prepared is not None:
            return prepared
        snapshot = self.snapshot()
        if snapshot.start is None or snapshot.end is None:
            return {"status": "idle", "reason": "no compactable context outside fresh tail"}
        batch = self.store.active()
        if batch is None:
            return {"status": "idle", "reason": "pending batch disappeared before validation"}
        stale = self._stale_reason(batch, snapshot)
        if stale:
            self.store.mark_stale(batch, stale, now)
            return {"status": "stale", "reason": stale}
        if policy == "prepare-only":
            if self._frontier(batch, snapshot) is not None:
                extension = self._extend(batch, snapshot)
                if extension is not None:
                    return extension
                return {"status": "ready", "reason": "pending summaries ready for publish"}
            return {"status": "idle", "reason": "no claimable pending summary nodes"}
        published = self._publish_active()
        return published or {"status": "idle", "reason": "no claimable pending summary nodes"}

    # -- planning ------------------------------------------------------------------------------------
    def _plan(self, snapshot: Snapshot) -> Result:
        s = self.settings
        canonical = self.canonical_nodes(snapshot)
        leaves = plan_leaf_nodes(
            snapshot.items, s.fresh_tail_count, s.fresh_tail_max_tokens, s.leaf_chunk_tokens, "", tail=snapshot.tail
        )
        condensed = plan_condensed_nodes(
            [*canonical, *leaves], s.condensed_min_fanout, s.condensed_min_tokens, s.leaf_chunk_tokens, ""
        )
        pending = [*leaves, *condensed]
        if not pending:
            return {"status": "idle", "reason": "no pending summary nodes planned"}
        target = coverage_target([*canonical, *pending], snapshot.start or 0, snapshot.end or 0)
        if target is None or all(node.canonical is not None for node in target.frontier):
            return {"status": "idle", "reason": "no publishable pending summary coverage planned"}
        start = snapshot.start or 0
        batch = self.store.create(start, target.end, snapshot.range_fingerprint(start, target.end), self.owner.now_ms)
        for node in pending:
            self.store.insert(batch, node, self._context_hash(snapshot, node))
        return {"status": "planned", "nodeCount": len(pending)}

    @staticmethod
    def _context_hash(snapshot: Snapshot, node: PlannerNode | PendingNode) -> tuple[Fingerprint, ...]:
        return snapshot.range_fingerprint(node.start, node.end) if node.kind == "leaf" else ()

    def _extend(self, batch: PendingBatch, snapshot: Snapshot) -> Result | None:
        if snapshot.end is None or not batch.end < snapshot.end:
            return None
        s = self.settings
        sums = snapshot.message_sums
        if sums[snapshot.end + 1] - sums[batch.end + 1] < (s.leaf_chunk_tokens if s.leaf_chunk_tokens > 0 else 1):
            return None  # the grown suffix holds less than a leaf chunk of raw tokens
        existing = list(batch.nodes.values())
        reusable = [self._as_planner(n) for n in existing if n.status in ("ready", "promoted")]
        suffix = snapshot.items[batch.end + 1 : snapshot.end + 1]
        leaves = plan_leaf_nodes(suffix, 0, None, s.leaf_chunk_tokens, "ext-")
        canonical = self.canonical_nodes(snapshot)
        covers = [n for n in reusable if n.kind == "condensed"]
        candidates = [
            n for n in [*canonical, *reusable, *leaves]
            if not any(c.depth > n.depth and c.start <= n.start and c.end >= n.end for c in covers)
        ]  # fmt: skip
        condensed = plan_condensed_nodes(candidates, s.condensed_min_fanout, s.condensed_min_tokens, s.leaf_chunk_tokens, "ext-")
        known = {(n.kind, n.depth, n.start, n.end) for n in existing}
        pending = [n for n in [*leaves, *condensed] if n.identity not in known]
        if not pending:
            return None
        target = coverage_target([*canonical, *reusable, *pending], batch.start, snapshot.end)
        if target is None or target.end <= batch.end:
            return None
        batch.fingerprint = snapshot.range_fingerprint(batch.start, target.end)
        batch.start = snapshot.start if snapshot.start is not None else batch.start
        batch.end = target.end
        self.store.touch(batch, self.owner.now_ms)
        for node in pending:
            self.store.insert(batch, node, self._context_hash(snapshot, node))
        return {"status": "planned", "nodeCount": len(pending)}

    # -- staleness -----------------------------------------------------------------------------------
    def _stale_reason(self, batch: PendingBatch, snapshot: Snapshot) -> str | None:
        if snapshot.start is None or snapshot.end is None or batch.start < snapshot.start or batch.end > snapshot.end:
            return "pending batch range is no longer compactable"
        # Appends never change the items of a range that was current, so a batch checked since the
        # last rewrite of the context (same range, same nodes) is still current.
        marker = (batch.batch_id, self.state.rewrites, batch.start, batch.end, len(batch.nodes))
        if self._validated == marker:
            return None
        reason = self._check_sources(batch, snapshot)
        if reason is None:
            self._validated = marker
        return reason

    def _check_sources(self, batch: PendingBatch, snapshot: Snapshot) -> str | None:
        if snapshot.range_fingerprint(batch.start, batch.end) != batch.fingerprint:
            return "source projection fingerprint changed before publish"
        if batch.end >= len(snapshot.items):
            return "pending batch source range changed before publish"
        summary_ordinals = {str(snapshot.items[o].ref): o for o in snapshot.summary_positions}
        for node in batch.nodes.values():
            if node.kind == "leaf":
                if snapshot.range_fingerprint(node.start, node.end) != node.context_hash:
                    return "pending batch source changed before publish"
                continue
            for kind, ref in node.children:
                if kind == "node":
                    if ref not in batch.nodes:
                        return "pending batch source changed before publish"
                    continue
                ordinal = summary_ordinals.get(ref)
                if ordinal is None or not node.start <= ordinal <= node.end:
                    return "pending batch source changed before publish"
        return None

    # -- preparation (PendingSummaryPreparationWorker.prepareOne) --------------------------------------
    def _prepare_one(self) -> Result | None:
        now = self.owner.now_ms
        node = self.store.claim(now)
        if node is None:
            return None
        batch = self.store.active()
        try:
            source = js_trim(self._source_text(node, batch))
            if not source:
                raise _PreparationError("empty pending summary source")
            content = self.owner.summarize_pending(source, node)
            if not content:
                raise _PreparationError("empty pending summary content")
        except SummarizerAuthError as exc:
            self.store.mark_failed(node, str(exc) or "provider auth failure", now)
            if batch is not None:
                self.store.mark_stale(batch, str(exc) or "provider auth failure", now)
            return {"status": "failed", "nodeId": node.node_id, "failureSummary": str(exc), "authFailure": True}
        except _PreparationError as exc:
            self.store.mark_failed(node, str(exc), now)
            if batch is not None and node.retries >= 3:
                self.store.mark_stale(batch, str(exc), now)
            return {"status": "failed", "nodeId": node.node_id, "failureSummary": str(exc)}
        self.store.mark_ready(node, content, max(0, estimate_tokens(content)))
        return {"status": "prepared", "node": node.node_id}

    def _source_text(self, node: PendingNode, batch: PendingBatch | None) -> str:
        if node.kind == "leaf":
            blocks = (leaf_source_block(self.state.messages[seq], self.settings.strip_tags)
                      for seq in node.message_seqs if seq in self.state.messages)  # fmt: skip
            return "\n\n".join(b for b in blocks if b)
        chunks: list[str] = []
        for kind, ref in node.children:
            if kind == "node":
                child = batch.nodes.get(ref) if batch is not None else None
                if child is None or not child.content:
                    raise _PreparationError(f"Pending child summary {ref} is not ready")
                chunks.append(child.content)
            else:
                summary = self.state.summaries.get(ref)
                if summary is None:
                    raise _PreparationError(f"Canonical child summary {ref} was not found")
                chunks.append(summary.content)
        return "\n\n".join(c for c in chunks if c)

    # -- publication -----------------------------------------------------------------------------------
    def _frontier(self, batch: PendingBatch, snapshot: Snapshot) -> Selection | None:
        # Same batch range, node statuses and context positions → the same frontier.
        key = (batch.batch_id, self.state.rewrites, batch.start, batch.end,
               tuple((n.node_id, n.status) for n in batch.nodes.values()))  # fmt: skip
        if self._frontier_memo is not None and self._frontier_memo[0] == key:
            return self._frontier_memo[1]
        found = self._select_frontier(batch, snapshot)
        self._frontier_memo = (key, found)
        return found

    def _select_frontier(
        self, batch: PendingBatch, snapshot: Snapshot
    ) -> Selection | None:
        ready = [self._as_planner(n) for n in self.store.ordered(batch) if n.status in ("ready", "promoted")]
        frontier = publish_frontier([*self.canonical_nodes(snapshot), *ready], batch.start, batch.end)
        if frontier is None:
            return None
        pending = [n for n in frontier if n.canonical is None]
        if not pending and any(n.status != "promoted" for n in batch.nodes.values()):
            return None
        return frontier, pending

    def _publish_active(self) -> Result | None:
        snapshot = self.snapshot()
        batch = self.store.active()
        if batch is None:
            return None
        stale = self._stale_reason(batch, snapshot)
        if stale:
            self.store.mark_stale(batch, stale, self.owner.now_ms)
            return {"status": "stale", "reason": stale}
        selection = self._frontier(batch, snapshot)
        if selection is None:
            return None
        frontier, pending = selection
        remaining = snapshot.end is not None and batch.end < snapshot.end
        if pending:
            self._publish(batch, [batch.nodes[n.node_id] for n in pending])
        self.store.mark_published(batch, self.owner.now_ms)
        result: Result = {"status": "published", "frontier": len(frontier)}
        if remaining:
            result["remainingCompactableWork"] = True
        return result

    def _publish(self, batch: PendingBatch, frontier: list[PendingNode]) -> None:
        """``publishReadyFrontier``: canonical summaries for the frontier and every pending node
        beneath it (children first), then each frontier range of context items replaced."""
        ordered: list[PendingNode] = []
        seen: set[str] = set()

        def visit(node: PendingNode) -> None:
            if node.node_id in seen:
                return
            seen.add(node.node_id)
            for kind, ref in node.children:
                if kind == "node":
                    visit(batch.nodes[ref])
            ordered.append(node)

        for node in frontier:
            visit(node)
        ids: dict[str, str] = {}
        for node in ordered:
            summary = self._canonical(node, ids)
            ids[node.node_id] = summary.summary_id
            self.state.insert_summary(summary)
            self.owner.note_created(summary)
            node.status, node.summary_id = "promoted", summary.summary_id
        for node in sorted(frontier, key=lambda n: n.start, reverse=True):
            self.state.replace_range(ids[node.node_id], node.start, node.end)
        for node in batch.nodes.values():
            if node.status == "promoted":
                node.content = None

    def _canonical(self, node: PendingNode, ids: Mapping[str, str]) -> Summary:
        content = node.content or ""
        owner = self.owner
        common = {
            "summary_id": self.compactor._new_summary_id(content),
            "kind": node.kind, "depth": node.depth, "content": content, "token_count": node.tokens or 0,
            "model": "unknown", "level": "pending", "created_turn": owner.turn, "created_by": owner.phase,
            "summarizer_calls": 1,
        }  # fmt: skip
        if node.kind == "leaf":
            messages = [self.state.messages[s] for s in node.message_seqs if s in self.state.messages]
            times = [to_iso_ms(m.created_at) for m in messages if m.created_at]
            return Summary(
                **common,
                earliest_at=min(times) if times else None,
                latest_at=max(times) if times else None,
                source_message_token_count=sum(max(0, m.token_count) for m in messages),
                source_message_seqs=tuple(m.seq for m in messages),
            )
        parents = [self.state.summaries[ids[ref] if kind == "node" else ref] for kind, ref in node.children]
        times = [to_iso_ms(t) for p in parents for t in (p.earliest_at or p.created_at, p.latest_at or p.created_at) if t]
        return Summary(
            **common,
            earliest_at=min(times) if times else None,
            latest_at=max(times) if times else None,
            descendant_count=sum(max(0, p.descendant_count) + 1 for p in parents),
            descendant_token_count=sum(max(0, p.token_count) + max(0, p.descendant_token_count) for p in parents),
            source_message_token_count=sum(max(0, p.source_message_token_count) for p in parents),
            source_summary_ids=tuple(p.summary_id for p in parents),
        )


class _PreparationError(Exception):
    """A node could not be prepared (empty source or output, a child not ready)."""
