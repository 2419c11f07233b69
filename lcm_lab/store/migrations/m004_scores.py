"""Quality scores: one row per measured value (``lcm_lab.metrics.Score``).

``run_id`` names what was scored: a replay's run id or a label for a loaded conversation. Scores
are replaced per ``(run_id, scope, scope_id, metric)``; ``value`` is NULL when the metric is
undefined for that item (the reason is in ``details``).
"""

from __future__ import annotations

from typing import Any


def up(con: Any) -> None:
    con.execute(
        """
        CREATE TABLE scores (
            run_id VARCHAR NOT NULL,
            scope VARCHAR NOT NULL,
            scope_id VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            value DOUBLE,
            details JSON NOT NULL DEFAULT '{}',
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            PRIMARY KEY (run_id, scope, scope_id, metric)
        )
        """
    )
    con.execute("CREATE INDEX scores_metric_idx ON scores (metric, scope)")
