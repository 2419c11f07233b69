"""``lcm-lab expand --prompt Q (--query TEXT | --summary-id ID ...) [--max-tokens N] [--model M] [--json]``.

The plugin's ``lcm_expand_query``: finds summaries (``--query``, full text) or takes
``--summary-id``, walks the DAG down to source messages within ``--max-expand-tokens``
(``LCM_MAX_EXPAND_TOKENS``, default 4000) and answers within ``--max-tokens`` (default 2000).
With ``--model`` a litellm model answers through the call ledger; without one the offline
deterministic answerer quotes the best source passages (its answers say so).
"""

from __future__ import annotations

import argparse
from typing import Any

from lcm_lab.cli import nonempty, positive_count, print_json
from lcm_lab.commands._recall_args import add_scope_arguments, run_recall_command
from lcm_lab.commands._summarizer_args import api_base_url
from lcm_lab.engine.tokens import MAX_TOKEN_BUDGET
from lcm_lab.io import env


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "expand", help="answer a question from the sources under matching summaries (lcm_expand_query)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--prompt", type=nonempty, required=True, help="the question")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--query", type=nonempty, default=None, help="full-text query that finds the summaries to expand")
    what.add_argument("--summary-id", type=nonempty, action="append", default=None, metavar="ID", help="summary to expand (repeatable)")
    add_scope_arguments(parser)
    parser.add_argument("--max-tokens", type=positive_count, default=2000, help="answer cap (default 2000)")
    parser.add_argument("--max-expand-tokens", type=positive_count, default=None,
                        help="source tokens read (default $LCM_MAX_EXPAND_TOKENS or 4000)")  # fmt: skip
    parser.add_argument("--model", type=nonempty, default=env.text("LCM_EXPANSION_MODEL"),
                        help="litellm model that answers (default $LCM_EXPANSION_MODEL; none: offline quoting)")  # fmt: skip
    parser.add_argument("--api-base", default=None, metavar="URL", type=api_base_url, help="OpenAI-compatible endpoint (litellm api_base)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    max_expand_tokens = _expand_tokens(args)  # checked before the store is opened

    def body(rec: Any, scope: dict[str, Any]) -> int:
        answerer: Any = None
        if args.model:
            from lcm_lab.recall_tools import ModelAnswerer
            from lcm_lab.store.ledger import Ledger

            answerer = ModelAnswerer(args.model, ledger=Ledger(rec.store), api_base=args.api_base)
        result = rec.expand_query(args.prompt, query=args.query, summary_ids=args.summary_id, max_tokens=args.max_tokens,
                                  max_expand_tokens=max_expand_tokens, answerer=answerer, **scope)  # fmt: skip
        if args.json:
            print_json(result.json())
            return 0
        print(result.answer)
        print(f"\n[{result.answerer}] cited {len(result.cited_ids)} messages from {result.expanded_summary_count} summaries, "
              f"{result.total_source_tokens} source tokens read{' (truncated)' if result.truncated else ''}"
              + (f"; {result.diagnostics['note']}" if "note" in result.diagnostics else ""))  # fmt: skip
        return 0

    return run_recall_command(args, body)


def _expand_tokens(args: argparse.Namespace) -> int:
    """``--max-expand-tokens``, else ``$LCM_MAX_EXPAND_TOKENS`` (checked: one line naming it), else 4000."""
    from lcm_lab.recall_tools.api import DEFAULT_EXPAND_TOKENS

    if args.max_expand_tokens is not None:
        return int(args.max_expand_tokens)
    return env.count("LCM_MAX_EXPAND_TOKENS", DEFAULT_EXPAND_TOKENS, maximum=MAX_TOKEN_BUDGET)
