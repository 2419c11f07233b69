"""The plugin's token estimator as a DuckDB macro, so millions of rows are estimated in SQL.

``lcm_estimate_tokens(text)`` equals :func:`lcm_lab.engine.tokens.estimate_tokens` (tested):
``ceil(0.25·other + 1.5·cjk + 2·supplementary-non-CJK)`` over code points.
"""

from __future__ import annotations

from typing import Any

_CJK = (
    r"\x{3000}-\x{30FF}\x{3400}-\x{4DBF}\x{4E00}-\x{9FFF}\x{AC00}-\x{D7AF}\x{FF00}-\x{FFEF}"
    r"\x{20000}-\x{2A6DF}\x{2A700}-\x{2EBEF}"
)
_SUPPLEMENTARY_NOT_CJK = r"\x{10000}-\x{1FFFF}\x{2A6E0}-\x{2A6FF}\x{2EBF0}-\x{10FFFF}"

MACRO_SQL = f"""
CREATE OR REPLACE TEMP MACRO lcm_estimate_tokens(t) AS
CASE
  WHEN t IS NULL THEN NULL
  WHEN strlen(t) = length(t) THEN CAST(ceil(length(t) / 4) AS INTEGER)
  ELSE CAST(ceil(
      length(regexp_replace(t, '[^{_CJK}]', '', 'g')) * 1.5
    + length(regexp_replace(t, '[^{_SUPPLEMENTARY_NOT_CJK}]', '', 'g')) * 2.0
    + (length(t)
       - length(regexp_replace(t, '[^{_CJK}]', '', 'g'))
       - length(regexp_replace(t, '[^{_SUPPLEMENTARY_NOT_CJK}]', '', 'g'))) * 0.25
  ) AS INTEGER)
END
"""


def install_token_macro(con: Any) -> None:
    """Define ``lcm_estimate_tokens`` on this connection (temporary, never stored)."""
    con.execute(MACRO_SQL)
