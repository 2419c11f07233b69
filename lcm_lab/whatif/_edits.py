"""What-if edits in the lab, never in the user's database: each edit is a new run derived from the original.

* :func:`dissolve` — a summary in the final context is replaced by its inputs (a condensed
  summary by its source summaries, a leaf by its messages), in order;
* :func:`rewrite` — some summaries, or a whole depth, are written again by another summarizer,
  model or prompt set, from their sources, with the engine's request for their depth (through
  the summarizer boundary: ledger and cache for models; the offline summarizer by default);
* :func:`reassemble` — what the model receives from a run's final context at its budget (or
  another): the engine-level assembly, :meth:`Replay.sent`.

The derived run keeps the original's turn history and changes the state after the last turn,
so every end-of-run view and score (``run.sent()``, fact and QA retention, recall, export)
reads the edited context. It is saved as an ordinary run (``load_replay`` rebuilds it) with its
parent and edit in ``run_edits``; its id is derived from the parent id and the edit. Sources
(an ``lcm.db``, a transcript) are never written: an edit reads the lab's own copy.

>>> import lcm_lab as lab                                                       # doctest: +SKIP
>>> edit = lab.whatif.dissolve(run_id, "sum_…", store=store)                    # doctest: +SKIP
>>> lab.whatif.compare(edit.parent, edit.run)                                   # doctest: +SKIP
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lcm_lab.engine.protocol import Summarizer
from lcm_lab.engine.replay import edits
from lcm_lab.engine.replay.driver import Replay
from lcm_lab.engine.replay.edits import EditError
from lcm_lab.engine.tokens import check_token_budget
from lcm_lab.engine.types import SentContext, SummarizerCall
from lcm_lab.store.core import LabStore
from lcm_lab.strategies.base import StrategyRun, lcm_replay

if TYPE_CHECKING:
    import pandas as pd

    from lcm_lab.io.model import QAItem
    from lcm_lab.prompts import PromptSet
    from lcm_lab.widgets import SummaryDiff

__all__ = ["EditError", "WhatIf", "compare", "dissolve", "edits_df", "reassemble", "rewrite"]


@dataclass(frozen=True)
class WhatIf:
    """An edit's outcome: the original run, the derived run, the edit and the summarizer calls it made."""

    parent: Replay
    run: Replay
    edit: Mapping[str, Any]
    calls: tuple[SummarizerCall, ...] = ()
    label: str | None = field(default=None, compare=False)
    warnings: tuple[str, ...] = field(default=(), compare=False)  # e.g. some model calls failed (their summaries are the fallback)

    @property
    def run_id(self) -> str | None:
        return self.run.run_id

    @property
    def parent_run_id(self) -> str | None:
        return self.parent.run_id

    @property
    def changed_summary_ids(self) -> tuple[str, ...]:
        """Summaries whose text differs from the original's (rewrite), in creation order."""
        before = self.parent.summaries_by_id
        return tuple(s.summary_id for s in self.run.summaries
                     if s.summary_id in before and before[s.summary_id].content != s.content)  # fmt: skip

    def context_diff(self) -> pd.DataFrame:
        """What the model receives after the run, original vs derived, item by item.

        One row per item of either context (``status``: kept, removed, added, rewritten) with its
        kind, reference and tokens on each side.
        """
        return context_diff(self.parent.sent(), self.run.sent(), set(self.changed_summary_ids))

    def summary_diff(self, labels: tuple[str, str] = ("original", "edited")) -> SummaryDiff:
        """The rewritten summaries side by side, changed words highlighted (a ``SummaryDiff`` widget)."""
        from lcm_lab.widgets import SummaryDiff

        changed = self.changed_summary_ids
        if not changed:
            raise ValueError(f"this {self.edit.get('op')} changed no summary text: see .context_diff() for what the model receives")
        return SummaryDiff(self.parent, self.run, labels=labels, summary_ids=changed)

    def compare(self, qa_items: Sequence[QAItem] | None = None) -> pd.DataFrame:
        """Headline scores and tokens of the original and the derived run, side by side."""
        return compare(self.parent, self.run, qa_items=qa_items, labels=["original", str(self.edit.get("op", "edited"))])

    def json(self) -> dict[str, Any]:
        sent_before, sent_after = self.parent.sent(), self.run.sent()
        return {
            "run_id": self.run_id, "parent_run_id": self.parent_run_id, "label": self.label, "edit": dict(self.edit),
            "summarizer_calls": len(self.calls), "cache_hits": sum(1 for c in self.calls if c.cached),
            "failed_calls": sum(1 for c in self.calls if c.failure),
            "warnings": list(self.warnings), "changed_summaries": list(self.changed_summary_ids),
            "sent_tokens": {"original": sent_before.estimated_tokens, "edited": sent_after.estimated_tokens},
            "stored_tokens": {"original": self.parent.final_tokens, "edited": self.run.final_tokens},
        }  # fmt: skip


