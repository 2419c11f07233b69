"""Doctor checks: what is wrong or degraded in a summary DAG, one finding per problem.

Like the plugin's own doctor and lcm-tui's repair, but read-only and exhaustive. Checks and their
severities (``docs/metrics.md`` has the full table):

* **error** — the DAG itself is broken, the plugin or the lab cannot trust it: ``broken-link``
  (an edge or context item points at a missing row), ``cross-conversation-link``,
  ``cyclic-dag``, ``orphaned-context-item``, ``leaf-without-sources``,
  ``condensed-without-sources``, ``negative-token-count`` (a count the plugin never writes: the
  file was changed by something else, and budgets and size checks built on it mean nothing),
  ``unknown-message-role`` (a role the messages table's CHECK refuses, such as ``developer``:
  written by something else; the plugin and the lab read it back as it is).
* **warning** — a summary lost quality in a way the plugin records or that is visible in its
  content: every fallback/truncation/cap marker the plugin writes (``src/summarize.ts``, ``src/summary-fallback.ts``, ``src/compaction.ts``) (``truncation-fallback``,
  ``directive-omitted-fallback``, ``summarizer-fallback``, ``legacy-emergency-fallback``,
  ``capped-summary``), ``emergency-fallback-model``, ``empty-summary``,
  ``reasoning-only-summary``, ``leaked-tool-output``, ``leaked-base64``,
  ``summary-larger-than-source``, ``depth-mismatch``.
* **info** — worth knowing, not necessarily wrong: ``directive-omitted-inline`` (the fallback
  sanitiser replaced prompt-injection-like text), ``unreachable-summary`` (neither in context nor
  under a summary in context, e.g. after ``/new`` pruning), ``duplicate-context-ref``.

Files of lossless-claw 1.0 also hold summaries prepared in the background and commitTurn's
receipts (src/store/pending-summary-store.ts, src/engine.ts ``commitTurn``). What 1.0 does by
design is not a finding: a promoted (published) node's content is cleared (``clearPromotedPayloads``;
the canonical summary holds it), finished batches are deleted 7 days after their last update
(``deleteFinishedBatches``), so most summaries have no pending row, and an unpublished node was never
seen by the model. Checks of those tables: ``pending-node-without-batch``,
``published-batch-missing-summary``, ``broken-pending-link`` and ``cyclic-pending-dag`` (a
node among its own children, through ``pending_summary_node_children``; errors: the rows
contradict each other), ``ready-node-without-content`` (warning: a prepared node that would publish nothing)
and ``receipt-without-messages`` (warning: receipts record more messages for a session than the
file holds — expected only after retention pruning or ``pruneHeartbeatOk``).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Literal, Protocol

from lcm_lab.io.lcmdb import MESSAGE_ROLES
from lcm_lab.io.lcmdb_rows import ContextRow, EdgeRow, LcmDbRows, MessageRow, SummaryRow
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.dag import Dag
from lcm_lab.metrics.markers import EMERGENCY_MODEL, MARKERS, find_markers

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK: dict[str, int] = {"info": 0, "warning": 1, "error": 2}

CHECKS: dict[str, Severity] = {
    "broken-link": "error",
    "cross-conversation-link": "error",
    "cyclic-dag": "error",
    "orphaned-context-item": "error",
    "leaf-without-sources": "error",
    "condensed-without-sources": "error",
    **{m.check: ("info" if m.check == "directive-omitted-inline" else "warning") for m in MARKERS},
    "emergency-fallback-model": "warning",
    "empty-summary": "warning",
    "reasoning-only-summary": "warning",
    "leaked-tool-output": "warning",
    "leaked-base64": "warning",
    "summary-larger-than-source": "warning",
    "depth-mismatch": "warning",
    "negative-token-count": "error",
    "unknown-message-role": "error",
    "unreachable-summary": "info",
    "duplicate-context-ref": "info",
    # 1.0's pending summaries and receipts
    "pending-node-without-batch": "error",
    "published-batch-missing-summary": "error",
    "broken-pending-link": "error",
    "cyclic-pending-dag": "error",
    "ready-node-without-content": "warning",
    "receipt-without-messages": "warning",
}


@dataclass(frozen=True)
class Finding:
    """One problem: where (conversation, summary), which check, how bad, and the evidence."""

    conversation_id: int
    session_id: str
    summary_id: str | None
    check: str
    severity: Severity
    evidence: str

    def line(self) -> str:
        """One human-readable line: ``conv=1 summary=sum_… warning truncation-fallback: …``."""
        return f"conv={self.conversation_id} summary={self.summary_id or '-'} {self.severity} {self.check}: {self.evidence}"

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


NEGATIVE_TOKENS_MEAN = ("lossless-claw never writes a count below zero, so the file was changed by something else, "
                        "and budgets and size checks built on it mean nothing")


def negative_token_warning(messages: int, summaries: int) -> str | None:
    """The one warning for a file whose token counts the ``negative-token-count`` check finds
    below zero, by how many (``load`` and ``replay`` give it; ``doctor`` names each row), or
    ``None`` when there are none.

    >>> negative_token_warning(3, 1)
    'token_count is negative in 3 messages and 1 summary: lossless-claw never writes a count below zero, so the file was changed by something else, and budgets and size checks built on it mean nothing; `lcm-lab doctor` on the file names the rows (negative-token-count)'
    """
    counts = [f"{n:,} {what if n == 1 else plural}" for n, what, plural in
              ((messages, "message", "messages"), (summaries, "summary", "summaries")) if n > 0]
    if not counts:
        return None
    return (f"token_count is negative in {' and '.join(counts)}: {NEGATIVE_TOKENS_MEAN}; "
            "`lcm-lab doctor` on the file names the rows (negative-token-count)")


_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_OPENER = re.compile(r"^\s*(?:<\|think\|>|\[thinking\]|<(?:think|thinking|reasoning)>)", re.IGNORECASE)
_TOOL_LEAK = re.compile(
    r"\"type\"\s*:\s*\"(?:tool_result|toolResult|tool_use|toolUse|toolCall|function_call|function_call_output)\""
    r"|\"(?:toolCallId|tool_use_id|tool_call_id)\"\s*:"
    r"|\[lossless-claw\] missing tool result"
    r"|^Tool (?:input|output) \([^)\n]*\):"
    r"|<(?:tool_result|function_results)\b",
    re.MULTILINE,
)
_DATA_URL = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]{16,}")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{200,}={0,2}")


def _snippet(text: str, limit: int = 80) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def _looks_base64(run: str) -> bool:
    return any(c.isdigit() for c in run) and any(c.isupper() for c in run) and any(c.islower() for c in run)


def content_checks(content: str, model: str | None) -> list[tuple[str, str]]:
    """``(check, evidence)`` pairs for one summary's content and model (no DAG needed)."""
    out: list[tuple[str, str]] = []
    for hit in find_markers(content):
        out.append((hit.kind.check, hit.evidence))
    if model == EMERGENCY_MODEL:
        out.append(("emergency-fallback-model", f"model={model}"))
    if not content.strip():
        out.append(("empty-summary", f"content={content!r}"))
    elif _THINK_OPENER.match(content) or not _THINK_BLOCK.sub("", content).strip():
        out.append(("reasoning-only-summary", _snippet(content)))
    leak = _TOOL_LEAK.search(content)
    if leak:
        out.append(("leaked-tool-output", _snippet(content[leak.start() : leak.start() + 120])))
    data_url = _DATA_URL.search(content)
    if data_url:
        out.append(("leaked-base64", f"data URL of {len(data_url.group(0))} chars: {data_url.group(0)[:40]}…"))
    else:
        run = next((m.group(0) for m in _BASE64_RUN.finditer(content) if _looks_base64(m.group(0))), None)
        if run:
            out.append(("leaked-base64", f"base64-like run of {len(run)} chars: {run[:32]}…"))
    return out


