"""The plugin's settings table: every ``LcmConfig`` field with its plugin keys, ``LCM_*``
environment variables and allowed values, and the plugin's value coercion (``toNumber``,
``toBool``, ``toStr``), made strict. :mod:`lcm_lab.engine.config.lcm_config` resolves values with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lcm_lab.errors import SpecError

MIN_FALLBACK_MAX_TOKENS = 64


class ConfigError(SpecError):
    """A configuration value the plugin could not use (names key, value and what is allowed)."""


# -- value coercion (the plugin's toNumber/toBool/toStr, strict) --------------------------------


def _js_number(value: Any) -> float | None:
    """``toNumber``: finite numbers and numeric strings (``Number(str)``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip()
        if text == "":
            return 0.0  # Number("") is 0
        try:
            if re.fullmatch(r"0[xX][0-9a-fA-F]+", text):
                return float(int(text, 16))
            number = float(text) if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text) else None
        except ValueError:
            return None
        return number if number is not None and math.isfinite(number) else None
    return None


def _parse_int_prefix(text: str) -> int | None:
    """JavaScript ``parseInt(text, 10)`` (leading integer; ``None`` for NaN)."""
    match = re.match(r"\s*([+-]?\d+)", text)
    return int(match.group(1)) if match else None


def _parse_float_prefix(text: str) -> float | None:
    """JavaScript ``parseFloat(text)``."""
    match = re.match(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?Infinity)", text)
    if not match:
        return None
    number = float(match.group(1).replace("Infinity", "inf"))
    return number if math.isfinite(number) else None