# -- the edits ---------------------------------------------------------------------------------


def dissolve(run: Replay | StrategyRun | str, summary_id: str, *, store: LabStore | None = None, label: str | None = None) -> WhatIf:
    """A derived run whose final context has ``summary_id`` replaced by its inputs, in order.

    ``run`` is a saved run's id or a :class:`Replay` (saved first when it has no id). The
    derived run is saved in ``store`` (default: the lab store) with its parent and the edit.
    """
    store = _store(store)
    parent = _parent(run, store)
    edited = edits.dissolve(parent, summary_id)
    summary = parent.summary(summary_id)
    restored = [item.ref for item in edited.final_context if item not in parent.final_context]
    edit = {"op": "dissolve", "summary_id": summary_id, "kind": summary.kind, "depth": summary.depth, "restored": restored}
    return _derive(store, parent, edited, edit, (), label or f"dissolve {summary_id} of {_name(store, parent)}")


def rewrite(
    run: Replay | StrategyRun | str,
    summary_ids: Collection[str] | None = None,
    *,
    depth: int | None = None,
    summarizer: Summarizer | str | None = None,
    model: str | None = None,
    prompt_set: PromptSet | str | None = None,
    api_base: str | None = None,
    api_key: str | None = None,
    store: LabStore | None = None,
    label: str | None = None,
) -> WhatIf:
    """A derived run with ``summary_ids`` (or every summary of ``depth``) written again.

    Who writes: ``summarizer`` (a :class:`Summarizer`, or a registry name such as
    ``"offline"``, the default) or ``model=`` (any litellm model, e.g. ``"openai/gpt-4o-mini"``;
    ``api_base=`` for an OpenAI-compatible server), with ``prompt_set=`` (a ``PromptSet`` or an
    lcm-tui template directory) for model summarizers. Model calls go through the call ledger
    of ``store`` (cached: rewriting again costs nothing) and are attributed to the derived run.

    Failed model calls follow the lab's one rule (:mod:`lcm_lab.summarizers.call_checks`): when
    every call failed, nothing came from the model and a :class:`ModelCallsFailedError` is raised
    before anything is saved; when some failed, the result's ``warnings`` count them, and the same
    count is issued as a :class:`~lcm_lab.summarizers.call_checks.ModelCallsWarning` (shown under a
    notebook's cell).
    """
    store = _store(store)
    parent = _parent(run, store)
    if (summary_ids is None) == (depth is None):
        raise EditError("rewrite needs summary ids or depth= (one of them)")
    ids = tuple(summary_ids) if summary_ids is not None else edits.summaries_at_depth(parent, int(depth or 0))
    if not ids:
        depths = sorted({s.depth for s in parent.summaries})
        raise EditError(f"no summaries at depth {depth} in this run (depths: {', '.join(map(str, depths)) or 'none'})")
    writer, described = _summarizer(summarizer, model, prompt_set, api_base, api_key, store)
    edit = {"op": "rewrite", "summary_ids": list(ids), "depth": depth, **described}
    derived_id = _derived_id(parent, edit)
    if hasattr(writer, "with_options") and getattr(writer, "run_id", None) is None:
        writer = writer.with_options(run_id=derived_id)  # ledger rows name the run they belong to
    from lcm_lab.summarizers.call_checks import (
        calls_so_far,
        check_calls,
        recorded_calls,
        warn_failed_calls,
        with_live_words,
    )

    before = calls_so_far(writer)
    outcome = edits.rewrite(parent, ids, writer)
    tally = with_live_words(recorded_calls(outcome.calls, summarizer=writer), writer, before)
    failed, warning = check_calls(tally, f"rewrite of {parent.run_id}", "no derived run was saved")
    what = f"depth {depth}" if depth is not None else (ids[0] if len(ids) == 1 else f"{len(ids)} summaries")
    by = described.get("model") or described["summarizer"]
    made = _derive(store, parent, outcome.replay, edit, outcome.calls, label or f"rewrite {what} with {by} of {_name(store, parent)}")
    warn_failed_calls(failed, warning)  # once the derived run is saved: shown under the notebook's cell too
    return replace(made, warnings=(warning,)) if warning else made


