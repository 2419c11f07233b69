"""``recommend(sweep_id)``: the settings to ship, as ``openclaw.json`` and ``LCM_*`` lines, with
their measured trade-off against the plugin defaults on the same conversations.

Choice: among configurations that ran on every conversation and meet the constraints (on the
mean), the best on the first objective — restricted to the Pareto front when there are several
objectives. Only an LCM configuration has plugin settings: when a sweep over strategies is won
by another strategy, the recommendation says so and gives no ``openclaw.json`` / ``LCM_*``
lines for it (it names the best LCM configuration instead). The trade-off per metric is the mean paired difference (chosen − defaults) over
conversations with a 95% t-interval; a warning says when an interval includes 0 (within noise)
or when there is a single conversation (no interval at all), and when a headline objective
(``qa_retention``, ``fact_retention``) of the chosen configuration is not above its chance control
(or has none: the sweep had no second conversation of the same kind to read as chance). A sweep
that priced its runs also states the chosen configuration's saving against the defaults in $ per
1,000 turns with its paired 90% interval (``cost``, :func:`lcm_lab.sweeps.cost.cost_verdict`),
"within noise" when that interval covers 0.

>>> env_lines({"freshTailCount": 16, "contextThreshold": 0.6, "promptAwareEviction": True})
{'LCM_FRESH_TAIL_COUNT': '16', 'LCM_CONTEXT_THRESHOLD': '0.6', 'LCM_PROMPT_AWARE_EVICTION_ENABLED': 'true'}
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from lcm_lab.engine.config.lcm_config import FIELDS, LcmConfig
from lcm_lab.errors import DataError
from lcm_lab.sweeps.cost import cost_verdict, stored_cost_rows, verdict_lines
from lcm_lab.sweeps.metrics import CHANCE_COLUMNS
from lcm_lab.sweeps.results import config_table, pareto_front, sweep_df
from lcm_lab.sweeps.run import BASELINE_ID

if TYPE_CHECKING:
    import pandas as pd

    from lcm_lab.store.core import LabStore

_ENV_OF = {key: f.envs[0] for f in FIELDS for key in f.keys}


class Recommendation(NamedTuple):
    """The chosen configuration. ``openclaw_json`` and ``env`` are the lossless-claw settings that
    reproduce it — ``None`` and ``{}`` when the best configuration is another strategy (then
    ``best_lcm`` names the best LCM configuration, whose settings are in ``lcm_openclaw_json``)."""

    sweep_id: str
    config_id: str
    params: dict[str, Any]
    openclaw_json: dict[str, Any] | None
    env: dict[str, str]
    tradeoff: list[dict[str, Any]]
    warnings: list[str]
    pareto: list[str]
    table: pd.DataFrame
    strategy: str = "lcm"
    best_lcm: str | None = None
    lcm_openclaw_json: dict[str, Any] | None = None
    cost: dict[str, Any] | None = None  # the paired saving against the defaults (sweeps.cost.cost_verdict)

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` object: ``strategy``, ``openclaw_json`` (null unless LCM), ``env``,
        ``tradeoff`` and context."""
        return {
            "sweep_id": self.sweep_id, "config_id": self.config_id, "strategy": self.strategy, "params": self.params,
            "openclaw_json": self.openclaw_json, "env": self.env, "tradeoff": self.tradeoff,
            "warnings": self.warnings, "pareto": self.pareto, "best_lcm": self.best_lcm,
            "lcm_openclaw_json": self.lcm_openclaw_json, "cost": self.cost,
        }

    def snippet(self) -> str:
        """Human-readable: the openclaw.json fragment, the env lines, the trade-off and warnings
        (for a non-LCM winner: no plugin settings, and which LCM configuration came best)."""
        lines = [f"# sweep {self.sweep_id}: recommended configuration {self.config_id} {json.dumps(self.params)}"]
        if self.openclaw_json is None:
            lines += [f"# the best configuration is strategy {self.strategy!r}, not LCM: no openclaw.json or LCM_* "
                      "setting of lossless-claw reproduces it"]
            if self.best_lcm is not None:
                lines += [f"# best LCM configuration: {self.best_lcm}; if you stay with lossless-claw, its openclaw.json:",
                          json.dumps(self.lcm_openclaw_json, indent=2)]
        else:
            lines += ["# openclaw.json", json.dumps(self.openclaw_json, indent=2), "", "# or as environment variables"]
            lines += [f"{k}={v}" for k, v in self.env.items()] or ["# (the plugin defaults: nothing to set)"]
        lines += ["", "# trade-off against the plugin defaults (chosen − defaults, paired over conversations, 95% interval)"]
        for t in self.tradeoff:
            interval = "no interval" if t["ci_low"] is None else f"[{t['ci_low']:+.4g}, {t['ci_high']:+.4g}]"
            diff = "n/a" if t["difference"] is None else f"{t['difference']:+.4g}"
            chance = f"  chance {_fmt(t['chance'])}" if "chance" in t else ""
            lines.append(f"{t['metric']:<24} {t['direction']:<9} chosen {_fmt(t['chosen'])}  defaults {_fmt(t['defaults'])}"
                         f"  diff {diff} {interval}  n={t['n']}{chance}")
        lines += verdict_lines(self.cost)
        lines += [f"WARNING: {w}" for w in self.warnings]
        return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def env_lines(plugin_config: Mapping[str, Any]) -> dict[str, str]:
    """``LCM_*`` variables equivalent to scalar plugin config keys (objects have no env form)."""
    out = {}
    for key, value in plugin_config.items():
        name = _ENV_OF.get(key)
        if name is None or isinstance(value, Mapping):
            continue
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        elif isinstance(value, list | tuple):
            out[name] = ",".join(str(v) for v in value)
        elif isinstance(value, float) and value.is_integer():
            out[name] = str(int(value))
        else:
            out[name] = str(value)
    return out


