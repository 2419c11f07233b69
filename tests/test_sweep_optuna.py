"""A sweep exported as an Optuna study: load_study, Optuna's plots and best_trials work on it,
and Optuna's Pareto front is the one the recommendation chooses from."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcm_lab.errors import OptionError
from lcm_lab.store import LabStore
from lcm_lab.sweeps import recommend, sweep, sweep_study
from tests.test_sweep import small_spec


def test_a_sweep_is_an_optuna_study(tmp_path: Path) -> None:
    import optuna

    store = LabStore(tmp_path / "lab.duckdb")
    spec = small_spec(space={"freshTailCount": [8, 32], "leafChunkTokens": {"low": 1000, "high": 3000, "step": 1000}},
                      objectives=[{"metric": "peak_context_tokens", "direction": "minimize"},
                                  {"metric": "fact_retention", "direction": "maximize"}],
                      constraints=[{"metric": "peak_context_tokens", "max": 5800}])
    result = sweep(spec, store=store, progress=False)
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    sweep_study(result.sweep_id, store, storage=storage)
    study = optuna.load_study(study_name=result.sweep_id, storage=storage)
    trials = study.get_trials()
    assert len(trials) == result.configs == 7  # the defaults and the 2 x 3 grid
    assert trials[0].user_attrs["baseline"] and trials[0].params == {}
    assert {t.params["leafChunkTokens"] for t in trials[1:]} == {1000, 2000, 3000}
    assert [d.name for d in study.directions] == ["MINIMIZE", "MAXIMIZE"]
    # Optuna's Pareto front (feasible trials only) is the recommendation's
    rec = recommend(result.sweep_id, store)
    assert sorted(t.user_attrs["config_id"] for t in study.best_trials) == sorted(rec.pareto)
    assert any(t.constraints and max(t.constraints.values()) > 0 for t in trials)  # an infeasible configuration is marked so
    assert 1 <= len(rec.pareto) < 6
    figure = optuna.visualization.plot_pareto_front(study)
    assert sum(len(trace.x or ()) for trace in figure.data) == len(trials)
    with pytest.raises(OptionError, match="already holds a study"):
        sweep_study(result.sweep_id, store, storage=storage)
    again = sweep_study(result.sweep_id, store, storage=storage, replace=True)
    assert len(again.get_trials()) == 7
    store.close()
    from lcm_lab.cli import main

    assert main(["export-study", result.sweep_id, "--db", str(tmp_path / "lab.duckdb"), "--storage", storage, "--replace",
                 "--study-name", "again", "--json"]) == 0
    assert optuna.load_study(study_name="again", storage=storage).user_attrs["sweep_id"] == result.sweep_id


def test_an_existing_file_that_is_not_an_optuna_storage_is_refused_untouched(tmp_path: Path) -> None:
    """Optuna adds its tables to any SQLite file: an lcm.db named as --storage was written into."""
    import gzip
    import hashlib
    import shutil

    from lcm_lab.errors import OutputError

    store = LabStore(tmp_path / "lab.duckdb")
    result = sweep(small_spec(), store=store, progress=False)
    lcm_db, text = tmp_path / "lcm.db", tmp_path / "notes.txt"
    with gzip.open(Path(__file__).parent.parent / "datasets" / "lcm-db" / "lcm-v0.15.3.db.gz") as src, lcm_db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    text.write_text("not a database\n")
    for victim, said in ((lcm_db, "tables context_items"), (text, "not an SQLite database")):
        before = hashlib.sha256(victim.read_bytes()).hexdigest()
        with pytest.raises(OutputError, match=f"not an Optuna storage \\({said}"):
            sweep_study(result.sweep_id, store, storage=f"sqlite:///{victim}")
        assert hashlib.sha256(victim.read_bytes()).hexdigest() == before
        assert not Path(f"{victim}-journal").exists()
