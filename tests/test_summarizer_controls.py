"""Control summarizers: same size as a real summary, deterministic, and content-free by design."""

from __future__ import annotations

import pytest

from lcm_lab.engine.protocol import SummaryRequest
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.summarizers.controls import (
    POINTER_PREFIX,
    BareListSummarizer,
    FixedTextSummarizer,
    OtherConversationSummarizer,
    PointerOnlySummarizer,
    control_tokens,
)

SOURCE = "\n\n".join(
    f"[2026-03-01 10:{i:02d} UTC | user]\nWe asked Alice Moreau to move src/app{i}.py after `npm test` failed with TypeError: x is undefined."
    for i in range(20)
)
DONOR = " ".join(f"Caroline told Melanie about the parade number {i} in Sweden." for i in range(200))


def _req(target: int = 120) -> SummaryRequest:
    return SummaryRequest(SOURCE, "leaf", 0, False, None, target, target + 2048)


@pytest.mark.parametrize("summarizer", [FixedTextSummarizer(), BareListSummarizer(), PointerOnlySummarizer(), OtherConversationSummarizer(DONOR)])
def test_controls_fit_the_size_and_are_deterministic(summarizer: object) -> None:
    req = _req()
    text = summarizer.summarize(req).text  # type: ignore[attr-defined]
    assert text == summarizer.summarize(req).text  # type: ignore[attr-defined]
    assert 0 < estimate_tokens(text) <= control_tokens(req) == 120


def test_controls_carry_what_they_claim() -> None:
    req = _req(400)
    bare = BareListSummarizer().summarize(req).text
    assert "Alice Moreau" in bare and "src/app3.py" in bare and "npm test" in bare
    assert " asked " not in bare  # a list, not statements
    pointer = PointerOnlySummarizer().summarize(req).text
    assert pointer.startswith(POINTER_PREFIX) and "\n" not in pointer and "src/app0.py" in pointer
    fixed = FixedTextSummarizer().summarize(req).text
    assert "Alice" not in fixed and "src/" not in fixed
    other = OtherConversationSummarizer(DONOR).summarize(req).text
    assert "Caroline" in other and "Alice" not in other


def test_other_conversation_needs_a_donor() -> None:
    with pytest.raises(ValueError, match="non-empty donor"):
        OtherConversationSummarizer("  ")
