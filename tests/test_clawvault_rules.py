"""ClawVault's observer rules, each test built from a rule stated in spec/clawvault.md §1.2-§1.7."""

from __future__ import annotations

import math

import pytest

from lcm_lab.strategies.compressor import PROMPTS, RawLine, build_prompt, fallback_observations, sanitize
from lcm_lab.strategies.memory_search import bm25_scores, iso_week, promoted, reflect, search, section_of
from lcm_lab.strategies.observations import (
    Observation,
    dedupe,
    enforce_importance_rules,
    importance_band,
    infer_importance,
    infer_type,
    merge,
    normalize_content,
    normalize_output,
    parse_markdown,
)

DAY = "2026-03-10"


def obs(kind: str, c: float, i: float, content: str, day: str = DAY) -> Observation:
    return Observation(day, kind, c, i, content)


# -- §1.3 format, types, bands -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("We decided to move billing to Stripe", "decision"),
        ("Pricing is still an open question", "commitment-unresolved"),
        ("TODO: rotate the staging keys", "todo"),
        ("We need to book the venue", "task"),
        ("I'll send the contract on Friday", "commitment"),
        ("v2.3 shipped to production", "milestone"),
        ("Ana prefers dark mode", "preference"),
        ("Turns out the cache was stale", "lesson"),
        ("Met with the client from Acme", "relationship"),
        ("The Atlas project repository moved", "project"),
        ("The office is on the third floor", "fact"),
    ],
)
def test_type_cascade_assigns_each_documented_type(text: str, kind: str) -> None:
    assert infer_type(text) == kind


def test_type_cascade_order_decision_before_commitment_and_todo_before_task() -> None:
    # Documented order: decision → unresolved → todo → task → commitment → ...
    assert infer_type("Decision: I'll use Redis") == "decision"
    assert infer_type("TODO: we need to rotate keys") == "todo"
    assert infer_type("We need to do it, I'll start") == "task"


def test_importance_bands_and_legacy_emoji() -> None:
    assert [importance_band(i) for i in (0.8, 0.79, 0.4, 0.39)] == ["structural", "potential", "potential", "contextual"]
    parsed = parse_markdown("## 2026-03-10\n- 🔴 Prod is down\n- 🟡 Demo moved\n- 🟢 Coffee ran out")
    assert [(o.importance, o.confidence) for o in parsed] == [(0.9, 0.9), (0.6, 0.8), (0.2, 0.7)]


def test_parse_keeps_dates_and_clamps_values_and_unknown_types_become_fact() -> None:
    text = "## 2026-03-09\n- [decision|c=0.90|i=0.85] Chose Redis\n## 2026-03-10\n- [weird|c=1.50|i=0.30] Something"
    parsed = parse_markdown(text)
    assert [(o.date, o.type, o.confidence) for o in parsed] == [("2026-03-09", "decision", 0.9), ("2026-03-10", "fact", 1.0)]


# -- §1.4 importance inference (fallback) and enforceImportanceRules -----------------------------


@pytest.mark.parametrize(
    ("text", "importance"),
    [
        ("The deploy failed with an error", 0.9),  # critical
        ("Signed contract with Northwind", 0.9),
        ("Pricing agreed at $48K", 0.9),
        ("Whether to hire is unresolved", 0.72),  # unresolved
        ("Remember to water the plants", 0.65),  # todo
        ("The DNS records point elsewhere", 0.6),  # notable
        ("I'll call the landlord", 0.55),  # commitment
        ("Ana likes green tea", 0.45),  # preference ("prefers" is also a notable term: 0.6)
        ("The sky was grey", 0.2),
    ],
)
def test_fallback_importance_follows_the_documented_ladder(text: str, importance: float) -> None:
    assert infer_importance(text) == importance


def test_prefix_overrides_type() -> None:
    assert enforce_importance_rules(obs("fact", 0.5, 0.5, "[COMMITMENT] send the deck"))
    assert enforce_importance_rules(obs("fact", 0.5, 0.5, "[COMMITMENT] send the deck")).type == "commitment"  # type: ignore[union-attr]
    assert enforce_importance_rules(obs("fact", 0.5, 0.5, "Decision: keep Postgres")).type == "decision"  # type: ignore[union-attr]
    assert enforce_importance_rules(obs("task", 0.5, 0.5, "TODO: rename the repo")).type == "todo"  # type: ignore[union-attr]


def test_critical_raises_to_085_and_retypes_facts() -> None:
    out = enforce_importance_rules(obs("fact", 0.3, 0.2, "We shipped v1.4 to customers"))
    assert out is not None and out.importance == 0.85 and out.confidence == 0.85 and out.type == "milestone"
    kept = enforce_importance_rules(obs("lesson", 0.95, 0.9, "The build failed twice"))
    assert kept is not None and kept.type == "lesson" and kept.importance == 0.9 and kept.confidence == 0.95


def test_notable_raises_to_050_and_075_only_when_not_critical() -> None:
    out = enforce_importance_rules(obs("fact", 0.3, 0.1, "The database schema has three tables"))
    assert out is not None and (out.importance, out.confidence) == (0.5, 0.75)


