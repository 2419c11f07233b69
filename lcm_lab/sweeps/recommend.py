"""``recommend(sweep_id)``: the settings to ship, as ``openclaw.json`` and ``LCM_*`` lines, with
their measured trade-off against the plugin defaults on the same conversations.

Choice: the rule of :func:`lcm_lab.sweeps.choice.choose` (configurations that ran on every
conversation and meet the constraints on the mean, the Pareto front, best on the first
objective, the defaults winning ties). With at least four conversations the rule is
cross-validated over conversations (:func:`lcm_lab.sweeps.choice.cross_validate`):
``out_of_sample`` carries the held-out gain over the defaults with its interval over
conversations and whether the choice ``transfers``; the first warning says plainly "does not
transfer" when it does not. With fewer, the recommendation says it is in-sample only.
Only an LCM configuration has plugin settings: when a sweep over strategies is won
by another strategy, the recommendation says so and gives no ``openclaw.json`` / ``LCM_*``
lines for it (it names the best LCM configuration instead). The in-sample trade-off per metric is the mean paired
difference (chosen − defaults) over conversations with a 95% t-interval; a warning says when an interval includes 0 (within noise)
or when fewer than three conversations were paired: then there is no interval (NaN, with the reason in ``no_interval``), since a
t-interval over two values spans several times any score's scale, and the difference describes those conversations only,
not new ones (the rule of :func:`~lcm_lab.sweeps.results.config_table`); also when a headline objective
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
from lcm_lab.engine.versions import DEFAULT_ENGINE
from lcm_lab.errors import DataError, OptionError
from lcm_lab.sweeps.choice import DEFAULT_FOLDS, MIN_CONVERSATIONS, choose, cross_validate, setting_label
from lcm_lab.sweeps.cost import cost_verdict, stored_cost_rows, verdict_lines
from lcm_lab.sweeps.metrics import CHANCE_COLUMNS
from lcm_lab.sweeps.results import MIN_INTERVAL_CONVERSATIONS, sweep_df
from lcm_lab.sweeps.run import BASELINE_ID, baseline_id
from lcm_lab.sweeps.spec import ENGINE_KEY

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
    out_of_sample: dict[str, Any] | None = None  # sweeps.choice.OutOfSample.as_json(); None: in-sample only
    engine: str = DEFAULT_ENGINE  # the lossless-claw version the LCM settings were tuned on

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` object: ``strategy``, ``openclaw_json`` (null unless LCM), ``env``,
        ``tradeoff`` and context."""
        return {
            "sweep_id": self.sweep_id, "config_id": self.config_id, "strategy": self.strategy, "params": self.params,
            "openclaw_json": self.openclaw_json, "env": self.env, "tradeoff": self.tradeoff,
            "warnings": self.warnings, "pareto": self.pareto, "best_lcm": self.best_lcm,
            "lcm_openclaw_json": self.lcm_openclaw_json, "cost": self.cost, "out_of_sample": self.out_of_sample,
            "engine": self.engine,
            "tradeoff_sample": "in-sample",
        }

    @property
    def doubts(self) -> list[str]:
        """The warnings beside which the best configuration of the sweep is not a recommendation:
        a difference within noise, too few conversations for an interval, a choice that does not transfer."""
        return [w for w in self.warnings if any(mark in w for mark in _DOUBTS)]

    def snippet(self) -> str:
        """Human-readable: the openclaw.json fragment, the env lines, the trade-off and warnings
        (for a non-LCM winner: no plugin settings, and which LCM configuration came best)."""
        what = "recommended configuration" if not self.doubts else "best configuration of this sweep (not a recommendation: see the warnings)"
        lines = [f"# sweep {self.sweep_id}: {what} {self.config_id} {json.dumps(self.params)}",
                 f"# tuned on lossless-claw {self.engine}: settings tuned on one version are not another's"]
        if any(isinstance(v, float) and v != _rounded(v) for v in self.params.values()):
            lines += ["# (its settings below are rounded to 3 significant digits for pasting)"]
        if self.openclaw_json is None:
            lines += [f"# the best configuration is strategy {self.strategy!r}, not LCM: no openclaw.json or LCM_* "
                      "setting of lossless-claw reproduces it"]
            if self.best_lcm is not None:
                lines += [f"# best LCM configuration: {self.best_lcm}; if you stay with lossless-claw, its openclaw.json:",
                          json.dumps(self.lcm_openclaw_json, indent=2)]
        else:
            lines += ["# openclaw.json", json.dumps(self.openclaw_json, indent=2), "", "# or as environment variables"]
            lines += [f"{k}={v}" for k, v in self.env.items()] or ["# (the plugin defaults: nothing to set)"]
        lines += ["", "# out of sample (chosen on the other conversations, compared with the defaults on held-out ones)"]
        lines += [f"# {self.out_of_sample['verdict']}"] if self.out_of_sample else [
            "# not cross-validated: fewer than 4 conversations"]
        lines += ["", "# in-sample trade-off against the plugin defaults (chosen − defaults on the conversations it was "
                  "chosen on, paired over conversations, 95% interval)"]
        for t in self.tradeoff:
            interval = "no interval" if t["no_interval"] else f"[{t['ci_low']:+.4g}, {t['ci_high']:+.4g}]"
            diff = "n/a" if t["difference"] is None else f"{t['difference']:+.4g}"
            # the chance control on the headline's own scale: below 0 it scores under plain truncation
            below = " (below plain truncation)" if isinstance(t.get("chance"), float) and t["chance"] < 0 else ""
            chance = f"  chance {_fmt(t['chance'])}{below}" if "chance" in t else ""
            lines.append(f"{t['metric']:<24} {t['direction']:<9} chosen {_fmt(t['chosen'])}  defaults {_fmt(t['defaults'])}"
                         f"  diff {diff} {interval}  n={t['n']}{chance}")
        lines += verdict_lines(self.cost)
        lines += [f"WARNING: {w}" for w in self.warnings]
        return "\n".join(lines)


