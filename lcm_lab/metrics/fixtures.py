"""Fixture scoring in ClawVault's style (ClawVault's ``src/observer/benchmark/*`` over ``testdata/observer-benchmark/*``), with a held-out split.

A *fixture* is a directory with ``transcript.md`` (one message per line, ``user:`` /
``assistant:`` prefixes), ``expected.md`` (gold observations, one per line, in the
``- [type|c=0.00|i=0.00] content`` format) and an optional ``config.json``
(``{"scoring": {"matchThreshold", "minimumImportanceForRecall", "keywordHints"}}``). An output
(observation lines from an observer, or a summary's text, whose lines count as untyped
observations) is scored against the gold lines:

* **precision** — matched output lines / output lines;
* **recall** — importance-weighted recall of gold lines with importance ≥ the floor (0.5);
* **keyword preservation** — share of the transcript's top signal terms present in the output;
* **type accuracy** — importance-weighted share of matches with the right type (``None`` when
  the output is untyped; the overall then renormalises the other weights);
* **overall** = 0.30·P + 0.35·R + 0.20·K + 0.15·T.

Two deliberate fixes of ClawVault's scorer (both switchable for comparability): line similarity
is a symmetric token F1 by default (ClawVault's recall-only overlap rewards long lines), and
keywords lose trailing punctuation (ClawVault's ``now.``/``channel.`` terms reward verbatim
copying). :func:`split_fixtures` assigns each fixture to ``dev`` or ``heldout`` by a hash of
its name — stable when fixtures are added — so a tuning loop can be shown dev fixtures only
and report the held-out score of every change (ClawVault reached "100 %" on three fixtures
with no held-out set).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lcm_lab.errors import InputError
from lcm_lab.metrics.base import Score, mean

WEIGHTS: dict[str, float] = {"precision": 0.30, "recall": 0.35, "keyword_preservation": 0.20, "type_accuracy": 0.15}
OBSERVATION_TYPES = (
    "decision", "preference", "fact", "commitment", "task", "todo", "commitment-unresolved",
    "milestone", "lesson", "relationship", "project",
)
_LINE = re.compile(r"^\s*[-*]\s*\[(?P<type>[a-z-]+)\|c=(?P<c>[0-9.]+)\|i=(?P<i>[0-9.]+)\]\s*(?P<content>.+?)\s*$")
_TOKEN = re.compile(r"[a-z0-9]+(?:[._/-][a-z0-9]+)*")
_KEYWORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{2,}")
_STOP = frozenset(
    """the and for with that this from have has had was were are is be been will would could should
    into onto about after before then than them they their there here what when where which who why
    how our ours your yours you she him her his its it's not but all any can may might must just also
    very more most some such only over under again once each both few other same so too yes no ok""".split()
)


class FixtureError(InputError):
    """A fixture file is malformed; the message names file and line."""


@dataclass(frozen=True)
class Observation:
    content: str
    type: str | None = None
    confidence: float | None = None
    importance: float | None = None


@dataclass(frozen=True)
class Fixture:
    name: str
    transcript: tuple[str, ...]
    expected: tuple[Observation, ...]
    match_threshold: float = 0.35
    min_importance: float = 0.5
    keyword_hints: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)


def parse_observations(text: str, *, where: str = "<text>", strict: bool = False) -> list[Observation]:
    """Observation lines of ``text``. Typed lines use the ``[type|c=|i=]`` format; other
    non-empty lines (headings excepted) become untyped observations unless ``strict``."""
    out: list[Observation] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _LINE.match(stripped)
        if match:
            c, i = float(match["c"]), float(match["i"])
            if not (0 <= c <= 1 and 0 <= i <= 1):
                raise FixtureError(f"{where}:{number}: confidence/importance must be within 0..1: {stripped!r}")
            out.append(Observation(match["content"], match["type"], c, i))
        elif strict:
            raise FixtureError(f"{where}:{number}: not an observation line '- [type|c=0.00|i=0.00] text': {stripped!r}")
        else:
            out.append(Observation(stripped.lstrip("-* ").strip()))
    return out


def load_fixture(directory: str | Path) -> Fixture:
    """Read a fixture directory (``transcript.md``, ``expected.md``, optional ``config.json``)."""
    root = Path(directory)
    transcript_path, expected_path, config_path = root / "transcript.md", root / "expected.md", root / "config.json"
    for required in (transcript_path, expected_path):
        if not required.is_file():
            raise FixtureError(f"{required}: missing (a fixture needs transcript.md and expected.md)")
    transcript = []
    for number, line in enumerate(transcript_path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        if not re.match(r"^(user|assistant|system|tool)\s*:", line.strip(), re.IGNORECASE):
            raise FixtureError(f"{transcript_path}:{number}: expected 'user:' or 'assistant:' prefix: {line.strip()[:60]!r}")
        transcript.append(line.strip())
    expected = parse_observations(expected_path.read_text(encoding="utf-8"), where=str(expected_path), strict=True)
    scoring: Mapping[str, Any] = {}
    if config_path.is_file():
        try:
            config = json.loads(config_path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise FixtureError(f"{config_path}:{getattr(exc, 'lineno', '?')}: not valid JSON ({exc})") from None
        scoring = config.get("scoring", {}) if isinstance(config, Mapping) else {}
    return Fixture(
        name=root.name,
        transcript=tuple(transcript),
        expected=tuple(expected),
        match_threshold=float(scoring.get("matchThreshold", 0.35)),
        min_importance=float(scoring.get("minimumImportanceForRecall", 0.5)),
        keyword_hints=tuple(str(h) for h in scoring.get("keywordHints", ())),
    )


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(" ".join(text.lower().split())) if len(t) >= 2 and t not in _STOP]


def similarity(expected: str, actual: str, mode: Literal["f1", "clawvault"] = "f1") -> float:
    """Token overlap of two lines: symmetric F1 (default) or ClawVault's |E∩A|/|E|."""
    e, a = Counter(_tokens(expected)), Counter(_tokens(actual))
    if not e or not a:
        return 0.0
    common = sum((e & a).values())
    if mode == "clawvault":
        return common / sum(e.values())
    if common == 0:
        return 0.0
    p, r = common / sum(a.values()), common / sum(e.values())
    return 2 * p * r / (p + r)


