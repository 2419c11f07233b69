"""A sweep as an Optuna study, so Optuna's own tools work on it: ``optuna.visualization``
(Pareto front, parameter importances, slices), optuna-dashboard and ``optuna.load_study``.

:func:`sweep_study` writes one trial per configuration (the plugin defaults first, flagged
``baseline``) into any Optuna storage (``sqlite:///sweeps.db``, a journal file, or memory): its
parameters with their distributions from the spec, as values the means over the conversations of
the spec's objectives, the spec's constraints as Optuna constraints, and as user attributes the
config id, the conversations it ran on and every metric's mean. A configuration that did not run
on every conversation, or has no value for an objective, is a failed trial. The study's
``best_trials`` are then exactly the Pareto front :func:`~lcm_lab.sweeps.recommend.recommend`
chooses from (both use the same means, constraints and :func:`lcm_lab.metrics.stats.pareto_mask`
rule; ``tests/test_sweep_optuna.py`` checks it).

The study's user attribute ``lcm_lab_export`` says whether the export finished: ``"writing"`` from
just after the study is created, ``"complete"`` once every trial is in. A study of that name that
an earlier export left unfinished (killed with SIGKILL in an existing storage) is refused in one
line saying so, and ``replace=True`` (``--replace``) writes it again.

    study = lab.sweeps.sweep_study("sw_…", storage="sqlite:///sweeps.db")
    optuna.visualization.plot_pareto_front(study)      # or: optuna-dashboard sqlite:///sweeps.db
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lcm_lab.errors import OptionError
from lcm_lab.sweeps.spec import Range, SweepSpec, dimensions, parse_spec
from lcm_lab.sweeps.strategy_space import STRATEGY_KEY
from lcm_lab.sweeps.study import _optuna_name, constraint_values, optuna_params

if TYPE_CHECKING:
    import optuna

    from lcm_lab.store.core import LabStore


def _distributions(spec: SweepSpec) -> dict[str, Any]:
    """Every parameter's Optuna distribution, under the names the Optuna search gives them."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    out: dict[str, Any] = {}
    by_strategy = dimensions(spec)
    if by_strategy[0][0] is not None:
        out[STRATEGY_KEY] = CategoricalDistribution([s for s, _ in by_strategy])
    for strategy, dims in by_strategy:
        for d in dims:
            name = _optuna_name(strategy, d.key)
            if not isinstance(d.values, Range):
                out[name] = CategoricalDistribution(list(d.values))
            elif d.kind == "int":
                out[name] = IntDistribution(int(d.values.low), int(d.values.high), step=int(d.values.step or 1), log=d.values.log)
            else:
                out[name] = FloatDistribution(d.values.low, d.values.high, step=d.values.step, log=d.values.log)
    return out


