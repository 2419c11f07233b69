"""The offline summarizer: useful, deterministic, within budget, always shrinking; and the registry."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lcm_lab.commands._summarizer_args import add_summarizer_arguments, summarizer_from_args
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.protocol import SummaryRequest
from lcm_lab.engine.replay.driver import replay
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.metrics.statements import is_statement, split_statements
from lcm_lab.summarizers import OfflineSummarizer, StubV1Summarizer, SummarizerConfigError, get_summarizer
from lcm_lab.summarizers.offline import FOOTER_PREFIX, OFFLINE_MODEL

REPO = Path(__file__).resolve().parents[1]
CHATTER = ["ok thanks", "sure, sounds good", "Hello there!", "great", "haha yes"]
FACTS = [
    "The build failed with TypeError in src/engine/compaction.py line 212.",
    "We decided to switch the store to DuckDB 1.5.5 instead of SQLite.",
    "TODO: rerun `pytest -q tests/test_ledger.py` after the migration lands.",
    "Deployed version 2.4.1 to staging at https://staging.example.com for Alice Moreau.",
]


def leaf_source(blocks: int = 12) -> str:
    parts = []
    for i in range(blocks):
        role = "user" if i % 2 == 0 else "assistant"
        body = CHATTER[i % len(CHATTER)]
        if i % 3 == 1:
            body += "\n" + FACTS[(i // 3) % len(FACTS)]
        parts.append(f"[2026-03-0{1 + i // 6} {10 + i % 6:02d}:{(7 * i) % 60:02d} UTC | {role}]\n{body}")
    return "\n\n".join(parts)


def request(source: str, target: int = 120, **changes: object) -> SummaryRequest:
    values: dict[str, object] = dict(
        source_text=source, kind="leaf", depth=0, aggressive=False, previous_summary=None,
        target_tokens=target, max_tokens=target + 2048,
    )
    values.update(changes)
    return SummaryRequest(**values)  # type: ignore[arg-type]


def test_states_the_specifics_with_who_and_when() -> None:
    source = leaf_source()
    result = OfflineSummarizer().summarize(request(source, target=200))
    text = result.text
    assert result.model == OFFLINE_MODEL and result.cost_usd == 0.0
    stated = split_statements(text).stated
    for fact in ("src/engine/compaction.py", "DuckDB", "2.4.1", "Alice Moreau", "TODO"):
        assert fact in stated, fact  # in a statement, not in a list
    assert "On 1 March 2026, the assistant said: The build failed with TypeError in src/engine/compaction.py line 212." in text
    assert "noted as still open: TODO: rerun `pytest -q tests/test_ledger.py`" in text
    assert "ok thanks" not in text and "haha yes" not in text  # filler dropped
    assert not any(line.startswith("Files:") for line in text.splitlines())  # no inventory
    assert all(is_statement(line) for line in text.splitlines() if not line.startswith(FOOTER_PREFIX))
    assert estimate_tokens(text) <= 200


def test_footer_names_what_was_dropped() -> None:
    source = "\n\n".join(
        f"[2026-03-01 10:{i:02d} UTC | user]\nThe migration of table{i} failed because column c{i} was missing in db/schema{i}.sql."
        for i in range(30)
    )
    text = OfflineSummarizer().summarize(request(source, target=150)).text
    footer = text.splitlines()[-1]
    dropped_paths = [f"db/schema{i}.sql" for i in range(30) if f"db/schema{i}.sql" not in text.rsplit("\n", 1)[0]]
    assert dropped_paths and any(p in footer for p in dropped_paths)


def test_deterministic_and_aggressive_is_shorter() -> None:
    source = leaf_source(30)
    summarizer = OfflineSummarizer()
    normal = summarizer.summarize(request(source, target=300))
    assert normal.text == OfflineSummarizer().summarize(request(source, target=300)).text
    aggressive = summarizer.summarize(request(source, target=96, aggressive=True))
    assert estimate_tokens(aggressive.text) < estimate_tokens(normal.text)


def test_condensed_sources_keep_ranges_and_inherit_footers() -> None:
    filler = "".join(
        f"\n\n[2026-03-02 {h:02d}:00 UTC - 2026-03-02 {h:02d}:30 UTC]\nRoutine check {h} of the nightly job went fine again."
        for h in range(10, 16)
    )
    source = (
        "[2026-03-01 10:00 UTC - 2026-03-01 11:00 UTC]\nChose DuckDB for the store; migration m003 adds llm_calls.\n"
        "Expand for details about: exact DDL, index names\n\n"
        "[2026-03-01 12:00 UTC - 2026-03-01 13:00 UTC]\nThe benchmark reached 14x at concurrency 16.\n"
        "Expand for details about: raw timings\n[Truncated from 900 tokens]" + filler
    )
    text = OfflineSummarizer().summarize(request(source, target=512, kind="condensed", depth=1)).text
    assert "On 1 March 2026, Chose DuckDB for the store; migration m003 adds llm_calls." in text and "14x" in text
    footer = text.splitlines()[-1]
    assert footer.startswith(FOOTER_PREFIX) and "exact DDL" in footer and "raw timings" in footer
    assert "[Truncated from" not in text and "[2026-03-01 10:00 UTC" not in text


def test_previous_summary_lines_are_not_repeated() -> None:
    source = leaf_source(6)
    previous = FACTS[0]
    text = OfflineSummarizer().summarize(request(source, target=300, previous_summary=previous)).text
    assert FACTS[0] not in text and FACTS[1] in text


def test_empty_and_tiny_sources() -> None:
    assert OfflineSummarizer().summarize(request("   ")).text == ""
    tiny = "[2026-03-01 10:00 UTC | user]\nhi there"
    out = OfflineSummarizer().summarize(request(tiny)).text
    assert estimate_tokens(out) < estimate_tokens(tiny)


_line = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=120)


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(_line, min_size=1, max_size=40), target=st.integers(min_value=96, max_value=2400), kind=st.sampled_from(["leaf", "condensed"]))
def test_always_shrinks_non_trivial_sources_and_is_deterministic(lines: list[str], target: int, kind: str) -> None:
    source = "\n".join(f"[2026-03-01 10:{i % 60:02d} UTC | user]\n{line}" for i, line in enumerate(lines)).strip()
    req = request(source, target=target, kind=kind, depth=0 if kind == "leaf" else 1)
    first = OfflineSummarizer().summarize(req).text
    assert first == OfflineSummarizer().summarize(req).text
    source_tokens = estimate_tokens(source)
    if source_tokens >= 40:
        assert 0 < estimate_tokens(first) < source_tokens
        assert estimate_tokens(first) <= max(target, 1)


def test_replay_of_a_bundled_transcript_states_who_said_what() -> None:
    path = REPO / "datasets" / "locomo" / "locomo10.json"
    if not path.exists():
        pytest.skip(f"bundled LoCoMo data not found at {path}")
    conversation = read_transcript(path).conversations[0].conversation
    config = LcmConfig.from_plugin_config({"freshTailCount": 8, "leafChunkTokens": 2000, "leafTargetTokens": 400, "condensedTargetTokens": 300})
    result = replay(conversation, config, OfflineSummarizer(), token_budget=8000)
    assert len(result.summaries) >= 5
    leaves = [s for s in result.summaries if s.kind == "leaf"]
    for summary in result.summaries:
        assert summary.model == OFFLINE_MODEL
        body = [ln for ln in summary.content.splitlines() if not ln.startswith(FOOTER_PREFIX)]
        assert sum(is_statement(ln) for ln in body) >= 0.9 * len(body), summary.content[:300]
    joined = "\n".join(s.content for s in leaves)
    assert "Caroline said: I went to a LGBTQ support group yesterday" in joined  # speaker inferred from "Hey Caroline!"
    assert "Melanie said:" in joined or "Mel said:" in joined
    assert "On 8 May 2023, " in joined


# -- registry and CLI options -----------------------------------------------------------------


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default=None)
    add_summarizer_arguments(parser)
    return parser.parse_args(list(argv))


def test_registry_and_cli_options() -> None:
    assert isinstance(get_summarizer("stub-v1"), StubV1Summarizer)
    assert get_summarizer("legacy-golden-10.1").name == "legacy-golden-10.1"
    assert isinstance(summarizer_from_args(_args()), OfflineSummarizer)
    assert isinstance(summarizer_from_args(_args("--summarizer", "stub-v1")), StubV1Summarizer)
    with pytest.raises(SummarizerConfigError, match="--model, --prompts: these options apply only to --summarizer litellm"):
        summarizer_from_args(_args("--summarizer", "offline", "--model", "openai/x", "--prompts", "dir"))
    with pytest.raises(SummarizerConfigError, match="needs --model"):
        summarizer_from_args(_args("--summarizer", "litellm"))
    with pytest.raises(SummarizerConfigError, match="takes no options"):
        get_summarizer("stub-v1", model="x")
    with pytest.raises(SummarizerConfigError, match="needs a model"):
        get_summarizer("litellm")


def test_speakers_come_from_sender_metadata_or_how_they_are_addressed() -> None:
    meta = '[2026-03-01 10:00 UTC | user | {"name": "Ada"}]\nWe decided to move the cache to src/cache.py because the old one leaked memory badly.'
    text = OfflineSummarizer().summarize(request(meta + "\n\n" + meta.replace("10:00", "10:05"), target=60)).text
    assert text.startswith("On 1 March 2026, Ada decided: We decided to move the cache to src/cache.py")
    chat = "\n\n".join(
        f"[2026-03-0{d} 10:00 UTC | user]\nHey Bo! I finally adopted a cat named Pixel from the shelter in Lyon last week.\n\n"
        f"[2026-03-0{d} 10:01 UTC | assistant]\nThanks, Ana! That is wonderful news about the adoption of Pixel."
        for d in range(1, 4)
    )
    text = OfflineSummarizer().summarize(request(chat, target=120)).text
    assert "Ana said: I finally adopted a cat named Pixel" in text  # the greeting sentence is dropped


def test_relative_times_are_resolved_against_the_message_date() -> None:
    day = "[2023-05-25 14:00 UTC | user]\n"
    lines = [
        "I went to a LGBTQ support group yesterday and it was so powerful.",
        "Wow, thanks Mel! I ran a charity race for mental health last Saturday. So fun!",
        "I painted that lake sunrise last year, it still hangs in the hallway.",
        "Next month I am having an LGBTQ art show with my paintings.",
        "I moved from Sweden 4 years ago with my grandmother's necklace.",
        "Last week I gave a talk about my transition at a local school.",
    ]
    chatter = "\n\n[2023-05-25 14:01 UTC | assistant]\n" + "\n".join(CHATTER * 3)
    source = "\n\n".join(day + line + chatter for line in lines)
    text = OfflineSummarizer().summarize(request(source, target=400)).text
    assert "yesterday (24 May 2023)" in text
    assert "last Saturday (20 May 2023)." in text and "Wow, thanks Mel!" not in text  # small talk dropped
    assert "last year (2022)" in text and "Next month (June 2023)" in text and "4 years ago (2019)" in text
    talk = next(line for line in text.splitlines() if "gave a talk" in line)
    assert talk.startswith("On 25 May 2023, ")  # a statement naming a relative time carries its date
