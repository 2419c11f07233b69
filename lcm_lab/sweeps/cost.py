"""What a setting costs, with its uncertainty, in sweeps: each priced run's simulated bill, the paired
difference to the plugin defaults on the same conversation, and the cost verdict of a recommendation.

A run priced by the cost model (``cost_usd`` is an objective or constraint) keeps a ``cost``
block in its stored metrics: the conversation's turns, the expected bill, its 90% interval and
the simulated bills themselves (:data:`lcm_lab.cost.misses.DRAWS` of them). Every run of one
conversation is priced with that conversation's miss model (its calibration window plus the other
bundled sessions), so draw ``s`` of one configuration and draw ``s`` of the defaults share the
same simulated cache misses: their difference is **paired** and much narrower than either bill.

* ``sweep_df`` gains :data:`COST_COLUMNS`: ``cost_usd_p05`` / ``cost_usd_p95`` (the run's 90%
  interval) and ``cost_saving_usd`` with ``cost_saving_usd_p05`` / ``_p95`` (defaults − this run,
  paired, on the same conversation; positive = cheaper than the defaults).
* ``recommend`` gains a ``cost`` block (:func:`cost_verdict`): the chosen configuration's saving
  against the defaults in dollars per 1,000 turns with its paired 90% interval — over the miss
  process, and with two or more conversations also a bootstrap over conversations — and
  ``within_noise`` when the interval covers 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

COST_COLUMNS = ("cost_usd_p05", "cost_usd_p95", "cost_saving_usd", "cost_saving_usd_p05", "cost_saving_usd_p95")
PER_TURNS = 1000
LEVEL = 0.9

_PRICING: dict[int, tuple[Any, Any]] = {}  # id(conversation) -> (conversation, Pricing), per process
_PRICING_LIMIT = 64


def price_run(run: Any, conversation: Any, run_id: str) -> tuple[list[Any], dict[str, Any]]:
    """``cost_usd`` and ``cache_hit_rate`` of ``run`` and its ``cost`` block; the prices,
    calibration, miss model and references are fixed per conversation, so each process computes
    them once per conversation."""
    from lcm_lab.cost.scores import conversation_pricing, scores_from_costs, session_cost

    hit = _PRICING.get(id(conversation))
    if hit is None or hit[0] is not conversation:
        if len(_PRICING) >= _PRICING_LIMIT:
            _PRICING.pop(next(iter(_PRICING)))
        try:
            pricing = conversation_pricing(conversation)
        except ValueError as exc:
            raise ValueError(f"cost_usd and cache_hit_rate need a transcript that records provider usage "
                             f"(a pi, OpenClaw or Claude Code session): {exc}") from None
        hit = _PRICING[id(conversation)] = (conversation, pricing)
    pricing = hit[1]
    cost = session_cost(run, pricing.prices, pricing.calibration, warn=False)  # the sweep counts a run's failed calls
    scores = scores_from_costs(cost, pricing.references, run_id=run_id)
    bill = cost.bill()
    if bill is None:
        return scores, {}
    interval = bill.interval(LEVEL)
    return scores, {"turns": len(run.turns), "expected": bill.expected, "p05": interval.low, "p95": interval.high,
                    "draws": [round(float(d), 4) for d in bill.draws]}  # fmt: skip


def _block(metrics: Mapping[str, Any]) -> Mapping[str, Any] | None:
    block = metrics.get("cost")
    return block if isinstance(block, Mapping) and block.get("draws") else None


def _quantiles(values: np.ndarray) -> tuple[float, float]:
    from lcm_lab.metrics.stats import quantile_interval

    return quantile_interval(values, LEVEL)


def cost_columns(rows: Sequence[tuple[str, str, Mapping[str, Any]]], baseline: str) -> list[dict[str, Any]]:
    """:data:`COST_COLUMNS` for ``(config_id, conversation, stored metrics)`` rows; the saving is
    paired against the ``baseline`` configuration's run on the same conversation."""
    blocks = [_block(m) for _, _, m in rows]
    base = {conv: b for (cid, conv, _), b in zip(rows, blocks, strict=True) if cid == baseline and b is not None}
    out = []
    for (_, conv, _), block in zip(rows, blocks, strict=True):
        record: dict[str, Any] = dict.fromkeys(COST_COLUMNS)
        if block is not None:
            record["cost_usd_p05"], record["cost_usd_p95"] = block["p05"], block["p95"]
            reference = base.get(conv)
            if reference is not None and len(reference["draws"]) == len(block["draws"]):
                saving = np.asarray(reference["draws"]) - np.asarray(block["draws"])
                low, high = _quantiles(saving)
                record.update(cost_saving_usd=reference["expected"] - block["expected"], cost_saving_usd_p05=low,
                              cost_saving_usd_p95=high)  # fmt: skip
        out.append(record)
    return out


