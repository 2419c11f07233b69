"""Sweeps and tuning: vary plugin knobs over conversations, score, store, recommend.

``sweep(spec)`` runs (or resumes) a sweep described by a :class:`SweepSpec` (a mapping or a YAML
file; ``lcm-lab sweep --example`` prints a commented one), ``sweep_df(sweep_id)`` reads it back
one row per configuration × conversation, ``recommend(sweep_id)`` chooses the settings to ship.
See ``docs/sweeps.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lcm_lab.sweeps.metrics import METRICS, ScoredRun, register_metric
from lcm_lab.sweeps.optuna_study import sweep_study
from lcm_lab.sweeps.recommend import Recommendation, env_lines, recommend
from lcm_lab.sweeps.results import config_table, pareto_front, sweep_df
from lcm_lab.sweeps.run import BASELINE_ID, SweepResult, load_spec, sweep
from lcm_lab.sweeps.spec import SweepSpec, SweepSpecError, parse_spec

if TYPE_CHECKING:
    import pandas as pd

    from lcm_lab.store import LabStore

__all__ = [
    "BASELINE_ID",
    "METRICS",
    "Recommendation",
    "ScoredRun",
    "SweepResult",
    "SweepSpec",
    "SweepSpecError",
    "config_table",
    "env_lines",
    "list_sweeps",
    "load_spec",
    "pareto_front",
    "parse_spec",
    "recommend",
    "register_metric",
    "sweep",
    "sweep_df",
    "sweep_study",
]


def list_sweeps(store: LabStore | None = None) -> pd.DataFrame:
    """Every sweep in the store (pandas): id, name, status, configurations, runs ok/failed, stats."""
    from lcm_lab.store import LabStore
    from lcm_lab.store.sweeps import sweeps_df

    return sweeps_df(store if store is not None else LabStore())
