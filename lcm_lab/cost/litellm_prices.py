"""The one bridge from the cost model to litellm's offline cost map.

Set ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (the lab's tests and CLI do) so litellm reads the map
bundled with the package instead of downloading one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from lcm_lab.cost.prices import Prices, prices_from_cost_map


def litellm_cost_map() -> Mapping[str, Mapping[str, Any]]:
    """``litellm.model_cost``, read offline."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # lazy: importing litellm is slow and the core never needs it

    return litellm.model_cost


def load_prices(model: str) -> Prices:
    """Prices of ``model`` from litellm's offline cost map (``UnknownModelError`` names a missing one)."""
    return prices_from_cost_map(model, litellm_cost_map())
