"""The summarizer boundary: what the engine asks for and what it gets back.

The engine never talks to a model. It builds a :class:`SummaryRequest` for every pass and calls
whatever :class:`Summarizer` it was given (the reference stub, the offline summarizer, a litellm
model behind the call ledger, ...). Implementations live in :mod:`lcm_lab.summarizers`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from lcm_lab.errors import ModelError


@dataclass(frozen=True)
class SummaryRequest:
    """One summarizer call, with everything that may change its output.

    ``source_text`` is the exact, trimmed text of the pass (leaf source §4.6 or condensed
    source §4.10). ``depth`` is 0 for leaf calls and the *new* node's depth for condensed calls.
    ``previous_summary`` is ``None`` when the plugin passes no previous context.
    ``target_tokens``/``max_tokens`` follow spec §5.8.
    """

    source_text: str
    kind: Literal["leaf", "condensed", "observe"]  # "observe": a context strategy's own prompt (lcm_lab.strategies)
    depth: int
    aggressive: bool
    previous_summary: str | None
    target_tokens: int
    max_tokens: int
    custom_instructions: str = ""


@dataclass(frozen=True)
class SummaryResult:
    """What a summarizer returned. ``text`` may be empty (the engine then falls back)."""

    text: str
    model: str = "unknown"
    template_hash: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    cached: bool = False
    extra: dict[str, object] = field(default_factory=dict)


@runtime_checkable
class Summarizer(Protocol):
    """Anything with ``summarize(request) -> SummaryResult`` (or a plain ``str``)."""

    @property
    def name(self) -> str: ...  # read, never set: a class attribute or a property (the offline summarizer's says its settings)

    def summarize(self, request: SummaryRequest) -> SummaryResult | str: ...


class SummarizerAuthError(ModelError):
    """Provider authentication failed: the plugin aborts the pass and writes nothing."""


class SummarizerError(ModelError):
    """A summarizer stopped in a way the engine cannot recover from: the spend guard's limit was
    reached, litellm cannot use the model, a rewrite got nothing back. The user's to fix (a limit,
    a model name), so one line in the CLI (a :class:`~lcm_lab.errors.ModelError`)."""
