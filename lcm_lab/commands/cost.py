"""``lcm-lab cost``: what a setting costs with the provider's prompt cache.

``lcm-lab cost INPUT --strategy recorded`` prices what the recorded host actually sent and
validates the cache model against the transcript's own usage (constants calibrated on the first
10% of calls, errors on the rest; the held-out bill with its 90% interval and the intervals'
coverage over windows of 50 calls). ``--strategy lcm`` replays the transcript under
lossless-claw settings (``--config``, ``--token-budget``, summarizer options) and prices every
main-model call, next to no compaction at all and the recorded host: each bill is the expected
one with its 90% interval (cache misses the rules cannot predict, simulated), and the savings
against the references are paired (the same simulated misses for both). ``--validate`` prints the
validation tables of the bundled real sessions (or of the INPUTs given), as in ``docs/cost.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lcm_lab.cli import add_json_argument, path_argument, positive_int, print_json
from lcm_lab.errors import InputError, OptionError

STRATEGIES = ("lcm", "recorded")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cost",
        help="price a setting with the provider's prompt cache; validate against recorded usage",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("inputs", nargs="*", metavar="INPUT", help="session transcript (pi/OpenClaw or Claude Code JSONL)")
    parser.add_argument("--strategy", default="lcm", help="lcm (replay under --config) or recorded (what the host sent)")
    parser.add_argument("--main-model", default=None, metavar="M", help="price the main model as M (default: the transcript's model)")
    parser.add_argument("--token-budget", type=positive_int, default=128_000, metavar="N", help="lcm: model context budget (default 128000)")
    parser.add_argument("--config", type=path_argument, metavar="CONFIG.json", help="lcm: lossless-claw plugin config keys")
    parser.add_argument("--validate", action="store_true", help="validation table of the bundled real sessions (or INPUTs)")
    add_json_argument(parser, "one object per session (a list for several INPUTs or --validate)")
    parser.add_argument("--db", metavar="FILE", type=path_argument, default=None,
                        help="lab store for the ledger of model calls (default: $LCM_LAB_HOME's store if set, else in memory; "
                             "nothing is saved)")
    from lcm_lab.commands._summarizer_args import add_summarizer_arguments

    add_summarizer_arguments(parser)
    parser.set_defaults(func=run)


def _bundled() -> list[Path]:
    from lcm_lab.bundled import datasets_path
    from lcm_lab.cost.validate import BUNDLED_SESSIONS

    return [datasets_path(p) for p in BUNDLED_SESSIONS]


def _read(path: Path) -> Any:
    from lcm_lab.io.transcripts import read_transcript

    return read_transcript(path)  # a missing or unreadable file raises a UserError naming it


def _prices(model: str) -> Any:
    from lcm_lab.cost.litellm_prices import load_prices
    return load_prices(model)  # UnknownModelError (a UserError) names the model


def _check_usage(calls: Any, path: Path) -> None:
    """Say how many calls' recorded usage is skipped as unusable (one line; all of them: the error)."""
    from lcm_lab.cost.validate import bad_usage_warning

    warning = bad_usage_warning(calls, path.name)
    if warning is not None and all(call.usage_problem for call in calls):
        raise InputError(f"{warning}, so nothing is left to price")
    if warning is not None:
        print(f"warning: {warning}", file=sys.stderr)


def recorded_record(path: Path, main_model: str | None) -> dict[str, Any]:
    """Validation of one transcript as a JSON-ready dict."""
    from lcm_lab.cost.validate import session_model, validate_recorded, validation_record
    from lcm_lab.host import recorded_session_calls

    calls = recorded_session_calls(_read(path).conversations)
    if not calls:
        raise InputError(f"{path} records no model calls")
    _check_usage(calls, path)
    prices = _prices(main_model or session_model(calls))
    return validation_record(validate_recorded(calls, prices, session=path.name))