def _to_str(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


_KIND_TEXT = {
    "int": "an integer",
    "number": "a finite number",
    "bool": "true or false",
    "str": "a string",
    "list": "a list of strings (or a comma-separated string)",
}


@dataclass(frozen=True)
class _Field:
    name: str  # LcmConfig attribute
    keys: tuple[str, ...]  # plugin config keys, in precedence order (aliases after the main key)
    envs: tuple[str, ...]  # LCM_* environment variables, in precedence order
    kind: str  # int | number | bool | str | list | choice
    check: Callable[[Any], str | None] | None = None  # returns what is allowed when the value is bad
    env_bool_default_true: bool = False  # env "!== 'false'" semantics
    choices: tuple[str, ...] = ()


def _at_least(minimum: float) -> Callable[[Any], str | None]:
    return lambda v: None if v >= minimum else f"a number >= {minimum:g}"


def _threshold(v: Any) -> str | None:
    return None if 0 < v <= 1 else "a number in (0, 1]"


FIELDS: tuple[_Field, ...] = (
    _Field("enabled", ("enabled",), ("LCM_ENABLED",), "bool", env_bool_default_true=True),
    _Field("host_fallback_mode", ("hostFallbackMode",), ("LCM_HOST_FALLBACK_MODE",), "choice", choices=("error", "capture-only")),
    _Field("database_path", ("dbPath", "databasePath"), ("LCM_DATABASE_PATH",), "str"),
    _Field("large_files_dir", ("largeFilesDir",), ("LCM_LARGE_FILES_DIR",), "str"),
    _Field("ignore_session_patterns", ("ignoreSessionPatterns",), ("LCM_IGNORE_SESSION_PATTERNS",), "list"),
    _Field("stateless_session_patterns", ("statelessSessionPatterns",), ("LCM_STATELESS_SESSION_PATTERNS",), "list"),
    _Field("skip_stateless_sessions", ("skipStatelessSessions",), ("LCM_SKIP_STATELESS_SESSIONS",), "bool"),
    _Field("context_threshold", ("contextThreshold",), ("LCM_CONTEXT_THRESHOLD",), "number", _threshold),
    _Field("fresh_tail_count", ("freshTailCount",), ("LCM_FRESH_TAIL_COUNT",), "int", _at_least(0)),
    _Field("fresh_tail_max_tokens", ("freshTailMaxTokens",), ("LCM_FRESH_TAIL_MAX_TOKENS",), "int", _at_least(0)),
    _Field("prompt_aware_eviction", ("promptAwareEviction",), ("LCM_PROMPT_AWARE_EVICTION_ENABLED",), "bool"),
    _Field("stub_large_tool_payloads", ("stubLargeToolPayloads",), ("LCM_STUB_LARGE_TOOL_PAYLOADS",), "bool"),
    _Field("new_session_retain_depth", ("newSessionRetainDepth",), ("LCM_NEW_SESSION_RETAIN_DEPTH",), "int", _at_least(-1)),
    _Field("leaf_min_fanout", ("leafMinFanout",), ("LCM_LEAF_MIN_FANOUT",), "int", _at_least(1)),
    _Field("condensed_min_fanout", ("condensedMinFanout",), ("LCM_CONDENSED_MIN_FANOUT",), "int", _at_least(1)),
    _Field("condensed_min_fanout_hard", ("condensedMinFanoutHard",), ("LCM_CONDENSED_MIN_FANOUT_HARD",), "int", _at_least(1)),
    _Field("sweep_max_depth", ("sweepMaxDepth", "incrementalMaxDepth"), ("LCM_SWEEP_MAX_DEPTH", "LCM_INCREMENTAL_MAX_DEPTH"), "int"),
    _Field("leaf_chunk_tokens", ("leafChunkTokens",), ("LCM_LEAF_CHUNK_TOKENS",), "int", _at_least(1)),
    _Field("summary_prefix_target_tokens", ("summaryPrefixTargetTokens",), ("LCM_SUMMARY_PREFIX_TARGET_TOKENS",), "int", _at_least(1)),
    _Field("max_sweep_iterations", ("maxSweepIterations",), ("LCM_MAX_SWEEP_ITERATIONS",), "int", _at_least(1)),
    _Field("sweep_deadline_ms", ("sweepDeadlineMs",), ("LCM_SWEEP_DEADLINE_MS",), "int", _at_least(1)),
    _Field("compact_until_under_deadline_ms", ("compactUntilUnderDeadlineMs",), ("LCM_COMPACT_UNTIL_UNDER_DEADLINE_MS",), "int", _at_least(1)),
    _Field("bootstrap_max_tokens", ("bootstrapMaxTokens",), ("LCM_BOOTSTRAP_MAX_TOKENS",), "int", _at_least(0)),
    _Field("leaf_target_tokens", ("leafTargetTokens",), ("LCM_LEAF_TARGET_TOKENS",), "int", _at_least(1)),
    _Field("condensed_target_tokens", ("condensedTargetTokens",), ("LCM_CONDENSED_TARGET_TOKENS",), "int", _at_least(1)),
    _Field("max_expand_tokens", ("maxExpandTokens",), ("LCM_MAX_EXPAND_TOKENS",), "int", _at_least(1)),
    _Field("large_file_token_threshold", ("largeFileThresholdTokens", "largeFileTokenThreshold"), ("LCM_LARGE_FILE_TOKEN_THRESHOLD",), "int", _at_least(1)),
    _Field("summary_provider", ("summaryProvider",), ("LCM_SUMMARY_PROVIDER",), "str"),
    _Field("summary_model", ("summaryModel",), ("LCM_SUMMARY_MODEL",), "str"),
    _Field("large_file_summary_provider", ("largeFileSummaryProvider",), ("LCM_LARGE_FILE_SUMMARY_PROVIDER",), "str"),
    _Field("large_file_summary_model", ("largeFileSummaryModel",), ("LCM_LARGE_FILE_SUMMARY_MODEL",), "str"),
    _Field("expansion_provider", ("expansionProvider",), ("LCM_EXPANSION_PROVIDER",), "str"),
    _Field("expansion_model", ("expansionModel",), ("LCM_EXPANSION_MODEL",), "str"),
    _Field("delegation_timeout_ms", ("delegationTimeoutMs",), ("LCM_DELEGATION_TIMEOUT_MS",), "number", _at_least(0)),
    _Field("summary_timeout_ms", ("summaryTimeoutMs",), ("LCM_SUMMARY_TIMEOUT_MS",), "int", _at_least(1)),
    _Field("summary_call_window_ms", ("summaryCallWindowMs",), ("LCM_SUMMARY_CALL_WINDOW_MS",), "int", _at_least(1)),
    _Field("summary_max_calls_per_window", ("summaryMaxCallsPerWindow",), ("LCM_SUMMARY_MAX_CALLS_PER_WINDOW",), "int", _at_least(1)),
    _Field("summary_spend_backoff_ms", ("summarySpendBackoffMs",), ("LCM_SUMMARY_SPEND_BACKOFF_MS",), "int", _at_least(1)),
    _Field("timezone", ("timezone",), ("TZ",), "str"),
    _Field("prune_heartbeat_ok", ("pruneHeartbeatOk",), ("LCM_PRUNE_HEARTBEAT_OK",), "bool"),
    _Field("transcript_gc_enabled", ("transcriptGcEnabled",), ("LCM_TRANSCRIPT_GC_ENABLED",), "bool"),
    _Field("enable_summary_thinking", ("enableSummaryThinking",), ("LCM_ENABLE_SUMMARY_THINKING",), "bool"),
    _Field("proactive_threshold_compaction_mode", ("proactiveThresholdCompactionMode",), ("LCM_PROACTIVE_THRESHOLD_COMPACTION_MODE",), "choice", choices=("deferred", "inline")),
    _Field("max_assembly_token_budget", ("maxAssemblyTokenBudget",), ("LCM_MAX_ASSEMBLY_TOKEN_BUDGET",), "int", _at_least(1)),
    _Field("summary_max_overage_factor", ("summaryMaxOverageFactor",), ("LCM_SUMMARY_MAX_OVERAGE_FACTOR",), "number", _at_least(1)),
    _Field("fallback_max_tokens", ("fallbackMaxTokens",), ("LCM_FALLBACK_MAX_TOKENS",), "int", _at_least(MIN_FALLBACK_MAX_TOKENS)),
    _Field("custom_instructions", ("customInstructions",), ("LCM_CUSTOM_INSTRUCTIONS",), "str"),
    _Field("circuit_breaker_threshold", ("circuitBreakerThreshold",), ("LCM_CIRCUIT_BREAKER_THRESHOLD",), "int", _at_least(1)),
    _Field("circuit_breaker_cooldown_ms", ("circuitBreakerCooldownMs",), ("LCM_CIRCUIT_BREAKER_COOLDOWN_MS",), "int", _at_least(0)),
    _Field("compaction_loop_max_consecutive_failures", ("compactionLoopMaxConsecutiveFailures",), ("LCM_COMPACTION_LOOP_MAX_CONSECUTIVE_FAILURES",), "int", _at_least(0)),
    _Field("replay_flood_threshold_external", ("replayFloodThresholdExternal",), ("LCM_REPLAY_FLOOD_THRESHOLD_EXTERNAL",), "int", _at_least(1)),
    _Field("replay_flood_threshold_internal", ("replayFloodThresholdInternal",), ("LCM_REPLAY_FLOOD_THRESHOLD_INTERNAL",), "int", _at_least(1)),
    _Field("strip_injected_context_tags", ("stripInjectedContextTags",), ("LCM_STRIP_INJECTED_CONTEXT_TAGS",), "list"),
)  # fmt: skip

# Nested objects: (attribute, plugin key, {member: (env var, kind, check, env "!== false")}).
_NESTED: dict[str, tuple[str, dict[str, tuple[str, str, Callable[[Any], str | None] | None, bool]]]] = {
    "auto_rotate_session_files": (
        "autoRotateSessionFiles",
        {
            "enabled": ("LCM_AUTO_ROTATE_SESSION_FILES_ENABLED", "bool", None, True),
            "createBackups": ("LCM_AUTO_ROTATE_SESSION_FILES_CREATE_BACKUPS", "bool", None, False),
            "sizeBytes": ("LCM_AUTO_ROTATE_SESSION_FILES_SIZE_BYTES", "int", _at_least(1), False),
            "startup": ("LCM_AUTO_ROTATE_SESSION_FILES_STARTUP", "rotate-mode", None, False),
            "runtime": ("LCM_AUTO_ROTATE_SESSION_FILES_RUNTIME", "rotate-mode", None, False),
        },
    ),
    "independent_log_file": (
        "independentLogFile",
        {
            "enabled": ("LCM_LOG_FILE_ENABLED", "bool", None, True),
            "file": ("LCM_LOG_FILE", "str", None, False),
            "maxFileBytes": ("LCM_LOG_MAX_FILE_BYTES", "int", _at_least(1), False),
        },
    ),
    "cache_aware_compaction": (
        "cacheAwareCompaction",
        {
            "enabled": ("LCM_CACHE_AWARE_COMPACTION_ENABLED", "bool", None, True),
            "cacheTTLSeconds": ("LCM_CACHE_TTL_SECONDS", "int", None, False),
            "maxColdCacheCatchupPasses": ("LCM_MAX_COLD_CACHE_CATCHUP_PASSES", "int", None, False),
            "hotCachePressureFactor": ("LCM_HOT_CACHE_PRESSURE_FACTOR", "number", None, False),
            "hotCacheBudgetHeadroomRatio": ("LCM_HOT_CACHE_BUDGET_HEADROOM_RATIO", "number", None, False),
            "coldCacheObservationThreshold": ("LCM_COLD_CACHE_OBSERVATION_THRESHOLD", "number", None, False),
            "criticalBudgetPressureRatio": ("LCM_CRITICAL_BUDGET_PRESSURE_RATIO", "number", None, False),
        },
    ),
    "dynamic_leaf_chunk_tokens": (
        "dynamicLeafChunkTokens",
        {
            "enabled": ("LCM_DYNAMIC_LEAF_CHUNK_TOKENS_ENABLED", "bool", None, False),
            "max": ("LCM_DYNAMIC_LEAF_CHUNK_TOKENS_MAX", "int", None, False),
        },
    ),
}

ENV_VARS: tuple[str, ...] = tuple(
    [env for f in FIELDS for env in f.envs]
    + [spec[0] for _, members in _NESTED.values() for spec in members.values()]
    + ["LCM_FALLBACK_PROVIDERS"]
)

PLUGIN_KEY_ALIASES: dict[str, str] = {key: f.name for f in FIELDS for key in f.keys}
PLUGIN_KEY_ALIASES.update({plugin_key: attr for attr, (plugin_key, _) in _NESTED.items()})
PLUGIN_KEY_ALIASES.update(
    {"contextThresholdOverrides": "context_threshold_overrides", "fallbackProviders": "fallback_providers"}
)

# Lab-only knobs (not plugin config keys) that from_plugin_config still accepts by snake name.
_LAB_ONLY = {"max_rounds": "maxRounds"}