_TOO_FEW = "too few to give an interval"
_DOUBTS = ("within noise", "does not transfer", _TOO_FEW)


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


def recommend(sweep_id: str, store: LabStore | None = None, *, folds: int = DEFAULT_FOLDS, engine: str | None = None) -> Recommendation:
    """The recommended settings of a finished (or partly finished) sweep; with at least
    :data:`~lcm_lab.sweeps.choice.MIN_CONVERSATIONS` conversations the choice is also
    cross-validated over ``folds`` folds of conversations (``out_of_sample``).

    A sweep that varies ``engine`` (lossless-claw versions) is recommended for one version at a
    time: ``engine`` picks it (configurations of other versions are left out, and the trade-off
    and the out-of-sample check are taken against the plugin defaults under that version);
    without it such a sweep is an :class:`~lcm_lab.errors.OptionError`, never a choice across versions.
    """
    from lcm_lab.store.sweeps import sweep_row

    if store is None:
        from lcm_lab.store import LabStore

        store = LabStore()
    row = sweep_row(store, sweep_id)
    spec = row["spec"]
    objectives = {o["metric"]: o["direction"] for o in spec["objectives"]}
    constraints = list(spec.get("constraints", []))
    metrics = list(dict.fromkeys([*objectives, *(c["metric"] for c in constraints)]))
    runs = sweep_df(sweep_id, store)
    _refuse_without_finished_runs(runs, sweep_id, str(row["status"]))
    frame, engine = _one_engine(runs, sweep_id, engine)
    try:
        choice = choose(frame, objectives, constraints)
    except ValueError as exc:  # choose() found no usable configuration
        raise DataError(f"sweep {sweep_id}: {exc}") from None
    table, feasible, front = choice.table, choice.feasible, choice.front
    first, direction = next(iter(objectives.items()))
    config_id = choice.config_id
    best = table[table.config_id == config_id].iloc[0]
    # the frame names this engine's defaults BASELINE_ID (choice and cross-validation compare with it);
    # the store and the user know them by their own id
    stored_id = baseline_id(engine) if config_id == BASELINE_ID else config_id
    table = table.assign(config_id=table.config_id.replace(BASELINE_ID, baseline_id(engine)))
    front = [baseline_id(engine) if c == BASELINE_ID else c for c in front]
    params = _params(store, sweep_id, stored_id)
    strategy = str(params.get("strategy", "lcm"))
    tradeoff, warnings = _tradeoff(frame, config_id, metrics, objectives)
    warnings += _chance_warnings(frame, config_id, objectives, tradeoff)
    oos = cross_validate(frame, objectives, constraints, folds=folds)
    knobs = [k for k in spec.get("space") or {} if k in frame.columns and k != ENGINE_KEY]
    names = {str(row["config_id"]): setting_label(row, knobs) for row in frame.drop_duplicates("config_id").to_dict("records")}
    out_of_sample = oos.as_json(names) if oos is not None else None
    if oos is None:
        warnings.append(f"in-sample only: {frame.conversation.nunique()} conversation(s), fewer than {MIN_CONVERSATIONS} "
                        "to cross-validate; the trade-off is measured on the conversations the choice was made on")
    elif not oos.transfers and config_id != BASELINE_ID:
        warnings.insert(0, f"{first}: {oos.verdict(names)}")
    for session, keys in (row["stats"].get("shared_sessions") or {}).items():
        warnings.append(f"conversations {', '.join(keys)} are one session ({session}): the intervals and the "
                        "cross-validation count them as independent conversations, so they overstate how surely the "
                        "choice holds on new ones; list each session once")
    if config_id == BASELINE_ID:
        warnings.insert(0, _defaults_best(table, first))
    cost = cost_verdict(stored_cost_rows(sweep_id, store), stored_id, baseline_id(engine)) if config_id != BASELINE_ID else None
    if cost is not None and cost["within_noise"]:
        warnings.append(f"cost_usd: the saving against the defaults is within noise (90% paired interval "
                        f"${cost['saving_low']:,.2f} .. ${cost['saving_high']:,.2f} per 1,000 turns includes 0)")
    if row["status"] != "done":  # live_status: a killed sweep reads interrupted, never running
        warnings.append(f"sweep {sweep_id} has not finished (status {row['status']}: {row['status_note']}); "
                        f"the choice rests on the {int((runs['status'] == 'ok').sum())} runs finished so far")
    if strategy == "lcm":
        plugin = _plugin_config(spec, stored_id, params)
        return Recommendation(sweep_id, stored_id, params, _openclaw(plugin), env_lines(plugin), tradeoff, warnings,
                              front, table, cost=cost, out_of_sample=out_of_sample, engine=engine)
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
    return Recommendation(sweep_id, stored_id, params, None, {}, tradeoff, warnings, front, table, strategy, best_lcm,
                          lcm_json, cost, out_of_sample, engine)


