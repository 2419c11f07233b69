"""A prompt template that multiplies its values is refused before its text is built: a 105 KB
template repeating ``{{.SourceText}}`` 7,000 times over a 100 KB source took 1.4 GB to render
(``prompts render``), and in a model replay with ``--prompts`` one of 300 KB reached 10.8 GB. Every
path that renders templates goes through ``Template.render`` (prompts render, replay and sweeps
with prompts, whatif rewrite); it may add at most ``MAX_ADDED_CHARS`` to the values it is given."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from faults import child_env

from lcm_lab.cli import main
from lcm_lab.engine.protocol import SummaryRequest
from lcm_lab.prompts import default_prompt_set, render_request
from lcm_lab.prompts.gotemplate import MAX_ADDED_CHARS, MAX_STEPS, Template, TemplateError
from lcm_lab.testing import FakeOpenAIServer

SOURCE = "word " * 20_000  # 100 KB, as in the report
VALUES = {"SourceText": SOURCE, "Kind": "leaf", "TargetTokens": 1200}
TOO_LONG = f"the rendered prompt would pass {len(SOURCE) + 4 + MAX_ADDED_CHARS:,} characters"


@pytest.mark.parametrize(("text", "expected"), [
    ("{{.SourceText}}" * 7000, TOO_LONG),
    ("{{range 100000000000}}0123456789{{end}}", f"more than {MAX_STEPS:,} steps"),  # a list of its numbers came first
    ("{{range 100000}}{{range 100000}}{{end}}{{end}}", f"more than {MAX_STEPS:,} steps"),  # spun for hours
    ('{{printf "%999999999s" .SourceText}}', TOO_LONG),  # a gigabyte of padding in one piece
    ('{{printf "%.999999999f" 1.5}}', TOO_LONG),
    ("{{print" + " ." * 200 + "}}", TOO_LONG),  # every value 200 times in one action
    ("{{" + "9" * 5000 + "}}", "a number literal of 5,000 digits"),  # a ValueError from int()
], ids=["repeated source", "range over a huge number", "nested ranges", "printf width", "printf precision",
        "print of every value", "huge number literal"])  # fmt: skip
def test_a_template_that_multiplies_its_values_is_refused(text: str, expected: str) -> None:
    with pytest.raises(TemplateError) as info:
        Template("hostile.tmpl", text).render(VALUES)
    message = str(info.value)
    assert message.startswith("hostile.tmpl") and expected in message and "\n" not in message, message


def test_a_value_used_once_always_fits_however_long() -> None:
    source = "[2024-01-02 10:00 UTC | user]\n" + "x" * (MAX_ADDED_CHARS + 4_000_000)  # 20 MB: more than the margin
    rendered = render_request(default_prompt_set(), SummaryRequest(source, "leaf", 0, False, None, 1200, 20_000))
    assert source in rendered.user and len(rendered.user) < len(source) + 10_000


def _amplifying_prompts(directory: Path, repeats: int) -> Path:
    assert main(["prompts", "export", str(directory)]) == 0
    (directory / "leaf.tmpl").write_text("Summarize:\n" + "{{.SourceText}}" * repeats, encoding="utf-8")
    return directory


def _limit_memory() -> None:  # the promise: under 1 GB on default settings
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_prompts_render_refuses_it_in_bounded_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompts = _amplifying_prompts(tmp_path / "pt", 7000)  # 105 KB, under the 1 MB template cap
    capsys.readouterr()
    source = tmp_path / "src.txt"
    source.write_text(SOURCE)
    done = subprocess.run([sys.executable, "-m", "lcm_lab", "prompts", "render", "leaf", "--prompts", str(prompts),
                           "--source", str(source)], capture_output=True, text=True, env=child_env(),
                          preexec_fn=_limit_memory, timeout=120)  # before: MemoryError under this limit (1.4 GB)
    assert done.returncode == 2 and done.stdout == "", done.stderr[-2000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"lcm-lab prompts: {prompts / 'leaf.tmpl'}:2: the rendered prompt would pass "), line
    assert "{{.SourceText}}" in line


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    from test_hostile_model_calls import session

    return session(tmp_path / "s.jsonl")


def test_replay_whatif_and_sweep_with_such_prompts_send_nothing(tmp_path: Path, transcript: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    prompts = _amplifying_prompts(tmp_path / "pt", 20_000)  # the 300 KB template of the 10.8 GB replay
    db = str(tmp_path / "lab.duckdb")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"freshTailCount": 2}))
    options = ["--token-budget", "1200", "--config", str(config), "--cache", "off", "--max-retries", "0"]
    with FakeOpenAIServer() as server:
        model = ["--summarizer", "litellm", "--model", "openai/fake", "--api-base", server.base_url]
        capsys.readouterr()
        assert main(["replay", str(transcript), "--db", db, *options, *model, "--prompts", str(prompts)]) == 2
        [line] = capsys.readouterr().err.strip().splitlines()
        assert line.startswith(f"lcm-lab replay: {prompts / 'leaf.tmpl'}:2: the rendered prompt would pass "), line

        assert main(["replay", str(transcript), "--db", db, *options, "--summarizer", "stub-v1", "--json"]) == 0
        run_id = json.loads(capsys.readouterr().out.splitlines()[0])["run_id"]
        code = main(["whatif", "rewrite", run_id, "--depth", "0", "--db", db, "--model", "openai/fake",
                     "--api-base", server.base_url, "--prompts", str(prompts)])
        [line] = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and line.startswith(f"lcm-lab whatif: {prompts / 'leaf.tmpl'}:2: the rendered prompt"), line

        spec = tmp_path / "sweep.yaml"
        spec.write_text(json.dumps({
            "name": "amplifying-prompts", "conversations": [{"path": str(transcript)}], "token_budget": 1200,
            "summarizer": {"name": "litellm", "model": "openai/fake", "api_base": server.base_url,
                           "prompts": str(prompts), "max_retries": 0},
            "base": {"freshTailCount": 2}, "space": {"contextThreshold": [0.5]},
            "objectives": [{"metric": "fact_retention", "direction": "maximize"}],
        }))  # fmt: skip
        main(["sweep", str(spec), "--db", db, "--no-progress"])
        err = capsys.readouterr().err
        assert "runs failed; the first: TemplateError: " in err and "the rendered prompt would pass" in err, err
        assert server.completion_requests == []  # nothing was built, so nothing was sent
