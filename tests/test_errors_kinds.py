"""Issue 23 item 11: ``except lab.UserError`` catches every common mistake, each with its kind
(docs/errors.md), and the CLI turns each into one line and exit 2 without catching anything else."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, gunzip_to

import lcm_lab as lab
from lcm_lab import errors
from lcm_lab.cli import main
from lcm_lab.store import LabStore

TRANSCRIPT = FIXTURES / "reference-runs" / "inputs" / "golden-session.jsonl.gz"


def _conversation() -> Any:
    return lab.read_transcript(TRANSCRIPT).conversations[0].conversation


def _text_file(tmp: Path) -> Path:
    path = tmp / "notes.txt"
    path.write_text("hello\n")
    return path


MISTAKES: dict[str, tuple[Callable[[Path, LabStore], Any], type[errors.UserError]]] = {
    "a transcript that does not exist": (lambda t, s: lab.read_transcript(t / "missing.jsonl"), errors.NotFoundError),
    "a text file as a transcript": (lambda t, s: lab.read_transcript(_text_file(t)), errors.InputError),
    "a bad plugin config value": (lambda t, s: lab.LcmConfig.from_plugin_config({"contextThreshold": "x"}), errors.SpecError),
    "a replay without a summarizer": (lambda t, s: lab.replay(_conversation()), errors.OptionError),
    "a negative token budget": (lambda t, s: lab.replay(_conversation(), summarizer=lab.get_summarizer("offline"),
                                                        token_budget=-5), errors.OptionError),
    "an unknown run id": (lambda t, s: lab.load_replay(s, "run_nope"), errors.NotFoundError),
    "an unknown sweep id": (lambda t, s: lab.recommend("nope", s), errors.NotFoundError),
    "an unknown summarizer": (lambda t, s: lab.get_summarizer("nope"), errors.OptionError),
    "an unknown strategy": (lambda t, s: lab.get_strategy("nope"), errors.SpecError),
    "a strategy parameter it does not take": (lambda t, s: lab.get_strategy("truncate", nonsense=1), errors.SpecError),
    "a model without a price": (lambda t, s: lab.load_prices("nope/nope-model"), errors.NotFoundError),
    "an invalid sweep spec": (lambda t, s: lab.sweep({"name": "x", "bogus": 1}, store=s), errors.SpecError),
    "a sweep spec file that does not exist": (lambda t, s: lab.sweep(t / "missing.yaml", store=s), errors.NotFoundError),
    "a question after a turn the run does not have": (lambda t, s: lab.replay(_conversation(), summarizer=lab.get_summarizer(
        "offline"), token_budget=8000).ask("When?", after_turn=10**6), errors.OptionError),
    "recall of a run without its store": (lambda t, s: lab.recall("run_nope"), errors.OptionError),
    "an lcm.db as the lab store": (lambda t, s: LabStore(gunzip_to(FIXTURES / "lcm-db-versions" / "lcm-v0.15.3.db.gz", t)),
                                   errors.StoreError),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_user_error_catches_the_mistake(tmp_path: Path, store: LabStore, mistake: str) -> None:
    make, kind = MISTAKES[mistake]
    with pytest.raises(lab.UserError) as info:
        make(tmp_path, store)
    assert isinstance(info.value, kind), type(info.value).__mro__
    message = str(info.value)
    assert message and "\n" not in message.strip().split("\n")[0]


def test_old_catches_keep_working(store: LabStore) -> None:
    with pytest.raises(KeyError):
        lab.load_replay(store, "run_nope")
    with pytest.raises(ValueError):
        lab.get_strategy("nope")
    with pytest.raises(FileNotFoundError):
        lab.read_transcript("missing.jsonl")


def test_every_kind_is_documented() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "errors.md").read_text()
    kinds = [name for name, value in vars(errors).items()
             if isinstance(value, type) and issubclass(value, errors.UserError) and value.__module__ == errors.__name__]
    missing = [k for k in kinds if f"`{k}`" not in text]
    assert not missing


def test_the_cli_keeps_the_traceback_of_a_bug(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import lcm_lab.commands.sweeps as sweeps_command

    def broken(args: Any) -> int:
        raise KeyError("a bug, not the user's")

    monkeypatch.setattr(sweeps_command, "run", broken)
    from lcm_lab.cli import build_parser

    parser = build_parser()
    monkeypatch.setattr("lcm_lab.cli.build_parser", lambda: parser)
    for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
        action.choices["sweeps"].set_defaults(func=broken)  # type: ignore[index]
    with pytest.raises(KeyError):
        main(["sweeps"])


def test_debug_shows_the_traceback_of_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(errors.NotFoundError):
        main(["--debug", "report", "--run", "run_nope", "--db", str(tmp_path / "lab.duckdb")])
    assert main(["report", "--run", "run_nope", "--db", str(tmp_path / "lab.duckdb")]) == 2