def keyword_set(transcript: Sequence[str], hints: Sequence[str] = (), *, limit: int = 25, strip_punctuation: bool = True) -> list[str]:
    """The transcript's top "signal" terms (ClawVault's rule, with trailing punctuation stripped)."""
    counts: Counter[str] = Counter()
    for line in transcript:
        body = line.split(":", 1)[1] if ":" in line else line
        for term in _KEYWORD.findall(body):
            if strip_punctuation:
                term = term.rstrip("._/-")
            if len(term) < 4 or term.lower() in _STOP:
                continue
            signal = any(c.isupper() or c.isdigit() for c in term) or bool(re.search(r"[._/-]", term)) or len(term) >= 8
            if signal:
                counts[term] += 1
    for hint in hints:
        counts[hint] += 2
    return [term for term, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def _present(term: str, text: str) -> bool:
    if re.search(r"[^A-Za-z0-9]", term):
        return term.lower() in text.lower()
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(term)}(?![A-Za-z0-9])", text, re.IGNORECASE) is not None


def score_output(
    fixture: Fixture,
    output: str | Sequence[Observation],
    *,
    mode: Literal["f1", "clawvault"] = "f1",
    strip_keyword_punctuation: bool = True,
) -> dict[str, Any]:
    """Precision, recall, keyword preservation, type accuracy and overall of one output."""
    actual = parse_observations(output) if isinstance(output, str) else list(output)
    expected = sorted(fixture.expected, key=lambda o: -(o.importance or 0.0))
    unmatched = list(range(len(actual)))
    matches: list[tuple[Observation, Observation, float]] = []
    for gold in expected:
        best, best_sim = None, 0.0
        for index in unmatched:
            sim = similarity(gold.content, actual[index].content, mode)
            if sim > best_sim:
                best, best_sim = index, sim
        if best is not None and best_sim >= fixture.match_threshold:
            unmatched.remove(best)
            matches.append((gold, actual[best], best_sim))
    if actual:
        precision = len(matches) / len(actual)
    else:
        precision = 1.0 if not expected else 0.0
    important = [g for g in expected if (g.importance or 0.0) >= fixture.min_importance]
    denominator = sum(g.importance or 0.0 for g in important)
    matched_gold = {id(g) for g, _, _ in matches}
    recall = sum(g.importance or 0.0 for g in important if id(g) in matched_gold) / denominator if denominator else 1.0
    keywords = keyword_set(fixture.transcript, fixture.keyword_hints, strip_punctuation=strip_keyword_punctuation)
    joined = "\n".join(o.content for o in actual)
    kept = [k for k in keywords if _present(k, joined)]
    keyword_preservation = len(kept) / len(keywords) if keywords else 1.0
    typed = [(g, a) for g, a, _ in matches if a.type is not None]
    type_accuracy: float | None
    if matches and len(typed) == len(matches):
        weights = [max(0.2, g.importance or 0.0) for g, _ in typed]
        type_accuracy = sum(w for (g, a), w in zip(typed, weights, strict=True) if g.type == a.type) / sum(weights)
    elif not matches and actual and all(a.type is not None for a in actual):
        type_accuracy = 0.0
    else:
        type_accuracy = None
    parts = {"precision": precision, "recall": recall, "keyword_preservation": keyword_preservation, "type_accuracy": type_accuracy}
    used = {k: w for k, w in WEIGHTS.items() if parts[k] is not None}
    overall = sum(parts[k] * w for k, w in used.items()) / sum(used.values())  # type: ignore[operator]
    return {
        **parts,
        "overall": overall,
        "weights_used": used,
        "matches": [{"expected": g.content, "actual": a.content, "similarity": round(s, 4)} for g, a, s in matches],
        "missed_keywords": [k for k in keywords if k not in kept],
        "similarity_mode": mode,
    }


