"""Prompt sets: Go-template execution, lab defaults, lcm-tui directories, render, diff, CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcm_lab.cli import main
from lcm_lab.engine.protocol import SummaryRequest
from lcm_lab.prompts import (
    TEMPLATE_NAMES,
    Template,
    TemplateError,
    default_prompt_set,
    diff_prompt_sets,
    export_prompt_set,
    load_prompt_set,
    render_request,
    source_stats,
    template_hash,
)

LEAF_SOURCE = (
    "[2026-02-17 15:37 UTC | user]\nPlease rename src/app.py to src/main.py\n\n"
    "[2026-02-17 15:40 UTC | assistant]\nDone; tests pass (42 passed).\n\n"
    "[2026-02-17 21:14 UTC | user]\nTODO: update the README"
)
CONDENSED_SOURCE = (
    "[2026-02-17 15:37 UTC - 2026-02-17 16:00 UTC]\nRenamed src/app.py.\n\n"
    "[2026-02-18 09:00 UTC - 2026-02-18 10:30 UTC]\nREADME updated."
)

# An lcm-tui style export: Go template syntax, variables of lcm-tui's PromptVars, no SourceText.
TUI_LEAF = """You are summarizing a conversation segment.
{{if .PreviousContext -}}
Earlier summary (do not repeat it):
{{.PreviousContext}}
{{else -}}
There is no earlier summary.
{{end -}}
Depth {{.Depth}}, {{.ChildCount}} messages, {{.TimeRange}}.
Target length: about {{.TargetTokens}} tokens.
"""
TUI_D1 = """Condense these {{.ChildCount}} summaries ({{.TimeRange}}).
{{- if .PreviousContext}}
Skip what this already says: {{.PreviousContext}}
{{- end}}
Target length: about {{.TargetTokens}} tokens.
<source>
{{.SourceText}}
</source>
"""


def leaf_request(**changes: object) -> SummaryRequest:
    values: dict[str, object] = dict(
        source_text=LEAF_SOURCE, kind="leaf", depth=0, aggressive=False, previous_summary=None,
        target_tokens=192, max_tokens=2240, custom_instructions="",
    )
    values.update(changes)
    return SummaryRequest(**values)  # type: ignore[arg-type]


@pytest.fixture()
def tui_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "lcm-tui-prompts"
    directory.mkdir()
    (directory / "leaf.tmpl").write_text(TUI_LEAF, encoding="utf-8")
    (directory / "condensed-d1.tmpl").write_text(TUI_D1, encoding="utf-8")
    return directory


# -- the Go template language ---------------------------------------------------------------


def test_trim_markers_and_if_else_follow_go_semantics() -> None:
    template = Template("t", "A\n{{- if .X -}}\n  yes\n{{- else -}}\n  no\n{{- end}}\nB")
    assert template.render({"X": "x"}) == "AyesB".replace("B", "\nB")
    assert template.render({"X": ""}) == "Ano\nB"


def test_else_if_with_range_and_builtins() -> None:
    template = Template(
        "t",
        "{{if gt .N 10}}big{{else if gt .N 5}}mid{{else}}small{{end}}|{{range .L}}[{{.}}]{{else}}none{{end}}"
        "|{{with .S}}<{{.}}>{{end}}|{{len .L}}|{{printf \"%03d %s\" .N .S}}|{{.S | printf \"%s!\"}}|{{not (eq .N 7)}}",
    )
    assert template.render({"N": 7, "L": [1, 2], "S": "s"}) == "mid|[1][2]|<s>|2|007 s|s!|false"
    assert template.render({"N": 1, "L": [], "S": ""}) == "small|none||0|001 |!|true"


def test_comments_are_dropped_and_fields_are_listed() -> None:
    template = Template("t", "{{/* a comment with {{braces}} */}}x{{.A}}{{if .B.C}}{{end}}")
    assert template.render({"A": 1, "B": {"C": 0}}) == "x1"
    assert template.fields == frozenset({"A", "B"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a\n{{if .X}}b", "t.tmpl:2: unclosed {{if}}"),
        ("{{end}}", "t.tmpl:1: unexpected {{end}}"),
        ("x\n\n{{.X", "t.tmpl:3: unclosed action"),
        ("{{define \"x\"}}{{end}}", "t.tmpl:1: {{define}} is not supported"),
        ("{{else}}", "t.tmpl:1: unexpected {{else}}"),
    ],
)
def test_parse_errors_name_template_and_line(text: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message.replace("{", r"\{").replace("}", r"\}")):
        Template("t.tmpl", text)


def test_unknown_field_and_function_are_execution_errors() -> None:
    with pytest.raises(TemplateError, match=r"t.tmpl:2: can't evaluate field Missing"):
        Template("t.tmpl", "ok\n{{.Missing}}").render({"Present": 1})
    with pytest.raises(TemplateError, match='function "upper" not defined'):
        Template("t.tmpl", "{{upper .X}}").render({"X": "a"})


# -- the lab's default set ------------------------------------------------------------------


def test_default_set_has_every_template_with_stable_hashes() -> None:
    prompts = default_prompt_set()
    assert list(prompts) == list(TEMPLATE_NAMES)
    for name in TEMPLATE_NAMES:
        assert prompts[name].hash == template_hash(prompts[name].text)
        assert prompts[name].source == "lcm_lab default"
    assert len({prompts[n].hash for n in TEMPLATE_NAMES}) == len(TEMPLATE_NAMES)


@pytest.mark.parametrize(
    ("kind", "depth", "aggressive", "name"),
    [
        ("leaf", 0, False, "leaf"),
        ("leaf", 0, True, "leaf-aggressive"),
        ("condensed", 1, False, "condensed-d1"),
        ("condensed", 1, True, "condensed-d1"),  # no aggressive condensed prompt (spec §5.1)
        ("condensed", 2, False, "condensed-d2"),
        ("condensed", 3, False, "condensed-d3"),
        ("condensed", 7, False, "condensed-d3"),
    ],
)
def test_template_choice_by_kind_depth_and_aggressive(kind: str, depth: int, aggressive: bool, name: str) -> None:
    assert default_prompt_set().template_name_for(kind, depth, aggressive) == name


def test_leaf_render_follows_the_documented_structure() -> None:
    rendered = render_request(default_prompt_set(), leaf_request(custom_instructions="  Keep people's names.  "))
    user = rendered.user
    # The lab's layout: the task and its target, the questions the note must answer, the
    # operator's instructions, the form (ending with the plugin's footer), then the data.
    order = ["about 192 tokens", "Operator instructions:", "Keep people's names.", "Expand for details about:",
             "<previous_context>\n(none)\n</previous_context>", "<conversation_segment>\n" + LEAF_SOURCE]
    positions = [user.index(part) for part in order]
    assert positions == sorted(positions)
    assert rendered.template_name == "leaf"
    assert rendered.template_hash == default_prompt_set()["leaf"].hash
    assert rendered.messages[0]["role"] == "system" and "untrusted" in rendered.system
    assert rendered.additions == ()


def test_leaf_without_instructions_says_none_and_previous_context_is_included() -> None:
    rendered = render_request(default_prompt_set(), leaf_request(previous_summary="Earlier: chose DuckDB."))
    assert "Operator instructions:\n(none)" in rendered.user
    assert "<previous_context>\nEarlier: chose DuckDB.\n</previous_context>" in rendered.user


def test_condensed_d1_previous_context_only_when_given() -> None:
    base = dict(source_text=CONDENSED_SOURCE, kind="condensed", depth=1, target_tokens=2000, max_tokens=4048)
    with_prev = render_request(default_prompt_set(), leaf_request(**base, previous_summary="PREVIOUS NODE"))
    without = render_request(default_prompt_set(), leaf_request(**base))
    assert "<previous_context>\nPREVIOUS NODE\n</previous_context>" in with_prev.user
    assert "<previous_context>" not in without.user
    assert without.user.rstrip().endswith("README updated.\n</conversation_to_condense>")


def test_source_stats_read_headers() -> None:
    assert source_stats(LEAF_SOURCE, "leaf") == (3, "2026-02-17 15:37 UTC – 2026-02-17 21:14 UTC")
    assert source_stats(CONDENSED_SOURCE, "condensed") == (2, "2026-02-17 15:37 UTC – 2026-02-18 10:30 UTC")
    assert source_stats("no headers", "leaf") == (0, "")


# -- user directories (lcm-tui export layout) -----------------------------------------------


def test_lcm_tui_directory_overrides_and_falls_back_per_template(tui_dir: Path) -> None:
    prompts = load_prompt_set(tui_dir)
    sources = prompts.sources()
    assert sources["leaf"] == str(tui_dir / "leaf.tmpl")
    assert sources["condensed-d1"] == str(tui_dir / "condensed-d1.tmpl")
    assert sources["condensed-d2"] == "lcm_lab default"
    assert sources["system"] == "lcm_lab default"
    # No leaf-aggressive.tmpl in an lcm-tui export: aggressive calls use the directory's leaf.
    assert prompts["leaf-aggressive"].text == TUI_LEAF
    assert prompts.hash != default_prompt_set().hash


def test_lcm_tui_leaf_renders_with_its_variables_and_gets_the_source_appended(tui_dir: Path) -> None:
    prompts = load_prompt_set(tui_dir)
    rendered = render_request(prompts, leaf_request(previous_summary="S0", custom_instructions="Be brief."))
    assert rendered.user.startswith("You are summarizing a conversation segment.\nEarlier summary (do not repeat it):\nS0\n")
    assert "Depth 0, 3 messages, 2026-02-17 15:37 UTC – 2026-02-17 21:14 UTC." in rendered.user
    assert "Operator instructions:\nBe brief." in rendered.user
    assert rendered.user.endswith("<conversation_segment>\n" + LEAF_SOURCE + "\n</conversation_segment>")
    assert rendered.additions == ("CustomInstructions", "SourceText")
    assert rendered.template_hash == template_hash(TUI_LEAF)
    no_prev = render_request(prompts, leaf_request())
    assert "There is no earlier summary.\nDepth 0" in no_prev.user


def test_lcm_tui_d1_uses_its_own_source_block(tui_dir: Path) -> None:
    rendered = render_request(
        load_prompt_set(tui_dir),
        leaf_request(source_text=CONDENSED_SOURCE, kind="condensed", depth=1, target_tokens=2000, max_tokens=4048),
    )
    assert rendered.additions == ()
    assert rendered.user.endswith("<source>\n" + CONDENSED_SOURCE + "\n</source>")
    assert "Condense these 2 summaries" in rendered.user


def test_bad_directories_fail_with_the_file_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="prompt directory not found"):
        load_prompt_set(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match=r"no \*\.tmpl"):
        load_prompt_set(tmp_path)
    (tmp_path / "summary.tmpl").write_text("x", encoding="utf-8")
    with pytest.raises(TemplateError, match="summary.tmpl: not a known template name"):
        load_prompt_set(tmp_path)
    (tmp_path / "summary.tmpl").unlink()
    (tmp_path / "condensed-d2.tmpl").write_text("ok\n{{if .TargetTokens}}", encoding="utf-8")
    with pytest.raises(TemplateError, match=r"condensed-d2.tmpl:2: unclosed"):
        load_prompt_set(tmp_path)


def test_export_round_trip_and_diff(tmp_path: Path, tui_dir: Path) -> None:
    written = export_prompt_set(default_prompt_set(), tmp_path / "exported")
    assert sorted(p.name for p in written) == sorted(f"{n}.tmpl" for n in TEMPLATE_NAMES)
    reloaded = load_prompt_set(tmp_path / "exported")
    assert reloaded.hash == default_prompt_set().hash
    assert not any(d.changed for d in diff_prompt_sets(default_prompt_set(), reloaded))
    with pytest.raises(FileExistsError):
        export_prompt_set(default_prompt_set(), tmp_path / "exported")
    diffs = {d.name: d for d in diff_prompt_sets(default_prompt_set(), load_prompt_set(tui_dir))}
    assert diffs["leaf"].changed and diffs["condensed-d1"].changed and not diffs["condensed-d2"].changed
    assert "+You are summarizing a conversation segment." in diffs["leaf"].diff


# -- CLI -------------------------------------------------------------------------------------


def test_cli_list_show_diff_render_export(tmp_path: Path, tui_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prompts", "list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in TEMPLATE_NAMES) and default_prompt_set()["leaf"].hash[:12] in out

    assert main(["prompts", "show", "condensed-d2.tmpl"]) == 0
    assert capsys.readouterr().out == default_prompt_set()["condensed-d2"].text

    assert main(["prompts", "diff", str(tui_dir)]) == 0
    out = capsys.readouterr().out
    assert "+You are summarizing a conversation segment." in out
    assert "3 of 6 templates differ from the lab defaults" in out  # leaf, leaf-aggressive (= leaf), d1

    source = tmp_path / "source.txt"
    source.write_text(LEAF_SOURCE, encoding="utf-8")
    assert main(["prompts", "render", "leaf", "--source", str(source), "--prompts", str(tui_dir), "--target-tokens", "800"]) == 0
    out = capsys.readouterr().out
    assert "Target length: about 800 tokens." in out and "appended" in out and LEAF_SOURCE in out

    assert main(["prompts", "export", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "leaf-aggressive.tmpl").read_text(encoding="utf-8") == default_prompt_set()["leaf-aggressive"].text


def test_cli_reports_bad_names_and_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prompts", "show", "nope"]) == 2
    assert "unknown prompt template 'nope'" in capsys.readouterr().err
    assert main(["prompts", "render", "leaf", "--source", str(tmp_path / "missing.txt")]) == 2
    assert "no such file" in capsys.readouterr().err
