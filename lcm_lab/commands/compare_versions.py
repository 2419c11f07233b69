"""``lcm-lab compare-versions INPUT``: replay one conversation under several lossless-claw versions
with the same settings and show what an upgrade changes for the model.

Per engine: turns whose sent context differs from the first version's (in bytes and in shape),
summarizer calls, summaries, clamped and degraded turns, summaries sent per turn, sent tokens; then
every headline side by side with its 95% interval and the difference from the first version with a
paired interval (the same facts / QA items resampled for both). ``--table`` (the default) prints
those two tables and the turns that differ; ``--csv`` prints one row per turn (each engine's path,
clamp, summaries sent, tokens, and whether it differs); ``--json`` one object with everything
(``lab.compare_versions(...).to_dict()``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lcm_lab.cli import existing_file, nonempty, path_argument, positive_int, print_json


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from lcm_lab.engine.versions import ENGINE_VERSIONS

    parser = subparsers.add_parser(
        "compare-versions",
        help="what an upgrade changes: the same conversation and settings under two lossless-claw versions",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", metavar="INPUT", type=existing_file, help="session JSONL, LoCoMo JSON, Claude Code JSONL or lcm.db (.gz ok)")
    parser.add_argument("--config", type=path_argument, metavar="CONFIG.json", help="lossless-claw plugin config keys or an openclaw.json (default: the plugin defaults)")
    parser.add_argument("--token-budget", type=positive_int, default=128_000, metavar="N", help="model context budget (default 128000)")
    parser.add_argument("--versions", nargs="+", default=list(ENGINE_VERSIONS), metavar="V",
                        help=f"engine versions, the first is the baseline (default: {' '.join(ENGINE_VERSIONS)})")
    parser.add_argument("--conversation", type=nonempty, default=None, metavar="ID",
                        help="which conversation: index in a multi-conversation file, or lcm.db conversation_id")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true", help="print only JSON: one object (versions, totals, headlines, turns)")
    group.add_argument("--table", dest="table_format", action="store_const", const="table", default="table",
                       help="print the totals, the headlines and the differing turns as tables (default)")
    group.add_argument("--csv", dest="table_format", action="store_const", const="csv", help="print one CSV row per turn")
    parser.add_argument("--db", type=path_argument, metavar="FILE", default=None, help="lab store for the ledger of model calls and an lcm.db input "
                        "(default: $LCM_LAB_HOME's store if set, else in memory; nothing is saved)")
    from lcm_lab.commands._summarizer_args import add_summarizer_arguments

    add_summarizer_arguments(parser)
    parser.set_defaults(func=run)


def _is_lcm_db(path: Path) -> bool:
    from lcm_lab.io.transcripts import LCM_DB, detect_format

    plain = path.with_suffix("") if path.suffix == ".gz" else path
    return (path.suffix == ".gz" and plain.suffix in (".db", ".sqlite")) or (path.suffix != ".gz" and detect_format(path) == LCM_DB)


def _source(args: argparse.Namespace) -> tuple[Any, int | None]:
    """What to hand ``compare_versions``: the transcript path and the conversation index, or a
    conversation of an lcm.db (loaded through the lab store)."""
    from lcm_lab.errors import OptionError

    path = Path(args.input)
    if not _is_lcm_db(path):
        if args.conversation is None:
            return path, None
        try:
            return path, int(args.conversation)
        except ValueError:
            raise OptionError(f"--conversation {args.conversation}: expected an index for {path}") from None
    from lcm_lab.commands.replay import _conversations
    from lcm_lab.store import scratch_store

    store = scratch_store(args.db)
    found = _conversations(args, store)
    if len(found) != 1:
        raise OptionError(f"{path} holds {len(found)} conversations; pick one with --conversation ID")
    return found[0][0], None


def run(args: argparse.Namespace) -> int:
    from lcm_lab.commands._summarizer_args import summarizer_from_args
    from lcm_lab.io.tables import format_table
    from lcm_lab.summarizers.call_checks import collected_call_warnings
    from lcm_lab.upgrade import compare_versions
    from lcm_lab.upgrade._render import verdict_lines

    config = None
    if args.config:
        from lcm_lab.io.config_files import load_config_file

        config = load_config_file(args.config, environ={})
    source, index = _source(args)
    summarizer = summarizer_from_args(args)
    with collected_call_warnings():  # the library's warning, said once below as the result's warnings
        cmp = compare_versions(source, config, versions=args.versions, token_budget=args.token_budget,
                               summarizer=summarizer, conversation=index)  # fmt: skip
    for warning in cmp.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        print_json(cmp.to_dict())
        return 0
    if args.table_format == "csv":
        wide = cmp.wide_turns_df()
        print(format_table(wide.to_dict("records"), list(wide.columns), fmt="csv"), end="")
        return 0
    quantities = [key for key in cmp.totals[0] if key not in ("engine", "paths")]
    rows = [{"quantity": key, **{f"lossless-claw {t['engine']}": t[key] for t in cmp.totals}} for key in quantities]
    print(f"{cmp.title or cmp.session_id} at {cmp.token_budget} tokens, summarizer {cmp.summarizer}\n")
    print(format_table(rows))
    print()
    keys = ("metric", "engine", "value", "ci_low", "ci_high", "n", "unit", "diff", "diff_ci_low", "diff_ci_high", "paired")
    print(format_table([{k: h[k] for k in keys} for h in cmp.headlines], list(keys)))
    for engine in cmp.versions[1:]:
        turns = cmp.differing_turns(engine)
        print(f"\nturns where {engine} sends a different context than {cmp.baseline}: {', '.join(map(str, turns)) or 'none'}")
    print()
    for line in verdict_lines(cmp):
        print(line)
    return 0
