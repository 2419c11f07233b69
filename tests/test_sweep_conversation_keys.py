"""A sweep's conversations are who the verdict generalises over: two different files of one name
are two conversations (told apart by their folders, never one silently replacing the other), and
one session listed twice is said to be one session wherever the sweep's intervals are read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lcm_lab.store import LabStore
from lcm_lab.sweeps import recommend, sweep, sweep_df
from lcm_lab.sweeps.run import BASELINE_ID, baseline_id

GOLDEN = Path(__file__).resolve().parents[1] / "datasets" / "lossless-claw-ref" / "golden-session.jsonl"


def _session(path: Path, session_id: str | None = None, lines: int | None = None) -> Path:
    """The golden pi session written to ``path`` (its header's id replaced, its first ``lines`` lines only)."""
    rows = GOLDEN.read_text(encoding="utf-8").splitlines()[:lines]
    if session_id is not None:
        header = json.loads(rows[0])
        rows[0] = json.dumps({**header, "id": session_id})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _spec(paths: list[Path], **changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": "keys", "conversations": [{"path": str(p)} for p in paths], "token_budget": 1200,
        "base": {"leafChunkTokens": 400, "leafTargetTokens": 120}, "space": {"freshTailCount": [2, 6]},
        "objectives": [{"metric": "peak_context_tokens", "direction": "minimize"}],
        "scoring": {"qa": False}, "executor": "serial", "summarizer": {"name": "stub-v1"},
    }  # fmt: skip
    out.update(changes)
    return out


def test_two_files_of_one_name_are_two_conversations(tmp_path: Path) -> None:
    first = _session(tmp_path / "alice" / "session.jsonl", "alice-session")
    second = _session(tmp_path / "bob" / "session.jsonl", "bob-session", lines=20)
    store = LabStore(tmp_path / "lab.duckdb")
    result = sweep(_spec([first, second]), store=store, progress=False)
    frame = sweep_df(result.sweep_id, store)
    assert result.runs_ok == 6 and sorted(set(frame.conversation)) == ["alice/session.jsonl#0", "bob/session.jsonl#0"]
    # the two really are the two files: the shorter one replays fewer turns
    turns = dict(store.fetch_all("SELECT run_id, turns FROM replays WHERE label = ?", [result.sweep_id]))
    by_conversation = {c: turns[r] for c, r in zip(frame.conversation, frame.run_id, strict=True) if c}
    assert by_conversation["alice/session.jsonl#0"] > by_conversation["bob/session.jsonl#0"]
    assert not any("one session" in w for w in recommend(result.sweep_id, store).warnings)


def test_one_session_in_two_files_is_said_to_be_one_session(tmp_path: Path) -> None:
    whole = _session(tmp_path / "whole.jsonl")
    part = _session(tmp_path / "part.jsonl", lines=20)  # the same session's first lines: its id too
    store = LabStore(tmp_path / "lab.duckdb")
    result = sweep(_spec([whole, part]), store=store, progress=False)
    warning = next(w for w in recommend(result.sweep_id, store).warnings if "one session" in w)
    assert "whole.jsonl#0, part.jsonl#0 are one session (golden-session)" in warning
    assert "count them as independent conversations" in warning


def test_a_sweep_of_one_other_version_is_recommended_for_that_version(tmp_path: Path) -> None:
    # the sweep always replays the default version's defaults too; they are not what it tuned
    store = LabStore(tmp_path / "lab.duckdb")
    result = sweep(_spec([GOLDEN], space={"engine": ["1.0"], "freshTailCount": [2, 6]}), store=store, progress=False)
    rec = recommend(result.sweep_id, store)
    assert rec.engine == "1.0" and "tuned on lossless-claw 1.0" in rec.snippet()
    assert rec.config_id in {baseline_id("1.0"), *set(sweep_df(result.sweep_id, store).config_id)} - {BASELINE_ID}
