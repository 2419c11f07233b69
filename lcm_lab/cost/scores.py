"""Headline scores ``cost_usd`` and ``cache_hit_rate`` of a replay (sweep objectives).

``cost_usd`` is the **expected** bill — the rules' priced calls plus the cache misses they cannot
predict (:mod:`lcm_lab.cost.misses`) — with its 90% predictive interval in ``details``
(``p05``, ``p95``), next to the rules' point (``rules_usd``) and the paired saving against the
recorded host. Without a miss model (a calibration given by hand) it is the rules' point and
``details["interval_note"]`` says why there is no interval.

>>> HEADLINE_COST, HEADLINE_HIT_RATE
('cost_usd', 'cache_hit_rate')
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from lcm_lab.cost.model import Calibration
from lcm_lab.cost.prices import Prices
from lcm_lab.cost.replay_cost import (
    ReplayLike,
    SessionCost,
    calibrate_conversation,
    reference_costs,
    session_cost,
)
from lcm_lab.cost.validate import Validation, session_model, validate_recorded
from lcm_lab.engine.types import Conversation
from lcm_lab.host.recorded import recorded_calls
from lcm_lab.io.model import RecordedEvent
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.headline import headline
from lcm_lab.metrics.verdicts import COST

HEADLINE_COST, HEADLINE_HIT_RATE = COST  # their names live with every other headline's


def resolve_prices(run: ReplayLike, main_model: str | None, prices: Prices | None) -> Prices:
    """Explicit prices, else the cost map's prices of ``main_model`` (default: the model the
    transcript's calls went to)."""
    if prices is not None:
        return prices
    from lcm_lab.cost.litellm_prices import load_prices  # lazy: litellm is slow to import

    return load_prices(main_model or session_model(recorded_calls(run.conversation)))


def price_replay(
    run: ReplayLike,
    main_model: str | None = None,
    *,
    prices: Prices | None = None,
    calibration: Calibration | None = None,
    events: Sequence[RecordedEvent] | None = None,
) -> tuple[SessionCost, dict[str, SessionCost]]:
    """The priced calls of ``run`` and its references (``no_compaction``, ``recorded_host`` when
    ``events`` are given), calibrated on the transcript's first 10% of recorded calls."""
    prices = resolve_prices(run, main_model, prices)
    calibration = calibration or calibrate_conversation(run.conversation, prices, events)
    return session_cost(run, prices, calibration), reference_costs(run.conversation, prices, calibration, events)


def validate_transcript(path: str | Path, main_model: str | None = None) -> Validation:
    """Validate the cache model on a transcript's recorded usage (all its conversations)."""
    from lcm_lab.cost.litellm_prices import load_prices
    from lcm_lab.host.recorded import recorded_session_calls
    from lcm_lab.io.transcripts import read_transcript

    calls = recorded_session_calls(read_transcript(path).conversations)
    return validate_recorded(calls, load_prices(main_model or session_model(calls)), session=Path(path).name)


def _relative(value: float | None, reference: float | None) -> float | None:
    return None if value is None or not reference else value / reference


def cost_scores(
    run: ReplayLike,
    main_model: str | None = None,
    *,
    prices: Prices | None = None,
    calibration: Calibration | None = None,
    events: Sequence[RecordedEvent] | None = None,
    run_id: str | None = None,
) -> list[Score]:
    """``cost_usd`` (expected main model + summarizer dollars) and ``cache_hit_rate`` (token-weighted) of ``run``.

    Both are raw values (``normalise=False``); ``details`` carry the references priced the same
    way — ``ceiling`` = no compaction at all, ``floor`` = the recorded host (when ``events``, the
    transcript's compaction records, are given; otherwise ``None``) — and the ratios to them.
    """
    cost, refs = price_replay(run, main_model, prices=prices, calibration=calibration, events=events)
    return scores_from_costs(cost, refs, run_id=run_id or getattr(run, "run_id", None) or "")


class Pricing(NamedTuple):
    """What every replay of one conversation is priced with: prices, calibration and the
    references (fixed per conversation, so a sweep computes them once per conversation)."""

    prices: Prices
    calibration: Calibration
    references: dict[str, SessionCost]


def conversation_pricing(
    conversation: Conversation,
    main_model: str | None = None,
    *,
    prices: Prices | None = None,
    calibration: Calibration | None = None,
    events: Sequence[RecordedEvent] | None = None,
) -> Pricing:
    """The :class:`Pricing` of ``conversation`` (main model default: the one its recorded calls went to)."""
    if prices is None:
        from lcm_lab.cost.litellm_prices import load_prices  # lazy: litellm is slow to import

        prices = load_prices(main_model or session_model(recorded_calls(conversation)))
    calibration = calibration or calibrate_conversation(conversation, prices, events)
    return Pricing(prices, calibration, reference_costs(conversation, prices, calibration, events))


def expected_usd(cost: SessionCost) -> float:
    """The expected bill of ``cost`` (the rules' point when it has no miss model)."""
    bill = cost.bill()
    return cost.total_usd if bill is None else bill.expected


def scores_from_costs(cost: SessionCost, refs: dict[str, SessionCost], *, run_id: str = "") -> list[Score]:
    """The two headlines from an already priced session and its references."""
    full, host = refs.get("no_compaction"), refs.get("recorded_host")
    bill = cost.bill()
    value = cost.total_usd if bill is None else bill.expected  # expected_usd, keeping the draws for the interval
    full_usd = expected_usd(full) if full else None
    host_usd = expected_usd(host) if host else None
    common = {
        "main_model": cost.prices.model,
        "main_usd": cost.main_usd,
        "summarizer_usd": cost.summarizer_usd,
        "summarizer_calls": cost.summarizer_calls,
        "unpriced_summarizer_calls": cost.unpriced_summarizer_calls,
        "calibration_calls": cost.calibration.calls,
        "references": "ceiling = no compaction, floor = recorded host",
    }
    spread: dict[str, Any] = {"rules_usd": cost.total_usd, "interval_level": 0.9}
    if bill is None:
        spread.update(p05=None, p95=None, interval_note="no miss model (calibration given without one): the rules' point only")
    else:
        interval = bill.interval()
        spread.update(p05=interval.low, p95=interval.high)
        saving = host.paired_difference(cost) if host else None
        if saving is not None:
            spread.update(saving_vs_recorded_host=saving.expected, saving_vs_recorded_host_p05=saving.low,
                          saving_vs_recorded_host_p95=saving.high)  # fmt: skip
    usd = headline(
        run_id, HEADLINE_COST, raw=value, ceiling=full_usd, floor=host_usd, chance=None, n=len(cost.calls), unit="api_call",
        normalise=False, extra={**common, **spread, "relative_to_no_compaction": _relative(value, full_usd),
                                "relative_to_recorded_host": _relative(value, host_usd)},
    )
    rate = headline(
        run_id, HEADLINE_HIT_RATE, raw=cost.cache_hit_rate, ceiling=full.cache_hit_rate if full else None,
        floor=host.cache_hit_rate if host else None, chance=None, n=sum(c.prompt_tokens for c in cost.calls),
        unit="prompt_token", normalise=False, extra=common,
    )
    return [usd, rate]