def cost_verdict(rows: Sequence[tuple[str, str, Mapping[str, Any]]], chosen: str, baseline: str, *, seed: int = 0) -> dict[str, Any] | None:
    """The chosen configuration's saving against ``baseline`` in $ per 1,000 turns, paired, with
    its 90% interval (``None`` when the sweep priced no costs for both on a shared conversation)."""
    by_config: dict[str, dict[str, Mapping[str, Any]]] = {}
    for config_id, conv, metrics in rows:
        block = _block(metrics)
        if block is not None:
            by_config.setdefault(config_id, {})[conv] = block
    mine, theirs = by_config.get(chosen, {}), by_config.get(baseline, {})
    shared = sorted(c for c in mine if c in theirs and len(mine[c]["draws"]) == len(theirs[c]["draws"]))
    if not shared:
        return None
    turns = np.asarray([float(mine[c]["turns"]) for c in shared])
    saving = np.asarray([np.asarray(theirs[c]["draws"]) - np.asarray(mine[c]["draws"]) for c in shared])  # (conversations, draws)
    expected = np.asarray([theirs[c]["expected"] - mine[c]["expected"] for c in shared])
    if len(shared) > 1:
        # Each draw also resamples the conversations: the interval covers new conversations too.
        pick = np.random.default_rng(seed).integers(0, len(shared), size=(saving.shape[1], len(shared)))
        per_draw = PER_TURNS * saving[pick, np.arange(saving.shape[1])[:, None]].sum(axis=1) / turns[pick].sum(axis=1)
    else:
        per_draw = PER_TURNS * saving[0] / turns[0]
    low, high = _quantiles(per_draw)
    total_turns = float(turns.sum())
    return {
        "metric": "cost_usd", "unit": f"$ per {PER_TURNS:,} turns", "level": LEVEL, "baseline": baseline,
        "chosen_per_1000_turns": PER_TURNS * sum(mine[c]["expected"] for c in shared) / total_turns,
        "defaults_per_1000_turns": PER_TURNS * sum(theirs[c]["expected"] for c in shared) / total_turns,
        "saving_per_1000_turns": PER_TURNS * float(expected.sum()) / total_turns,
        "saving_low": low, "saving_high": high, "within_noise": bool(low <= 0 <= high),
        "conversations": len(shared), "turns": int(total_turns),
        "interval": ("paired: the same simulated cache misses for both settings; over the miss process"
                     + (" and a bootstrap over conversations" if len(shared) > 1 else " of one conversation (no other conversations to generalise over)")),
    }  # fmt: skip


def verdict_sentence(verdict: Mapping[str, Any] | None) -> str | None:
    """The cost verdict in words (for ``recommend``'s snippet and the report)."""
    if verdict is None:
        return None
    saving, low, high = verdict["saving_per_1000_turns"], verdict["saving_low"], verdict["saving_high"]
    per = f"per {PER_TURNS:,} turns"
    what = f"saves ${saving:,.2f} {per} against" if saving >= 0 else f"costs ${-saving:,.2f} more {per} than"
    noise = "; within noise (the interval includes 0)" if verdict["within_noise"] else ""
    return (f"The chosen configuration {what} the plugin defaults (90% paired interval of the saving ${low:,.2f} .. "
            f"${high:,.2f}; expected ${verdict['chosen_per_1000_turns']:,.2f} vs ${verdict['defaults_per_1000_turns']:,.2f} {per}, "
            f"{verdict['conversations']} conversation(s), {verdict['turns']:,} turns){noise}.")


def verdict_lines(verdict: Mapping[str, Any] | None) -> list[str]:
    """The snippet's cost line (none when the sweep priced no costs)."""
    sentence = verdict_sentence(verdict)
    return [] if sentence is None else [f"# cost: {sentence}"]


def stored_cost_rows(sweep_id: str, store: Any) -> list[tuple[str, str, Mapping[str, Any]]]:
    """``(config_id, conversation, stored metrics)`` of a sweep's finished runs."""
    import json

    from lcm_lab.store.sweeps import sweep_runs_df

    runs = sweep_runs_df(store, sweep_id)
    return [(r["config_id"], r["conversation_key"], json.loads(r["metrics"])) for r in runs.to_dict("records") if r["status"] == "ok"]
