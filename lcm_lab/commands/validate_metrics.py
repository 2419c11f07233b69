"""``lcm-lab validate-metrics [--db FILE] [--token-budget N ...] [-o reports/metric-validity.md]``: can the headlines be fooled?

Runs the control strategies (fixed text, a bare list of source entities, another conversation's
text, plain truncation, the offline summarizer, full history) over the bundled LoCoMo
conversations (with ``qa_retention``) and coding sessions (fact retention), and writes a table of
every headline metric per control with intervals, plus pass/fail of the validity properties.
With ``--db`` every control run's scores are also written to that lab store. Exit status 1 when
a property fails.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from lcm_lab.cli import (
    add_db_argument,
    add_deprecated_alias,
    add_json_argument,
    path_argument,
    positive_count,
    positive_int,
    print_json,
)
from lcm_lab.errors import OptionError
from lcm_lab.io.atomic import check_output_path, write_text_atomic

# the bundled data (lcm_lab.bundled.datasets_path) it runs on by default
LOCOMO = "locomo/locomo10.json"
CODING = ("pi-mono/before-compaction.jsonl",)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate-metrics", help="score control strategies and check that the headline metrics cannot be fooled",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_argument(parser)
    parser.add_argument("-o", "--output", default="reports/metric-validity.md", help="Markdown report (default: %(default)s)")
    parser.add_argument("--locomo", default=None, type=path_argument, metavar="FILE", help="LoCoMo JSON (default: the bundled locomo10.json)")
    parser.add_argument("--conversations", type=positive_count, default=None, metavar="N", help="only the first N LoCoMo conversations")
    parser.add_argument("--token-budget", type=positive_int, action="append", default=None, metavar="N",
                        help="model context budget (repeatable; default 6000 and 32000)")
    add_deprecated_alias(parser, "--budget", "--token-budget")
    parser.add_argument("--controls", default=None, metavar="A,B", help="only these controls (default: all)")
    parser.add_argument("--no-coding", action="store_true", help="skip the bundled coding sessions")
    parser.add_argument("--plugin-config", default=None, metavar="JSON",
                        help="plugin settings over the validity configuration, e.g. '{\"condensedTargetTokens\": 300}'")
    add_json_argument(parser, "a list of one object per budget: table rows and property checks")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lcm_lab.bundled import datasets_path

    locomo_file = args.locomo or datasets_path(LOCOMO)
    coding_files = [] if args.no_coding else [datasets_path(path) for path in CODING]
    inputs = (locomo_file, *coding_files)  # never replaced by the page
    check_output_path(args.output, inputs)  # before the replays, not after them
    from tqdm.auto import tqdm

    from lcm_lab.engine.config.lcm_config import ConfigError, LcmConfig
    from lcm_lab.io.transcripts import read_transcript
    from lcm_lab.metrics.validity import (
        CONTROLS,
        DEFAULT_CONFIG,
        check_properties,
        validate,
        validity_markdown,
    )

    controls = tuple(args.controls.split(",")) if args.controls else CONTROLS
    unknown = [c for c in controls if c not in CONTROLS]
    if unknown:
        raise OptionError(f"--controls: unknown control(s) {', '.join(unknown)}; choose from {', '.join(CONTROLS)}")

    config = DEFAULT_CONFIG
    if args.plugin_config:
        import dataclasses

        try:
            overrides = json.loads(args.plugin_config)
        except json.JSONDecodeError as exc:
            raise OptionError(f"--plugin-config: not valid JSON ({exc.msg})") from None
        if not isinstance(overrides, dict):
            raise OptionError("--plugin-config: expected a JSON object of plugin settings")
        try:
            changed = LcmConfig.from_plugin_config(overrides)
        except ConfigError as exc:
            raise OptionError(f"--plugin-config: {exc}") from None
        defaults = LcmConfig()
        config = dataclasses.replace(DEFAULT_CONFIG, **{f.name: getattr(changed, f.name) for f in dataclasses.fields(LcmConfig)
                                                        if getattr(changed, f.name) != getattr(defaults, f.name)})
    locomo = list(read_transcript(locomo_file).conversations)[: args.conversations]
    coding = [c for path in coding_files for c in read_transcript(path).conversations]
    sink = None
    if args.db:
        from lcm_lab.store import open_store
        from lcm_lab.store.scores import write_scores

        store = open_store(args.db)

        def sink(scores: list[Any]) -> None:
            write_scores(store, scores, replace_runs=True)

    sections: list[str] = []
    payload: list[dict[str, Any]] = []
    failed = False
    for budget in args.token_budget or [6000, 32000]:
        rows = validate(locomo, budget=budget, coding=coding, sink=sink, controls=controls, config=config,
                        progress=lambda jobs, b=budget: tqdm(list(jobs), desc=f"controls @ {b}", leave=False, disable=args.json))
        checks = check_properties(rows)
        failed |= any(c.passed is False for c in checks)
        note = f"LoCoMo conversations: {len(locomo)}; coding sessions (fact retention only): {len(coding)}."
        if args.plugin_config:
            note += f" Plugin settings over the validity configuration: `{args.plugin_config}`."
        sections.append(validity_markdown(rows, checks, budget=budget, note=note))
        payload.append({
            "budget": budget,
            "rows": [{"control": r.control, "metric": r.metric, "mean": None if math.isnan(r.mean) else r.mean,
                      "ci": [None if math.isnan(x) else x for x in r.interval], "n": len(r.values), "withheld": r.withheld,
                      "values": r.values, "data_warnings": r.warnings} for r in rows],
            "checks": [{"name": c.name, "passed": c.passed, "evidence": c.evidence} for c in checks],
        })
    text = "\n".join(sections)
    out = write_text_atomic(args.output, text, inputs=inputs)
    if args.json:
        print_json(payload)
    else:
        print(text + f"\nwritten to {out}")
    return 1 if failed else 0
