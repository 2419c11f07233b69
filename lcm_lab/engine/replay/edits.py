"""What-if edits of a replay's final state: dissolve a summary, rewrite summaries (pure).

An edit applies to the state after the last turn — the context the end-of-run call assembles
(:meth:`~lcm_lab.engine.replay.driver.Replay.sent`) — and gives a new :class:`Replay` that keeps the
parent's turn history. Nothing here touches a store or a model: the summarizer comes in as an
argument like in :func:`~lcm_lab.engine.replay.driver.replay`; :mod:`lcm_lab.whatif` saves the result
as a derived run.

* :func:`dissolve` replaces a summary in the final context by its inputs, in order: the source
  summaries of a condensed summary, the source messages of a leaf (the reverse of one pass).
* :func:`rewrite` writes summaries again through the summarizer boundary from their sources, with
  the engine's own source text, depth (so the depth's prompt), targets, escalation and cap. Ids
  stay, so the DAG and every turn's context still resolve; a rewritten summary's consumers keep
  their text but count the new token sizes. Summaries are rewritten in creation order, so a
  condensed summary rewritten together with its inputs is written from their new texts.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from lcm_lab.engine.compaction.source_text import (
    condensed_source_text,
    file_ids_in,
    leaf_block,
    leaf_message_content,
)
from lcm_lab.engine.compaction.sweep import Compactor
from lcm_lab.engine.protocol import Summarizer, SummarizerError
from lcm_lab.engine.replay.driver import Replay
from lcm_lab.engine.state import EngineState
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import ContextItem, SummarizerCall, Summary
from lcm_lab.errors import SpecError


class EditError(SpecError):
    """An edit that does not apply to this run (unknown summary, not in the context, ...)."""


class Rewritten(NamedTuple):
    """The edited run, the ids rewritten and every summarizer call the rewrite made."""

    replay: Replay
    summary_ids: tuple[str, ...]
    calls: tuple[SummarizerCall, ...]


def with_final_state(run: Replay, context: Sequence[ContextItem], summaries: Sequence[Summary] | None = None,
                     meta: Mapping[str, Any] | None = None) -> Replay:
    """``run`` with another end-of-run context (and summaries): the last turn's stored state is replaced.

    Stored tokens are recounted as the plugin counts them (``token_count`` of each item).
    """
    if not run.turns:
        raise EditError("the run has no turns: there is no final context to edit")
    summaries = tuple(run.summaries if summaries is None else summaries)
    state = EngineState(run.messages, summaries, context)
    last = replace(run.turns[-1], context_end=tuple(context), tokens_end=state.stored_tokens())
    return replace(run, turns=(*run.turns[:-1], last), summaries=summaries, run_id=None,
                   meta={**run.meta, **(meta or {})})


def dissolve(run: Replay, summary_id: str) -> Replay:
    """``run`` with ``summary_id`` in its final context replaced by the summary's inputs, in order.

    >>> from lcm_lab.engine.types import Conversation, StoredMessage
    >>> from lcm_lab.engine.replay.driver import replay
    >>> from lcm_lab.summarizers.stub import StubV1Summarizer
    >>> from lcm_lab.engine.config.lcm_config import LcmConfig
    >>> chat = Conversation("d", stored_messages=tuple(
    ...     StoredMessage(i, "user" if i % 2 else "assistant", f"message {i} " * 60, 120) for i in range(1, 9)))
    >>> run = replay(chat, LcmConfig(fresh_tail_count=2), StubV1Summarizer(), token_budget=600)
    >>> leaf = next(i.ref for i in run.final_context if i.kind == "summary")
    >>> [i.ref for i in dissolve(run, leaf).final_context][:2]
    [1, 2]
    """
    context = list(run.final_context)
    positions = [i for i, item in enumerate(context) if item.kind == "summary" and item.ref == summary_id]
    if not positions:
        if summary_id not in run.summaries_by_id:
            raise EditError(f"no summary {summary_id!r} in this run ({len(run.summaries)} summaries)")
        shown = [str(i.ref) for i in context if i.kind == "summary"]
        raise EditError(f"summary {summary_id!r} is not in the run's final context (it holds {', '.join(shown) or 'no summaries'});"
                        " dissolve the summary that consumed it first")
    summary = run.summary(summary_id)
    if summary.kind == "condensed":
        missing = [s for s in summary.source_summary_ids if s not in run.summaries_by_id]
        if missing:
            raise EditError(f"summary {summary_id!r} has inputs this run does not hold: {', '.join(missing)}")
        inputs = [ContextItem.summary(s) for s in summary.source_summary_ids]
    else:
        missing_seqs = [seq for seq in summary.source_message_seqs if seq not in run.messages_by_seq]
        if missing_seqs or not summary.source_message_seqs:
            raise EditError(f"leaf summary {summary_id!r} has no source messages in this run")
        inputs = [ContextItem.message(seq) for seq in summary.source_message_seqs]
    at = positions[0]
    context[at : at + 1] = inputs
    return with_final_state(run, context)


def summaries_at_depth(run: Replay, depth: int) -> tuple[str, ...]:
    """Ids of every summary of ``depth`` in creation order."""
    return tuple(s.summary_id for s in run.summaries if s.depth == depth)


def rewrite(run: Replay, summary_ids: Collection[str], summarizer: Summarizer) -> Rewritten:
    """``run`` with ``summary_ids`` written again by ``summarizer`` from their sources.

    Each summary gets the request the engine would build for it: a leaf's source messages
    rendered as leaf blocks, a condensed summary's inputs with their time headers, the node's
    depth, the previous context the original call had (when the run recorded it), the prompt
    targets, escalation to the aggressive prompt, the deterministic fallback and the cap.
    """
    wanted = set(summary_ids)
    unknown = sorted(wanted - set(run.summaries_by_id))
    if unknown:
        raise EditError(f"no summary {', '.join(map(repr, unknown))} in this run ({len(run.summaries)} summaries)")
    if not wanted:
        raise EditError("nothing to rewrite: give summary ids or a depth that has summaries")
    config = run.config
    fixed = run.fidelity == "fixed"
    compactor = Compactor(EngineState(run.messages, run.summaries), config, summarizer,
                          session_id=run.conversation.session_id, fidelity="fixed" if fixed else "faithful")  # fmt: skip
    previous = _previous_by_source(run)
    current: dict[str, Summary] = dict(run.summaries_by_id)
    order: list[str] = []
    for original in run.summaries:
        if original.summary_id not in wanted:
            continue
        if original.level == "pending":
            current[original.summary_id] = _rewrite_pending(run, original, current, compactor)
            order.append(original.summary_id)
            continue
        if original.kind == "leaf":
            messages = [run.messages_by_seq[seq] for seq in original.source_message_seqs if seq in run.messages_by_seq]
            contents = [leaf_message_content(m, fixed=fixed) for m in messages]
            blocks = [leaf_block(m, c, config.timezone, config.strip_injected_context_tags) for m, c in zip(messages, contents, strict=True)]
            source = "\n\n".join(b for b in blocks if b is not None)
            before = source
            kind = "leaf"
        else:
            inputs = [current[s] for s in original.source_summary_ids if s in current]
            source = condensed_source_text(inputs, config.timezone)
            before = condensed_source_text([run.summaries_by_id[s.summary_id] for s in inputs], config.timezone)
            kind = "condensed"
        if not source.strip():
            raise EditError(f"summary {original.summary_id!r} has no source text in this run to rewrite it from")
        calls_before = len(compactor.calls)
        outcome = compactor.summarize_with_escalation(source, kind, original.depth, previous.get((kind, original.depth, before)))
        if outcome is None:
            raise SummarizerError(f"the summarizer refused authentication while rewriting {original.summary_id}; nothing was changed")
        content, level = outcome
        current[original.summary_id] = replace(
            original,
            content=content,
            token_count=estimate_tokens(content),
            model=compactor.calls[-1].model if len(compactor.calls) > calls_before else "unknown",
            level=level,
            summarizer_calls=len(compactor.calls) - calls_before,
            file_ids=file_ids_in(contents) if kind == "leaf" else original.file_ids,
        )
        order.append(original.summary_id)
    for s in run.summaries:  # creation order: inputs are recounted before their consumers
        current[s.summary_id] = _recount(current, s.summary_id)
    summaries = tuple(current[s.summary_id] for s in run.summaries)
    edited = with_final_state(run, run.final_context, summaries)
    return Rewritten(edited, tuple(order), tuple(compactor.calls))


def _rewrite_pending(run: Replay, original: Summary, current: Mapping[str, Summary], compactor: Compactor) -> Summary:
    """A 1.0 pending-pipeline summary written again as ``prepareOne`` writes it: the 1.0 source
    format, one call, no previous summary, no escalation, no fallback, no cap."""
    from lcm_lab.engine.compaction.pending.coordinator import leaf_source_block
    from lcm_lab.engine.js.strings import js_trim

    if original.kind == "leaf":
        messages = [run.messages_by_seq[seq] for seq in original.source_message_seqs if seq in run.messages_by_seq]
        blocks = (leaf_source_block(m, tuple(run.config.strip_injected_context_tags)) for m in messages)
        source = js_trim("\n\n".join(b for b in blocks if b))
    else:
        source = js_trim("\n\n".join(current[s].content for s in original.source_summary_ids if s in current and current[s].content))
    if not source:
        raise EditError(f"summary {original.summary_id!r} has no source text in this run to rewrite it from")
    calls_before = len(compactor.calls)
    content = compactor._call(source, original.kind, original.depth if original.kind == "condensed" else 0, False, None)
    if content is None:
        raise SummarizerError(f"the summarizer returned nothing while rewriting {original.summary_id}; nothing was changed")
    return replace(original, content=content, token_count=estimate_tokens(content),
                   model=compactor.calls[-1].model if len(compactor.calls) > calls_before else "unknown", summarizer_calls=1)  # fmt: skip


def _previous_by_source(run: Replay) -> dict[tuple[str, int, str], str | None]:
    """The previous-context each recorded call had, keyed by (kind, depth, source text)."""
    found: dict[tuple[str, int, str], str | None] = {}
    for turn in run.turns:
        for call in turn.calls:  # deferred drains' calls are the turn's calls too
            found.setdefault((call.kind, call.depth, call.source_text), call.previous_summary)
    return found


def _recount(current: Mapping[str, Summary], summary_id: str) -> Summary:
    """A condensed summary's descendant token count follows its inputs' new sizes."""
    summary = current[summary_id]
    if summary.kind != "condensed" or not summary.source_summary_ids:
        return summary
    inputs = [current[s] for s in summary.source_summary_ids if s in current]
    total = sum(max(0, s.token_count) + max(0, s.descendant_token_count) for s in inputs)
    return summary if total == summary.descendant_token_count else replace(summary, descendant_token_count=total)
