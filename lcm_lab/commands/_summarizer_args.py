"""Summarizer options shared by every command that has summaries written (``replay``, ``cost``,
``compare-versions``, ``whatif rewrite``; the CLI's side of :mod:`lcm_lab.summarizers`):
``--summarizer``, ``--model``, ``--api-base``, the ledger cache mode, prompts, timeouts, retries,
sampling and the spend guard."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from lcm_lab.cli import (
    non_negative_count,
    non_negative_number,
    nonempty,
    path_argument,
    positive_count,
    positive_number,
)
from lcm_lab.errors import OptionError
from lcm_lab.summarizers import DEFAULT_SUMMARIZER, SUMMARIZER_NAMES, SummarizerConfigError, get_summarizer

if TYPE_CHECKING:
    from lcm_lab.engine.protocol import Summarizer
    from lcm_lab.store.core import LabStore


def add_summarizer_arguments(parser: argparse.ArgumentParser, description: str | None = None,
                             summarizer_help: str = f"who writes the summaries (default: {DEFAULT_SUMMARIZER})") -> None:  # fmt: skip
    """Add ``--summarizer``, ``--model``, ``--api-base``, ``--concurrency``, ``--cache``, ``--prompts`` …
    (``description``: what the group is for, where it is not the command's own summaries)."""
    group = parser.add_argument_group("summarizer", description)
    group.add_argument("--summarizer", choices=SUMMARIZER_NAMES, default=DEFAULT_SUMMARIZER, help=summarizer_help)
    group.add_argument("--model", type=nonempty, default=None, help="litellm model, e.g. openai/gpt-4o-mini, anthropic/claude-3-5-haiku-latest, ollama/llama3")
    group.add_argument("--api-base", default=None, metavar="URL", type=api_base_url, help="OpenAI-compatible endpoint (litellm api_base)")
    group.add_argument("--concurrency", type=positive_count, default=16, metavar="N", help="model calls in flight at once (default 16)")
    group.add_argument("--cache", choices=("off", "read", "write", "readwrite"), default="readwrite",
                       help="ledger cache mode for model calls (default readwrite)")
    group.add_argument("--prompts", default=None, type=path_argument, metavar="DIR", help="prompt template directory (lcm-tui export layout)")
    group.add_argument("--summary-timeout-ms", type=positive_count, default=60_000, metavar="MS", help="per-call timeout (default 60000)")
    group.add_argument("--max-retries", type=non_negative_count, default=3, metavar="N", help="retries on 429/5xx (default 3; 0: none)")
    group.add_argument("--temperature", type=non_negative_number, default=None)
    group.add_argument("--seed", type=int, default=None)
    group.add_argument("--reasoning-effort", default=None, choices=("minimal", "low", "medium", "high"))
    group.add_argument("--max-calls-per-window", type=positive_count, default=None, metavar="N", help="spend guard: model calls per window")
    group.add_argument("--window-seconds", type=positive_number, default=600.0, metavar="S", help="spend guard window (default 600)")
    group.add_argument("--max-cost-usd", type=positive_number, default=None, metavar="USD", help="spend guard: dollars per run")


_LITELLM_ONLY = ("model", "api_base", "prompts", "temperature", "seed", "reasoning_effort", "max_calls_per_window", "max_cost_usd")


def api_base_url(text: str) -> str:
    """argparse type: an http(s) URL with a host, e.g. ``http://127.0.0.1:8000/v1``
    (:func:`lcm_lab.summarizers.provider.api_base_problem`; a password in it is never echoed).

    >>> api_base_url("http://127.0.0.1:8000/v1")
    'http://127.0.0.1:8000/v1'
    >>> api_base_url("localhost:8000")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: 'localhost:8000' is not an http(s) URL with a host (e.g. http://127.0.0.1:8000/v1)
    """
    from lcm_lab.summarizers.provider import api_base_problem

    problem = api_base_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text.strip()


def named_summarizer(args: argparse.Namespace) -> str | None:
    """The summarizer the options name when ``--summarizer`` has no default (``whatif rewrite``,
    ``report``): ``--model`` alone means litellm; ``None`` when neither is given.

    >>> named_summarizer(argparse.Namespace(summarizer=None, model="openai/x", api_base=None, prompts=None))
    'litellm'
    """
    if args.model and args.summarizer not in (None, "litellm"):
        raise OptionError(f"--summarizer {args.summarizer} and --model {args.model}: choose one")
    if not args.model and (args.api_base or args.prompts):
        raise OptionError("--api-base and --prompts apply to --model")
    name: str | None = args.summarizer or ("litellm" if args.model else None)
    given = [f"--{opt.replace('_', '-')}" for opt in _LITELLM_ONLY if getattr(args, opt, None) is not None]
    if name is None and given:
        raise SummarizerConfigError(f"{', '.join(given)}: these options apply only to --model")
    return name


def summarizer_from_args(args: argparse.Namespace, store: LabStore | None = None, run_id: str | None = None) -> Summarizer:
    """The summarizer the parsed CLI options describe (see :func:`add_summarizer_arguments`).

    For ``litellm`` the ledger lives in ``store``, else in the store ``--db`` or ``$LCM_LAB_HOME``
    names, else in memory (:func:`~lcm_lab.store.core.scratch_store`: a command that saves
    nothing creates no store). Options that
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
        from lcm_lab.store import scratch_store

        store = scratch_store(getattr(args, "db", None))
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
