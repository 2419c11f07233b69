"""What-if edits in the lab, never in the user's database: each edit is a new run derived from the
original (:func:`dissolve`, :func:`rewrite`, :func:`reassemble`; :func:`compare` and
:func:`edits_df` read them back). The implementation is :mod:`lcm_lab.whatif._edits`."""

from lcm_lab.whatif._edits import (
    EditError,
    WhatIf,
    compare,
    context_diff,
    dissolve,
    edits_df,
    reassemble,
    rewrite,
)

__all__ = ["EditError", "WhatIf", "compare", "context_diff", "dissolve", "edits_df", "reassemble", "rewrite"]