def reassemble(run: Replay | StrategyRun | str, token_budget: int | None = None, *, store: LabStore | None = None) -> SentContext:
    """What the model receives from ``run``'s final context: the engine-level assembly at the run's
    budget (or ``token_budget``) — fresh tail, eviction of the oldest items, the serialized clamp."""
    replay = _load(_store(store), run) if isinstance(run, str) else lcm_replay(run, "a what-if edit")
    if token_budget is not None:
        check_token_budget(token_budget)
    return replay.sent(budget=token_budget)


# -- side by side ------------------------------------------------------------------------------


def compare(
    *runs: Replay | StrategyRun | str,
    qa_items: Sequence[QAItem] | None = None,
    labels: Sequence[str] | None = None,
    store: LabStore | None = None,
    scores: bool = True,
) -> pd.DataFrame:
    """One row per run: what the model receives after the run (tokens, items, summaries), stored
    tokens, and the headline scores — ``fact_retention`` (always) and ``qa_retention`` (when
    ``qa_items`` are given) with their raw values — plus the edit that made each derived run.
    ``scores=False`` leaves the scores out (tokens only, instant)."""
    import pandas as pd

    from lcm_lab.metrics.fact_headline import conversation_texts, fact_headline_scores
    from lcm_lab.metrics.facts import Fact, facts_from_texts
    from lcm_lab.metrics.locomo import qa_retention_scores

    replays = [_load(_store(store), r) if isinstance(r, str) else lcm_replay(r, "a what-if comparison") for r in runs]
    if labels is not None and len(labels) != len(replays):
        raise EditError(f"{len(labels)} labels for {len(replays)} runs")
    rows = []
    known: list[tuple[Any, list[Fact]]] = []  # derived runs share their parent's conversation: extract its facts once
    for i, run in enumerate(replays):
        rid = run.run_id or f"run-{i}"
        sent = run.sent()
        edit = run.meta.get("whatif") or {}
        row: dict[str, Any] = {
            "run": labels[i] if labels else rid, "run_id": run.run_id, "parent_run_id": run.meta.get("derived_from"),
            "edit": edit.get("op"), "token_budget": run.token_budget, "sent_tokens": sent.estimated_tokens,
            "sent_items": len(sent.items), "sent_summaries": sent.summary_count,
            "stored_tokens": run.final_tokens, "path": sent.path,
        }  # fmt: skip
        headlines = []
        if scores:
            facts = next((f for conv, f in known if conv is run.conversation or conv == run.conversation), None)
            if facts is None:
                facts = facts_from_texts(conversation_texts(run.conversation))
                known.append((run.conversation, facts))
            headlines = fact_headline_scores(run, rid, facts=facts)
        if qa_items and scores:
            headlines += qa_retention_scores(run, qa_items, rid)
        for score in headlines:
            if score.scope == "run" and score.metric in ("fact_retention", "qa_retention"):
                row[score.metric] = score.value
                row[f"{score.metric}_raw"] = score.details.get("raw")
        rows.append(row)
    return pd.DataFrame(rows)


def context_diff(before: SentContext, after: SentContext, rewritten: Collection[str] = ()) -> pd.DataFrame:
    """Two assembled contexts item by item (``status``: kept, removed, added, rewritten)."""
    import pandas as pd

    a = [(item.kind, item.ref) for item in before.items]
    b = [(item.kind, item.ref) for item in after.items]
    rows: list[dict[str, Any]] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                kind, ref = a[i]
                status = "rewritten" if kind == "summary" and ref in rewritten else "kept"
                rows.append({"status": status, "kind": kind, "ref": ref, "tokens_before": before.items[i].tokens, "tokens_after": after.items[j].tokens})
            continue
        rows += [{"status": "removed", "kind": a[i][0], "ref": a[i][1], "tokens_before": before.items[i].tokens, "tokens_after": None} for i in range(i1, i2)]
        rows += [{"status": "added", "kind": b[j][0], "ref": b[j][1], "tokens_before": None, "tokens_after": after.items[j].tokens} for j in range(j1, j2)]
    frame = pd.DataFrame(rows, columns=["status", "kind", "ref", "tokens_before", "tokens_after"])
    frame["ref"] = frame["ref"].astype(str)
    return frame


def edits_df(store: LabStore | None = None, parent_run_id: str | None = None) -> pd.DataFrame:
    """Every derived run in the store (or those of one parent): parent, operation, edit, label."""
    from lcm_lab.store.lineage import run_edits_df

    return run_edits_df(_store(store), parent_run_id)


