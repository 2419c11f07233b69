"""Per-token prices of a main model, read from a litellm-style cost map (injected, never fetched).

The cost map is ``litellm.model_cost`` (offline with ``LITELLM_LOCAL_MODEL_COST_MAP=True``);
this module only reads the mapping it is given, so the cost model stays free of litellm.
:func:`lcm_lab.cost.litellm_prices.load_prices` is the one place that imports it.

>>> cost_map = {"m": {"litellm_provider": "anthropic", "input_cost_per_token": 5e-06,
...   "output_cost_per_token": 2.5e-05, "cache_read_input_token_cost": 5e-07,
...   "cache_creation_input_token_cost": 6.25e-06}}
>>> p = prices_from_cost_map("m", cost_map)
>>> p.provider, round(p.dollars(read=1000, write=1000, uncached=10, output=100), 6)
('anthropic', 0.0093)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lcm_lab.cost.cache import Provider
from lcm_lab.errors import UnknownNameError

LONG_CONTEXT_TOKENS = 200_000  # litellm's ``*_above_200k_tokens`` tier


class UnknownModelError(UnknownNameError):
    """The main model has no entry (or no input price) in the cost map."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Prices:
    """USD per token. ``cache_read``/``cache_write`` are ``None`` when the model has no cache price
    (then nothing is cached); ``*_long`` apply above :data:`LONG_CONTEXT_TOKENS` prompt tokens."""

    model: str
    provider: Provider
    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    cache_write_1h: float | None = None
    input_long: float | None = None
    output_long: float | None = None
    cache_read_long: float | None = None
    cache_write_long: float | None = None

    def dollars(self, *, read: int = 0, write: int = 0, uncached: int = 0, output: int = 0, write_1h: int = 0) -> float:
        """Price of one call (``write`` includes ``write_1h``)."""
        long = read + write + uncached > LONG_CONTEXT_TOKENS
        pick = (lambda short, high: high if long and high is not None else short)  # noqa: E731
        cache_read = pick(self.cache_read, self.cache_read_long) or 0.0
        cache_write = pick(self.cache_write, self.cache_write_long) or 0.0
        one_hour = self.cache_write_1h if self.cache_write_1h is not None else cache_write
        return (
            uncached * pick(self.input, self.input_long)
            + output * pick(self.output, self.output_long)
            + read * cache_read
            + (write - write_1h) * cache_write
            + write_1h * one_hour
        )


def _provider(entry: Mapping[str, Any]) -> Provider:
    if entry.get("cache_read_input_token_cost") is None:
        return "none"
    name = str(entry.get("litellm_provider", ""))
    if entry.get("cache_creation_input_token_cost") is not None or "anthropic" in name or "bedrock" in name or "vertex" in name:
        return "anthropic"  # explicit breakpoints, paid writes
    return "openai"  # automatic prefix caching, free writes


def _lookup(model: str, cost_map: Mapping[str, Mapping[str, Any]]) -> tuple[str, Mapping[str, Any]]:
    bare = model.split("/", 1)[-1]
    # Last candidate: the same Anthropic model's Bedrock entry, for first-party ids the map no
    # longer lists (e.g. claude-sonnet-4-20250514); Prices.model names the entry actually used.
    candidates = [model, bare, f"anthropic/{model}", f"openai/{model}", f"anthropic.{bare}-v1:0"]
    for name in candidates:
        entry = cost_map.get(name)
        if entry and entry.get("input_cost_per_token") is not None:
            return name, entry
    close = sorted(k for k in cost_map if model.split("/")[-1][:12].lower() in k.lower())[:8]
    hint = f" Close names in the map: {', '.join(close)}." if close else ""
    raise UnknownModelError(
        f"model {model!r} has no price in litellm's cost map.{hint} Pass prices explicitly, e.g. "
        "Prices(model=..., provider='anthropic', input=..., output=..., cache_read=..., cache_write=...) "
        "in Python, or --main-model with a model the map knows on the command line."
    )


def prices_from_cost_map(model: str, cost_map: Mapping[str, Mapping[str, Any]]) -> Prices:
    """Prices of ``model`` from a litellm cost map; :class:`UnknownModelError` names a missing model."""
    name, entry = _lookup(model, cost_map)

    def get(key: str) -> float | None:
        value = entry.get(key)
        return float(value) if isinstance(value, int | float) else None

    return Prices(
        model=name,
        provider=_provider(entry),
        input=float(entry["input_cost_per_token"]),
        output=get("output_cost_per_token") or 0.0,
        cache_read=get("cache_read_input_token_cost"),
        cache_write=get("cache_creation_input_token_cost"),
        cache_write_1h=get("cache_creation_input_token_cost_above_1hr"),
        input_long=get("input_cost_per_token_above_200k_tokens"),
        output_long=get("output_cost_per_token_above_200k_tokens"),
        cache_read_long=get("cache_read_input_token_cost_above_200k_tokens"),
        cache_write_long=get("cache_creation_input_token_cost_above_200k_tokens"),
    )
