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
      len(regexp_extract_all(t, '[{_CJK}]')) * 1.5
    + len(regexp_extract_all(t, '[{_SUPPLEMENTARY_NOT_CJK}]')) * 2.0
    + (length(t)
       - len(regexp_extract_all(t, '[{_CJK}]'))
       - len(regexp_extract_all(t, '[{_SUPPLEMENTARY_NOT_CJK}]'))) * 0.25
  ) AS INTEGER)
END;
-- DuckDB evaluates every CASE branch over the whole vector, so bulk loads use the ASCII-only
-- form (NULL for other text) and fill the rest with an UPDATE over just those rows.
CREATE OR REPLACE TEMP MACRO lcm_estimate_tokens_ascii(t) AS
CASE WHEN strlen(t) = length(t) THEN CAST(ceil(length(t) / 4) AS INTEGER) END;
"""


def fill_token_estimates_sql(table: str, where: str) -> str:
    """UPDATE filling ``token_estimate`` where the ASCII-only bulk form left NULL."""
    return (
        f"UPDATE {table} SET token_estimate = lcm_estimate_tokens(content) "
        f"WHERE token_estimate IS NULL AND content IS NOT NULL AND {where}"
    )


def install_token_macro(con: Any) -> None:
    """Define ``lcm_estimate_tokens`` on this connection (temporary, never stored)."""
    con.execute(MACRO_SQL)
