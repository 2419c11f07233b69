"""The report's sweep section: the comparison table, the Pareto plot and the recommendation.

``sweep_section(sweep_id, store)`` gives what the page template renders; pass it to
:func:`lcm_lab.report.build.report` as ``sweep=``. ``lcm-lab report --sweep SWEEP_ID`` does that
with the recommended configuration's first run as the replay shown below it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lcm_lab.store.core import LabStore


def sweep_section(sweep_id: str, store: LabStore) -> dict[str, Any]:
    """Table rows (means with 95% intervals per configuration), a Pareto figure, the snippet, and
    whether the choice transfers (``out_of_sample`` from ``recommend``, ``transfer`` in words)."""
    import pandas as pd

    from lcm_lab.report.build import _figure_html, _format_cell
    from lcm_lab.store.sweeps import first_ok_run, sweep_row
    from lcm_lab.sweeps import recommend
    from lcm_lab.sweeps.choice import setting_label
    from lcm_lab.sweeps.cost import verdict_sentence
    from lcm_lab.viz import plot_pareto

    row = sweep_row(store, sweep_id)
    # a sweep over lossless-claw versions is recommended per version, never across them
    engines = [str(e) for e in row["spec"]["space"].get("engine", [])]
    recs = [recommend(sweep_id, store, engine=e) for e in engines] if len(engines) > 1 else [recommend(sweep_id, store)]
    rec = recs[0]
    objectives = [o["metric"] for o in row["spec"]["objectives"]]
    table = rec.table if len(recs) == 1 else pd.concat([r.table for r in recs]).drop_duplicates("config_id")
    columns = [c for c in table.columns if not c.endswith(("_ci_low", "_ci_high"))]
    for metric in objectives:
        table[f"{metric} 95% CI"] = [f"{_format_cell(lo)} .. {_format_cell(hi)}" for lo, hi in
                                     zip(table[f"{metric}_ci_low"], table[f"{metric}_ci_high"], strict=True)]
        columns.append(f"{metric} 95% CI")
    # configurations named by what they set (not by their config_id hash)
    knobs = [k for k in (row["spec"].get("space") or {}) if k in table.columns]
    table.insert(0, "setting", [setting_label(r, knobs) for r in table.to_dict("records")])
    columns.insert(0, "setting")
    figure = None
    tokens = next((m for m in ("peak_context_tokens", "mean_context_tokens") if m in table.columns), None)
    if tokens is not None and objectives[0] != tokens:
        figure = _figure_html(plot_pareto(table, quality=objectives[0], tokens=tokens, cost=None, label="setting"))
    names = {str(cid): str(label) for label, cid in zip(table["setting"], table["config_id"], strict=True)}
    chosen = names.get(str(rec.config_id), str(rec.config_id))
    return {
        "sweep_id": sweep_id, "name": row["name"], "status": row["status"], "stats": row["stats"],
        "columns": columns, "rows": [[_format_cell(v) for v in r] for r in table[columns].itertuples(index=False)],
        "figure": figure,
        # beside "within noise" or too few conversations the best row is not a recommendation: say so instead
        "chosen": ", ".join(f"{names.get(r.config_id, r.config_id)} (lossless-claw {r.engine})" for r in recs) if len(recs) > 1
        else f"none: {chosen} is best in this sweep, but {'; '.join(rec.doubts)}" if rec.doubts else chosen,
        "snippet": "\n\n".join(r.snippet() for r in recs), "recommended_run": first_ok_run(store, sweep_id, rec.config_id),
        "cost": " ".join(filter(None, (verdict_sentence(r.cost) for r in recs))),
        "out_of_sample": rec.out_of_sample if len(recs) == 1 else {r.engine: r.out_of_sample for r in recs},
        "transfer": " ".join((f"lossless-claw {r.engine}: " if len(recs) > 1 else "")
                             + transfer_sentence(r.out_of_sample, int(r.table.conversations.max())) for r in recs),
    }


def transfer_sentence(out_of_sample: dict[str, Any] | None, conversations: int) -> str:
    """Whether the recommendation holds on conversations it was not chosen on, in words."""
    from lcm_lab.sweeps.choice import MIN_CONVERSATIONS

    if out_of_sample is None:
        return (f"In-sample only: {conversations} conversation{'s' if conversations != 1 else ''}, fewer than "
                f"{MIN_CONVERSATIONS} to cross-validate; the trade-off is measured on the conversations the choice was made on.")
    verdict = str(out_of_sample["verdict"])
    return verdict[0].upper() + verdict[1:] + "."