def _number(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def sweep_study(sweep_id: str, store: LabStore | None = None, *, storage: str | None = None,
                study_name: str | None = None, replace: bool = False) -> optuna.Study:
    """The sweep as an Optuna study in ``storage`` (an Optuna storage URL; ``None``: in memory),
    named ``study_name`` (default: the sweep id). An existing study of that name is an error
    unless ``replace``.

    The study is written whole or not at all. A new SQLite file (``sqlite:///NEW.db``) is built
    in a temporary file beside it and linked into place once complete, so a kill at any point (a
    SIGKILL too) leaves no file there, and at most a temporary that the next write beside it
    removes. In an existing storage, an export stopped part-way (an error, Ctrl-C, SIGTERM)
    deletes the study it had begun before the error goes on, so running it again is not refused.
    A SIGKILL there can still leave the study part-way: it then stays marked ``"writing"`` (the
    module docstring), and running the export again says so instead of taking it for a whole one.
    The file an ``sqlite:///`` URL names follows the lab's output rules (:func:`_sqlite_file`)."""
    import optuna

    from lcm_lab.store.sweeps import sweep_row
    from lcm_lab.sweeps.results import _store

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    store = _store(store)
    spec = parse_spec(sweep_row(store, sweep_id)["spec"])
    name = study_name or sweep_id
    file = _sqlite_file(storage) if storage is not None else None  # checked before any work
    trials = _trials(spec, sweep_id, store)  # before the storage is touched, which is then written in one go
    with _storage_faults(storage):  # a storage that cannot be opened or written: one line, not SQLAlchemy's traceback
        if storage is not None and file is not None and not file.exists():
            _build_beside(file, storage, lambda built: _write_study(built, name, spec, sweep_id, trials))
            return _read_back(storage, name)
        if storage is not None and name in optuna.get_all_study_names(storage):
            if not replace:
                raise _held(storage, name)
            optuna.delete_study(study_name=name, storage=storage)
        return _write_study(storage, name, spec, sweep_id, trials, undo=storage is not None)


EXPORT_MARK = "lcm_lab_export"  # the study's user attribute: "writing", then "complete" (the module docstring)


def _unfinished(user_attrs: dict[str, Any], trials: int) -> bool:
    """Whether a study is one an export of the lab began and did not finish: marked ``"writing"``,
    or empty without any attribute (a kill just after Optuna created it, before the mark)."""
    return user_attrs.get(EXPORT_MARK) == "writing" or (not user_attrs and trials == 0)


def _held(storage: str, name: str) -> OptionError:
    """Why the study ``name`` already in ``storage`` is not written over: an earlier export was cut
    short (the study is not marked complete), or the storage holds a study of that name."""
    import optuna

    from lcm_lab.summarizers.provider import display_url

    summary = next(s for s in optuna.get_all_study_summaries(storage, include_best_trial=False) if s.study_name == name)
    if _unfinished(summary.user_attrs, summary.n_trials):
        return OptionError(f"the Optuna storage {display_url(storage)} holds a study {name!r} whose export was cut short "
                           f"({summary.n_trials} trials written, maybe not all); pass replace=True (--replace) to write it again")  # fmt: skip
    return OptionError(f"the Optuna storage {display_url(storage)} already holds a study {name!r}; pass replace=True (--replace) "
                       "to write it again, or choose another study name")  # fmt: skip


def _read_back(storage: str, name: str) -> optuna.Study:
    """The study ``name`` the export wrote into ``storage``, refused (:func:`_held`) unless it is
    marked complete."""
    import optuna

    study = optuna.load_study(study_name=name, storage=storage)
    if study.user_attrs.get(EXPORT_MARK) != "complete":
        raise _held(storage, name)
    return study


def _trials(spec: SweepSpec, sweep_id: str, store: LabStore) -> list[optuna.trial.FrozenTrial]:
    """One Optuna trial per configuration of the sweep (see the module docstring)."""
    import optuna

    from lcm_lab.store.sweeps import sweep_configs_df
    from lcm_lab.sweeps.results import config_table, sweep_df

    objectives = [o.metric for o in spec.objectives]
    metrics = list(dict.fromkeys([*objectives, *(c.metric for c in spec.constraints)]))
    frame = sweep_df(sweep_id, store)
    table = {row["config_id"]: row for row in config_table(frame, metrics).to_dict("records")}
    conversations = frame.conversation.nunique()
    distributions = _distributions(spec)
    trials = []
    for config in sweep_configs_df(store, sweep_id).to_dict("records"):
        row = table.get(config["config_id"], {})
        params = optuna_params(json.loads(config["params"]))
        means = {m: _number(row.get(m)) for m in metrics}
        values = [means[m] for m in objectives]
        complete = row.get("conversations") == conversations and row.get("failed") == 0 and None not in values
        user_attrs = {"config_id": config["config_id"], "baseline": bool(config["baseline"]),
                      "conversations": int(row.get("conversations") or 0), **{f"mean_{m}": v for m, v in means.items()}}
        trials.append(optuna.trial.create_trial(
            state=optuna.trial.TrialState.COMPLETE if complete else optuna.trial.TrialState.FAIL,
            values=values if complete else None, params=params,
            distributions={k: distributions[k] for k in params}, user_attrs=user_attrs,
            constraints=constraint_values(spec, means) or None,
        ))  # fmt: skip
    return trials


def _write_study(storage: str | optuna.storages.BaseStorage | None, name: str, spec: SweepSpec, sweep_id: str,
                 trials: list[optuna.trial.FrozenTrial], *, undo: bool = False) -> optuna.Study:
    """Create the study ``name`` in ``storage`` (which holds none of that name), marked ``"writing"``,
    add ``trials`` and mark it ``"complete"``; with ``undo``, a failure or an interruption part-way deletes the study again before it goes on
    (also when it came inside ``create_study``, after the storage had recorded the study)."""
    import optuna

    try:
        study = optuna.create_study(storage=storage, study_name=name, directions=[o.direction for o in spec.objectives])
        study.set_user_attr(EXPORT_MARK, "writing")  # first: a study killed from here on says it is unfinished
        study.set_user_attr("sweep_id", sweep_id)
        study.set_user_attr("sweep_name", spec.name)
        study.set_user_attr("objectives", [o.metric for o in spec.objectives])
        study.add_trials(trials)
        study.set_user_attr(EXPORT_MARK, "complete")  # last: only a study with every trial in says so
    except BaseException:
        if undo and name in optuna.get_all_study_names(storage):
            optuna.delete_study(study_name=name, storage=storage)
        raise
    return study


def _build_beside(target: Path, storage: str, write: Callable[[optuna.storages.BaseStorage], object]) -> None:
    """Run ``write`` on a new Optuna storage in a temporary file beside ``target`` (the file the
    SQLite URL ``storage`` names), then link the finished file into place; the temporary (and
    SQLite's journal beside it) is removed whatever happens. A file that appeared at ``target``
    meanwhile is never replaced."""
    from optuna.storages import RDBStorage
    from sqlalchemy.engine import make_url

    from lcm_lab.errors import OutputError
    from lcm_lab.io.atomic import link_into_place, temporary_beside
    from lcm_lab.summarizers.provider import display_url

    if not target.parent.is_dir():  # as SQLite, which creates no directory
        raise OutputError(f"the Optuna storage {display_url(storage)} cannot be used: no directory {target.parent}")
    handle, temporary = temporary_beside(target)  # named for this process: a kill -9 leaves what the next write removes
    os.close(handle)
    try:
        temporary.unlink()  # SQLite creates the file, with the permissions any new file gets (not mkstemp's 0600)
        built = RDBStorage(make_url(storage).set(database=str(temporary)).render_as_string(hide_password=False))
        try:
            write(built)
        finally:
            built.remove_session()
            built.engine.dispose()  # every connection closed: the file is complete, no journal beside it
        link_into_place(temporary, target, "the study was written")
    finally:
        temporary.unlink(missing_ok=True)
        Path(f"{temporary}-journal").unlink(missing_ok=True)


# Tables an Optuna RDB storage holds (optuna/storages/_rdb/models.py); one is enough to know it.
_OPTUNA_TABLES = frozenset({"studies", "version_info", "alembic_version", "trials"})


@contextmanager
def _storage_faults(storage: str | None) -> Iterator[None]:
    """SQLAlchemy's errors opening or writing the Optuna storage (a missing directory, a read-only
    file, a URL it cannot parse, a server that refuses) as one :class:`OutputError` naming the
    storage (its password, if the URL has one, left out); a driver not installed as a
    :class:`DependencyError`."""
    from lcm_lab.errors import DependencyError, OutputError
    from lcm_lab.summarizers.provider import display_url

    try:
        yield
    except ImportError as exc:  # Optuna's wording when the URL's database driver is not installed
        cause = f" ({exc.__cause__})" if exc.__cause__ else ""
        raise DependencyError(f"the Optuna storage {display_url(storage or '')} needs a database driver that is not installed{cause}") from exc
    except Exception as exc:
        # SQLAlchemy's own errors, known by their module (Optuna's storage raises them from every
        # layer of SQLAlchemy and the database driver).
        if not type(exc).__module__.startswith("sqlalchemy."):
            raise
        reason = " ".join(str(getattr(exc, "orig", None) or exc).split())[:300]
        raise OutputError(f"the Optuna storage {display_url(storage or '')} cannot be used: {reason}") from exc


def _sqlite_file(storage: str) -> Path | None:
    """The file an SQLite storage URL names, checked as every output of the lab is
    (:func:`~lcm_lab.io.atomic.check_output_path`: no symbolic link, dangling or not, no store,
    no data file of another kind), or ``None`` for any other storage (PostgreSQL, MySQL, ...:
    passed to Optuna as given) and an in-memory SQLite. An existing file must already be an Optuna
    storage (or empty): Optuna would add its tables to any SQLite file, an lcm.db included, and the
    lab never writes into a file that is not its own or the tool's. The URL is read by SQLAlchemy's
    own parser, which Optuna uses, so the file checked is the file SQLite opens
    (``sqlite:///link%2Edb`` is ``link.db``)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    from lcm_lab.errors import OutputError
    from lcm_lab.io.atomic import check_output_path
    from lcm_lab.io.sqlite_read import SqliteReadError, sqlite_table_names
    from lcm_lab.summarizers.provider import display_url

    try:
        url = make_url(storage)
    except ArgumentError:
        return None  # not a URL SQLAlchemy reads: Optuna says so (one line, _storage_faults)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    if str(url.query.get("uri", "")).lower() in ("true", "1"):
        raise OptionError(f"the Optuna storage {display_url(storage)}: an SQLite URI filename (uri=true) is not taken; "
                          "name the file as sqlite:///PATH")  # fmt: skip
    path = check_output_path(url.database, sqlite_output=True)
    if not path.exists() or path.stat().st_size == 0:
        return path
    try:
        tables = sqlite_table_names(path)
    except (SqliteReadError, OSError):
        tables = set()
    if not tables & _OPTUNA_TABLES:
        held = f"tables {', '.join(sorted(tables)[:3])}…" if tables else "not an SQLite database"
        raise OutputError(f"{path}: not an Optuna storage ({held}); the lab will not write into it. "
                          "Pass --storage sqlite:///NEW-FILE.db or an existing Optuna storage")
    return path
