"""The reference runs of the real lossless-claw engine, as test data (see fixtures/reference-runs)."""

from __future__ import annotations

import gzip
import json
import shutil
from functools import cache
from pathlib import Path
from typing import Any

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.protocol import Summarizer
from lcm_lab.engine.types import Conversation
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.summarizers.stub import LegacyGoldenSummarizer, StubV1Summarizer

FIXTURES = Path(__file__).parent / "fixtures" / "reference-runs"


@cache
def index() -> list[dict[str, Any]]:
    return json.loads((FIXTURES / "index.json").read_text())["runs"]


def run_ids() -> list[str]:
    return [run["run_id"] for run in index()]


def run_info(run_id: str) -> dict[str, Any]:
    return next(run for run in index() if run["run_id"] == run_id)


def load_trace(run_id: str) -> dict[str, Any]:
    with gzip.open(FIXTURES / "traces" / f"{run_id}.trace.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


def input_path(name: str, directory: Path) -> Path:
    """The gunzipped reference input ``name`` (e.g. ``golden-session.jsonl``) inside ``directory``."""
    target = directory / name
    if not target.exists():
        with gzip.open(FIXTURES / "inputs" / f"{name}.gz", "rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return target


def conversation_for(run_id: str, directory: Path) -> Conversation:
    name = Path(run_info(run_id)["input_file"]).name
    return read_transcript(input_path(name, directory)).conversations[0].conversation


def config_for(trace: dict[str, Any]) -> LcmConfig:
    """The plugin config plus the harness's compaction mode (``inline`` in the earlier sets; unset = deferred)."""
    mode = trace["harness_config"].get("proactiveThresholdCompactionMode")
    extra = {"proactiveThresholdCompactionMode": mode} if mode else {}
    return LcmConfig.from_plugin_config({**trace["plugin_config"], **extra})


def summarizer_for(run_id: str) -> Summarizer:
    return StubV1Summarizer() if run_info(run_id)["stub"] == "stub-v1" else LegacyGoldenSummarizer()