def _defaults_best(table: pd.DataFrame, metric: str) -> str:
    """Why no change is recommended: the defaults beat the rest on ``metric``, or every
    configuration scored the same (a tie: the swept knobs change nothing on these conversations)."""
    values = {round(float(v), 12) for v in table[metric].dropna()} if metric in table else set()
    if len(values) == 1 and len(table) > 1:
        return (f"every configuration scored the same {metric} as the plugin defaults (a tie): the swept settings "
                "change nothing on these conversations, so no change is recommended")
    return "the plugin defaults scored best: no change recommended"


def _refuse_without_finished_runs(frame: pd.DataFrame, sweep_id: str, status: str) -> None:
    """A :class:`~lcm_lab.errors.DataError` for a sweep with no finished run to recommend from (one
    stopped before any run ended, or whose runs all failed)."""
    if not frame.empty and (frame["status"] == "ok").any():
        return
    failed = 0 if frame.empty else int((frame["status"] == "error").sum())
    why = f"its {failed} runs all failed (sweep_df() shows each error; lcm-lab sweep SPEC --retry-failed runs them again)" \
        if failed else "no run ended before it stopped; running the same spec again resumes it (lcm-lab sweep SPEC)"
    raise DataError(f"sweep {sweep_id} has no finished runs (status {status}): {why}")


