"""LcmConfig: defaults, reference-trace configs, env precedence, overrides, validation, files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from lcm_lab.engine.config.lcm_config import ConfigError, LcmConfig, compile_session_pattern
from lcm_lab.io.config_files import lcm_environment, load_config_file, load_openclaw_config

TRACES = sorted((Path(__file__).parent / "fixtures" / "reference-runs" / "traces").glob("*.trace.json.gz"))


def trace(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def test_defaults_equal_reference_resolved_config() -> None:
    doc = trace(TRACES[0])
    assert doc["config_name"].endswith("defaults-32k")
    resolved = LcmConfig.from_plugin_config(doc["harness_config"]).to_plugin_config()
    assert resolved == doc["resolved_config"]
    defaults = LcmConfig()
    assert (defaults.context_threshold, defaults.fresh_tail_count, defaults.leaf_chunk_tokens) == (
        0.75,
        64,
        20000,
    )
    assert (
        defaults.effective_bootstrap_max_tokens == 6000 and defaults.prefix_target_tokens(200_000) == 20_000
    )


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name.split(".")[0])
def test_each_trace_plugin_config_resolves_like_the_plugin(path: Path) -> None:
    doc = trace(path)
    config = LcmConfig.from_plugin_config({**doc["plugin_config"], **doc["harness_config"]})
    exported = config.to_plugin_config()
    assert exported == doc["resolved_config"]
    assert list(exported) == list(doc["resolved_config"])  # the plugin's key order
    assert LcmConfig.from_plugin_config(exported) == config
    assert LcmConfig.from_plugin_config(config.to_plugin_config(minimal=True)) == config


def test_aliases_and_openclaw_json() -> None:
    doc = {
        "plugins": {
            "entries": {
                "lossless-claw": {
                    "enabled": True,
                    "config": {
                        "incrementalMaxDepth": 3,
                        "databasePath": " /tmp/x.db ",
                        "largeFileThresholdTokens": 9000,
                        "largeFileTokenThreshold": 1,
                        "futureKnob": {"a": 1},
                    },
                }
            }
        }
    }
    config = LcmConfig.from_openclaw_json(doc)
    assert (config.sweep_max_depth, config.database_path, config.large_file_token_threshold) == (
        3,
        "/tmp/x.db",
        9000,
    )
    assert config.extra == {"futureKnob": {"a": 1}}
    assert config.to_plugin_config()["incrementalMaxDepth"] == 3
    assert LcmConfig.from_plugin_config({"dbPath": "/a", "databasePath": "/b"}).database_path == "/a"
    assert LcmConfig.from_openclaw_json({"plugins": {}}) == LcmConfig()


def test_env_overrides_plugin_config() -> None:
    env = {
        "LCM_FRESH_TAIL_COUNT": "16",
        "LCM_CONTEXT_THRESHOLD": "0.5",
        "LCM_INCREMENTAL_MAX_DEPTH": "2",
        "LCM_PROMPT_AWARE_EVICTION_ENABLED": "true",
        "LCM_STRIP_INJECTED_CONTEXT_TAGS": "",
        "LCM_FALLBACK_PROVIDERS": "anthropic/claude-x, openai/gpt-y",
        "LCM_CACHE_TTL_SECONDS": "60",
        "TZ": "Europe/Berlin",
    }
    plugin = {"freshTailCount": 8, "sweepMaxDepth": 5, "leafChunkTokens": 1500, "timezone": "UTC"}
    config = LcmConfig.from_env(env, plugin)
    assert config.fresh_tail_count == 16 and config.context_threshold == 0.5
    assert config.sweep_max_depth == 2  # env alias beats the plugin's main key
    assert config.leaf_chunk_tokens == 1500  # no env value: plugin config applies
    assert config.prompt_aware_eviction is True and config.strip_injected_context_tags == ()
    assert [p["model"] for p in config.fallback_providers] == ["claude-x", "gpt-y"]
    assert config.cache_aware_compaction["cacheTTLSeconds"] == 60
    assert config.timezone == "Europe/Berlin"
    assert (
        LcmConfig.from_env({"LCM_SWEEP_MAX_DEPTH": "4", "LCM_INCREMENTAL_MAX_DEPTH": "2"}).sweep_max_depth
        == 4
    )
    # parseInt semantics: a leading integer counts, as in the plugin.
    assert LcmConfig.from_env({"LCM_LEAF_CHUNK_TOKENS": "3000tokens"}).leaf_chunk_tokens == 3000


@pytest.mark.parametrize(
    ("plugin", "env", "message"),
    [
        (
            {"freshTailCount": -1},
            {},
            "plugin config key 'freshTailCount': invalid value -1; expected a number >= 0",
        ),
        ({"contextThreshold": 1.5}, {}, "'contextThreshold': invalid value 1.5; expected a number in (0, 1]"),
        ({"contextThreshold": 0}, {}, "expected a number in (0, 1]"),
        ({"leafChunkTokens": "lots"}, {}, "'leafChunkTokens': invalid value 'lots'; expected an integer"),
        ({"leafChunkTokens": 1.5}, {}, "expected an integer"),
        ({"promptAwareEviction": "yes"}, {}, "expected true or false"),
        ({"proactiveThresholdCompactionMode": "later"}, {}, "expected 'deferred' or 'inline'"),
        ({"stripInjectedContextTags": [1, 2]}, {}, "expected a list of strings"),
        ({"fallbackMaxTokens": 10}, {}, "expected a number >= 64"),
        (
            {"autoRotateSessionFiles": "on"},
            {},
            "'autoRotateSessionFiles': invalid value 'on'; expected an object",
        ),
        (
            {},
            {"LCM_FRESH_TAIL_COUNT": "many"},
            "environment variable LCM_FRESH_TAIL_COUNT: invalid value 'many'",
        ),
        (
            {},
            {"LCM_ENABLE_SUMMARY_THINKING": "1"},
            "LCM_ENABLE_SUMMARY_THINKING: invalid value '1'; expected true or false",
        ),
        ({}, {"LCM_FALLBACK_PROVIDERS": "justamodel"}, "comma-separated provider/model pairs"),
    ],
)
def test_validation_errors_name_key_value_and_allowed(plugin: dict, env: dict, message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        LcmConfig.resolve(env, plugin)
    assert message in str(excinfo.value)


def test_python_construction_is_validated() -> None:
    with pytest.raises(ConfigError, match=r"LcmConfig.fresh_tail_count: invalid value -3"):
        LcmConfig(fresh_tail_count=-3)
    with pytest.raises(ConfigError, match="expected an integer"):
        LcmConfig(leaf_chunk_tokens="20000")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_rounds"):
        LcmConfig().replace(max_rounds=0)
    assert LcmConfig(strip_injected_context_tags=["a"]).strip_injected_context_tags == ("a",)  # type: ignore[arg-type]


OVERRIDES = [
    {"name": "small-window", "match": {"modelContextWindowMax": 64000}, "contextThreshold": 0.6},
    {
        "name": "cron",
        "match": {"sessionPattern": "agent:*:cron:**"},
        "contextThreshold": 0.5,
        "freshTailCount": 8,
    },
    {
        "name": "claude",
        "match": {"model": "anthropic/claude-x"},
        "contextThreshold": 0.9,
        "leafChunkTokens": 5000,
    },
    {
        "name": "claude-cron",
        "match": {"model": "claude-x", "sessionPattern": "agent:**"},
        "contextThreshold": 0.4,
    },
    {
        "name": "big",
        "match": {"modelContextWindowMin": 100000, "modelContextWindowMax": 300000},
        "contextThreshold": 0.8,
    },
    {"name": "small-window-2", "match": {"modelContextWindowMax": 64000}, "contextThreshold": 0.3},
]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, (0.75, 64, 20000, "global", None)),
        ({"context_window": 32000}, (0.6, 64, 20000, "override", "small-window")),  # tie: earliest wins
        ({"context_window": 200000}, (0.8, 64, 20000, "override", "big")),  # two bounds (40) beat none
        ({"session_key": "agent:main:cron:nightly"}, (0.5, 8, 20000, "override", "cron")),
        ({"session_key": "agent:main:sub:cron:x"}, (0.75, 64, 20000, "global", None)),  # * is one segment
        ({"model": "anthropic/claude-x"}, (0.9, 64, 5000, "override", "claude")),
        ({"model": "claude-x", "provider": "anthropic"}, (0.9, 64, 5000, "override", "claude")),
        ({"model": "claude-x", "session_key": "agent:main"}, (0.4, 64, 20000, "override", "claude-cron")),
        ({"model": "claude-x", "session_key": "agent:main:cron:n", "context_window": 32000},
         (0.4, 64, 20000, "override", "claude-cron")),  # model+pattern (150) beats everything else
    ],
)  # fmt: skip
def test_threshold_override_matching(kwargs: dict[str, Any], expected: tuple) -> None:
    config = LcmConfig.from_plugin_config({"contextThresholdOverrides": OVERRIDES})
    got = config.resolve_overrides(**kwargs)
    assert (
        got.context_threshold,
        got.fresh_tail_count,
        got.leaf_chunk_tokens,
        got.source,
        got.rule_name,
    ) == expected
    assert config.to_plugin_config()["contextThresholdOverrides"] == OVERRIDES


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ({"match": {}}, "contextThresholdOverrides must be an array"),
        ([{"contextThreshold": 0.5}], "contextThresholdOverrides[0].match must be an object"),
        ([{"match": {}, "contextThreshold": 0.5}], "contextThresholdOverrides[0].match must include at least one matcher"),
        ([{"match": {"model": " "}, "contextThreshold": 0.5}], "match.model must be a non-empty string"),
        ([{"match": {"modelContextWindowMin": 0}, "contextThreshold": 0.5}], "modelContextWindowMin must be a positive integer"),
        ([{"match": {"modelContextWindowMin": 9, "modelContextWindowMax": 3}, "contextThreshold": 0.5}], "must be <= modelContextWindowMax"),
        ([{"match": {"model": "m"}, "contextThreshold": 2}], "contextThreshold must be a finite number between 0 and 1"),
        ([{"match": {"model": "m"}, "contextThreshold": 0.5, "freshTailCount": -2}], "[0].freshTailCount must be a positive integer"),
    ],
)  # fmt: skip
def test_threshold_override_validation(rules: Any, message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        LcmConfig.from_plugin_config({"contextThresholdOverrides": rules})
    assert message in str(excinfo.value)


def test_session_pattern_dialect() -> None:
    assert compile_session_pattern("agent:*:main").fullmatch("agent:abc:main")
    assert not compile_session_pattern("agent:*").fullmatch("agent:a:b")
    assert compile_session_pattern("agent:**").fullmatch("agent:a:b")
    assert compile_session_pattern("a.b").fullmatch("a.b") and not compile_session_pattern("a.b").fullmatch(
        "axb"
    )


def test_config_files(tmp_path: Path) -> None:
    plugin_file = tmp_path / "c2.json"
    plugin_file.write_text(json.dumps({"freshTailCount": 8, "leafChunkTokens": 2000}), encoding="utf-8")
    assert load_config_file(plugin_file).fresh_tail_count == 8
    assert load_config_file(plugin_file, {"LCM_FRESH_TAIL_COUNT": "3"}).fresh_tail_count == 3
    state = tmp_path / "state"
    state.mkdir()
    (state / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"config": {"contextThreshold": 0.6}}}}}),
        encoding="utf-8",
    )
    config = load_openclaw_config(state, {"LCM_LEAF_MIN_FANOUT": "5", "HOME": "/nowhere", "PATH": "/bin"})
    assert (config.context_threshold, config.leaf_min_fanout) == (0.6, 5)
    assert lcm_environment({"LCM_X": "1", "TZ": "UTC", "HOME": "/h"}) == {"LCM_X": "1", "TZ": "UTC"}
    bad = tmp_path / "bad.json"
    bad.write_text('{"freshTailCount": 8,\n oops}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad.json:2: not valid JSON"):
        load_config_file(bad)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"contextThreshold": 7}), encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"wrong.json: plugin config key 'contextThreshold': invalid value 7"
    ):
        load_config_file(wrong)
    with pytest.raises(ConfigError, match="config file not found"):
        load_config_file(tmp_path / "missing.json")