def recommend(sweep_id: str, store: LabStore | None = None) -> Recommendation:
    """The recommended settings of a finished (or partly finished) sweep."""
    from lcm_lab.store.sweeps import sweep_row

    if store is None:
        from lcm_lab.store import LabStore

        store = LabStore()
    spec = sweep_row(store, sweep_id)["spec"]
    objectives = {o["metric"]: o["direction"] for o in spec["objectives"]}
    metrics = list(dict.fromkeys([*objectives, *(c["metric"] for c in spec.get("constraints", []))]))
    frame = sweep_df(sweep_id, store)
    table = config_table(frame, metrics)
    conversations = frame.conversation.nunique()
    complete = table[(table.conversations == conversations) & (table.failed == 0)]
    feasible = complete[[_meets(row, spec.get("constraints", [])) for row in complete.to_dict("records")]]
    if feasible.empty:
        raise DataError(f"sweep {sweep_id}: no configuration ran on every conversation within the constraints; "
                         "relax the constraints or look at sweep_df() for the errors")
    front = pareto_front(feasible, objectives)
    first, direction = next(iter(objectives.items()))
    pool = feasible[feasible.config_id.isin(front)].dropna(subset=[first])
    if pool.empty:
        raise DataError(f"sweep {sweep_id}: no configuration has a value for {first}")
    ranked = pool.sort_values(first, ascending=direction == "minimize", kind="stable")
    best = ranked.iloc[0]
    config_id = str(best.config_id)
    params = _params(store, sweep_id, config_id)
    strategy = str(params.get("strategy", "lcm"))
    tradeoff, warnings = _tradeoff(frame, config_id, metrics, objectives)
    warnings += _chance_warnings(frame, config_id, objectives, tradeoff)
    if config_id == BASELINE_ID:
        warnings.insert(0, "the plugin defaults scored best: no change recommended")
    cost = cost_verdict(stored_cost_rows(sweep_id, store), config_id, BASELINE_ID) if config_id != BASELINE_ID else None
    if cost is not None and cost["within_noise"]:
        warnings.append(f"cost_usd: the saving against the defaults is within noise (90% paired interval "
                        f"${cost['saving_low']:,.2f} .. ${cost['saving_high']:,.2f} per 1,000 turns includes 0)")
    if strategy == "lcm":
        plugin = _plugin_config(spec, config_id, params)
        return Recommendation(sweep_id, config_id, params, _openclaw(plugin), env_lines(plugin), tradeoff, warnings,
                              front, table, cost=cost)
    # Another strategy won: lossless-claw has no setting for it. Say so, and name the best LCM
    # configuration (the feasible one best on the first objective, Pareto-optimal or not).
    lcm_rows = feasible[feasible.strategy == "lcm"].dropna(subset=[first]) if "strategy" in feasible else feasible[:0]
    lcm_rows = lcm_rows.sort_values(first, ascending=direction == "minimize", kind="stable")
    best_lcm = None if lcm_rows.empty else str(lcm_rows.iloc[0].config_id)
    lcm_json = None
    note = (f"the best configuration ({config_id}) is strategy {strategy!r}, not LCM: there is no openclaw.json "
            "or LCM_* setting to ship for it")
    if best_lcm is not None:
        lcm_json = _openclaw(_plugin_config(spec, best_lcm, _params(store, sweep_id, best_lcm)))
        gap = float(lcm_rows.iloc[0][first]) - float(best[first])
        note += f"; the best LCM configuration is {best_lcm} ({first} {float(lcm_rows.iloc[0][first]):.4g}, {gap:+.4g} from the best)"
    warnings.insert(0, note)
    return Recommendation(sweep_id, config_id, params, None, {}, tradeoff, warnings, front, table, strategy, best_lcm,
                          lcm_json, cost)


