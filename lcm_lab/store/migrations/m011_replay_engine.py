"""Which lossless-claw engine version a run replayed: ``replays.engine``.

``0.15.3`` or ``1.0`` (:mod:`lcm_lab.engine.versions`) for LCM runs; NULL for runs of other context
strategies, which do not run lossless-claw. Every run saved before this column existed was a
0.15.3 replay (the only engine the lab had), and its payload has no ``engine`` field, which loads
as the default 0.15.3 — so earlier LCM rows get ``0.15.3`` here too.
"""

from __future__ import annotations

from typing import Any


def up(con: Any) -> None:
    con.execute("ALTER TABLE replays ADD COLUMN engine VARCHAR")
    con.execute("UPDATE replays SET engine = '0.15.3' WHERE strategy = 'lcm' OR strategy IS NULL")
