"""Quality scores for replays and loaded lcm.db conversations (pure: no duckdb, no litellm).

Offline metrics run on every replay (:func:`lcm_lab.metrics.score.score_replay`); LLM-judged
metrics (:mod:`lcm_lab.metrics.judge`) need a configured judge model. Definitions: docs/metrics.md.
"""

from lcm_lab.metrics.base import Score

__all__ = ["Score"]
