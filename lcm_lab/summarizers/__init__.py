"""Summarizers: the only place in lcm_lab that talks to models.

* ``stub-v1`` / ``legacy-golden-10.1`` — the reference-run stubs (engine fidelity);
* ``offline`` — deterministic extractive summaries, no model (the default);
* ``litellm`` — any litellm model, through the prompt sets and the call ledger.

>>> get_summarizer("offline").name
'offline'
>>> try:
...     get_summarizer("nope")
... except SummarizerConfigError as exc:
...     print(exc)
unknown summarizer 'nope'; choose one of: offline, stub-v1, legacy-golden-10.1, litellm
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from lcm_lab.engine.protocol import Summarizer
from lcm_lab.errors import UserError
from lcm_lab.summarizers.offline import OfflineSummarizer
from lcm_lab.summarizers.stub import LegacyGoldenSummarizer, StubV1Summarizer, canon_file_ids

if TYPE_CHECKING:
    from lcm_lab.store.core import LabStore
    from lcm_lab.summarizers.litellm_summarizer import LiteLLMSummarizer

SUMMARIZER_NAMES: tuple[str, ...] = ("offline", "stub-v1", "legacy-golden-10.1", "litellm")
DEFAULT_SUMMARIZER = "offline"


class SummarizerConfigError(UserError, ValueError):
    """A summarizer was asked for with options that do not apply or are missing."""


def get_summarizer(name: str, **options: Any) -> Summarizer:
    """Build a summarizer by registry name; ``options`` go to its constructor.

    ``get_summarizer("litellm", model="openai/gpt-4o-mini", ledger=Ledger(store))``.
    """
    if name == "offline":
        return OfflineSummarizer(**options)
    if name in ("stub-v1", "legacy-golden-10.1"):
        if options:
            raise SummarizerConfigError(f"summarizer {name!r} takes no options (got {', '.join(sorted(options))})")
        return StubV1Summarizer() if name == "stub-v1" else LegacyGoldenSummarizer()
    if name == "litellm":
        if not options.get("model"):
            raise SummarizerConfigError("summarizer 'litellm' needs a model, e.g. model='openai/gpt-4o-mini'")
        from lcm_lab.summarizers.litellm_summarizer import LiteLLMSummarizer

        model = options.pop("model")
        return LiteLLMSummarizer(model, **options)
    raise SummarizerConfigError(f"unknown summarizer {name!r}; choose one of: {', '.join(SUMMARIZER_NAMES)}")


def add_summarizer_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--summarizer``, ``--model``, ``--api-base``, ``--concurrency``, ``--cache``, ``--prompts`` …"""
    group = parser.add_argument_group("summarizer")
    group.add_argument("--summarizer", choices=SUMMARIZER_NAMES, default=DEFAULT_SUMMARIZER,
                       help=f"who writes the summaries (default: {DEFAULT_SUMMARIZER})")
    group.add_argument("--model", default=None, help="litellm model, e.g. openai/gpt-4o-mini, anthropic/claude-3-5-haiku-latest, ollama/llama3")
    group.add_argument("--api-base", default=None, metavar="URL", help="OpenAI-compatible endpoint (litellm api_base)")
    group.add_argument("--concurrency", type=int, default=16, metavar="N", help="model calls in flight at once (default 16)")
    group.add_argument("--cache", choices=("off", "read", "write", "readwrite"), default="readwrite",
                       help="ledger cache mode for model calls (default readwrite)")
    group.add_argument("--prompts", default=None, metavar="DIR", help="prompt template directory (lcm-tui export layout)")
    group.add_argument("--summary-timeout-ms", type=int, default=60_000, metavar="MS", help="per-call timeout (default 60000)")
    group.add_argument("--max-retries", type=int, default=3, metavar="N", help="retries on 429/5xx (default 3)")
    group.add_argument("--temperature", type=float, default=None)
    group.add_argument("--seed", type=int, default=None)
    group.add_argument("--reasoning-effort", default=None, choices=("minimal", "low", "medium", "high"))
    group.add_argument("--max-calls-per-window", type=int, default=None, metavar="N", help="spend guard: model calls per window")
    group.add_argument("--window-seconds", type=float, default=600.0, metavar="S", help="spend guard window (default 600)")
    group.add_argument("--max-cost-usd", type=float, default=None, metavar="USD", help="spend guard: dollars per run")


_LITELLM_ONLY = ("model", "api_base", "prompts", "temperature", "seed", "reasoning_effort", "max_calls_per_window", "max_cost_usd")


def summarizer_from_args(args: argparse.Namespace, store: LabStore | None = None, run_id: str | None = None) -> Summarizer:
    """The summarizer the parsed CLI options describe (see :func:`add_summarizer_arguments`).

    For ``litellm`` the ledger lives in ``store`` (or the store named by ``--db``). Options that
    only apply to ``litellm`` are rejected for the other summarizers rather than ignored.
    """
    name = args.summarizer
    if name != "litellm":
        given = [f"--{opt.replace('_', '-')}" for opt in _LITELLM_ONLY if getattr(args, opt, None) is not None]
        if given:
            raise SummarizerConfigError(f"{', '.join(given)}: these options apply only to --summarizer litellm (got --summarizer {name})")
        return get_summarizer(name)
    if not args.model:
        raise SummarizerConfigError("--summarizer litellm needs --model (e.g. openai/gpt-4o-mini or ollama/llama3)")
    from lcm_lab.store.ledger import Ledger

    if store is None:
        from lcm_lab.store import open_store

        store = open_store(getattr(args, "db", None))
    from lcm_lab.summarizers.litellm_summarizer import LiteLLMSummarizer

    return LiteLLMSummarizer(
        args.model,
        api_base=args.api_base,
        prompts=args.prompts,
        ledger=Ledger(store, args.cache),
        run_id=run_id,
        concurrency=args.concurrency,
        summary_timeout_ms=args.summary_timeout_ms,
        max_retries=args.max_retries,
        temperature=args.temperature,
        seed=args.seed,
        reasoning_effort=args.reasoning_effort,
        max_calls_per_window=args.max_calls_per_window,
        window_seconds=args.window_seconds,
        max_cost_usd=args.max_cost_usd,
    )


def __getattr__(name: str) -> Any:
    if name == "LiteLLMSummarizer":
        from lcm_lab.summarizers.litellm_summarizer import LiteLLMSummarizer

        return LiteLLMSummarizer
    raise AttributeError(f"module 'lcm_lab.summarizers' has no attribute {name!r}")


__all__ = [
    "DEFAULT_SUMMARIZER",
    "SUMMARIZER_NAMES",
    "LegacyGoldenSummarizer",
    "LiteLLMSummarizer",
    "OfflineSummarizer",
    "StubV1Summarizer",
    "SummarizerConfigError",
    "add_summarizer_arguments",
    "canon_file_ids",
    "get_summarizer",
    "summarizer_from_args",
]
