"""The plugin's behavioural quirks (spec §4.16) that a replay reproduces by default.

``fidelity="faithful"`` copies each of them, so a replay behaves exactly as lossless-claw does;
``fidelity="fixed"`` switches every quirk listed with a fix to the corrected behaviour, so a
researcher can measure what fixing it would change. The code marks each site with ``QUIRK <n>``.
"""

from __future__ import annotations

from typing import NamedTuple


class Quirk(NamedTuple):
    number: int
    faithful: str
    fixed: str | None  # None: reproduced always (a design choice, or outside the engine)


QUIRKS: tuple[Quirk, ...] = (
    Quirk(1, "summary ids are random (sum_ + 16 hex of a random nonce)",
          None),  # the lab's ids are deterministic in both modes; replays compare structurally
    Quirk(2, "a threshold sweep summarises the whole raw backlog outside the fresh tail",
          "the leaf phase stops once the running total is at or under the threshold"),
    Quirk(3, "the first leaf pass of each sweep gets no previous context",
          "the first leaf pass gets the two summaries preceding its chunk"),
    Quirk(4, "compactUntilUnder still compacts when the total equals the target",
          "a total equal to the target counts as under it"),
    Quirk(5, "condensation candidates use the configured fresh tail, ignoring per-call overrides",
          "condensation uses the same (overridden) fresh tail as leaf selection"),
    Quirk(6, "leaf token accounting adds rendered sender-identity tokens absent from token_count",
          "per-message tokens are the stored token_count only"),
    Quirk(7, "tool-call-only turns reach the summarizer as the line 'null'; the data-URL pattern "
             "also swallows the words after a base64 payload",
          "NULL part text is skipped (tool arguments are described instead) and data URLs end at "
          "the first non-base64 character"),
    Quirk(8, "the hard cap uses the configured target × overage factor, not the call's prompt target",
          "the hard cap uses the prompt target of the call × overage factor"),
    Quirk(9, "aggressive mode changes only the leaf prompt (condensed prompts ignore it)",
          None),  # a property of the prompts (lcm_lab.prompts), not of the engine
)  # fmt: skip


def describe() -> str:
    """A table of the quirks, faithful vs fixed behaviour."""
    lines = []
    for quirk in QUIRKS:
        fixed = quirk.fixed or "(no switch)"
        lines.append(f"{quirk.number}. faithful: {quirk.faithful}\n   fixed: {fixed}")
    return "\n".join(lines)
