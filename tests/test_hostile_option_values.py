"""Option values a hostile user tries that ended in tracebacks (exit 1): token budgets beyond
64 bits, observer parameters of the wrong type, a transcript that records no model for ``cost``,
a LoCoMo conversation without messages for ``validate-metrics``. Each is one line and exit 2 on
the command line, and the same error kind in the library."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from test_hostile_one_line_errors import one_line
from test_hostile_output import lab

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay
from lcm_lab.engine.tokens import MAX_TOKEN_BUDGET, check_token_budget
from lcm_lab.errors import InputError, OptionError, UserError
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.io.transcripts.locomo import read_locomo_json
from lcm_lab.metrics.validity import validate
from lcm_lab.strategies import get_strategy, run_strategy
from lcm_lab.summarizers.stub import StubV1Summarizer

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "datasets" / "lossless-claw-ref" / "golden-session.jsonl"
FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"


# -- token budgets ------------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [0, -1, 2**53, 2**63, 10**29, 1.5, True, "8000"])
def test_a_budget_the_plugin_could_not_hold_is_an_option_error(budget: object) -> None:
    conversation = read_transcript(GOLDEN).conversations[0].conversation
    with pytest.raises(OptionError, match="token_budget=.*whole number of tokens from 1 to 9,007,199,254,740,991"):
        replay(conversation, LcmConfig(), StubV1Summarizer(), token_budget=budget)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="token_budget="):
        run_strategy(conversation, "truncate", token_budget=budget)  # type: ignore[arg-type]


def test_the_largest_budget_still_replays() -> None:
    conversation = read_transcript(GOLDEN).conversations[0].conversation
    assert check_token_budget(MAX_TOKEN_BUDGET) == MAX_TOKEN_BUDGET
    run = replay(conversation, LcmConfig(), StubV1Summarizer(), token_budget=MAX_TOKEN_BUDGET)
    assert run.turns and not run.summaries  # nothing ever needs compacting
    assert run_strategy(conversation, "observer_regex", token_budget=MAX_TOKEN_BUDGET).turns


@pytest.mark.parametrize(("argv"), [
    ("replay", "--db", "lab.duckdb", "--token-budget", str(2**63)),
    ("replay", "--db", "lab.duckdb", "--token-budget", str(10**29), "--no-save"),
    ("compare-versions", "--token-budget", str(2**63)),
    ("cost", "--db", "lab.duckdb", "--token-budget", str(2**63)),
    ("cost", "--db", "lab.duckdb", "--token-budget", "0"),
])  # fmt: skip
def test_budgets_beyond_what_the_plugin_holds_are_one_line(tmp_path: Path, argv: tuple[str, ...]) -> None:
    line = one_line(lab(*argv, str(GOLDEN), cwd=tmp_path))
    assert "--token-budget" in line and "positive integer up to 9,007,199,254,740,991" in line
    assert not (tmp_path / "lab.duckdb").exists()  # refused before anything was opened


# -- observer parameters ------------------------------------------------------------------------


@pytest.mark.parametrize(("params", "named"), [
    ({"top_k": "5"}, "top_k='5' (expected a whole number or null)"),
    ({"top_k": 1e18}, "top_k=1e+18"),
    ({"top_k": True}, "top_k=True"),
    ({"reflection": "x"}, "reflection='x' (expected true or false)"),
    ({"prompt": 5}, "prompt=5 (expected a string)"),
    ({"importance_floor": float("nan")}, "importance_floor=nan (expected a finite number or null)"),
    ({"update": "sometimes"}, "update='sometimes' (expected one of 'merge', 'regenerate')"),
])  # fmt: skip
def test_observer_parameters_of_the_wrong_type_are_named(params: dict[str, object], named: str) -> None:
    with pytest.raises(UserError, match="wrong type") as raised:
        get_strategy("observer_regex", **params)
    assert named in str(raised.value)


def test_observer_parameters_of_the_right_type_still_pass() -> None:
    strategy = get_strategy("observer_regex", top_k=3, importance_floor=0.5, reflection=True, prompt="default",
                            temperature=0, observe_threshold=2000)  # fmt: skip
    assert strategy.params["top_k"] == 3
    assert get_strategy("clawvault", importance_floor=None, top_k=None).params["top_k"] is None


@pytest.mark.parametrize("config", ['{"top_k": "5"}', '{"top_k": 1e18}', '{"reflection": "x"}', '{"prompt": 5}'])
def test_the_cli_names_a_strategy_config_of_the_wrong_type(tmp_path: Path, config: str) -> None:
    (tmp_path / "sc.json").write_text(config)
    line = one_line(lab("replay", "--no-save", "--strategy", "observer_regex", "--strategy-config", "sc.json",
                        "--token-budget", "2000", str(GOLDEN), cwd=tmp_path))  # fmt: skip
    assert "observer parameter(s) of the wrong type" in line


# -- cost on a transcript that records no model or usage ------------------------------------------


def test_cost_on_a_transcript_without_a_recorded_model_names_the_option(tmp_path: Path) -> None:
    bare = FIXTURES / "bare-messages.jsonl"
    for extra in (("--strategy", "recorded"), ("--validate",)):
        line = one_line(lab("cost", "--db", "c.duckdb", *extra, str(bare), cwd=tmp_path))
        assert "records its model" in line and "--main-model" in line
    line = one_line(lab("cost", "--db", "c.duckdb", "--validate", "--main-model", "claude-sonnet-4-5", str(bare), cwd=tmp_path))
    assert "nothing to calibrate" in line


# -- validate-metrics on a LoCoMo conversation without messages ------------------------------------


def _locomo_with_an_empty_sample(tmp_path: Path) -> Path:
    samples = json.loads(gzip.decompress((FIXTURES / "locomo10-samples-0-1.json.gz").read_bytes()))
    samples[1]["conversation"] = {"speaker_a": "A", "speaker_b": "B"}
    path = tmp_path / "one_empty.json"
    path.write_text(json.dumps(samples))
    return path


def test_validate_refuses_a_conversation_without_messages(tmp_path: Path) -> None:
    loaded = read_locomo_json(_locomo_with_an_empty_sample(tmp_path)).conversations
    with pytest.raises(InputError, match=r"1 conversation\(s\) hold no message text"):
        validate(loaded, budget=4000, controls=("fixed-text",))
    line = one_line(lab("validate-metrics", "--db", "v.duckdb", "--locomo", "one_empty.json", "--no-coding",
                        "--token-budget", "4000", "-o", "vm.md", cwd=tmp_path))  # fmt: skip
    assert "hold no message text" in line and "leave these out" in line
    assert not (tmp_path / "vm.md").exists()
