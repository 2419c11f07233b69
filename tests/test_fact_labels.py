"""Extractor precision and recall on the hand-labelled candidate set (tests/fixtures/fact-labels.jsonl).

How the set was built and labelled: tests/fixtures/fact-labels.md. Every candidate the current
extractor produces on the labelled messages must carry a label (otherwise the test names it, so
a changed extractor gets labelled rather than silently scored), and precision must stay >= 0.9.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from lcm_lab.metrics.facts import extract_facts, fact_key

FIXTURES = Path(__file__).parent / "fixtures"


class LabelScore(NamedTuple):
    precision: float
    recall: float
    extracted: int
    hard: int
    candidates: int
    unlabelled: list[tuple[str, str]]
    by_source: dict[str, tuple[float, float]]


def _read(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def score_labels(split: str | None = None) -> LabelScore:
    """Precision = hard facts among extracted candidates; recall = extracted among hard facts
    (``split``: ``"development"`` — the set the extractor was fixed on — or ``"held-out"``)."""
    messages = {m["message"]: m for m in _read("fact-label-messages.jsonl") if split in (None, m["split"])}
    labels: dict[tuple[str, str], bool] = {}
    for row in _read("fact-labels.jsonl"):
        if row["message"] not in messages:
            continue
        labels[(row["message"], fact_key(row["kind"], row["fact"]))] = row["hard"]
    tp = fp = 0
    unlabelled: list[tuple[str, str]] = []
    extracted_keys: set[tuple[str, str]] = set()
    per: Counter[tuple[str, str]] = Counter()
    for mid, message in messages.items():
        for fact in extract_facts(message["text"]):
            key = (mid, fact_key(fact.kind, fact.text))
            extracted_keys.add(key)
            if key not in labels:
                unlabelled.append((mid, fact.text))
                continue
            tp += labels[key]
            fp += not labels[key]
            per[(message["source"], "tp" if labels[key] else "fp")] += 1
    hard = {k for k, v in labels.items() if v}
    found = len(hard & extracted_keys)
    by_source = {}
    for source in sorted({m["source"] for m in messages.values()}):
        src_hard = {k for k in hard if messages[k[0]]["source"] == source}
        p_den = per[(source, "tp")] + per[(source, "fp")]
        by_source[source] = (per[(source, "tp")] / p_den if p_den else float("nan"),
                             len(src_hard & extracted_keys) / len(src_hard) if src_hard else float("nan"))
    return LabelScore(tp / max(1, tp + fp), found / max(1, len(hard)), tp + fp, len(hard), len(labels), unlabelled, by_source)


def test_the_labelled_set_is_large_enough_and_covers_three_sources() -> None:
    rows = _read("fact-labels.jsonl")
    assert len(rows) >= 200
    sources = Counter(m["source"] for m in _read("fact-label-messages.jsonl"))
    assert set(sources) == {"pi-mono", "claude-code", "locomo"}
    assert all(row["why"] for row in rows) and any(not row["hard"] for row in rows)


def test_every_extracted_candidate_is_labelled() -> None:
    assert score_labels().unlabelled == []


def test_extractor_precision_stays_above_0_9() -> None:
    for split in (None, "development", "held-out"):
        score = score_labels(split)
        print(split, score)
        assert score.precision >= 0.9, (split, score)
        assert score.recall >= 0.8, (split, score)
