"""``LcmConfig``: every lossless-claw knob with its default, resolved as the plugin resolves it.

The plugin (``src/db/config.ts`` ``resolveLcmConfig(env, pluginConfig)``) takes each value from
its ``LCM_*`` environment variable, else from the plugin config (``plugins.entries.lossless-claw.
config`` of ``openclaw.json``, camelCase keys, with aliases), else the default. This module does
the same, purely: the environment is a ``Mapping`` argument and files arrive already parsed
(:mod:`lcm_lab.io.config_files` reads them).

Unlike the plugin, which silently falls back to the default for a value it cannot use, resolution
here raises :class:`ConfigError` naming the key, the bad value and what is allowed.

>>> cfg = LcmConfig.from_plugin_config({"freshTailCount": 8, "incrementalMaxDepth": -1})
>>> (cfg.fresh_tail_count, cfg.sweep_max_depth, cfg.threshold_tokens(32_000))
(8, -1, 24000)
>>> LcmConfig.from_env({"LCM_FRESH_TAIL_COUNT": "16"}, {"freshTailCount": 8}).fresh_tail_count
16
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lcm_lab.engine.config.fields import (
    _KIND_TEXT,
    _LAB_ONLY,
    _NESTED,
    ENV_VARS,
    FIELDS,
    PLUGIN_KEY_ALIASES,
    ConfigError,
    _js_number,
    _parse_float_prefix,
    _parse_int_prefix,
    _to_str,
)
from lcm_lab.engine.config.thresholds import (
    EffectiveThreshold,
    ThresholdOverride,
    compile_session_pattern,
    parse_threshold_overrides,
)

__all__ = [
    "DEFAULT_STRIP_TAGS",
    "ENV_VARS",
    "PLUGIN_KEY_ALIASES",
    "ConfigError",
    "EffectiveThreshold",
    "LcmConfig",
    "ThresholdOverride",
    "compile_session_pattern",
]

DEFAULT_STRIP_TAGS: tuple[str, ...] = (
    "active_memory_plugin",
    "relevant-memories",
    "relevant_memories",
    "hindsight_memories",
)


@dataclass(frozen=True)
class LcmConfig:
    """Compaction/assembly configuration; defaults are the plugin's (main @ 4214b480).

    ``None`` marks values the plugin derives or leaves unset (see the properties below). The
    lab's ``timezone`` default is UTC where the plugin uses the host's zone.
    """

    context_threshold: float = 0.75
    fresh_tail_count: int = 64
    fresh_tail_max_tokens: int | None = None
    leaf_chunk_tokens: int = 20_000
    leaf_target_tokens: int = 2_400
    condensed_target_tokens: int = 2_000
    leaf_min_fanout: int = 8
    condensed_min_fanout: int = 4
    condensed_min_fanout_hard: int = 2
    sweep_max_depth: int = 1
    summary_prefix_target_tokens: int | None = None  # None = derived (see prefix_target_tokens)
    max_sweep_iterations: int = 12
    sweep_deadline_ms: int = 120_000
    compact_until_under_deadline_ms: int = 300_000
    max_rounds: int = 10
    summary_max_overage_factor: float = 3
    fallback_max_tokens: int = 512
    timezone: str = "UTC"
    strip_injected_context_tags: tuple[str, ...] = DEFAULT_STRIP_TAGS
    custom_instructions: str = ""
    new_session_retain_depth: int = 2
    large_file_token_threshold: int = 25_000
    bootstrap_max_tokens: int | None = None  # None = max(6000, floor(leaf_chunk_tokens * 0.3))
    summary_timeout_ms: int = 60_000
    enable_summary_thinking: bool = True
    prompt_aware_eviction: bool = False
    stub_large_tool_payloads: bool = False
    max_assembly_token_budget: int | None = None
    context_threshold_overrides: tuple[ThresholdOverride, ...] = ()
    # Everything else the plugin accepts (summary models, guards, logging, ...).
    enabled: bool = True
    host_fallback_mode: str = "error"
    database_path: str | None = None  # None = $OPENCLAW_STATE_DIR/lcm.db
    large_files_dir: str | None = None  # None = $OPENCLAW_STATE_DIR/lcm-files
    ignore_session_patterns: tuple[str, ...] = ()
    stateless_session_patterns: tuple[str, ...] = ()
    skip_stateless_sessions: bool = True
    max_expand_tokens: int = 4_000
    summary_provider: str = ""
    summary_model: str = ""
    large_file_summary_provider: str = ""
    large_file_summary_model: str = ""
    expansion_provider: str = ""
    expansion_model: str = ""
    delegation_timeout_ms: float = 120_000
    summary_call_window_ms: int = 600_000
    summary_max_calls_per_window: int = 24
    summary_spend_backoff_ms: int = 1_800_000
    prune_heartbeat_ok: bool = False
    transcript_gc_enabled: bool = False
    proactive_threshold_compaction_mode: str = "deferred"
    auto_rotate_session_files: Mapping[str, Any] = field(
        default_factory=lambda: {
            "enabled": True,
            "createBackups": False,
            "sizeBytes": 2 * 1024 * 1024,
            "startup": "rotate",
            "runtime": "rotate",
        }  # fmt: skip
    )
    independent_log_file: Mapping[str, Any] = field(
        default_factory=lambda: {"enabled": True, "maxFileBytes": 100 * 1024 * 1024}
    )
    circuit_breaker_threshold: int = 5
    circuit_breaker_cooldown_ms: int = 1_800_000
    compaction_loop_max_consecutive_failures: int | None = None
    replay_flood_threshold_external: int = 3
    replay_flood_threshold_internal: int = 32
    fallback_providers: tuple[Mapping[str, str], ...] = ()
    cache_aware_compaction: Mapping[str, Any] = field(
        default_factory=lambda: {
            "enabled": True,
            "cacheTTLSeconds": 300,
            "maxColdCacheCatchupPasses": 2,
            "hotCachePressureFactor": 4,
            "hotCacheBudgetHeadroomRatio": 0.2,
            "coldCacheObservationThreshold": 3,
            "criticalBudgetPressureRatio": 0.9,
        }  # fmt: skip
    )
    dynamic_leaf_chunk_tokens: Mapping[str, Any] = field(default_factory=lambda: {"enabled": True})
    # Unknown plugin keys, kept verbatim (the plugin ignores them).
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _validate(self)

    # -- derived values ---------------------------------------------------------------------
    def threshold_tokens(self, token_budget: int) -> int:
        return math.floor(self.context_threshold * token_budget)

    def prefix_target_tokens(self, token_budget: int) -> int:
        """``summaryPrefixTargetTokens`` or the plugin's derivation from budget and threshold."""
        if self.summary_prefix_target_tokens is not None and self.summary_prefix_target_tokens > 0:
            return self.summary_prefix_target_tokens
        threshold = max(1, math.floor(self.context_threshold * token_budget))
        return max(self.condensed_target_tokens, min(self.leaf_chunk_tokens, math.floor(threshold * 0.5)))

    def condensed_min_chunk_tokens(self) -> int:
        return max(self.condensed_target_tokens, math.floor(self.leaf_chunk_tokens * 0.1))

    @property
    def effective_bootstrap_max_tokens(self) -> int:
        if self.bootstrap_max_tokens is not None:
            return self.bootstrap_max_tokens
        return max(6000, math.floor(self.leaf_chunk_tokens * 0.3))

    @property
    def effective_dynamic_leaf_chunk_max(self) -> int:
        configured = self.dynamic_leaf_chunk_tokens.get("max")
        fallback = math.floor(self.leaf_chunk_tokens * 2) if configured is None else configured
        return max(self.leaf_chunk_tokens, fallback)

    def replace(self, **changes: Any) -> LcmConfig:
        return dataclasses.replace(self, **changes)

    # -- overrides ---------------------------------------------------------------------------
    def resolve_overrides(
        self,
        *,
        model: str | None = None,
        context_window: int | None = None,
        session_key: str | None = None,
        provider: str | None = None,
    ) -> EffectiveThreshold:
        """Effective threshold, fresh tail and leaf chunk for one runtime context.

        The matching rule with the highest specificity wins (model 100, session pattern 50, each
        window bound 20); ties go to the earliest rule. ``model`` may be ``provider/model`` or a
        bare model id (then ``provider/model`` is also tried when ``provider`` is given).
        """
        model = model.strip() if model else None
        provider = provider.strip() if provider else None
        model_ref = f"{provider}/{model}" if model and provider and "/" not in model else model
        best: tuple[int, ThresholdOverride] | None = None
        for index, rule in enumerate(self.context_threshold_overrides):
            if not rule.matches(model, model_ref, context_window, session_key):
                continue
            if best is None or rule.specificity > best[1].specificity:
                best = (index, rule)
        if best is None:
            return EffectiveThreshold(
                self.context_threshold, self.fresh_tail_count, self.leaf_chunk_tokens, "global"
            )
        index, rule = best
        return EffectiveThreshold(
            rule.context_threshold,
            rule.fresh_tail_count if rule.fresh_tail_count is not None else self.fresh_tail_count,
            rule.leaf_chunk_tokens if rule.leaf_chunk_tokens is not None else self.leaf_chunk_tokens,
            "override",
            index,
            rule.name,
            rule.specificity,
        )

    # -- loading -----------------------------------------------------------------------------
    @classmethod
    def resolve(
        cls, env: Mapping[str, str] | None = None, plugin_config: Mapping[str, Any] | None = None
    ) -> LcmConfig:
        """``resolveLcmConfig(env, pluginConfig)``: env, then plugin config, then defaults."""
        return cls(**_resolve_values(dict(env or {}), dict(plugin_config or {})))

    @classmethod
    def from_env(cls, env: Mapping[str, str], plugin_config: Mapping[str, Any] | None = None) -> LcmConfig:
        """Configuration from ``LCM_*`` variables (plus ``TZ``), over an optional plugin config."""
        return cls.resolve(env, plugin_config)

    @classmethod
    def from_plugin_config(cls, config: Mapping[str, Any] | None = None, **overrides: Any) -> LcmConfig:
        """Build from plugin config keys (camelCase, aliases accepted) plus snake_case overrides."""
        config = dict(config or {})
        lab_only = {name: config.pop(key) for name, key in _LAB_ONLY.items() if key in config}
        base = cls.resolve({}, config)
        changes = {**lab_only, **overrides}
        return base.replace(**changes) if changes else base

    @classmethod
    def from_openclaw_json(cls, doc: Mapping[str, Any], env: Mapping[str, str] | None = None) -> LcmConfig:
        """From a parsed ``openclaw.json``: ``plugins.entries.lossless-claw.config``."""
        entry: Any = doc
        for key in ("plugins", "entries", "lossless-claw"):
            entry = entry.get(key) if isinstance(entry, Mapping) else None
            if entry is None:
                return cls.resolve(env, {})
        if not isinstance(entry, Mapping):
            raise ConfigError("plugins.entries.lossless-claw must be an object")
        plugin_config = entry.get("config", {})
        if not isinstance(plugin_config, Mapping):
            raise ConfigError("plugins.entries.lossless-claw.config must be an object")
        return cls.resolve(env, plugin_config)

    # -- export ------------------------------------------------------------------------------
    def to_plugin_config(self, *, minimal: bool = False) -> dict[str, Any]:
        """camelCase plugin keys: the full resolved config (as ``resolved_config`` in reference
        traces, paths omitted), or with ``minimal=True`` only keys that differ from defaults.

        Either form round-trips through :meth:`from_plugin_config`.
        """
        full = _export(self)
        if not minimal:
            return full
        defaults = _export(LcmConfig())
        return {k: v for k, v in full.items() if defaults.get(k, _MISSING) != v}


