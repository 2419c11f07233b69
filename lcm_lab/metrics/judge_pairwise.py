"""A/B summary judging: pairwise, asked in both orders, so position bias cancels and shows.

For each pair (the same source summarised by strategy A and strategy B) the judge is asked which
summary better preserves the source's specifics, once with A first and once with B first, per
repeat. A preference counts only when both orders agree; disagreement is a tie and is counted
as ``position_inconsistent`` (the judge followed the position, not the content).

``ab_preference`` per pair is in [−1, 1] (+1: A preferred in every repeat and both orders);
the run-level value is the mean over pairs with a bootstrap interval over **pairs**.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from lcm_lab.metrics.base import Score, mean
from lcm_lab.metrics.judge import (
    Complete,
    JudgeError,
    Template,
    call,
    check_repeats,
    model_name,
    parse_json,
    repeat_independence,
)
from lcm_lab.metrics.stats import bootstrap_interval

PAIRWISE = Template(
    "summary-pairwise-v1",
    "You compare two summaries of the same source. Judge content only, never position or length. Output JSON only.",
    "<source>\n{source}\n</source>\n\n<summary_1>\n{first}\n</summary_1>\n\n<summary_2>\n{second}\n</summary_2>\n\n"
    'Which summary preserves more of the source\'s specifics (who did what, decisions, names, numbers, dates) accurately? '
    'Reply {{"winner": "1"}}, {{"winner": "2"}} or {{"winner": "tie"}}.',
)


class SummaryPair(NamedTuple):
    pair_id: str
    source: str
    a: str
    b: str


def _winner(text: str) -> str:
    value = parse_json(text, what="pairwise judgement")
    winner = value.get("winner") if isinstance(value, Mapping) else None
    if winner not in ("1", "2", "tie"):
        raise JudgeError(f"pairwise judgement: winner must be \"1\", \"2\" or \"tie\", got {text[:200]!r}")
    return str(winner)


def pairwise_scores(pairs: Sequence[SummaryPair], complete: Complete, run_id: str, *, repeats: int = 3) -> list[Score]:
    """``ab_preference`` per pair (scope ``summary``, id = pair id) and for the run."""
    check_repeats(repeats)
    scores: list[Score] = []
    values: list[float] = []
    inconsistent = 0
    for pair in pairs:
        per_repeat: list[float] = []
        verdicts: list[dict[str, str]] = []
        for r in range(repeats):
            ab = _winner(call(complete, PAIRWISE, seed=r, purpose="judge-pairwise", validate=_winner, source=pair.source, first=pair.a, second=pair.b))
            ba = _winner(call(complete, PAIRWISE, seed=r, purpose="judge-pairwise", validate=_winner, source=pair.source, first=pair.b, second=pair.a))
            a_wins, b_wins = ab == "1" and ba == "2", ab == "2" and ba == "1"
            if not (a_wins or b_wins or (ab == ba == "tie")):
                inconsistent += 1
            per_repeat.append(1.0 if a_wins else -1.0 if b_wins else 0.0)
            verdicts.append({"a_first": ab, "b_first": ba})
        value = mean(per_repeat) or 0.0
        values.append(value)
        scores.append(Score(run_id, "summary", pair.pair_id, "ab_preference", value, {"verdicts": verdicts, "repeats": repeats}))
    lo, hi = bootstrap_interval(values)
    details: dict[str, Any] = {
        "n": len(values), "unit": "summary pair", "ci_low": lo, "ci_high": hi, "repeats": repeats,
        "position_inconsistent": inconsistent, "judgements": 2 * repeats * len(values),
        "judge_model": model_name(complete), "template": PAIRWISE.template_hash, **repeat_independence(complete),
    }
    scores.append(Score(run_id, "run", "", "ab_preference", mean(values), details))
    return scores
