"""``lcm-lab prompts``: list, show, diff, render and export summarizer prompt templates.

  lcm-lab prompts list [--prompts DIR]          templates, where each comes from, content hash
  lcm-lab prompts show NAME [--prompts DIR]     print one template (leaf, leaf-aggressive, condensed-d1 …)
  lcm-lab prompts diff DIR                      unified diff of DIR's templates against the lab defaults
  lcm-lab prompts render NAME --source FILE     render a template for a source text (as a model would get it)
  lcm-lab prompts export DIR [--force]          write the lab defaults as *.tmpl files (lcm-tui layout)

A template in DIR that is a symbolic link must point inside DIR (show, list, diff and render
refuse one that leaves it). ``export`` never writes through a link: without ``--force`` an
existing name (a link included) is refused, with it the link itself is replaced by a file.

DIR uses the layout ``lcm-tui prompts --export`` writes (``leaf.tmpl``, ``condensed-d1.tmpl``,
``condensed-d2.tmpl``, ``condensed-d3.tmpl``; optionally ``system.tmpl``, ``leaf-aggressive.tmpl``)
and Go template syntax (``{{.TargetTokens}}``, ``{{if .PreviousContext}}…{{end}}``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Literal

from lcm_lab.cli import (
    add_json_argument,
    add_list_arguments,
    non_negative_count,
    nonempty,
    path_argument,
    positive_count,
    print_json,
    print_json_lines,
    print_rows,
)
from lcm_lab.errors import InputError, OptionError, OutputError
from lcm_lab.prompts import TEMPLATE_NAMES, PromptSet, default_prompt_set, load_prompt_set


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "prompts", help="list, show, diff, render and export prompt templates",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="prompts_command", required=True)

    listing = sub.add_parser("list", help="templates, their source and hash")
    listing.add_argument("--prompts", type=path_argument, metavar="DIR", default=None, help="template directory (default: lab defaults)")
    add_list_arguments(listing, "one object per template")
    listing.set_defaults(func=run_list)

    show = sub.add_parser("show", help="print one template")
    show.add_argument("name", help=f"one of {', '.join(TEMPLATE_NAMES)} (.tmpl optional)")
    show.add_argument("--prompts", type=path_argument, metavar="DIR", default=None)
    add_json_argument(show, "one object: name, hash, source, text")
    show.set_defaults(func=run_show)

    diff = sub.add_parser("diff", help="diff a template directory against the lab defaults")
    diff.add_argument("directory", type=path_argument, metavar="DIR")
    diff.add_argument("--name", type=nonempty, default=None, help="only this template")
    add_json_argument(diff, "one object per template (JSON Lines): name, changed, old_hash, new_hash, diff")
    diff.set_defaults(func=run_diff)

    render = sub.add_parser("render", help="render a template for a source text")
    render.add_argument("name", help=f"one of {', '.join(TEMPLATE_NAMES[1:])}")
    render.add_argument("--source", type=path_argument, metavar="FILE", required=True, help="source text file ('-' for stdin)")
    render.add_argument("--prompts", type=path_argument, metavar="DIR", default=None)
    render.add_argument("--previous", type=path_argument, metavar="FILE", default=None, help="previous summary text file")
    render.add_argument("--target-tokens", type=positive_count, default=None,
                        help="target tokens (default: the plugin's rule at default settings, src/summarize.ts resolveTargetTokens)")
    render.add_argument("--custom-instructions", default="", help="operator instructions (customInstructions)")
    render.add_argument("--depth", type=non_negative_count, default=None, help="output depth for condensed templates")
    add_json_argument(render, "one object: the chat messages and hashes")
    render.set_defaults(func=run_render)

    export = sub.add_parser("export", help="write the lab's default templates to a directory")
    export.add_argument("directory", type=path_argument, metavar="DIR")
    export.add_argument("--force", action="store_true",
                        help="replace existing files; a symbolic link is replaced by a file, its target is never written")
    add_json_argument(export, "one object per written file (JSON Lines): path")
    export.set_defaults(func=run_export)


def _prompt_set(directory: str | None) -> PromptSet:
    if directory is None:
        return default_prompt_set()
    return load_prompt_set(directory)  # MissingFileError / TemplateError: UserErrors naming the file


def _name(name: str) -> str:
    from lcm_lab.prompts import normalize_template_name

    return normalize_template_name(name)  # UnknownNameError lists the known names


def run_list(args: argparse.Namespace) -> int:
    from lcm_lab.engine.tokens import estimate_tokens

    prompts = _prompt_set(args.prompts)
    rows = [{"name": name, "hash": prompts[name].hash, "tokens": estimate_tokens(prompts[name].text), "source": prompts[name].source}
            for name in TEMPLATE_NAMES]
    if not args.json:  # the table shows the short hash
        rows = [{**row, "hash": row["hash"][:12]} for row in rows]
    print_rows(args, rows)
    if not args.json and args.table_format == "table":
        print(f"prompt set {prompts.name}: {prompts.hash[:12]}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    name = _name(args.name)
    template = _prompt_set(args.prompts)[name]
    if args.json:
        print_json({"name": name, "hash": template.hash, "source": template.source, "text": template.text})
        return 0
    sys.stdout.write(template.text if template.text.endswith("\n") else template.text + "\n")
    return 0


def run_diff(args: argparse.Namespace) -> int:
    from lcm_lab.prompts import diff_prompt_sets, format_diffs

    prompts = _prompt_set(args.directory)
    names = (_name(args.name),) if args.name else None
    diffs = diff_prompt_sets(default_prompt_set(), prompts, names)
    if args.json:
        print_json_lines({"name": d.name, "changed": d.changed, "old_hash": d.old_hash, "new_hash": d.new_hash,
                          "diff": d.diff} for d in diffs)
        return 0
    sys.stdout.write(format_diffs(diffs))
    changed = sum(d.changed for d in diffs)
    print(f"{changed} of {len(diffs)} templates differ from the lab defaults")
    return 0


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason})") from None


def run_render(args: argparse.Namespace) -> int:
    from lcm_lab.engine.compaction.sweep import prompt_targets
    from lcm_lab.engine.config.lcm_config import LcmConfig
    from lcm_lab.engine.protocol import SummaryRequest
    from lcm_lab.engine.tokens import estimate_tokens
    from lcm_lab.prompts import render_request

    name = _name(args.name)
    if name == "system":
        raise OptionError("'system' is rendered with every request; render leaf or condensed-dN")
    prompts = _prompt_set(args.prompts)
    source = _read(args.source).strip()
    previous = _read(args.previous).strip() if args.previous else None
    kind: Literal["leaf", "condensed"] = "leaf" if name.startswith("leaf") else "condensed"
    aggressive = name == "leaf-aggressive"
    depth = args.depth if args.depth is not None else (0 if kind == "leaf" else {"condensed-d1": 1, "condensed-d2": 2}.get(name, 3))
    if prompts.template_name_for(kind, depth, aggressive) != name:
        raise OptionError(f"--depth {depth} does not select {name}")
    target, max_tokens = prompt_targets(LcmConfig(), kind, aggressive, estimate_tokens(source))
    if args.target_tokens is not None:
        target, max_tokens = args.target_tokens, args.target_tokens + 2048
    request = SummaryRequest(source, kind, depth, aggressive, previous, target, max_tokens, args.custom_instructions)
    rendered = render_request(prompts, request)  # TemplateError (a UserError) names template and line
    if args.json:
        print_json({
            "template": rendered.template_name, "template_hash": rendered.template_hash,
            "system_template_hash": rendered.system_hash, "target_tokens": target, "max_tokens": max_tokens,
            "appended": list(rendered.additions), "messages": rendered.messages,
        })
        return 0
    print(f"# template {rendered.template_name} ({rendered.template_hash[:12]}), target {target} tokens, max_tokens {max_tokens}")
    if rendered.additions:
        print(f"# appended (template does not reference them): {', '.join(rendered.additions)}")
    print("# --- system ---")
    print(rendered.system)
    print("# --- user ---")
    print(rendered.user)
    return 0


def run_export(args: argparse.Namespace) -> int:
    from lcm_lab.prompts import export_prompt_set

    try:
        written = export_prompt_set(default_prompt_set(), args.directory, overwrite=args.force)
    except FileExistsError as exc:  # the library's refusal to overwrite, as an output error
        raise OutputError(str(exc)) from None
    if args.json:
        print_json_lines({"path": str(path)} for path in written)
        return 0
    for path in written:
        print(path)
    return 0
