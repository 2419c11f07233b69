"""``lcm-lab replay``: replay a transcript or an lcm.db conversation under chosen settings.

Each replay is saved to the lab store and its run id printed; ``--trace-out`` also writes the
run in the reference trace format (``lcref-trace-v1``), so any reference run can be checked
from the shell with ``--check TRACE``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lcm_lab.cli import (
    add_db_argument,
    add_json_argument,
    existing_file,
    nonempty,
    path_argument,
    positive_int,
    print_json,
)
from lcm_lab.errors import (
    InputError,
    InputFileError,
    JsonTooDeepError,
    MissingFileError,
    OptionError,
    SpecError,
)

if TYPE_CHECKING:
    from lcm_lab.engine.config.lcm_config import LcmConfig
    from lcm_lab.engine.types import Conversation


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="replay compaction over a transcript or lcm.db conversation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", metavar="TRANSCRIPT_OR_DB", type=existing_file, help="session JSONL, LoCoMo JSON, Claude Code JSONL or lcm.db (.gz ok)")
    parser.add_argument("--config", type=path_argument, metavar="CONFIG.json",
                        help="lossless-claw plugin config keys, an openclaw.json, or a reference trace (its plugin_config)")
    parser.add_argument("--token-budget", type=positive_int, default=128_000, metavar="N", help="model context budget (default 128000)")
    parser.add_argument("--tight-budget", type=positive_int, default=None, metavar="M", help="second assembly budget in the trace (default N/4)")
    parser.add_argument("--single-turn", action="store_true", help="replay the whole transcript as one turn")
    parser.add_argument("--conversation", type=nonempty, default=None, metavar="ID",
                        help="which conversation: index in a multi-conversation file, or lcm.db conversation_id")
    parser.add_argument("--from-recorded", action="store_true",
                        help="lcm.db: start from the recorded summaries and context instead of the raw messages")
    parser.add_argument("--fidelity", choices=("faithful", "fixed"), default="faithful",
                        help="reproduce the plugin's quirks (default) or their corrected behaviour")
    from lcm_lab.engine.versions import DEFAULT_ENGINE, ENGINE_VERSIONS

    parser.add_argument("--engine", choices=ENGINE_VERSIONS, default=DEFAULT_ENGINE,
                        help=f"lossless-claw version to replay (default {DEFAULT_ENGINE}; 1.0 = the commitTurn host path "
                             "with pending summaries, docs/engine-1.0.md)")
    parser.add_argument("--trace-out", type=path_argument, metavar="TRACE.json", help="write the run as an lcref-trace-v1 trace")
    parser.add_argument("--check", type=path_argument, metavar="TRACE.json", help="compare the run with a reference trace; exit 1 on any difference")
    parser.add_argument("--label", default=None, help="a name for the run in the store")
    parser.add_argument("--no-save", action="store_true", help="do not save the replay; with no --db (or $LCM_LAB_HOME) "
                        "no store is created either: model calls are recorded in memory")
    from lcm_lab.strategies import STRATEGY_NAMES

    parser.add_argument("--strategy", choices=STRATEGY_NAMES, default="lcm", help="context strategy (default lcm; see docs/strategies.md)")
    parser.add_argument("--strategy-config", type=path_argument, metavar="FILE.json", help="the strategy's parameters as a JSON object")
    add_db_argument(parser)
    add_json_argument(parser, "one object per replayed conversation (JSON Lines): run_id, strategy, session_id, turns, "
                              "counts, headline scores (and for LCM: summarizer_calls, cache_hits, summaries, stored_tokens, trace_out, check)")
    from lcm_lab.commands._summarizer_args import add_summarizer_arguments

    add_summarizer_arguments(parser)
    parser.set_defaults(func=run)


def read_config(path: str | None) -> tuple[LcmConfig, dict[str, Any]]:
    """The config file as LcmConfig plus the plugin keys it held (for the trace)."""
    from lcm_lab.engine.config.lcm_config import ConfigError, LcmConfig
    from lcm_lab.io.config_files import openclaw_plugin_config, read_config_document

    if path is None:
        return LcmConfig(), {}
    if not Path(path).exists():
        raise MissingFileError(f"{path}: config file not found")
    try:
        doc = read_config_document(path)
    except ConfigError as exc:
        raise InputError(str(exc)) from None
    if doc.get("trace_format") == "lcref-trace-v1":
        # A reference trace: the run's plugin config, plus the compaction mode its harness forced
        # (earlier sets force inline; the deferred set leaves the plugin default).
        harness, plugin = doc.get("harness_config") or {}, doc.get("plugin_config", {})
        if not isinstance(harness, dict) or not isinstance(plugin, dict):
            raise SpecError(f"{path}: a reference trace whose harness_config and plugin_config are not both objects")
        mode = harness.get("proactiveThresholdCompactionMode")
        doc = {**plugin, **({"proactiveThresholdCompactionMode": mode} if mode else {})}
    try:
        if "plugins" in doc:
            doc = openclaw_plugin_config(doc)
        return LcmConfig.from_plugin_config(doc), doc
    except ConfigError as exc:
        raise SpecError(f"{path}: {exc}") from None


def read_check_trace(path: str) -> dict[str, Any]:
    """The reference trace of ``--check``, read through the bounded JSON reader (a FIFO, a device,
    an empty, truncated or too deep file is one line) and checked to be a trace."""
    from lcm_lab.engine.config.lcm_config import ConfigError
    from lcm_lab.engine.replay.trace import TRACE_FORMAT
    from lcm_lab.io.config_files import read_json_file

    if not Path(path).exists():
        raise MissingFileError(f"{path}: trace file not found (--check)")
    try:
        doc = read_json_file(path, "a reference trace (--check)")
    except ConfigError as exc:
        raise InputError(f"--check {exc}") from None
    if not isinstance(doc, dict) or doc.get("trace_format") != TRACE_FORMAT:
        got = f"a JSON {type(doc).__name__}" if not isinstance(doc, dict) else "an object without it"
        raise InputError(f"--check {path}: not a reference trace (expected \"trace_format\": \"{TRACE_FORMAT}\", "
                         f"got {got}); give a trace --trace-out wrote")
    return doc


def _conversations(args: argparse.Namespace, store: Any) -> list[tuple[Conversation, int | None]]:
    """The conversations to replay, with their lab-store ids when they came through the store."""
    from lcm_lab.io.file_kind import unreadable_reason
    from lcm_lab.io.growing import reading_up_to
    from lcm_lab.io.rows import entries_time_warning
    from lcm_lab.io.transcripts import LCM_DB, detect_format, read_transcript
    from lcm_lab.loading.dispatch import load_lcm_db

    path = Path(args.input)
    if not path.exists():
        raise MissingFileError(f"{path}: no such file")
    reason = unreadable_reason(path)  # the input-kind check load makes (a FIFO, a device, /proc/kmsg)
    if reason:
        raise InputFileError(path, f"{reason}; nothing replayed")
    plain = path.with_suffix("") if path.suffix == ".gz" else path
    is_db = path.suffix == ".gz" and plain.suffix in (".db", ".sqlite") or (path.suffix != ".gz" and detect_format(path) == LCM_DB)
    if is_db:
        result = load_lcm_db(path, store)
        if not result.ok:
            raise InputError(result.error or f"{path}: not loaded")  # the load's error names the file
        for warning in result.warnings:  # e.g. a time the plugin cannot read, replayed as missing
            print(f"warning: {warning}", file=sys.stderr)
        from lcm_lab.store.sources import source_conversations

        rows = every = source_conversations(store, result.source_id)
        if args.conversation is not None:
            rows = [r for r in rows if str(r[1]) == str(args.conversation)]
            if not rows:
                known = ", ".join(str(o) for o in sorted(r[1] for r in every))
                raise OptionError(f"--conversation {args.conversation}: {path} has no such conversation_id (it has: {known or 'none'})")
        return [(store.conversation(int(r[0])), int(r[0])) for r in rows]
    # A file still being written is read up to its size now (lcm_lab.io.growing); --trace-out and
    # --check hash the same bytes.
    with reading_up_to(path) as bound:
        read = read_transcript(path)  # a file that is no transcript raises TranscriptFormatError (a UserError)
    args.input_size = bound.size
    for issue in read.issues:
        print(f"warning: {issue}", file=sys.stderr)
    grown = bound.warning(path, stored=False)
    if grown:
        print(f"warning: {grown}", file=sys.stderr)
    conversations = [c.conversation for c in read.conversations]
    if args.conversation is not None:
        try:
            index = int(args.conversation)
        except ValueError:
            raise OptionError(f"--conversation {args.conversation}: expected an index 0..{len(conversations) - 1} for {path}") from None
        if not 0 <= index < len(conversations):
            raise OptionError(f"--conversation {index}: out of range; {path} has {len(conversations)} conversation(s)")
        conversations = [conversations[index]]
    if (note := entries_time_warning((e for c in conversations for e in c.entries), str(path))) is not None:
        print(f"warning: {note}", file=sys.stderr)  # as load says it
    return [(c, None) for c in conversations]


def run(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from lcm_lab.commands._summarizer_args import summarizer_from_args
    from lcm_lab.engine.replay.driver import replay
    from lcm_lab.engine.replay.trace import compare_traces, reference_trace
    from lcm_lab.engine.replay.trace_v1 import v1_trace, without_harness
    from lcm_lab.prompts.promptset import template_files
    from lcm_lab.store import open_store, scratch_store
    from lcm_lab.store.replays import save_replay
    from lcm_lab.summarizers.call_checks import collected_call_warnings, ledger_note

    if args.tight_budget is not None and args.tight_budget > args.token_budget:
        raise OptionError(
            f"--tight-budget {args.tight_budget} is larger than --token-budget {args.token_budget}; "
            "the tight budget is the smaller of the two assemblies"
        )
    # what this replay reads, never to be replaced by its trace
    inputs = (args.input, args.config, args.check, args.strategy_config, *(template_files(args.prompts) if args.prompts else ()))
    if args.trace_out:
        from lcm_lab.io.atomic import check_output_path

        check_output_path(args.trace_out, inputs)  # before the replay, not after it
    expected = read_check_trace(args.check) if args.check else None  # before the replay, not after it
    config, plugin_config = read_config(args.config)
    from lcm_lab.engine.config.surface import check_engine_config, check_plugin_keys

    check_plugin_keys(args.engine, plugin_config)
    check_engine_config(args.engine, config)
    store = scratch_store(args.db) if args.no_save else open_store(args.db)
    conversations = _conversations(args, store)
    if not conversations:
        raise InputError(f"{args.input} holds no conversation to replay")
    if (args.trace_out or args.check) and len(conversations) != 1:
        raise OptionError(
            f"{args.input} holds {len(conversations)} conversations; pick one with --conversation for --trace-out/--check"
        )
    summarizer = summarizer_from_args(args, store=store)

    if args.strategy != "lcm" or args.strategy_config:
        if args.trace_out or args.check:
            raise OptionError("--trace-out/--check apply to a plain LCM replay (no --strategy)")
        from lcm_lab.commands._strategy import run_strategies

        return run_strategies(args, store, conversations, summarizer, plugin_config)
    status = 0
    for conversation, conversation_id in conversations:
        # Failed model calls: the replay applies the lab's rule (every call failed raises, one line);
        # its warning when some failed is printed after the run's line.
        with tqdm(desc=f"replaying {conversation.session_id[:24]}", unit="turn", leave=False,
                  disable=not sys.stderr.isatty()) as bar, collected_call_warnings() as call_warnings:  # fmt: skip
            try:
                result = replay(
                    conversation,
                    config,
                    summarizer,
                    token_budget=args.token_budget,
                    single_turn=args.single_turn,
                    from_recorded=args.from_recorded,
                    fidelity=args.fidelity,
                    on_turn=lambda _record: bar.update(),  # noqa: B023 - the bar lives for this replay only
                    engine=args.engine,
                )
            except JsonTooDeepError as exc:
                if len(conversations) == 1:
                    raise
                print(f"warning: {exc}", file=sys.stderr)
                status = 1
                continue
        run_id = None if args.no_save else save_replay(store, result, label=args.label, conversation_id=conversation_id)
        last = result.turns[-1] if result.turns else None
        calls = [call for turn in result.turns for call in turn.calls]
        summary: dict[str, Any] = {
            "run_id": run_id, "strategy": "lcm", "engine": result.engine, "session_id": conversation.session_id,
            "turns": len(result.turns), "summarizer_calls": len(calls), "cache_hits": sum(1 for call in calls if call.cached),
            "summaries": len(result.summaries),
            "stored_tokens": last.final_tokens if last else 0, "compaction_mode": result.compaction_mode,
            "trace_out": args.trace_out, "check": None, "failed_calls": sum(w.failed for w in call_warnings),
        }
        say = (lambda _text: None) if args.json else print
        say(
            f"{run_id or '(not saved)'}  {conversation.session_id}: {summary['turns']} turns, "
            f"{summary['summarizer_calls']} summarizer calls{ledger_note(calls)}, {summary['summaries']} summaries, "
            f"{summary['stored_tokens']} stored tokens at the end ({result.compaction_mode} compaction), "
            f"lossless-claw {result.engine}"
        )
        for warning in call_warnings:
            print(f"warning: {warning}", file=sys.stderr)
        if args.trace_out or args.check:
            write_trace = v1_trace if result.is_v1 else reference_trace
            trace = write_trace(
                result,
                tight_budget=args.tight_budget,
                input_label=Path(args.input).name,
                input_file=str(args.input),
                input_sha256=_input_sha256(args),
                run_id=run_id,
                plugin_config=plugin_config,
            )
            if args.trace_out:
                from lcm_lab.io.atomic import write_text_atomic
                from lcm_lab.io.redaction import redact

                write_text_atomic(args.trace_out, redact(json.dumps(trace, ensure_ascii=False, indent=1)), inputs=inputs)
                say(f"trace written to {args.trace_out}")
            if args.check:
                assert expected is not None
                differences = compare_traces(without_harness(trace), without_harness(expected)) if result.is_v1 else compare_traces(trace, expected)
                summary["check"] = {"trace": args.check, "identical": not differences, "differences": differences}
                if differences:
                    say("\n  ".join([f"DIFFERS from {args.check}:", *differences]))
                    status = 1
                else:
                    say(f"identical to {args.check}")
        if args.json:
            from lcm_lab.commands._strategy import loaded_extras

            loaded = loaded_extras(Path(args.input)).get(conversation.session_id) if Path(args.input).suffix == ".json" else None
            summary["scores"] = _headline_scores(store, result, run_id, loaded.qa_items if loaded is not None else None)
            print_json(summary)
    return status


def _input_sha256(args: argparse.Namespace) -> str:
    """The sha256 of the input's bytes, as the replay read them (streamed: the file is not held)."""
    digest = hashlib.sha256()
    left = getattr(args, "input_size", None)
    with open(args.input, "rb") as handle:
        while left is None or left > 0:
            block = handle.read(1 << 20 if left is None else min(1 << 20, left))
            if not block:
                break
            digest.update(block)
            if left is not None:
                left -= len(block)
    return digest.hexdigest()


def _headline_scores(store: Any, result: Any, run_id: str | None, qa_items: Any) -> dict[str, Any]:
    """The run's headline scores (saved with it), as ``--json`` reports them."""
    from lcm_lab.commands._strategy import headline_summary
    from lcm_lab.metrics.score import score_replay
    from lcm_lab.store.scores import write_scores

    scores = score_replay(result, run_id=run_id or "replay", qa_items=qa_items or None)
    if run_id is not None:
        write_scores(store, scores, replace_runs=True)
    return headline_summary(scores)
