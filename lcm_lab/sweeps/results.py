"""Reading sweeps back: ``sweep_df`` (one row per configuration × conversation), per-config
summaries with intervals, and the Pareto front.

>>> import pandas as pd
>>> frame = pd.DataFrame({"config_id": ["a", "b", "c"], "q": [0.9, 0.5, 0.8], "t": [100, 50, 200]})
>>> pareto_front(frame, {"q": "maximize", "t": "minimize"})
['a', 'b']
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lcm_lab.engine.versions import DEFAULT_ENGINE
from lcm_lab.sweeps.cost import COST_COLUMNS
from lcm_lab.sweeps.metrics import CONTROL_COLUMNS, METRICS
from lcm_lab.sweeps.spec import ENGINE_KEY

if TYPE_CHECKING:
    import pandas as pd

    from lcm_lab.store.core import LabStore


def _store(store: LabStore | None) -> LabStore:
    if store is not None:
        return store
    from lcm_lab.store import LabStore

    return LabStore()


def sweep_df(sweep_id: str, store: LabStore | None = None) -> pd.DataFrame:
    """One row per (configuration, conversation): ``config_id``, ``trial``, ``baseline``,
    ``strategy`` (``lcm`` for the plugin defaults and every plugin-knob configuration), ``engine``
    (the lossless-claw version an LCM configuration replayed; ``None`` for other strategies), the varied
    parameters (plugin knobs, then other strategies' own; ``None`` where a parameter is not the
    row's strategy's), ``conversation``, ``run_id``, ``status``, ``error``, ``seconds``, every
    registered metric (see :data:`lcm_lab.sweeps.metrics.METRICS`), and the chance controls:
    ``qa_retention_chance`` / ``fact_retention_chance`` (on their headline's scale), ``chance_donor``
    (the conversation they read) and ``chance_note`` (why there is none, when there is none); and
    for priced runs the cost columns of :mod:`lcm_lab.sweeps.cost`: ``cost_usd_p05`` /
    ``cost_usd_p95`` (the bill's 90% interval) and ``cost_saving_usd`` with its paired 90% interval
    ``cost_saving_usd_p05`` / ``_p95`` (defaults − this run on the same conversation)."""
    import pandas as pd

    from lcm_lab.store.sweeps import sweep_row, sweep_runs_df
    from lcm_lab.sweeps.cost import cost_columns
    from lcm_lab.sweeps.run import BASELINE_ID

    store = _store(store)
    row = sweep_row(store, sweep_id)
    runs = sweep_runs_df(store, sweep_id)
    spec = row["spec"]
    space = [k for k in spec["space"] if k not in ("strategy", ENGINE_KEY)]
    for params in (spec.get("strategy_config") or {}).values():
        space += [k for k, v in params.items() if isinstance(v, list | dict) and k not in space]
    records = []
    rows = runs.to_dict("records")
    stored = [json.loads(r["metrics"]) for r in rows]
    costs = cost_columns([(r["config_id"], r["conversation_key"], m) for r, m in zip(rows, stored, strict=True)], BASELINE_ID)
    for r, metrics, cost in zip(rows, stored, costs, strict=True):
        params = json.loads(r["params"])
        record: dict[str, Any] = {
            "sweep_id": sweep_id, "config_id": r["config_id"], "trial": None if pd.isna(r["trial"]) else int(r["trial"]),
            "baseline": bool(r["baseline"]), "strategy": params.get("strategy", "lcm"),
        }
        # the lossless-claw version an LCM configuration replayed (none for another strategy)
        record[ENGINE_KEY] = params.get(ENGINE_KEY, DEFAULT_ENGINE) if record["strategy"] == "lcm" else None
        record.update({key: params.get(key) for key in space})
        record.update({
            "conversation": r["conversation_key"], "run_id": r["run_id"], "status": r["status"], "error": r["error"],
            "seconds": r["seconds"], "model_calls": r["model_calls"],
        })
        record.update({name: metrics.get(name) for name in sorted(METRICS)})
        record.update(_controls(metrics, r["status"]))
        record.update(cost)
        records.append(record)
    columns = ["sweep_id", "config_id", "trial", "baseline", "strategy", ENGINE_KEY, *space, "conversation", "run_id", "status", "error",
               "seconds", "model_calls", *sorted(METRICS), *CONTROL_COLUMNS, *COST_COLUMNS]
    return pd.DataFrame.from_records(records, columns=columns)


def _controls(metrics: Mapping[str, Any], status: str) -> dict[str, Any]:
    """A row's chance-control columns from its stored metrics (a run stored before sweeps computed
    chance controls says so rather than showing blanks)."""
    controls = metrics.get("controls")
    if isinstance(controls, Mapping):
        return {column: controls.get(column) for column in CONTROL_COLUMNS}
    out: dict[str, Any] = dict.fromkeys(CONTROL_COLUMNS)
    if status == "ok":
        out["chance_note"] = "not recorded: this run was stored before sweeps computed chance controls"
    return out


MIN_INTERVAL_CONVERSATIONS = 3


def config_table(frame: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Per configuration: parameters, conversations ok/failed, and each metric's mean with a 95%
    t-interval over conversations (``<metric>``, ``<metric>_ci_low``, ``<metric>_ci_high``).

    Below :data:`MIN_INTERVAL_CONVERSATIONS` conversations the interval is NaN: a t-interval over
    two values (one degree of freedom, quantile 12.7) spans several times any score's scale."""
    import pandas as pd

    from lcm_lab.metrics.stats import t_interval

    params = [c for c in frame.columns if c not in _NON_PARAM and c not in METRICS]
    out = []
    for config_id, group in frame.groupby("config_id", sort=False):
        ok = group[group.status == "ok"]
        row: dict[str, Any] = {"config_id": config_id, "trial": group.trial.iloc[0], "baseline": bool(group.baseline.iloc[0])}
        row.update({p: group[p].iloc[0] for p in params})
        row.update({"conversations": len(ok), "failed": int((group.status == "error").sum())})
        for m in metrics:
            values = [float(v) for v in ok[m] if v is not None and not pd.isna(v)]
            row[m] = sum(values) / len(values) if values else None
            lo, hi = t_interval(values) if len(values) >= MIN_INTERVAL_CONVERSATIONS else (math.nan, math.nan)
            row[f"{m}_ci_low"], row[f"{m}_ci_high"] = lo, hi
        out.append(row)
    return pd.DataFrame(out)


_NON_PARAM = {"sweep_id", "config_id", "trial", "baseline", "conversation", "run_id", "status", "error", "seconds", "model_calls",
              *CONTROL_COLUMNS, *COST_COLUMNS}


def pareto_front(table: pd.DataFrame, directions: Mapping[str, str]) -> list[str]:
    """Config ids no other configuration beats on every objective (rows with missing values skipped)."""
    from lcm_lab.metrics.stats import pareto_mask

    rows = table.dropna(subset=list(directions))
    # pareto_mask minimises every coordinate: negate what is maximised
    signs = {m: (-1.0 if d == "maximize" else 1.0) for m, d in directions.items()}
    points = [[signs[m] * float(r[m]) for m in directions] for r in rows.to_dict("records")]
    return [cid for cid, keep in zip(rows.config_id, pareto_mask(points), strict=True) if keep]