# -- plumbing ----------------------------------------------------------------------------------


def _store(store: LabStore | None) -> LabStore:
    if store is not None:
        return store
    from lcm_lab.store import open_store

    return open_store()


def _load(store: LabStore, run_id: str) -> Replay:
    from lcm_lab.store.replays import load_replay

    try:
        loaded = load_replay(store, run_id)
    except KeyError as exc:
        raise EditError(str(exc.args[0]) if exc.args else f"no run {run_id!r}") from None
    return lcm_replay(loaded, "a what-if edit")


def _parent(run: Replay | StrategyRun | str, store: LabStore) -> Replay:
    if isinstance(run, str):
        return _load(store, run)
    run = lcm_replay(run, "a what-if edit")
    from lcm_lab.store.replays import has_replay, save_replay

    if run.run_id and has_replay(store, run.run_id):
        return run

    return replace(run, run_id=save_replay(store, run))


def _name(store: LabStore, run: Replay) -> str:
    from lcm_lab.store.replays import replay_label

    return (replay_label(store, run.run_id) if run.run_id else None) or str(run.run_id)


def _derived_id(parent: Replay, edit: Mapping[str, Any]) -> str:
    canonical = json.dumps({"parent": parent.run_id, "edit": dict(edit)}, sort_keys=True, default=str)
    return "run_" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def _derive(store: LabStore, parent: Replay, edited: Replay, edit: Mapping[str, Any], calls: tuple[SummarizerCall, ...], label: str) -> WhatIf:
    from lcm_lab.store.lineage import record_edit
    from lcm_lab.store.replays import save_replay

    assert parent.run_id is not None
    run_id = _derived_id(parent, edit)
    derived = replace(edited, run_id=run_id, meta={**edited.meta, "derived_from": parent.run_id, "whatif": dict(edit), "whatif_calls": list(calls)})
    save_replay(store, derived, label=label)  # its own transaction; re-saving the same edit is a no-op
    record_edit(store, run_id, parent.run_id, edit)
    return WhatIf(parent, derived, dict(edit), calls, label)


def _summarizer(
    summarizer: Summarizer | str | None,
    model: str | None,
    prompt_set: PromptSet | str | None,
    api_base: str | None,
    api_key: str | None,
    store: LabStore,
) -> tuple[Summarizer, dict[str, Any]]:
    """The summarizer to rewrite with and how the edit records it (no secrets, no endpoints)."""
    from lcm_lab.summarizers import get_summarizer

    if model is not None or summarizer == "litellm":
        if not model:
            raise EditError("rewriting with a model needs model=, e.g. 'openai/gpt-4o-mini'")
        if summarizer not in (None, "litellm"):
            raise EditError(f"give summarizer= or model=, not both (got summarizer={summarizer!r}, model={model!r})")
        from lcm_lab.store.ledger import Ledger

        writer = get_summarizer("litellm", model=model, api_base=api_base, api_key=api_key, prompts=prompt_set, ledger=Ledger(store))
    elif summarizer is None or isinstance(summarizer, str):
        if prompt_set is not None:
            raise EditError(f"prompt sets apply to model summarizers (model=...), not to {summarizer or 'offline'!r}")
        writer = get_summarizer(summarizer or "offline")
    else:
        writer = summarizer
        if prompt_set is not None:
            if not hasattr(writer, "with_options"):
                raise EditError(f"summarizer {getattr(writer, 'name', writer)!r} takes no prompt set")
            writer = writer.with_options(prompts=prompt_set)
    prompts = getattr(writer, "prompts", None)
    # A model-free summarizer's own settings (e.g. the offline footer size) change its output: they
    # are part of the edit, so two settings give two runs. Model summarizers are described by name.
    settings = {k: v for k, v in vars(writer).items() if not k.startswith("_") and isinstance(v, str | int | float | bool)} \
        if model is None and hasattr(writer, "__dict__") and not hasattr(writer, "model") else {}
    described: dict[str, Any] = {
        "summarizer": getattr(writer, "name", type(writer).__name__),
        "model": getattr(writer, "model", None),
        "prompt_set": getattr(prompts, "name", None),
        "prompt_set_hash": getattr(prompts, "hash", None),
        "temperature": getattr(writer, "temperature", None),
        "seed": getattr(writer, "seed", None),
        "settings": settings or None,
    }
    return writer, {k: v for k, v in described.items() if v is not None}
