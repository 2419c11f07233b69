"""lcm_lab: a notebook-first research workbench for Lossless Context Management.

The common entry points are importable from the top level (lazily, so ``import lcm_lab`` stays
cheap)::

    import lcm_lab as lab
    store = lab.LabStore()                      # .lcm_lab/lab.duckdb, or $LCM_LAB_HOME
    lab.load("datasets/", store)                # lcm.db files, transcripts, directories
    read = lab.read_transcript("datasets/pi-mono/before-compaction.jsonl")
    run = lab.replay(read.conversations[0].conversation, lab.LcmConfig(), lab.get_summarizer("offline"), token_budget=32_000)
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "LabStore": "lcm_lab.store",
    "open_store": "lcm_lab.store",
    "load": "lcm_lab.load",
    "load_lcm_db": "lcm_lab.load",
    "load_transcript": "lcm_lab.load",
    "read_transcript": "lcm_lab.io.transcripts",
    "LcmConfig": "lcm_lab.engine.config",
    "replay": "lcm_lab.engine.replay",
    "Replay": "lcm_lab.engine.replay",
    "reference_trace": "lcm_lab.engine.trace",
    "get_summarizer": "lcm_lab.summarizers",
    "save_replay": "lcm_lab.store.replays",
    "load_replay": "lcm_lab.store.replays",
    "score_replay": "lcm_lab.metrics.score",
    "write_report": "lcm_lab.report",
    "sweep": "lcm_lab.sweeps",
    "sweep_df": "lcm_lab.sweeps",
    "recommend": "lcm_lab.sweeps",
    "list_sweeps": "lcm_lab.sweeps",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lcm_lab' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