_MISSING = object()


# -- resolution --------------------------------------------------------------------------------


def _source_label(source: str) -> str:
    return (
        f"environment variable {source}"
        if source.isupper() or source == "TZ"
        else f"plugin config key {source!r}"
    )


def _bad(source: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"{_source_label(source)}: invalid value {value!r}; expected {allowed}")


def _coerce(
    kind: str,
    value: Any,
    source: str,
    from_env: bool,
    choices: tuple[str, ...] = (),
    env_true_default: bool = False,
) -> Any:
    if kind == "int":
        if from_env:
            parsed = _parse_int_prefix(value)
        else:
            number = _js_number(value)
            if number is not None and number != int(number):
                raise _bad(source, value, "an integer")
            parsed = int(number) if number is not None else None
        if parsed is None:
            raise _bad(source, value, "an integer")
        return parsed
    if kind == "number":
        number = _parse_float_prefix(value) if from_env else _js_number(value)
        if number is None:
            raise _bad(source, value, "a finite number")
        return value if isinstance(value, int) and not isinstance(value, bool) else number
    if kind == "bool":
        if isinstance(value, bool) and not from_env:
            return value
        if value in ("true", "false"):
            return value == "true"
        raise _bad(source, value, "true or false")
    if kind == "str":
        if not isinstance(value, str):
            raise _bad(source, value, "a string")
        return value if source in ("LCM_DATABASE_PATH",) else value.strip()
    if kind in ("choice", "rotate-mode"):
        allowed = choices or ("rotate", "warn", "off")
        normalized = value.strip().lower() if isinstance(value, str) else None
        if kind == "choice" and choices == ("error", "capture-only"):
            normalized = value.strip() if isinstance(value, str) else None
        if normalized not in allowed:
            raise _bad(source, value, " or ".join(repr(c) for c in allowed))
        return normalized
    if kind == "list":
        if from_env:
            return tuple(part.strip() for part in value.split(",") if part.strip())
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(v.strip() for v in value if v.strip())
        raise _bad(source, value, _KIND_TEXT["list"])
    raise AssertionError(kind)  # pragma: no cover


