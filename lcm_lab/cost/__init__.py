"""What a setting costs: a provider prompt-cache model per API call, validated on recorded usage.

* :mod:`.serialise` — a request as the provider sees it (ordered content blocks, stable keys);
* :mod:`.cache` — provider cache rules (Anthropic breakpoints/TTL/minimum length, OpenAI
  automatic prefix caching) replayed call by call; pure;
* :mod:`.prices` — per-token prices from an injected litellm cost map (:mod:`.litellm_prices`
  is the one module that imports litellm);
* :mod:`.model` — requests → priced calls; :mod:`.calibrate` — the constants transcripts lack,
  fitted on the first 10% of calls and frozen; :mod:`.validate` — recorded vs predicted usage;
* :mod:`.replay_cost` — the cost of any replay, per call and per session, and its headline scores.

The full model and its validation: ``docs/cost.md``.
"""

from lcm_lab.cost.cache import CacheRules, CacheUsage, Prompt, PromptCache
from lcm_lab.cost.model import Calibration, CallCost, Request, simulate
from lcm_lab.cost.prices import Prices, UnknownModelError, prices_from_cost_map

__all__ = [
    "CacheRules",
    "CacheUsage",
    "Calibration",
    "CallCost",
    "Prices",
    "Prompt",
    "PromptCache",
    "Request",
    "UnknownModelError",
    "prices_from_cost_map",
    "simulate",
]
