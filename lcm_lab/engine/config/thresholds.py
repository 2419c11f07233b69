"""Per-session context-threshold overrides (``contextThresholdOverrides``): the rules, their
validation as the plugin does it, and the threshold a session ends up with.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lcm_lab.engine.config.fields import ConfigError, _js_number, _to_str

# -- context-threshold overrides ---------------------------------------------------------------


def compile_session_pattern(pattern: str) -> re.Pattern[str]:
    """The plugin's session glob: ``*`` = any run without ``:``, ``**`` = anything.

    Like the plugin, only ``. + ^ $ { } ( ) | [ ] \\`` are escaped (so ``?`` keeps its regex
    meaning).

    >>> bool(compile_session_pattern("agent:*:main").fullmatch("agent:x:main"))
    True
    >>> bool(compile_session_pattern("agent:*").fullmatch("agent:a:b"))
    False
    """
    escaped = re.sub(r"[.+^${}()|\[\]\\]", lambda m: "\\" + m.group(0), pattern)
    escaped = escaped.replace("**", "\0").replace("*", "[^:]*").replace("\0", ".*")
    return re.compile(f"^{escaped}$")


@dataclass(frozen=True)
class ThresholdOverride:
    """One ``contextThresholdOverrides`` rule (fields within ``match`` AND together)."""

    context_threshold: float
    model: str | None = None
    model_context_window_min: int | None = None
    model_context_window_max: int | None = None
    session_pattern: str | None = None
    fresh_tail_count: int | None = None
    leaf_chunk_tokens: int | None = None
    name: str | None = None

    @property
    def specificity(self) -> int:
        """Plugin rule: exact model 100, session pattern 50, each window bound 20."""
        return (
            (100 if self.model else 0)
            + (50 if self.session_pattern else 0)
            + (20 if self.model_context_window_min is not None else 0)
            + (20 if self.model_context_window_max is not None else 0)
        )

    def matches(
        self, model: str | None, model_ref: str | None, context_window: int | None, session_key: str | None
    ) -> bool:
        if self.model and model_ref != self.model.strip() and model != self.model.strip():
            return False
        if self.session_pattern:
            key = session_key.strip() if session_key else ""
            if not key or not compile_session_pattern(self.session_pattern).search(key):
                return False
        if self.model_context_window_min is not None or self.model_context_window_max is not None:
            # A window rule needs a host-reported window; the token budget is no substitute.
            if context_window is None:
                return False
            if self.model_context_window_min is not None and context_window < self.model_context_window_min:
                return False
            if self.model_context_window_max is not None and context_window > self.model_context_window_max:
                return False
        return True

    def to_plugin(self) -> dict[str, Any]:
        match: dict[str, Any] = {}
        if self.model:
            match["model"] = self.model
        if self.model_context_window_min is not None:
            match["modelContextWindowMin"] = self.model_context_window_min
        if self.model_context_window_max is not None:
            match["modelContextWindowMax"] = self.model_context_window_max
        if self.session_pattern:
            match["sessionPattern"] = self.session_pattern
        out: dict[str, Any] = {"name": self.name} if self.name else {}
        out["match"] = match
        out["contextThreshold"] = self.context_threshold
        if self.fresh_tail_count is not None:
            out["freshTailCount"] = self.fresh_tail_count
        if self.leaf_chunk_tokens is not None:
            out["leafChunkTokens"] = self.leaf_chunk_tokens
        return out


@dataclass(frozen=True)
class EffectiveThreshold:
    """What ``contextThresholdOverrides`` resolve to for one runtime context."""

    context_threshold: float
    fresh_tail_count: int
    leaf_chunk_tokens: int
    source: str  # "global" | "override"
    rule_index: int | None = None
    rule_name: str | None = None
    specificity: int = 0



def _override_text(match: Mapping[str, Any], key: str, path: str) -> str | None:
    if key not in match:
        return None
    parsed = _to_str(match[key])
    if parsed is None:
        raise ConfigError(f"{path}.match.{key} must be a non-empty string (got {match[key]!r})")
    return parsed


def _override_positive(record: Mapping[str, Any], key: str, where: str) -> int | None:
    if key not in record:
        return None
    number = _js_number(record[key])
    if number is None or number != int(number) or number < 1:
        raise ConfigError(f"{where} must be a positive integer (got {record[key]!r})")
    return int(number)


def parse_threshold_overrides(value: Any) -> tuple[ThresholdOverride, ...]:
    """Validate ``contextThresholdOverrides`` as the plugin does (same messages)."""
    if isinstance(value, tuple) and all(isinstance(v, ThresholdOverride) for v in value):
        return value
    if not isinstance(value, list | tuple):
        raise ConfigError("contextThresholdOverrides must be an array")
    rules = []
    for index, entry in enumerate(value):
        if isinstance(entry, ThresholdOverride):
            rules.append(entry)
            continue
        path = f"contextThresholdOverrides[{index}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{path} must be an object")
        match = entry.get("match")
        if not isinstance(match, Mapping):
            raise ConfigError(f"{path}.match must be an object")

        model = _override_text(match, "model", path)
        pattern = _override_text(match, "sessionPattern", path)
        low = _override_positive(match, "modelContextWindowMin", f"{path}.match.modelContextWindowMin")
        high = _override_positive(match, "modelContextWindowMax", f"{path}.match.modelContextWindowMax")
        if model is None and pattern is None and low is None and high is None:
            raise ConfigError(f"{path}.match must include at least one matcher")
        if low is not None and high is not None and low > high:
            raise ConfigError(f"{path}.match.modelContextWindowMin must be <= modelContextWindowMax")
        threshold = _js_number(entry.get("contextThreshold"))
        if threshold is None or threshold < 0 or threshold > 1:
            raise ConfigError(
                f"{path}.contextThreshold must be a finite number between 0 and 1 (got {entry.get('contextThreshold')!r})"
            )
        rules.append(
            ThresholdOverride(
                context_threshold=threshold,
                model=model,
                model_context_window_min=low,
                model_context_window_max=high,
                session_pattern=pattern,
                fresh_tail_count=_override_positive(entry, "freshTailCount", f"{path}.freshTailCount"),
                leaf_chunk_tokens=_override_positive(entry, "leafChunkTokens", f"{path}.leafChunkTokens"),
                name=_to_str(entry.get("name")),
            )
        )
    return tuple(rules)


