"""Errors that used to end in a traceback, run for real in a subprocess: each is one line on
stderr and exit status 2 (validate-metrics on one conversation, an Optuna storage that cannot be
opened, a Ray cluster that cannot be joined)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from test_hostile_output import lab
from test_sweep import small_spec


def one_line(result: object) -> str:
    err = result.stderr.decode()  # type: ignore[attr-defined]
    lines = [line for line in err.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in err, err[-3000:]  # type: ignore[attr-defined]
    return lines[0]


def test_validate_metrics_on_one_conversation(tmp_path: Path) -> None:
    line = one_line(lab("validate-metrics", "--db", "v.duckdb", "--conversations", "1", cwd=tmp_path))
    assert "at least two LoCoMo conversations" in line


def test_an_optuna_storage_that_cannot_be_opened(tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text(yaml.safe_dump(small_spec()))
    assert lab("sweep", "--db", "sw.duckdb", "--no-progress", "ok.yaml", cwd=tmp_path).returncode == 0
    listed = lab("sweeps", "--db", "sw.duckdb", "--json", cwd=tmp_path)
    sweep_id = json.loads(listed.stdout.decode().splitlines()[0])["sweep_id"]
    line = one_line(lab("export-study", "--db", "sw.duckdb", "--storage", "sqlite:////nonexistent-dir/o.db", sweep_id, cwd=tmp_path))
    assert "sqlite:////nonexistent-dir/o.db cannot be used" in line
    line = one_line(lab("export-study", "--db", "sw.duckdb", "--storage", "postgresql://u:zqPW12345@127.0.0.1:1/x", sweep_id, cwd=tmp_path))
    assert "zqPW12345" not in line and "the Optuna storage postgresql://[redacted]@127.0.0.1:1/x " in line


def test_a_ray_cluster_that_cannot_be_joined(tmp_path: Path) -> None:
    (tmp_path / "ray.yaml").write_text(yaml.safe_dump(small_spec(executor="ray://127.0.0.1:1")))
    line = one_line(lab("sweep", "--db", "sw.duckdb", "--no-progress", "ray.yaml", cwd=tmp_path))
    assert "executor ray://127.0.0.1:1" in line
