"""``LcmConfig``: every compaction and assembly knob of lossless-claw with its default (spec §4.1).

Names are snake_case here; :func:`LcmConfig.from_plugin_config` accepts the plugin's camelCase
keys (as in ``plugins.entries.lossless-claw.config`` of ``openclaw.json``).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_STRIP_TAGS: tuple[str, ...] = (
    "active_memory_plugin",
    "relevant-memories",
    "relevant_memories",
    "hindsight_memories",
)


@dataclass(frozen=True)
class LcmConfig:
    """Compaction/assembly configuration; defaults are the plugin's (main @ 4214b480)."""

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
    context_threshold_overrides: tuple[Mapping[str, Any], ...] = ()
    # Everything else the plugin accepts (summary models, guards, logging, ...) is kept verbatim.
    extra: Mapping[str, Any] = field(default_factory=dict)

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

    def replace(self, **changes: Any) -> LcmConfig:
        return dataclasses.replace(self, **changes)

    # -- plugin key mapping -----------------------------------------------------------------
    @classmethod
    def from_plugin_config(cls, config: Mapping[str, Any] | None = None, **overrides: Any) -> LcmConfig:
        """Build from plugin config keys (camelCase, aliases accepted) plus snake_case overrides."""
        known = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in (config or {}).items():
            name = PLUGIN_KEY_ALIASES.get(key, _snake(key))
            if name in known and name != "extra":
                values[name] = value
            else:
                extra[key] = value
        values.update(overrides)
        if "strip_injected_context_tags" in values:
            values["strip_injected_context_tags"] = tuple(values["strip_injected_context_tags"])
        if "context_threshold_overrides" in values:
            values["context_threshold_overrides"] = tuple(values["context_threshold_overrides"] or ())
        if extra:
            values["extra"] = {**dict(values.get("extra", {})), **extra}
        return cls(**values)


PLUGIN_KEY_ALIASES: dict[str, str] = {
    "incrementalMaxDepth": "sweep_max_depth",
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