def lcm_record(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Cost of an LCM replay of one transcript, with its references, as a JSON-ready dict."""
    from lcm_lab.commands._summarizer_args import summarizer_from_args
    from lcm_lab.commands.replay import read_config
    from lcm_lab.cost.replay_cost import calibrate_conversation, reference_costs, session_cost
    from lcm_lab.cost.validate import session_model
    from lcm_lab.engine.replay.driver import replay
    from lcm_lab.host.recorded import recorded_calls
    from lcm_lab.summarizers.call_checks import collected_call_warnings

    loaded = _read(path).conversations[0]
    config, _ = read_config(args.config)
    summarizer = summarizer_from_args(args)
    host = recorded_calls(loaded.conversation)
    _check_usage(host, path)
    prices = _prices(args.main_model or session_model(host))
    calibration = calibrate_conversation(loaded.conversation, prices, loaded.events)
    run = replay(loaded.conversation, config, summarizer, token_budget=args.token_budget, check_calls=False)  # session_cost says it
    refs = reference_costs(loaded.conversation, prices, calibration, loaded.events)
    with collected_call_warnings():  # the library's warning, said once below
        cost = session_cost(run, prices, calibration, summarizer)  # every model call failed: ModelCallsFailedError (one line)
    if cost.warning:
        print(f"warning: {cost.warning}", file=sys.stderr)
    out = {"session": path.name, "strategy": "lcm", "token_budget": args.token_budget, "turns": len(run.turns), **cost.totals()}
    for name, ref in refs.items():
        totals = ref.totals()
        out[f"{name}_usd"] = totals["expected_usd"]
        out[f"{name}_usd_p05"], out[f"{name}_usd_p95"] = totals["expected_usd_p05"], totals["expected_usd_p95"]
        out[f"{name}_rules_usd"] = ref.total_usd
        out[f"{name}_cache_hit_rate"] = ref.cache_hit_rate
        saving = ref.paired_difference(cost)
        if saving is not None:
            out.update(saving.as_json(f"saving_vs_{name}_usd"))
    return out


def _lcm_line(r: dict[str, Any]) -> str:
    def usd(key: str) -> str:
        return f"${r[key]:.2f} [{r[key + '_p05']:.2f}, {r[key + '_p95']:.2f}]"

    line = (f"{r['session']}: {r['calls']} calls over {r['turns']} turns, expected {usd('expected_usd')} (90% interval; "
            f"rules' point ${r['total_usd']:.2f}; summarizer ${r['summarizer_usd']:.2f} over {r['summarizer_calls']} calls), "
            f"cache hit rate {r['cache_hit_rate']:.1%}; no compaction {usd('no_compaction_usd')}")
    if "recorded_host_usd" in r:
        line += f", recorded host {usd('recorded_host_usd')}"
    for name in ("recorded_host", "no_compaction"):
        key = f"saving_vs_{name}_usd"
        if key in r:
            noise = " (within noise)" if r[key + "_p05"] <= 0 <= r[key + "_p95"] else ""
            line += f"\n  saving against {name.replace('_', ' ')}: {usd(key)} (paired, same simulated misses){noise}"
    return line


def run(args: argparse.Namespace) -> int:
    from lcm_lab.cost.validate import validation_markdown

    if args.strategy not in STRATEGIES:
        raise OptionError(
            f"unknown --strategy {args.strategy!r}; available here: {', '.join(STRATEGIES)} "
            "(other strategies price through the same model once they exist as replays)"
        )
    paths = [Path(p) for p in args.inputs] or (_bundled() if args.validate else [])
    if not paths:
        raise OptionError("give an INPUT transcript (or --validate for the bundled sessions)")
    if args.validate or args.strategy == "recorded":
        records = [recorded_record(p, args.main_model) for p in paths]
        if args.json:
            print_json(records[0] if len(records) == 1 and not args.validate else records)
        else:
            print(validation_markdown(records))
        return 0
    records = [lcm_record(p, args) for p in paths]
    if args.json:
        print_json(records[0] if len(records) == 1 else records)
    else:
        for r in records:
            print(_lcm_line(r), file=sys.stdout)
    return 0