def _find_cycles(sources: dict[str, list[str]]) -> list[list[str]]:
    """Cycles in a graph of ids (summary -> source summaries, pending node -> child nodes), each
    reported once, from its smallest id."""
    color: dict[str, int] = {}
    cycles: list[list[str]] = []
    seen_keys: set[frozenset[str]] = set()
    for start in sorted(sources):
        if color.get(start):
            continue
        stack: list[tuple[str, Iterable[str]]] = [(start, iter(sources.get(start, ())))]
        path = [start]
        color[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(iter(children), None)  # type: ignore[call-overload]
            if child is None:
                color[node] = 2
                stack.pop()
                path.pop()
                continue
            state = color.get(child, 0)
            if state == 1:
                cycle = path[path.index(child) :]
                key = frozenset(cycle)
                if key not in seen_keys:
                    seen_keys.add(key)
                    cycles.append(cycle + [child])
            elif state == 0:
                color[child] = 1
                path.append(child)
                stack.append((child, iter(sources.get(child, ()))))
    return cycles


def _cycle_text(cycle: list[str]) -> str:
    """``a -> b -> a``; an empty id is shown as ``''`` and said (a bare ``->`` named nothing)."""
    text = " -> ".join(node or "''" for node in cycle)
    return text + " (the id '' is empty)" if "" in cycle else text


def diagnose(rows: LcmDbRows) -> list[Finding]:
    """Run every check over all conversations of an lcm.db; findings in a stable order."""
    findings: list[Finding] = []
    session = rows.conversations
    messages = {m.message_id: m for m in rows.messages}
    summaries = {s.summary_id: s for s in rows.summaries}
    msg_edges: dict[str, list[EdgeRow]] = defaultdict(list)
    for edge in rows.summary_messages:
        msg_edges[edge.summary_id].append(edge)
    parent_edges: dict[str, list[EdgeRow]] = defaultdict(list)
    for edge in rows.summary_parents:
        parent_edges[edge.summary_id].append(edge)

    def add(cid: int, sid: str | None, check: str, evidence: str, session_id: str | None = None) -> None:
        findings.append(Finding(cid, session_id or session.get(cid, "?"), sid, check, CHECKS[check], evidence))

    # -- edges ---------------------------------------------------------------------------------
    for sid in sorted(set(msg_edges) | set(parent_edges)):
        owner = summaries.get(sid)
        cid = owner.conversation_id if owner else -1
        if owner is None:
            add(cid, sid, "broken-link", "summary_messages/summary_parents rows for a summary that does not exist")
            continue
        for edge in msg_edges.get(sid, ()):
            target = messages.get(int(edge.target))
            if target is None:
                add(cid, sid, "broken-link", f"summary_messages -> missing message_id {edge.target}")
            elif target.conversation_id != cid:
                add(cid, sid, "cross-conversation-link", f"source message_id {edge.target} belongs to conversation {target.conversation_id}")
        for edge in parent_edges.get(sid, ()):
            source = summaries.get(str(edge.target))
            if source is None:
                add(cid, sid, "broken-link", f"summary_parents -> missing source summary {edge.target}")
            elif source.conversation_id != cid:
                add(cid, sid, "cross-conversation-link", f"source summary {edge.target} belongs to conversation {source.conversation_id}")
    graph = {sid: [str(e.target) for e in edges] for sid, edges in parent_edges.items()}
    for cycle in _find_cycles(graph):
        owner = summaries.get(cycle[0])
        add(owner.conversation_id if owner else -1, cycle[0], "cyclic-dag", _cycle_text(cycle))

    # -- messages ------------------------------------------------------------------------------
    negative: dict[int, list[MessageRow]] = defaultdict(list)
    for message in rows.messages:
        if message.token_count < 0:
            negative[message.conversation_id].append(message)
    for cid, bad in sorted(negative.items()):
        shown = ", ".join(f"message_id {m.message_id} ({m.token_count})" for m in bad[:3])
        more = f" and {len(bad) - 3} more messages" if len(bad) > 3 else ""
        add(cid, None, "negative-token-count", f"{shown}{more}")
    foreign: dict[tuple[int, str], list[MessageRow]] = defaultdict(list)
    for message in rows.messages:
        if message.role not in MESSAGE_ROLES:
            foreign[(message.conversation_id, message.role)].append(message)
    for (cid, role), bad in sorted(foreign.items()):
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        add(cid, None, "unknown-message-role", f"role {role!r} (the schema allows {', '.join(MESSAGE_ROLES)}) in "
            f"{len(bad)} message(s): message_id {', '.join(str(m.message_id) for m in bad[:3])}{more}")  # fmt: skip

    # -- summaries -----------------------------------------------------------------------------
    for summary in rows.summaries:
        cid, sid = summary.conversation_id, summary.summary_id
        for check, evidence in content_checks(summary.content, summary.model):
            add(cid, sid, check, evidence)
        if summary.kind == "leaf":
            sources = [messages[int(e.target)] for e in msg_edges.get(sid, ()) if int(e.target) in messages]
            if not msg_edges.get(sid):
                add(cid, sid, "leaf-without-sources", "no summary_messages rows")
            source_counts = [m.token_count for m in sources]
            if summary.depth not in (0, None):
                add(cid, sid, "depth-mismatch", f"leaf with depth {summary.depth}")
        else:
            inputs = [summaries[str(e.target)] for e in parent_edges.get(sid, ()) if str(e.target) in summaries]
            if not parent_edges.get(sid):
                add(cid, sid, "condensed-without-sources", "no summary_parents rows")
            source_counts = [s.token_count for s in inputs]
            depths = [s.depth for s in inputs if s.depth is not None]
            if depths and summary.depth is not None and summary.depth != max(depths) + 1:
                add(cid, sid, "depth-mismatch", f"depth {summary.depth}, inputs at depths {sorted(set(depths))}")
        if summary.token_count < 0:
            add(cid, sid, "negative-token-count", f"token_count {summary.token_count}")
        elif min(source_counts, default=0) >= 0 and (source_tokens := sum(source_counts)) and summary.token_count > source_tokens:
            # (an input with a negative count is a finding of its own: no size comparison with it)
            add(cid, sid, "summary-larger-than-source", f"{summary.token_count} tokens from {source_tokens} source tokens")

    # -- context items -------------------------------------------------------------------------
    by_conv: dict[int, list[ContextRow]] = defaultdict(list)
    for item in rows.context_items:
        by_conv[item.conversation_id].append(item)
    for cid, items in sorted(by_conv.items()):
        if cid not in session:
            add(cid, None, "orphaned-context-item", f"{len(items)} context items for a conversation that does not exist")
        counts = Counter((i.item_type, i.message_id if i.item_type == "message" else i.summary_id) for i in items)
        for (kind, ref), n in sorted(counts.items(), key=str):
            if n > 1:
                add(cid, ref if kind == "summary" else None, "duplicate-context-ref", f"{kind} {ref} appears {n} times")
        for item in sorted(items, key=lambda i: i.ordinal):
            if item.item_type == "message":
                target_m: MessageRow | None = messages.get(item.message_id) if item.message_id is not None else None
                if target_m is None:
                    add(cid, None, "orphaned-context-item", f"ordinal {item.ordinal} -> missing message_id {item.message_id}")
                elif target_m.conversation_id != cid:
                    add(cid, None, "orphaned-context-item", f"ordinal {item.ordinal} -> message_id {item.message_id} of conversation {target_m.conversation_id}")
            elif item.item_type == "summary":
                target_s: SummaryRow | None = summaries.get(item.summary_id) if item.summary_id is not None else None
                if target_s is None:
                    add(cid, item.summary_id, "orphaned-context-item", f"ordinal {item.ordinal} -> missing summary {item.summary_id}")
                elif target_s.conversation_id != cid:
                    add(cid, item.summary_id, "orphaned-context-item", f"ordinal {item.ordinal} -> summary of conversation {target_s.conversation_id}")
            else:
                add(cid, None, "orphaned-context-item", f"ordinal {item.ordinal} has item_type {item.item_type!r}")
    # Reachability: from context summaries down their sources.
    reachable: set[str] = set()
    frontier = [i.summary_id for i in rows.context_items if i.item_type == "summary" and i.summary_id]
    while frontier:
        sid = frontier.pop()
        if sid in reachable:
            continue
        reachable.add(sid)
        frontier.extend(str(e.target) for e in parent_edges.get(sid, ()))
    for summary in rows.summaries:
        if summary.summary_id not in reachable and summary.conversation_id in by_conv:
            add(summary.conversation_id, summary.summary_id, "unreachable-summary", "not in context and not a source of any summary in context")
    _pending_checks(rows, messages, summaries, add)
    _receipt_checks(rows, add)
    findings.sort(key=lambda f: (f.conversation_id, -SEVERITY_RANK[f.severity], f.check, f.summary_id or ""))
    return findings


class _Add(Protocol):
    def __call__(self, cid: int, sid: str | None, check: str, evidence: str, session_id: str | None = None) -> None: ...


def _pending_checks(rows: LcmDbRows, messages: dict[int, MessageRow], summaries: dict[str, SummaryRow], add: _Add) -> None:
    """Pending batches and nodes of 1.0 against each other and the canonical rows."""
    batches = {b.batch_id: b for b in rows.batches}
    nodes = {n.node_id: n for n in rows.pending_nodes}
    with_promoted: set[str] = set()  # batches with a promoted node
    for node in rows.pending_nodes:
        cid = node.conversation_id
        batch = batches.get(node.batch_id)
        if batch is None:
            add(cid, None, "pending-node-without-batch", f"pending node {node.node_id} ({node.kind}, {node.status}) names batch {node.batch_id}, which does not exist")
        elif batch.conversation_id != cid:
            add(cid, None, "broken-pending-link", f"pending node {node.node_id} belongs to conversation {cid}, its batch {batch.batch_id} to {batch.conversation_id}")
        if node.status == "promoted":
            with_promoted.add(node.batch_id)
            canonical = summaries.get(node.canonical_summary_id) if node.canonical_summary_id else None
            if batch is not None and batch.status == "published" and canonical is None:
                missing = node.canonical_summary_id or "no canonical_summary_id"
                add(cid, None, "published-batch-missing-summary", f"batch {node.batch_id} is published but its node {node.node_id} points at a missing summary ({missing})")
        if node.status == "ready" and not (node.content or "").strip():
            add(cid, None, "ready-node-without-content", f"pending node {node.node_id} is ready (prepared) but has no content to publish")
    for batch in rows.batches:
        if batch.status == "published" and batch.batch_id not in with_promoted:
            add(batch.conversation_id, None, "published-batch-missing-summary", f"batch {batch.batch_id} is published but none of its nodes was promoted to a summary")
    for edge in rows.pending_node_messages:
        owner = nodes.get(edge.summary_id)
        target = messages.get(int(edge.target))
        if owner is None:
            add(-1, None, "broken-pending-link", f"pending_summary_node_messages row for missing node {edge.summary_id}")
        elif target is None:
            add(owner.conversation_id, None, "broken-pending-link", f"pending node {owner.node_id} -> missing message_id {edge.target}")
        elif target.conversation_id != owner.conversation_id:
            add(owner.conversation_id, None, "broken-pending-link", f"pending node {owner.node_id} -> message_id {edge.target} of conversation {target.conversation_id}")
    for child in rows.pending_node_children:
        owner = nodes.get(child.node_id)
        cid = owner.conversation_id if owner else -1
        if owner is None:
            add(cid, None, "broken-pending-link", f"pending_summary_node_children row for missing node {child.node_id}")
        elif child.child_node_id is not None and child.child_node_id not in nodes:
            add(cid, None, "broken-pending-link", f"pending node {owner.node_id} child {child.ordinal} -> missing node {child.child_node_id}")
        elif child.child_summary_id is not None and child.child_summary_id not in summaries:
            add(cid, None, "broken-pending-link", f"pending node {owner.node_id} child {child.ordinal} -> missing summary {child.child_summary_id}")
        elif child.child_node_id is None and child.child_summary_id is None:
            add(cid, None, "broken-pending-link", f"pending node {owner.node_id} child {child.ordinal} names neither a node nor a summary")
    children: dict[str, list[str]] = defaultdict(list)
    for child in sorted(rows.pending_node_children, key=lambda c: (c.node_id, c.ordinal)):
        if child.child_node_id is not None:
            children[child.node_id].append(child.child_node_id)
    for cycle in _find_cycles(children):
        owner = nodes.get(cycle[0])
        add(owner.conversation_id if owner else -1, None, "cyclic-pending-dag", f"pending nodes {_cycle_text(cycle)}")


def _receipt_checks(rows: LcmDbRows, add: _Add) -> None:
    """commitTurn receipts per session against the messages stored for that session."""
    recorded: Counter[str] = Counter()
    receipts: Counter[str] = Counter()
    for receipt in rows.receipts:
        recorded[receipt.session_id] += receipt.message_count
        receipts[receipt.session_id] += 1
    conversations_of: dict[str, list[int]] = defaultdict(list)
    for cid, session_id in rows.conversations.items():
        conversations_of[session_id].append(cid)
    stored = Counter(rows.conversations.get(m.conversation_id) for m in rows.messages)
    for session_id, count in sorted(recorded.items()):
        cids = sorted(conversations_of.get(session_id, ()))
        if count and not cids:
            add(-1, None, "receipt-without-messages", f"{receipts[session_id]} receipts of session {session_id} record {count} ingested messages, but no conversation of that session exists", session_id)
        elif count > stored[session_id]:
            add(cids[0], None, "receipt-without-messages", f"{receipts[session_id]} receipts of session {session_id} record {count} ingested messages; its conversations {cids} hold {stored[session_id]}", session_id)


def rows_from_dag(dag: Dag, conversation_id: int = 1) -> LcmDbRows:
    """Doctor rows for a replay's or loaded conversation's DAG (message ids = seqs)."""
    msgs = tuple(MessageRow(m.seq, conversation_id, m.seq, m.role, m.content, m.token_count) for m in dag.messages)
    sums = tuple(
        SummaryRow(s.summary_id, conversation_id, s.kind, s.depth, s.content, s.token_count, s.model, s.source_message_token_count)
        for s in dag.summaries
    )
    sm = tuple(EdgeRow(s.summary_id, seq, i) for s in dag.summaries for i, seq in enumerate(s.source_message_seqs))
    sp = tuple(EdgeRow(s.summary_id, src, i) for s in dag.summaries for i, src in enumerate(s.source_summary_ids))
    ctx = tuple(
        ContextRow(conversation_id, i, c.kind, int(c.ref) if c.kind == "message" else None, str(c.ref) if c.kind == "summary" else None)
        for i, c in enumerate(dag.context)
    )
    return LcmDbRows(dag.label, {conversation_id: dag.label}, msgs, sums, sm, sp, ctx)


def doctor_scores(findings: Iterable[Finding], run_id: str) -> list[Score]:
    """Counts of findings per check (run scope) and per summary (``doctor_findings``)."""
    items = list(findings)
    scores = [Score(run_id, "run", "", f"doctor_{check.replace('-', '_')}", float(sum(1 for f in items if f.check == check)), {"severity": sev}) for check, sev in CHECKS.items()]
    for severity in ("error", "warning", "info"):
        scores.append(Score(run_id, "run", "", f"doctor_{severity}s", float(sum(1 for f in items if f.severity == severity))))
    per_summary: dict[str, list[str]] = defaultdict(list)
    for f in items:
        if f.summary_id:
            per_summary[f.summary_id].append(f.check)
    for sid, checks in sorted(per_summary.items()):
        scores.append(Score(run_id, "summary", sid, "doctor_findings", float(len(checks)), {"checks": sorted(checks)}))
    return scores
