"""The one bridge from the cost model to litellm's offline cost map.

litellm is imported with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` so it reads the map bundled
with the package instead of downloading one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lcm_lab.cost.prices import Prices, prices_from_cost_map


def litellm_cost_map() -> Mapping[str, Mapping[str, Any]]:
    """``litellm.model_cost``, read offline."""
    # lazy: importing litellm is slow and the core never needs it; imported the one way the lab
    # does (offline price map, its import-time deprecation noise silenced)
    from lcm_lab.summarizers.provider import import_litellm

    model_cost: Mapping[str, Mapping[str, Any]] = import_litellm().model_cost
    return model_cost


def load_prices(model: str) -> Prices:
    """Prices of ``model`` from litellm's offline cost map (``UnknownModelError`` names a missing one)."""
    return prices_from_cost_map(model, litellm_cost_map())