def split_fixtures(names: Sequence[str], *, heldout_fraction: float = 0.3, salt: str = "lcm-lab-heldout-v1") -> dict[str, str]:
    """``name -> "dev" | "heldout"`` by a salted hash of the name (stable as fixtures are added).

    With two or more fixtures at least one is held out and at least one stays for development.
    """
    if not 0 < heldout_fraction < 1:
        raise ValueError("heldout_fraction must be between 0 and 1")
    position = {n: int(hashlib.sha256(f"{salt}:{n}".encode()).hexdigest()[:12], 16) / 16**12 for n in names}
    split = {n: ("heldout" if position[n] < heldout_fraction else "dev") for n in names}
    ranked = sorted(names, key=lambda n: position[n])
    if len(names) >= 2 and "heldout" not in split.values():
        split[ranked[0]] = "heldout"
    if len(names) >= 2 and "dev" not in split.values():
        split[ranked[-1]] = "dev"
    return split


def dev_fixtures(fixtures: Sequence[Fixture], split: Mapping[str, str]) -> list[Fixture]:
    """Only the fixtures a tuning loop may look at."""
    return [f for f in fixtures if split.get(f.name) == "dev"]


def fixture_scores(
    fixtures: Sequence[Fixture],
    outputs: Mapping[str, str | Sequence[Observation]],
    run_id: str,
    *,
    split: Mapping[str, str] | None = None,
    mode: Literal["f1", "clawvault"] = "f1",
) -> list[Score]:
    """Per-fixture component scores and per-split means (``fixture_<component>_dev`` /
    ``_heldout``). Every fixture needs an output: a missing one is an error, not a zero."""
    missing = [f.name for f in fixtures if f.name not in outputs]
    if missing:
        raise FixtureError(f"no output for fixtures: {', '.join(missing)}")
    split = split or split_fixtures([f.name for f in fixtures])
    scores: list[Score] = []
    by_split: dict[str, dict[str, list[float]]] = {"dev": {}, "heldout": {}}
    for fixture in fixtures:
        result = score_output(fixture, outputs[fixture.name], mode=mode)
        part = split.get(fixture.name, "dev")
        details = {"split": part, "weights_used": result["weights_used"], "missed_keywords": result["missed_keywords"], "matches": result["matches"]}
        for component in (*WEIGHTS, "overall"):
            value = result[component]
            scores.append(Score(run_id, "fixture", fixture.name, f"fixture_{component}", value, details))
            if value is not None:
                by_split[part].setdefault(component, []).append(value)
    for part, components in by_split.items():
        for component in (*WEIGHTS, "overall"):
            values = components.get(component, [])
            scores.append(Score(run_id, "run", "", f"fixture_{component}_{part}", mean(values), {"n": len(values), "similarity_mode": mode}))
    return scores