def test_task_signals_type_facts_as_tasks_and_unresolved_gets_072() -> None:
    out = enforce_importance_rules(obs("fact", 0.3, 0.1, "remember to renew the domain"))
    assert out is not None and (out.type, out.importance, out.confidence) == ("task", 0.65, 0.8)
    tbd = enforce_importance_rules(obs("fact", 0.3, 0.1, "Owner of the launch is TBD, going to ask"))
    assert tbd is not None and tbd.importance == 0.72


def test_structural_types_get_at_least_060() -> None:
    out = enforce_importance_rules(obs("milestone", 0.9, 0.1, "Beta is out"))
    assert out is not None and out.importance == 0.6


def test_noise_is_dropped_below_its_importance_limit() -> None:
    assert enforce_importance_rules(obs("fact", 0.9, 0.3, "Meeting recap: session started")) is None
    assert enforce_importance_rules(obs("fact", 0.9, 0.6, "Meeting recap: session started")) is not None
    assert enforce_importance_rules(obs("fact", 0.9, 0.2, "Got it")) is None
    assert enforce_importance_rules(obs("fact", 0.9, 0.45, "Got it")) is not None


# -- §1.2/§1.4 dedupe and merge ------------------------------------------------------------------


def test_normalised_content_strips_clock_spaces_and_case() -> None:
    assert normalize_content("09:41   Chose  REDIS ") == "chose redis"


def test_merge_is_a_union_that_never_deletes_and_combines_collisions() -> None:
    existing = [obs("fact", 0.7, 0.3, "09:00 chose redis"), obs("preference", 0.8, 0.5, "Ana prefers tea")]
    incoming = [obs("decision", 0.6, 0.9, "Chose Redis")]  # the model dropped Ana's preference
    merged = merge(existing, incoming)
    assert len(merged) == 2
    redis = merged[0]
    assert (redis.type, redis.confidence, redis.importance, redis.content) == ("decision", 0.7, 0.9, "09:00 chose redis")
    assert merged[1].content == "Ana prefers tea"


def test_merge_keeps_same_content_on_different_dates_apart() -> None:
    merged = merge([obs("fact", 0.7, 0.3, "standup", "2026-03-09")], [obs("fact", 0.7, 0.3, "standup", "2026-03-10")])
    assert len(merged) == 2


def test_dedupe_applies_the_merge_rule_within_one_set() -> None:
    records = [obs("fact", 0.5, 0.2, "a b"), obs("task", 0.9, 0.7, "A  B"), obs("fact", 0.6, 0.1, "a b, longer")]
    assert [(r.type, r.confidence, r.importance) for r in dedupe(records)] == [("task", 0.9, 0.7), ("fact", 0.6, 0.1)]


# -- §1.4 normalisation, sanitising, prompt ------------------------------------------------------


def test_output_normalisation() -> None:
    assert normalize_output("Sorry, nothing to report.", DAY) is None
    fenced = normalize_output("```\n- [fact|c=0.80|i=0.40] met [[Ana]]at noon\n```", DAY)
    assert fenced == f"## {DAY}\n- [fact|c=0.80|i=0.40] met [[Ana]] at noon"
    invented = normalize_output("## 2024-01-27\n- [fact|c=0.80|i=0.40] x", DAY)
    assert invented is not None and invented.startswith("## 2024-01-27")  # model dates pass through


def test_sanitize_drops_roles_payloads_and_structured_noise() -> None:
    blob = "A" * 90
    lines = [
        RawLine("system", "you are a bot"),
        RawLine("tool", "file contents"),
        RawLine("toolResult", "x"),
        RawLine("user", f"see data:image/png;base64,iVBORw0KGgo= and {blob} here"),
        RawLine("assistant", '{"toolResult": {"stdout": "ok", "exitCode": 0, "session_id": "abc"}}'),
        RawLine("assistant", "fine   then"),
    ]
    assert [(line.role, line.text) for line in sanitize(lines)] == [("user", "see and here"), ("assistant", "fine then")]


def test_prompt_follows_the_documented_structure_in_the_labs_words() -> None:
    system, user, digest = build_prompt([RawLine("user", "we chose Redis", "2026-03-10 09:00:00")], [obs("fact", 0.7, 0.3, "old")])
    assert "## YYYY-MM-DD" in user and "- [type|c=<0.00-1.00>|i=<0.00-1.00>]" in user
    for needle in ("0.80", "TODO: ", "[COMMITMENT] ", "Decision: ", "exactly as written", "1. [2026-03-10 09:00] user: we chose Redis", "- [fact|c=0.70|i=0.30] old"):
        assert needle in user
    assert system and len(digest) == 64
    assert build_prompt([], [], "terse")[2] != digest
    with pytest.raises(ValueError, match="unknown observer prompt"):
        build_prompt([], [], "nope")
    assert set(PROMPTS) == {"default", "terse"}


# -- §1.4 step 7: the deterministic fallback (without fixture rewrites) ---------------------------


