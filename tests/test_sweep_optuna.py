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


def test_a_storage_path_follows_the_output_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--storage sqlite:///LINK`` created the storage at a dangling link's target (exit 0), where
    ``export`` refuses every link: the file an SQLite URL names, however the URL spells it, is
    checked as every output is; a new one appears whole (nothing else is left beside it)."""
    from lcm_lab.cli import main

    db = tmp_path / "lab.duckdb"
    store = LabStore(db)
    sweep_id = sweep(small_spec(), store=store, progress=False).sweep_id
    store.close()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "dangling.db").symlink_to(tmp_path / "elsewhere" / "victim.db")
    assert main(["export-study", sweep_id, "--db", str(db), "--storage", f"sqlite:///{tmp_path / 'real.db'}"]) == 0
    (tmp_path / "linked.db").symlink_to(tmp_path / "real.db")
    real = (tmp_path / "real.db").read_bytes()
    capsys.readouterr()
    for url in (f"sqlite:///{tmp_path / 'dangling.db'}", f"sqlite:///{tmp_path / 'dangling%2Edb'}",
                f"sqlite+pysqlite:///{tmp_path / 'linked.db'}"):
        assert main(["export-study", sweep_id, "--db", str(db), "--storage", url, "--study-name", "other"]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "a symbolic link; the lab neither writes through links" in err, err
    assert list((tmp_path / "elsewhere").iterdir()) == [] and (tmp_path / "real.db").read_bytes() == real
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.db", "elsewhere", "lab.duckdb", "linked.db", "real.db"]


def test_an_export_that_fails_part_way_leaves_no_study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure (or Ctrl-C) while the trials are written: a new storage file never appears, and
    in an existing storage the study begun is deleted, so the same export then runs."""
    import optuna

    store = LabStore(tmp_path / "lab.duckdb")
    sweep_id = sweep(small_spec(), store=store, progress=False).sweep_id
    existing = f"sqlite:///{tmp_path / 'existing.db'}"
    sweep_study(sweep_id, store, storage=existing, study_name="kept")
    real_add = optuna.Study.add_trial

    def interrupted(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        if study.get_trials(deepcopy=False):  # one trial written, then Ctrl-C
            raise KeyboardInterrupt
        real_add(study, trial)

    monkeypatch.setattr(optuna.Study, "add_trial", interrupted)
    for storage in (f"sqlite:///{tmp_path / 'new.db'}", existing):
        with pytest.raises(KeyboardInterrupt):
            sweep_study(sweep_id, store, storage=storage)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing.db", "lab.duckdb"]
    assert optuna.get_all_study_names(existing) == ["kept"]
    monkeypatch.undo()
    for storage in (f"sqlite:///{tmp_path / 'new.db'}", existing):
        assert len(sweep_study(sweep_id, store, storage=storage).get_trials()) == 3
