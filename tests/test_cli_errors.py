"""The command line's contract for user errors: one line on stderr naming the file or option,
exit status 2, never a traceback (``--debug`` / ``LCM_LAB_DEBUG=1`` show it); ``--version``,
``python -m lcm_lab`` and ``--json`` on every command."""

from __future__ import annotations

import argparse
import codecs
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

from lcm_lab.cli import build_parser, main

SESSION = FIXTURES / "transcripts" / "before-compaction.v1.jsonl.gz"
LCM_DB = FIXTURES / "lcm-db-versions" / "lcm-v0.1.2.db.gz"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_user_error(code: int, err: str, *must_contain: str) -> None:
    """Exit 2, exactly one non-empty line on stderr, no traceback, and the named file/option."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("lcm-lab"), lines[0]
    for text in must_contain:
        assert text in lines[0], (text, lines[0])


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "lab.duckdb")


def cut_in_half(source: Path, target: Path) -> Path:
    data = source.read_bytes()
    target.write_bytes(data[: len(data) // 2])
    return target


@pytest.fixture
def truncated_transcript(tmp_path: Path) -> Path:
    return cut_in_half(SESSION, tmp_path / "cut.jsonl.gz")


@pytest.fixture
def truncated_lcm_db(tmp_path: Path) -> Path:
    return cut_in_half(LCM_DB, tmp_path / "cut-lcm.db.gz")


def test_version_and_python_dash_m() -> None:
    from lcm_lab import __version__

    done = subprocess.run([sys.executable, "-m", "lcm_lab", "--version"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0 and done.stdout.strip() == f"lcm-lab {__version__}"


def test_truncated_gz_transcript(capsys: pytest.CaptureFixture[str], db: str, truncated_transcript: Path) -> None:
    assert_user_error(*run_cli(capsys, "load", "--db", db, str(truncated_transcript))[::2], str(truncated_transcript), "gzip")
    assert_user_error(*run_cli(capsys, "replay", "--db", db, str(truncated_transcript))[::2], str(truncated_transcript), "gzip")


def test_truncated_gz_lcm_db(capsys: pytest.CaptureFixture[str], db: str, truncated_lcm_db: Path) -> None:
    assert_user_error(*run_cli(capsys, "load", "--db", db, str(truncated_lcm_db))[::2], str(truncated_lcm_db))
    assert_user_error(*run_cli(capsys, "replay", "--db", db, str(truncated_lcm_db))[::2], str(truncated_lcm_db))
    assert_user_error(*run_cli(capsys, "doctor", str(truncated_lcm_db))[::2], str(truncated_lcm_db))


def test_missing_api_key_names_the_variable(
    capsys: pytest.CaptureFixture[str], db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    session = tmp_path / "s.jsonl"
    session.write_bytes(gzip.decompress(SESSION.read_bytes()))
    code, _out, err = run_cli(capsys, "replay", "--db", db, str(session), "--summarizer", "litellm", "--model", "openai/gpt-4o-mini")
    assert_user_error(code, err, "OPENAI_API_KEY")


@pytest.mark.parametrize("value", ["0", "-5", "abc", "1.5", ""])
def test_budgets_must_be_positive_integers(capsys: pytest.CaptureFixture[str], db: str, value: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["replay", "--db", db, str(SESSION), "--token-budget", value])
    assert info.value.code == 2
    assert_user_error(2, capsys.readouterr().err, "--token-budget", "positive integer")
    with pytest.raises(SystemExit) as info:
        main(["replay", "--db", db, str(SESSION), "--tight-budget", value])
    assert_user_error(int(str(info.value.code)), capsys.readouterr().err, "--tight-budget")


def test_tight_budget_larger_than_budget(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, _out, err = run_cli(capsys, "replay", "--db", db, str(SESSION), "--token-budget", "8000", "--tight-budget", "9000")
    assert_user_error(code, err, "--tight-budget 9000", "--token-budget 8000")


def test_unknown_conversation_id(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, _out, err = run_cli(capsys, "replay", "--db", db, str(LCM_DB), "--conversation", "999")
    assert_user_error(code, err, "--conversation 999", str(LCM_DB))
    code, _out, err = run_cli(capsys, "replay", "--db", db, str(SESSION), "--conversation", "7")
    assert_user_error(code, err, "--conversation 7")
    code, _out, err = run_cli(capsys, "replay", "--db", db, str(SESSION), "--conversation", "main")
    assert_user_error(code, err, "--conversation main")


def test_directory_where_a_file_is_expected(capsys: pytest.CaptureFixture[str], db: str, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["replay", "--db", db, str(tmp_path)])
    assert_user_error(int(str(info.value.code)), capsys.readouterr().err, str(tmp_path), "directory")
    assert_user_error(*run_cli(capsys, "doctor", str(tmp_path))[::2], str(tmp_path))
    code, _out, err = run_cli(capsys, "replay", "--db", db, str(SESSION), "--config", str(tmp_path))
    assert_user_error(code, err, str(tmp_path), "directory")
    code, _out, err = run_cli(capsys, "prompts", "render", "leaf", "--source", str(tmp_path))
    assert_user_error(code, err, str(tmp_path), "directory")


def test_user_errors_in_a_real_process_and_debug_shows_the_traceback(tmp_path: Path, truncated_transcript: Path) -> None:
    env = {**os.environ, "LCM_LAB_DEBUG": ""}
    argv = [sys.executable, "-m", "lcm_lab", "replay", "--db", str(tmp_path / "lab.duckdb"), str(truncated_transcript)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env)
    assert_user_error(done.returncode, done.stderr, str(truncated_transcript))
    debug = subprocess.run([*argv, "--debug"], capture_output=True, text=True, cwd=REPO, env=env)
    assert debug.returncode != 0 and "Traceback" in debug.stderr and "BrokenGzipError" in debug.stderr


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-8-sig", "utf-32"])
def test_transcripts_with_a_byte_order_mark_are_decoded(
    capsys: pytest.CaptureFixture[str], db: str, tmp_path: Path, encoding: str
) -> None:
    text = gzip.decompress(SESSION.read_bytes()).decode("utf-8")
    path = tmp_path / f"session-{encoding}.jsonl"
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
    path.write_bytes(data)
    code, out, err = run_cli(capsys, "load", "--db", db, "--json", str(path))
    assert code == 0, err
    record = json.loads(out)
    plain = tmp_path / "plain.jsonl"
    plain.write_text(text, encoding="utf-8")
    code, out, _err = run_cli(capsys, "load", "--db", str(tmp_path / "other.duckdb"), "--json", str(plain))
    expected = json.loads(out)
    assert (record["kind"], record["messages"], record["skipped_lines"]) == (expected["kind"], expected["messages"], 0)


def test_every_command_accepts_json() -> None:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction) and a.dest == "command").choices
    missing = []
    for sub in subparsers.values():
        nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]  # prompts, whatif
        leaves = list(nested[0].choices.values()) if nested else [sub]
        for leaf in leaves:
            if not any("--json" in a.option_strings for a in leaf._actions):
                missing.append(leaf.prog)
    assert not missing, f"commands without --json: {missing}"


def test_json_output_is_only_json(capsys: pytest.CaptureFixture[str], db: str, tmp_path: Path) -> None:
    code, out, _err = run_cli(capsys, "replay", "--db", db, "--json", str(SESSION), "--token-budget", "8000",
                              "--trace-out", str(tmp_path / "t.json"))
    assert code == 0
    record = json.loads(out)
    assert record["run_id"] and record["turns"] > 0 and record["trace_out"] == str(tmp_path / "t.json")
    code, out, _err = run_cli(capsys, "report", "--db", db, "--json", "-o", str(tmp_path / "r.html"))
    assert code == 0 and json.loads(out) == {"path": str(tmp_path / "r.html"), "runs": [record["run_id"]]}
    code, out, _err = run_cli(capsys, "prompts", "show", "leaf", "--json")
    assert code == 0 and json.loads(out)["name"] == "leaf"
    code, out, _err = run_cli(capsys, "doctor", "--list-checks", "--json")
    assert code == 0 and all("check" in json.loads(line) for line in out.splitlines())


def _two_locomo_conversations(tmp_path: Path) -> str:
    path = tmp_path / "two.json"
    path.write_text(json.dumps(json.loads((REPO / "datasets" / "locomo" / "locomo10.json").read_text())[:2]))
    return str(path)


CLAUDE_SESSION = REPO / "datasets" / "claude-code" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
TWO_CONVERSATIONS_DB = FIXTURES / "lcm-db-versions" / "lcm-v0.15.3.db.gz"


@pytest.mark.parametrize(("argv", "lines"), [
    # replay --strategy printed one indented object (several conversations: {"strategy", "runs"}), no line parsed
    (("replay", "{two}", "--strategy", "truncate", "--token-budget", "8000"), 2),
    (("replay", str(TWO_CONVERSATIONS_DB), "--strategy", "observer_regex", "--token-budget", "8000"), 2),
    (("replay", str(TWO_CONVERSATIONS_DB), "--token-budget", "8000"), 2),
    (("replay", str(SESSION), "--strategy", "full", "--no-save"), 1),
    # prompts render and cost printed indented objects
    (("prompts", "render", "leaf", "--source", "{text}"), 1),
    (("cost", str(CLAUDE_SESSION), "--strategy", "recorded"), 1),
], ids=["strategy-two-conversations", "strategy-lcm-db", "lcm-two-conversations", "strategy-one", "prompts-render", "cost"])
def test_json_output_is_one_json_value_per_line(
    argv: tuple[str, ...], lines: int, capsys: pytest.CaptureFixture[str], db: str, tmp_path: Path
) -> None:
    (tmp_path / "source.txt").write_text("We deploy db01 tonight; the rollback plan is in docs/deploy.md.\n" * 20)
    given = {"{two}": _two_locomo_conversations(tmp_path), "{text}": str(tmp_path / "source.txt")}
    argv = tuple(given.get(a, a) for a in argv)
    code, out, _err = run_cli(capsys, *argv, "--json", *(("--db", db) if argv[0] == "replay" else ()))
    assert code == 0 and len(out.splitlines()) == lines
    records = [json.loads(line) for line in out.splitlines()]
    if argv[0] == "replay":
        assert len({r["session_id"] for r in records}) == lines and all("scores" in r for r in records)


def test_demo_says_where_its_data_must_come_from(
    capsys: pytest.CaptureFixture[str], db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_user_error(*run_cli(capsys, "demo", "--db", db, "--data", str(tmp_path))[::2], f"--data {tmp_path}", "datasets/")
    import lcm_lab.bundled as bundled

    monkeypatch.setattr(bundled, "_HERE", tmp_path / "not-installed")
    code, _out, err = run_cli(capsys, "demo", "--db", db)
    assert_user_error(code, err, "missing from this installation", "--data")


def test_demo_columns_are_all_explained() -> None:
    from lcm_lab.bundled.demo import COLUMNS, explain_columns, format_rows

    table = format_rows([{name: None for name in COLUMNS} | {"run": "x", "depth": None}])
    assert table.splitlines()[0].split() == list(COLUMNS)
    assert "-" in table.splitlines()[1]  # a run without summaries shows no depth, not -1
    assert len(explain_columns().splitlines()) == len(COLUMNS) + 1  # one line a column, then where every term is defined
    assert "docs/glossary.md" in explain_columns().splitlines()[-1]


@pytest.mark.parametrize(("argv", "option", "value"), [
    # each was accepted: a negative answer cap, a zero read budget, a negative target or depth, a
    # negative timeout, an infinite window, a negative spend cap, NaN as a temperature, and
    # validate-metrics --conversations -1 ran on all but the last conversation ([:-1])
    (("expand", "--prompt", "q", "--query", "x"), "--max-tokens", "-5"),
    (("expand", "--prompt", "q", "--query", "x"), "--max-expand-tokens", "0"),
    (("prompts", "render", "leaf", "--source", str(SESSION)), "--target-tokens", "-1"),
    (("prompts", "render", "condensed-d1", "--source", str(SESSION)), "--depth", "-1"),
    (("whatif", "rewrite", "r1", "--prompts", "."), "--depth", "-2"),
    (("validate-metrics",), "--conversations", "-1"),
    (("sweep", "spec.yaml"), "--workers", "0"),
    (("replay", str(SESSION)), "--summary-timeout-ms", "0"),
    (("replay", str(SESSION)), "--max-calls-per-window", "-3"),
    (("replay", str(SESSION)), "--window-seconds", "inf"),
    (("replay", str(SESSION)), "--max-cost-usd", "-1"),
    (("replay", str(SESSION)), "--temperature", "nan"),
    (("whatif", "rewrite", "r1", "--depth", "0", "--summarizer", "offline"), "--max-retries", "-1"),
])  # fmt: skip
def test_numbers_out_of_their_range_are_one_line(
    capsys: pytest.CaptureFixture[str], db: str, argv: tuple[str, ...], option: str, value: str
) -> None:
    with pytest.raises(SystemExit) as info:
        main([*argv, "--db", db, option, value] if argv[0] not in ("prompts",) else [*argv, option, value])
    assert_user_error(int(str(info.value.code)), capsys.readouterr().err, option, value)


def test_a_garbage_expand_budget_in_the_environment_is_one_line(
    capsys: pytest.CaptureFixture[str], db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the parser read it with int() when any command was parsed: `ledger` ended in a ValueError traceback
    monkeypatch.setenv("LCM_MAX_EXPAND_TOKENS", "abc")
    assert run_cli(capsys, "prompts", "list")[0] == 0
    code, _out, err = run_cli(capsys, "expand", "--db", db, "--prompt", "q", "--query", "x")
    assert_user_error(code, err, "LCM_MAX_EXPAND_TOKENS='abc'")


@pytest.mark.parametrize("argv", [
    ("grep", "x", "--run", ""),  # searched the whole store
    ("ledger", "--run", ""),  # listed every call
    ("whatif", "list", "--parent", ""),
    ("expand", "--prompt", "q", "--query", ""),
    ("describe", ""),
    ("replay", str(SESSION), "--conversation", ""),
])  # fmt: skip
def test_an_empty_id_or_filter_is_one_line(capsys: pytest.CaptureFixture[str], db: str, argv: tuple[str, ...]) -> None:
    with pytest.raises(SystemExit) as info:
        main([*argv, "--db", db])
    assert_user_error(int(str(info.value.code)), capsys.readouterr().err, "an empty value")



def _path_options(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], argparse.Action]]:
    """Every (command words, option) whose value is a path, subcommands of subcommands included."""
    from lcm_lab.cli import existing_file, path_argument

    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _path_options(sub, (*words, name))
        elif action.option_strings and action.type in (path_argument, existing_file):
            found.append((words, action))
    return found


def test_a_path_option_given_a_value_that_starts_with_a_dash_says_how_to_write_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--db -x`` ended in argparse's bare "expected one argument"; every path option (``--db``,
    ``-o``, ``--trace-out``, ...) now says how to pass such a path, and that spelling works."""
    options = _path_options(build_parser())
    assert {"--db", "--output", "--trace-out"} <= {s for _words, action in options for s in action.option_strings}
    for words, action in options:
        option = max(action.option_strings, key=len)
        for spelling in action.option_strings:
            with pytest.raises(SystemExit) as info:
                main([*words, spelling, "-x"])
            assert_user_error(int(str(info.value.code)), capsys.readouterr().err,
                              "expected a path", f"{option}=-x or {option} ./-x")
    monkeypatch.chdir(tmp_path)
    code, _out, err = run_cli(capsys, "ledger", "--db=-x")
    assert_user_error(code, err, "no lab store at -x", "`lcm-lab load PATH --db=-x`")  # the path reached the store