def _params(store: LabStore, sweep_id: str, config_id: str) -> dict[str, Any]:
    if config_id == BASELINE_ID:
        return {}
    from lcm_lab.store.sweeps import config_params

    return config_params(store, sweep_id, config_id)


def _plugin_config(spec: Mapping[str, Any], config_id: str, params: Mapping[str, Any]) -> dict[str, Any]:
    base = {} if config_id == BASELINE_ID else dict(spec.get("base", {}))
    knobs = {k: v for k, v in params.items() if k != "strategy"}
    return LcmConfig.from_plugin_config({**base, **knobs}).to_plugin_config(minimal=True)


def _openclaw(plugin: Mapping[str, Any]) -> dict[str, Any]:
    return {"plugins": {"entries": {"lossless-claw": {"config": dict(plugin)}}}}


def _meets(row: Mapping[str, Any], constraints: list[Mapping[str, Any]]) -> bool:
    for c in constraints:
        v = row.get(c["metric"])
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return False
        if c.get("max") is not None and v > c["max"]:
            return False
        if c.get("min") is not None and v < c["min"]:
            return False
    return True


def _chance_warnings(frame: pd.DataFrame, config_id: str, objectives: Mapping[str, str],
                     tradeoff: list[dict[str, Any]]) -> list[str]:
    """Warnings when a headline objective of the chosen configuration is not above its chance
    control (the same reader over a donor conversation), or has none; each objective's trade-off
    row gets the chosen configuration's mean ``chance`` (and how many conversations it covers)."""
    ok = frame[(frame.status == "ok") & (frame.config_id == config_id)]
    rows = {t["metric"]: t for t in tradeoff}
    warnings = []
    for metric, column in CHANCE_COLUMNS.items():
        if metric not in objectives or column not in frame:
            continue
        pairs = [(float(v), float(c)) for v, c in zip(ok[metric], ok[column], strict=True) if _number(v) and _number(c)]
        if metric in rows:
            rows[metric]["chance"] = sum(c for _, c in pairs) / len(pairs) if pairs else None
            rows[metric]["chance_n"] = len(pairs)
        if not pairs:
            notes = sorted({str(n) for n in ok.get("chance_note", []) if isinstance(n, str) and n})
            why = "; ".join(notes) or "the headline was withheld or not scored on these conversations"
            warnings.append(f"{metric}: no chance control to compare with ({why})")
            continue
        value, chance = sum(v for v, _ in pairs) / len(pairs), sum(c for _, c in pairs) / len(pairs)
        if value <= chance:
            donors = sorted({str(d) for d in ok.chance_donor if isinstance(d, str)}) if "chance_donor" in ok else []
            warnings.append(f"{metric}: the chosen configuration ({value:.4g}) is not above its chance control ({chance:.4g}, "
                            f"the same reader over donor conversation{'s' if len(donors) > 1 else ''} {', '.join(donors)}; "
                            f"mean over {len(pairs)} conversation{'s' if len(pairs) > 1 else ''}): "
                            "the score does not show that this configuration keeps what matters")
    return warnings


def _number(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _tradeoff(frame: pd.DataFrame, config_id: str, metrics: list[str], objectives: Mapping[str, str]) -> tuple[list[dict[str, Any]], list[str]]:
    from lcm_lab.metrics.stats import t_interval

    ok = frame[frame.status == "ok"]
    chosen = ok[ok.config_id == config_id].set_index("conversation")
    base = ok[ok.config_id == BASELINE_ID].set_index("conversation")
    shared = [c for c in chosen.index if c in base.index]
    rows, warnings = [], []
    if len(shared) == 1:
        warnings.append("measured on a single conversation: no interval; add conversations before trusting the difference")
    if not shared:
        warnings.append("the plugin defaults did not run on these conversations: no trade-off can be measured")
    for m in metrics:
        pairs = [(float(chosen.at[c, m]), float(base.at[c, m])) for c in shared
                 if chosen.at[c, m] is not None and base.at[c, m] is not None
                 and not math.isnan(float(chosen.at[c, m])) and not math.isnan(float(base.at[c, m]))]
        diffs = [a - b for a, b in pairs]
        lo, hi = t_interval(diffs)
        defined = len(diffs) >= 2 and not math.isnan(lo)
        row = {
            "metric": m, "direction": objectives.get(m, "constraint"), "n": len(diffs),
            "chosen": sum(a for a, _ in pairs) / len(pairs) if pairs else None,
            "defaults": sum(b for _, b in pairs) / len(pairs) if pairs else None,
            "difference": sum(diffs) / len(diffs) if diffs else None,
            "ci_low": lo if defined else None, "ci_high": hi if defined else None,
        }
        row["within_noise"] = bool(defined and lo <= 0 <= hi)
        if row["within_noise"] and config_id != BASELINE_ID:
            warnings.append(f"{m}: the difference to the defaults is within noise (95% interval {lo:+.4g} .. {hi:+.4g} includes 0)")
        rows.append(row)
    return rows, warnings