def _resolve_values(env: dict[str, str], pc: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    known_keys = set(PLUGIN_KEY_ALIASES)
    for spec in FIELDS:
        chosen: Any = _MISSING
        for var in spec.envs:
            if var in env:
                raw = env[var]
                if spec.kind == "bool":
                    # The plugin reads these as `=== "true"` (or `!== "false"`); anything else is
                    # almost certainly a typo, so say so.
                    chosen = _coerce("bool", raw.strip(), var, True)
                elif spec.kind == "list" and spec.name == "strip_injected_context_tags":
                    chosen = () if raw.strip() == "" else _coerce("list", raw, var, True)
                elif spec.kind == "str" and spec.name == "timezone":
                    chosen = raw
                else:
                    chosen = _coerce(spec.kind, raw, var, True, spec.choices)
                break
        if chosen is _MISSING:
            for key in spec.keys:
                if key in pc and pc[key] is not None:
                    value = pc[key]
                    if spec.kind == "str" and isinstance(value, str) and not value.strip():
                        continue  # toStr: blank strings count as unset
                    chosen = _coerce(spec.kind, value, key, False, spec.choices)
                    break
        if chosen is _MISSING:
            continue
        if spec.check is not None:
            allowed = spec.check(chosen)
            if allowed is not None:
                culprit = next((v for v in spec.envs if v in env), None) or next(k for k in spec.keys if k in pc)
                raise _bad(culprit, chosen, allowed)
        values[spec.name] = chosen

    defaults = LcmConfig()
    for attr, (plugin_key, members) in _NESTED.items():
        base = dict(getattr(defaults, attr))
        given = pc.get(plugin_key)
        if given is not None and not isinstance(given, Mapping):
            raise _bad(plugin_key, given, "an object")
        for member, (var, kind, check, _) in members.items():
            source, chosen = None, _MISSING
            if var in env:
                source = var
                raw = env[var].strip() if kind == "bool" else env[var]
                chosen = _coerce(kind, raw, var, True)
            elif isinstance(given, Mapping) and given.get(member) is not None:
                source = f"{plugin_key}.{member}"
                chosen = _coerce(kind, given[member], source, False)
            if chosen is _MISSING:
                continue
            if check is not None and (allowed := check(chosen)) is not None:
                raise _bad(source or member, chosen, allowed)
            base[member] = chosen
        if isinstance(given, Mapping):
            base.update({k: v for k, v in given.items() if k not in members})
        values[attr] = base

    if "LCM_FALLBACK_PROVIDERS" in env and env["LCM_FALLBACK_PROVIDERS"].strip():
        values["fallback_providers"] = _env_fallback_providers(env["LCM_FALLBACK_PROVIDERS"])
    elif pc.get("fallbackProviders") is not None:
        values["fallback_providers"] = _plugin_fallback_providers(pc["fallbackProviders"])
    if pc.get("contextThresholdOverrides") is not None:
        values["context_threshold_overrides"] = parse_threshold_overrides(pc["contextThresholdOverrides"])
    extra = {k: v for k, v in pc.items() if k not in known_keys}
    if extra:
        values["extra"] = extra
    return values


def _env_fallback_providers(raw: str) -> tuple[Mapping[str, str], ...]:
    entries = []
    for part in raw.split(","):
        part = part.strip()
        if not part:
            continue
        slash = part.find("/")
        if not (0 < slash < len(part) - 1):
            raise _bad("LCM_FALLBACK_PROVIDERS", part, "comma-separated provider/model pairs")
        entries.append({"provider": part[:slash].strip(), "model": part[slash + 1 :].strip()})
    return tuple(entries)


def _plugin_fallback_providers(value: Any) -> tuple[Mapping[str, str], ...]:
    if not isinstance(value, list):
        raise _bad("fallbackProviders", value, "a list of {provider, model} objects")
    entries = []
    for index, item in enumerate(value):
        provider = _to_str(item.get("provider")) if isinstance(item, Mapping) else None
        model = _to_str(item.get("model")) if isinstance(item, Mapping) else None
        if not provider or not model:
            raise _bad(f"fallbackProviders[{index}]", item, "an object with non-empty provider and model")
        entries.append({"provider": provider, "model": model})
    return tuple(entries)



# -- validation of directly constructed values ---------------------------------------------------


def _validate(config: LcmConfig) -> None:
    """Type and range checks for values set from Python (plugin keys are checked on load)."""
    for spec in FIELDS:
        value = getattr(config, spec.name)
        if value is None:
            continue
        label = f"LcmConfig.{spec.name}"
        if spec.kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigError(f"{label}: invalid value {value!r}; expected an integer")
        if spec.kind == "number" and (
            isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
        ):
            raise ConfigError(f"{label}: invalid value {value!r}; expected a finite number")
        if spec.kind == "bool" and not isinstance(value, bool):
            raise ConfigError(f"{label}: invalid value {value!r}; expected True or False")
        if spec.kind in ("str", "choice") and not isinstance(value, str):
            raise ConfigError(f"{label}: invalid value {value!r}; expected a string")
        if spec.choices and value not in spec.choices:
            raise ConfigError(f"{label}: invalid value {value!r}; expected one of {', '.join(spec.choices)}")
        if spec.kind == "list":
            if (
                isinstance(value, str)
                or not isinstance(value, Sequence)
                or not all(isinstance(v, str) for v in value)
            ):
                raise ConfigError(f"{label}: invalid value {value!r}; expected a sequence of strings")
            object.__setattr__(config, spec.name, tuple(value))
        if spec.check is not None and (allowed := spec.check(value)) is not None:
            raise ConfigError(f"{label}: invalid value {value!r}; expected {allowed}")
    if isinstance(config.max_rounds, bool) or not isinstance(config.max_rounds, int) or config.max_rounds < 1:
        raise ConfigError(
            f"LcmConfig.max_rounds: invalid value {config.max_rounds!r}; expected an integer >= 1"
        )
    object.__setattr__(
        config, "context_threshold_overrides", parse_threshold_overrides(config.context_threshold_overrides)
    )
    object.__setattr__(config, "fallback_providers", tuple(config.fallback_providers))
    # Values equal to their derivation are stored as "derived", so a resolved export loads back
    # to an equal config (the plugin itself derives both from leafChunkTokens at load time).
    if config.bootstrap_max_tokens == max(6000, math.floor(config.leaf_chunk_tokens * 0.3)):
        object.__setattr__(config, "bootstrap_max_tokens", None)
    dynamic = dict(config.dynamic_leaf_chunk_tokens)
    if dynamic.get("max") == max(config.leaf_chunk_tokens, math.floor(config.leaf_chunk_tokens * 2)):
        del dynamic["max"]
    object.__setattr__(config, "dynamic_leaf_chunk_tokens", dynamic)


# -- export ------------------------------------------------------------------------------------

_EXPORT_ORDER = (
    "enabled", "hostFallbackMode", "ignoreSessionPatterns", "statelessSessionPatterns", "skipStatelessSessions",
    "contextThreshold", "contextThresholdOverrides", "freshTailCount", "freshTailMaxTokens", "promptAwareEviction",
    "stubLargeToolPayloads", "newSessionRetainDepth", "leafMinFanout", "condensedMinFanout",
    "condensedMinFanoutHard", "sweepMaxDepth", "incrementalMaxDepth", "leafChunkTokens",
    "summaryPrefixTargetTokens", "maxSweepIterations", "sweepDeadlineMs", "compactUntilUnderDeadlineMs",
    "bootstrapMaxTokens", "leafTargetTokens", "condensedTargetTokens", "maxExpandTokens",
    "largeFileTokenThreshold", "summaryProvider", "summaryModel", "largeFileSummaryProvider",
    "largeFileSummaryModel", "expansionProvider", "expansionModel", "delegationTimeoutMs", "summaryTimeoutMs",
    "summaryCallWindowMs", "summaryMaxCallsPerWindow", "summarySpendBackoffMs", "timezone", "pruneHeartbeatOk",
    "transcriptGcEnabled", "enableSummaryThinking", "proactiveThresholdCompactionMode", "autoRotateSessionFiles",
    "independentLogFile", "maxAssemblyTokenBudget", "summaryMaxOverageFactor", "fallbackMaxTokens",
    "customInstructions", "circuitBreakerThreshold", "circuitBreakerCooldownMs",
    "compactionLoopMaxConsecutiveFailures", "replayFloodThresholdExternal", "replayFloodThresholdInternal",
    "fallbackProviders", "cacheAwareCompaction", "dynamicLeafChunkTokens", "stripInjectedContextTags",
)  # fmt: skip
_EXPORT_ATTR = {f.keys[-1] if f.name == "large_file_token_threshold" else f.keys[0]: f.name for f in FIELDS}


def _export(config: LcmConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in _EXPORT_ORDER:
        if key == "incrementalMaxDepth":
            out[key] = config.sweep_max_depth
        elif key == "contextThresholdOverrides":
            out[key] = [rule.to_plugin() for rule in config.context_threshold_overrides]
        elif key == "fallbackProviders":
            out[key] = [dict(p) for p in config.fallback_providers]
        elif key == "bootstrapMaxTokens":
            out[key] = config.effective_bootstrap_max_tokens
        elif key == "dynamicLeafChunkTokens":
            out[key] = {**config.dynamic_leaf_chunk_tokens, "max": config.effective_dynamic_leaf_chunk_max}
        elif key in ("autoRotateSessionFiles", "independentLogFile", "cacheAwareCompaction"):
            out[key] = dict(getattr(config, PLUGIN_KEY_ALIASES[key]))
        else:
            value = getattr(config, _EXPORT_ATTR[key])
            if value is None:
                continue  # unset optional values are absent, as `undefined` is in JSON
            out[key] = list(value) if isinstance(value, tuple) else value
    if config.max_rounds != 10:
        out["maxRounds"] = config.max_rounds
    if config.database_path is not None:
        out["dbPath"] = config.database_path
    if config.large_files_dir is not None:
        out["largeFilesDir"] = config.large_files_dir
    out.update(config.extra)
    return out