def _one_engine(frame: pd.DataFrame, sweep_id: str, engine: str | None) -> tuple[pd.DataFrame, str]:
    """The rows of one lossless-claw version (other strategies' rows, which have none, stay), with
    that version's plugin defaults named :data:`BASELINE_ID`, and the version."""
    engines = sorted({str(e) for e in frame[ENGINE_KEY].dropna()}) if ENGINE_KEY in frame else []
    if engine is None and len(engines) > 1:
        # the sweep always replays the default version's defaults; a sweep that tunes one other
        # version only is that version's (its own defaults are its reference)
        tuned = sorted({str(e) for e in frame[~frame.baseline.astype(bool)][ENGINE_KEY].dropna()})
        engine = tuned[0] if len(tuned) == 1 else None
    if engine is None:
        if len(engines) > 1:
            raise OptionError(f"sweep {sweep_id} replays several lossless-claw versions ({', '.join(engines)}); settings "
                              "tuned on one are not the other's: pass engine= (lcm-lab recommend --engine VERSION)")
        return frame, engines[0] if engines else DEFAULT_ENGINE
    if engine not in engines:
        raise OptionError(f"engine {engine}: sweep {sweep_id} replays lossless-claw {', '.join(engines) or DEFAULT_ENGINE} only")
    mine = frame[(frame[ENGINE_KEY] == engine) | frame[ENGINE_KEY].isna()]
    return mine.assign(config_id=mine.config_id.replace(baseline_id(engine), BASELINE_ID)), engine


def _params(store: LabStore, sweep_id: str, config_id: str) -> dict[str, Any]:
    if config_id == BASELINE_ID:
        return {}
    from lcm_lab.store.sweeps import config_params

    return config_params(store, sweep_id, config_id)


def _plugin_config(spec: Mapping[str, Any], config_id: str, params: Mapping[str, Any]) -> dict[str, Any]:
    defaults = config_id == BASELINE_ID or config_id.startswith(f"{BASELINE_ID}@")
    base = {} if defaults else dict(spec.get("base", {}))
    knobs = {k: v for k, v in params.items() if k not in ("strategy", ENGINE_KEY)}
    plugin = LcmConfig.from_plugin_config({**base, **knobs}).to_plugin_config(minimal=True)
    # a value a user pastes: 0.599 where a sampler proposed 0.5993780416989186 (a difference of
    # well under a token at any budget for a threshold)
    return {k: _rounded(v) if isinstance(v, float) else v for k, v in plugin.items()}


def _rounded(value: float) -> float:
    """``value`` to 3 significant digits."""
    return float(f"{value:.3g}")


def _openclaw(plugin: Mapping[str, Any]) -> dict[str, Any]:
    return {"plugins": {"entries": {"lossless-claw": {"config": dict(plugin)}}}}


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
    if 0 < len(shared) < MIN_INTERVAL_CONVERSATIONS:
        on = "a single conversation" if len(shared) == 1 else f"{len(shared)} conversations"
        warnings.append(f"measured on {on}: {_TOO_FEW} (at least {MIN_INTERVAL_CONVERSATIONS} needed); the difference "
                        "says what happened on these conversations, not what new ones will show; add conversations "
                        "before trusting it")
    if not shared:
        warnings.append("the plugin defaults did not run on these conversations: no trade-off can be measured")
    for m in metrics:
        pairs = [(float(chosen.at[c, m]), float(base.at[c, m])) for c in shared
                 if chosen.at[c, m] is not None and base.at[c, m] is not None
                 and not math.isnan(float(chosen.at[c, m])) and not math.isnan(float(base.at[c, m]))]
        diffs = [a - b for a, b in pairs]
        lo, hi = t_interval(diffs) if len(diffs) >= MIN_INTERVAL_CONVERSATIONS else (math.nan, math.nan)
        defined = not math.isnan(lo)
        row = {
            "metric": m, "direction": objectives.get(m, "constraint"), "n": len(diffs),
            "chosen": sum(a for a, _ in pairs) / len(pairs) if pairs else None,
            "defaults": sum(b for _, b in pairs) / len(pairs) if pairs else None,
            "difference": sum(diffs) / len(diffs) if diffs else None,
            "ci_low": lo, "ci_high": hi,
            "no_interval": None if defined else f"{len(diffs)} paired conversation(s): {_TOO_FEW} "
                                                f"(at least {MIN_INTERVAL_CONVERSATIONS} needed)",
        }
        row["within_noise"] = bool(defined and lo <= 0 <= hi)
        if row["within_noise"] and config_id != BASELINE_ID:
            warnings.append(f"{m}: the difference to the defaults is within noise (95% interval {lo:+.4g} .. {hi:+.4g} includes 0)")
        rows.append(row)
    return rows, warnings