def test_fallback_one_candidate_per_message_truncated_with_clock() -> None:
    lines = [RawLine("user", "We decided to ship on Friday " + "x" * 400, "2026-03-10 14:06:00"), RawLine("assistant", "Got it")]
    out = fallback_observations(lines, DAY)
    assert len(out) == 1  # the acknowledgement is dropped
    assert out[0].content.startswith("14:06 user: We decided") and len(out[0].content) <= 280 + len("14:06 user: ")
    assert (out[0].type, out[0].importance, out[0].confidence) == ("decision", 0.9, 0.95)  # 0.72+0.12+0.06+0.05


def test_fallback_confidence_and_date_from_the_message() -> None:
    out = fallback_observations([RawLine("user", "I'll review the draft", "2026-03-09 08:00:00")], DAY)
    # commitment 0.55; confidence 0.72 + 0.06 structural + 0.06 task signal
    assert (out[0].date, out[0].type, out[0].importance, out[0].confidence) == ("2026-03-09", "commitment", 0.55, 0.84)


def test_fallback_drops_openings_and_deadline_less_finalize() -> None:
    lines = [RawLine("user", "Hi there!"), RawLine("user", "We need to finalize the plan"), RawLine("user", "We need to finalize the plan by Friday")]
    out = fallback_observations(lines, DAY)
    assert [o.content for o in out] == ["user: We need to finalize the plan by Friday"]


def test_fallback_collapses_routine_maintenance() -> None:
    lines = [RawLine("assistant", t, "2026-03-10 03:00:00") for t in ("Backup finished", "Rotated the logs", "Disk usage normal, no incidents")]
    out = fallback_observations(lines, DAY)
    assert [(o.type, o.confidence, o.importance) for o in out] == [("fact", 0.82, 0.28)]


def test_fallback_placeholder_when_nothing_is_left() -> None:
    out = fallback_observations([RawLine("user", "thanks", "2026-03-10 10:30:00")], DAY)
    assert [(o.type, o.confidence, o.importance, o.content) for o in out] == [("fact", 0.7, 0.2, "10:30 Processed session updates.")]


def test_fallback_has_no_fixture_specific_rewrites() -> None:
    texts = ["Legal redlines go to the #northwind-deal channel", "Please keep search terms intact", "I talked with Mia and she approved shipping"]
    out = fallback_observations([RawLine("user", t) for t in texts], DAY)
    assert [o.content for o in out] == [f"user: {t}" for t in texts]


# -- §1.5 reflection ----------------------------------------------------------------------------


def test_promotion_rule() -> None:
    records = [
        obs("fact", 0.7, 0.8, "structural alone", "2026-03-09"),
        obs("fact", 0.7, 0.79, "potential once", "2026-03-09"),
        obs("fact", 0.7, 0.4, "potential twice", "2026-03-09"),
        obs("fact", 0.7, 0.4, "Potential  twice", "2026-03-11"),
        obs("fact", 0.7, 0.39, "contextual twice", "2026-03-09"),
        obs("fact", 0.7, 0.39, "contextual twice", "2026-03-10"),
    ]
    assert sorted(r.content for r, _ in promoted(records)) == ["potential twice", "structural alone"]


def test_reflection_sections_citations_and_no_repeats() -> None:
    records = [
        obs("todo", 0.9, 0.85, "TODO: follow-up with legal"),
        obs("decision", 0.9, 0.9, "Decision: move to Postgres"),
        obs("fact", 0.9, 0.85, "We switched CI to GitHub Actions"),
        obs("preference", 0.9, 0.85, "Ana prefers async reviews"),
    ]
    assert [section_of(r) for r in records] == ["Open Loops", "Key Decisions", "Changes", "Stable Patterns"]
    text, keys = reflect("2026-W11", records, set())  # type: ignore[misc]
    for header in ("### Open Loops", "### Key Decisions", "### Changes", "### Stable Patterns", "### Citations"):
        assert header in text
    assert "ledger/observations/2026/03/10.md" in text
    assert reflect("2026-W12", records, keys) is None
    assert iso_week("2026-03-10") == "2026-W11"


# -- §1.7 search --------------------------------------------------------------------------------


def test_bm25_matches_the_documented_formula() -> None:
    docs = ["redis cache", "postgres database", "redis"]
    score = bm25_scores(docs, "redis")
    idf = math.log((3 - 2 + 0.5) / (2 + 0.5) + 1)
    avg = 5 / 3
    assert score[2] == pytest.approx(idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 1 / avg)))
    assert score[1] == 0.0


def test_search_returns_top_k_by_fused_rank_and_semantic_ranks_can_reorder() -> None:
    docs = ["redis cache", "redis", "postgres"]
    assert search(docs, "redis cache", limit=1) == [0]
    assert search(docs, "redis cache", limit=3) == [0, 1]  # no hit, no result
    assert search(docs, "redis cache", limit=2, semantic_ranks=[1]) == [1, 0]  # 0.65/62 + 0.35/61 > 0.65/61
