"""The host's side of a replay: the turn split, the live messages and prompts the host passes,
the turn-by-turn driver (:func:`~lcm_lab.engine.replay.driver.replay`), the reference trace format
and what-if edits of a finished replay."""
