"""What-if runs: which run a derived run was made from, and by which edit.

One row per derived run (``lcm_lab.whatif``): its parent run, the operation (``dissolve``,
``rewrite``) and the edit as JSON (summary ids, depth, summarizer, model, prompt set). The
derived run itself is an ordinary row of ``replays`` (payload included), so it rebuilds like any run.
"""

from __future__ import annotations

from typing import Any


def up(con: Any) -> None:
    con.execute(
        """
        CREATE TABLE run_edits (
            run_id VARCHAR PRIMARY KEY,
            parent_run_id VARCHAR NOT NULL,
            op VARCHAR NOT NULL,
            edit JSON NOT NULL,
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
        )
        """
    )
