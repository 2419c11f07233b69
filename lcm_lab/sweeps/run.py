"""``sweep(spec)``: replay every chosen configuration on every conversation, score, store.

The sweep id is the content hash of the spec (minus executor and workers), so running the same
spec again *resumes* it: units (configuration × conversation) already recorded are skipped and
the ledger serves the model calls made before. A failing unit is recorded with its error and
the sweep goes on. The plugin defaults always run too (config id ``defaults``), as the
baseline :func:`~lcm_lab.sweeps.recommend.recommend` measures against.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.versions import DEFAULT_ENGINE
from lcm_lab.errors import MissingFileError, OptionError
from lcm_lab.io.file_kind import special_file_reason
from lcm_lab.sweeps.executors import (
    Job,
    Runner,
    default_workers,
    refuse_while_bootstrapping,
    resolve_executor,
)
from lcm_lab.sweeps.metrics import COST_METRICS, custom_metrics, pack_metrics
from lcm_lab.sweeps.spec import (
    ENGINE_KEY,
    Point,
    Range,
    SweepSpec,
    SweepSpecError,
    dimensions,
    grid_points,
    parse_spec,
    point,
    sweep_id_for,
)
from lcm_lab.sweeps.strategy_space import STRATEGY_KEY
from lcm_lab.sweeps.work import Conversations, SummarizerRecipe, Unit, UnitResult

BASELINE_ID = "defaults"


def baseline_id(engine: str = DEFAULT_ENGINE) -> str:
    """The config id of the plugin defaults replayed under ``engine`` (``defaults`` for the default engine).

    >>> baseline_id(), baseline_id("1.0")
    ('defaults', 'defaults@1.0')
    """
    return BASELINE_ID if engine == DEFAULT_ENGINE else f"{BASELINE_ID}@{engine}"


def engine_baseline(engine: str) -> Point:
    """The plugin defaults under ``engine``: the reference a configuration of that engine is compared with."""
    params = {} if engine == DEFAULT_ENGINE else {ENGINE_KEY: engine}
    return Point(baseline_id(engine), params, LcmConfig(), engine=engine)


class SweepResult(NamedTuple):
    """What a call to :func:`sweep` did (``calls_*`` count model requests, see ``docs/sweeps.md``)."""

    sweep_id: str
    configs: int
    runs_ok: int
    runs_failed: int
    skipped: int
    naive_calls: int
    calls_made: int
    cache_hits: int
    seconds: float
    executor: str
    workers: int  # units run at once: 1 on the serial executor, whatever workers= says
    failed_model_calls: int = 0  # in the runs that finished: summaries that are the fallback (no answer, or not shorter)
    failed_before: int = 0  # of ``skipped``: units that failed in an earlier session and were not run again


def load_spec(spec: SweepSpec | Mapping[str, Any] | str | Path) -> SweepSpec:
    """A validated spec from a :class:`SweepSpec`, a mapping or a YAML file path."""
    if isinstance(spec, str | Path):
        from lcm_lab.sweeps.spec_yaml import read_spec_yaml

        path = Path(spec)
        if (special := special_file_reason(path)) is not None:
            raise SweepSpecError(f"sweep spec {path}: {special}")
        if not path.is_file():
            raise MissingFileError(f"sweep spec {path} not found (lcm-lab sweep --example prints one)")
        data = read_spec_yaml(path.read_text(encoding="utf-8"), str(path))
        if not isinstance(data, dict):
            raise SweepSpecError(f"{path}: expected a YAML mapping at the top level")
        return parse_spec(data)
    return parse_spec(spec)


def source_names(paths: Sequence[Path]) -> list[str]:
    """A name per source file for its conversations' keys: the file name, or, where two different
    files share it, as many parent folders as tell them apart (one file listed twice keeps one name).

    >>> source_names([Path("/a/x/s.jsonl"), Path("/b/x/s.jsonl"), Path("/c/t.json")])
    ['a/x/s.jsonl', 'b/x/s.jsonl', 't.json']
    """
    resolved = [p.resolve() for p in paths]
    names = [p.name for p in resolved]
    depth = 1
    while True:
        clash = {n for n in names if len({r for r, m in zip(resolved, names, strict=True) if m == n}) > 1}
        if not clash or depth >= max(len(r.parts) for r in resolved):
            return names
        depth += 1
        names = ["/".join(r.parts[-depth:]) if n in clash else n for r, n in zip(resolved, names, strict=True)]


def shared_sessions(loaded: Mapping[str, Any]) -> dict[str, list[str]]:
    """``session id -> keys`` of the sessions that appear as more than one of the sweep's
    conversations (copies, or parts of one session in several files)."""
    keys: dict[str, list[str]] = {}
    for key, item in loaded.items():
        keys.setdefault(str(item.conversation.session_id), []).append(key)
    return {session: found for session, found in keys.items() if len(found) > 1}


def read_conversations(spec: SweepSpec) -> Conversations:
    """The spec's conversations keyed ``<file name>#<index>`` (:func:`source_names`: two files of
    one name are told apart by their folders), with their QA items, the host's recorded events (for
    the ``recorded`` strategy) and their chance-control donors (:func:`chance_donors`)."""
    from lcm_lab.io.transcripts import read_transcript

    loaded: dict[str, Any] = {}
    counts = []
    paths = [source.file() for source in spec.conversations]
    for path in paths:
        if not path.exists():
            raise MissingFileError(f"conversations.path: {path} not found")
    for source, path, name in zip(spec.conversations, paths, source_names(paths), strict=True):
        read = read_transcript(path).conversations
        counts.append(len(read))
        stop = None if source.limit is None else source.skip + source.limit
        for index, item in list(enumerate(read))[source.skip : stop]:
            loaded[f"{name}#{index}"] = item
    if not loaded:
        sources = "; ".join(f"{s.file().name}: {counts[i]} conversation(s), skip {s.skip}" for i, s in enumerate(spec.conversations))
        raise SweepSpecError(f"conversations: the sources hold no conversations past skip ({sources}); "
                             "lower skip (conversations are counted from 0)")
    donors, no_donor = chance_donors(loaded)
    return Conversations(
        {key: item.conversation for key, item in loaded.items()},
        {key: tuple(getattr(item, "qa_items", ()) or ()) for key, item in loaded.items()},
        {key: tuple(getattr(item, "events", ()) or ()) for key, item in loaded.items()},
        donors,
        no_donor,
        shared_sessions(loaded),
    )


def chance_donors(loaded: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """Each conversation's chance-control donor among the sweep's own conversations, by the rule
    the demo and reports use (:func:`~lcm_lab.metrics.donor.pick_donor`: same kind, another
    session, closest in size): ``({key: donor key}, {key: why there is none})``."""
    from lcm_lab.metrics.donor import kind_name, pick_donor

    candidates = list(loaded.items())
    donors: dict[str, str] = {}
    no_donor: dict[str, str] = {}
    for key, item in loaded.items():
        donor = pick_donor(item, candidates)
        if donor is not None:
            donors[key] = donor.label
        else:
            no_donor[key] = (f"no chance control possible: the sweep has no other {kind_name(item)} (another "
                             "session, with text) to read as chance; add one to conversations")
    return donors, no_donor


def random_points(spec: SweepSpec) -> list[Point]:
    """``search.trials`` seeded random draws from the space (duplicates dropped); with a strategy
    dimension, a strategy first, then that strategy's own parameters."""
    rng = random.Random(spec.search.seed)
    by_strategy = dimensions(spec)
    points: dict[str, Point] = {}
    for _ in range(spec.search.trials or 0):
        strategy, dims = by_strategy[0] if by_strategy[0][0] is None else rng.choice(by_strategy)
        head = {} if strategy is None else {STRATEGY_KEY: strategy}
        p = point(spec, {**head, **{d.key: _draw(rng, d.kind, d.values) for d in dims}})
        points.setdefault(p.config_id, p)
    return list(points.values())


def _draw(rng: random.Random, kind: str, values: Sequence[Any] | Range) -> Any:
    """One random value of a dimension: a list's member, or a range's value (log-uniform for a
    ``log`` range: an integer one draws ``floor(x)`` for ``x`` log-uniform on ``[low, high + 1)``,
    so each integer's chance is its share of that log span)."""
    if not isinstance(values, Range):
        return rng.choice(list(values))
    if kind == "int" and not values.log:
        step = int(values.step or 1)
        return rng.randrange(int(values.low), int(values.high) + 1, step)
    high = values.high + 1 if kind == "int" else values.high
    drawn = math.exp(rng.uniform(math.log(values.low), math.log(high))) if values.log else rng.uniform(values.low, high)
    return min(int(values.high), math.floor(drawn)) if kind == "int" else drawn


class _Session:
    """One run of :func:`sweep`: the store writer, counters and progress bar."""

    def __init__(self, spec: SweepSpec, data: Conversations, sweep_id: str, store: Any, executor: str, workers: int,
                 progress: bool, fault: str | None, reuse_calls: bool = True, metrics: bytes | None = None,
                 retry_failed: bool = False) -> None:
        from lcm_lab.store.ledger import Ledger
        from lcm_lab.store.sweeps import unit_statuses

        self.spec, self.sweep_id, self.store = spec, sweep_id, store
        self.executor, self.workers = executor, workers
        self.data = data
        recorded = unit_statuses(store, sweep_id)
        self.done = {unit for unit, status in recorded.items() if status == "ok" or not retry_failed}
        self.failed_earlier = set() if retry_failed else {unit for unit, status in recorded.items() if status != "ok"}
        self.ledger = Ledger(store)
        self.sent_by_workers = 0
        self.hits_by_workers = 0
        self.ok = self.failed = self.skipped = self.failed_calls = self.skipped_failed = 0
        self.reuse_calls = reuse_calls
        self.job = self._job(fault, metrics)
        self.runner = Runner(executor, self.job, workers, tick=self.flush)
        self.progress = progress
        self.bar: Any = None  # shown once the first units are planned, with their count as its total

    def _job(self, fault: str | None, metrics: bytes | None) -> Job:
        s = self.spec.summarizer
        options: dict[str, Any] = {}
        if s.name == "litellm":
            options = {"model": s.model, "api_base": s.api_base, "concurrency": s.concurrency, "temperature": s.temperature,
                       "seed": s.seed, "prompts": s.prompts, "max_retries": s.max_retries}
        in_process = self.executor in ("serial", "threads") or self.workers == 1
        snapshot: dict[str, Any] = {}
        summarizer = None
        if s.name == "litellm":
            from lcm_lab.sweeps.ledgers import reusable_snapshot

            snapshot = reusable_snapshot(self.ledger)
        if s.name == "litellm" and in_process:
            from lcm_lab.summarizers import get_summarizer
            from lcm_lab.sweeps.ledgers import ReleasingSummarizer, SharedLedger

            self.shared = SharedLedger(snapshot, reuse=self.reuse_calls)
            summarizer = ReleasingSummarizer(get_summarizer("litellm", **options, ledger=self.shared), self.shared)
            snapshot = {}
        named = {o.metric for o in self.spec.objectives} | {c.metric for c in self.spec.constraints}
        return Job(self.data, SummarizerRecipe(s.name, options, snapshot), self.spec.scoring.qa, fault, summarizer,
                   score_cost=bool(named & set(COST_METRICS)), metrics=metrics)

    def units(self, points: Iterable[Point]) -> list[Unit]:
        """The units of ``points`` still to run (each configuration on each conversation), counted
        into the progress bar's total as they are planned, before anything is recorded or run."""
        out = []
        for p in points:
            for index, key in enumerate(self.data.conversations):
                if (p.config_id, key) in self.done:
                    self.skipped += 1
                    self.skipped_failed += (p.config_id, key) in self.failed_earlier
                    continue
                run_id = f"{self.sweep_id}_{p.config_id}_{index}"
                out.append(Unit(self.sweep_id, p.config_id, key, run_id, p.config, self.spec.token_budget,
                                p.strategy, p.strategy_params, p.engine))
        if self.bar is None:
            self.bar = _progress(self.progress, self.sweep_id, len(out))
        elif out:
            self.bar.total += len(out)
            self.bar.refresh()
        return out

    def run(self, units: list[Unit]) -> None:
        for batch in self.runner.run_batches(units):
            self.write(batch)
            if self.bar is not None:
                self.bar.update(len(batch))

    def write(self, results: Sequence[UnitResult]) -> None:
        """The one writer, a batch at a time: ledger entries, replays, scores, then the units' rows
        (which mark them done). Workers send replays and scores already encoded as rows."""
        from lcm_lab.store.replays import save_replay, write_encoded_replays
        from lcm_lab.store.scores import score_rows, write_score_rows
        from lcm_lab.store.sweeps import record_entries, write_run_row
        from lcm_lab.sweeps.work import stored_run

        results = [_with_every_metric(r) for r in results]
        shared = getattr(self, "shared", None)
        sent_by_unit = []
        with self.store.hold():
            replays, scores = [], []
            for i, result in enumerate(results):
                entries = [*result.ledger_entries, *(shared.drain() if shared is not None and i == 0 else ())]
                sent = record_entries(self.ledger, entries)
                self.sent_by_workers += sent
                self.hits_by_workers += len(entries) - sent
                sent_by_unit.append(sent)
                if result.error is not None:
                    continue
                stored = result.stored or stored_run(result.replay, result.scores, self.sweep_id)
                if stored is None:  # a run of another strategy: saved as it is
                    save_replay(self.store, result.replay, label=self.sweep_id)
                    scores += score_rows(result.scores)
                else:
                    replays.append(stored.replay)
                    scores += stored.scores
            write_encoded_replays(self.store, replays)
            write_score_rows(self.store, scores, replace_runs=True)
            for result, sent in zip(results, sent_by_unit, strict=True):
                unit = result.unit
                # The chance controls and a priced run's simulated bill ride in the metrics JSON under
                # "controls" and "cost" (not metrics: never objectives).
                metrics = {**result.metrics, **({"controls": result.controls} if result.controls else {}),
                           **({"cost": result.cost} if result.cost else {}),
                           **({"failed_model_calls": result.failed_calls} if result.failed_calls else {})}  # fmt: skip
                write_run_row(
                    self.store, self.sweep_id, unit.config_id, unit.conversation_key, unit.run_id,
                    "ok" if result.error is None else "error", result.error, result.seconds, metrics, sent,
                )
        # Give the file back between batches: a notebook or the CLI may read while the sweep runs.
        self.store.release()
        for result in results:
            self.done.add((result.unit.config_id, result.unit.conversation_key))
            if result.error is None:
                self.ok += 1
                self.failed_calls += result.failed_calls
            else:
                self.failed += 1

    def flush(self) -> None:
        """Record the calls the threads made since the last write (so a killed sweep loses few)."""
        from lcm_lab.store.sweeps import record_entries

        shared = getattr(self, "shared", None)
        if shared is not None:
            entries = shared.drain()
            if entries:
                with self.store.hold():
                    record_entries(self.ledger, entries)
                self.store.release()

    def register(self, points: Sequence[Point], *, trials: Sequence[int | None] | None = None, baseline: bool = False) -> None:
        """Record configurations, each with its trial number (none: baselines), in one statement."""
        from lcm_lab.store.sweeps import ConfigRow, register_configs

        # plugin_config holds what to ship to lossless-claw: nothing for another strategy
        register_configs(self.store, self.sweep_id, [
            ConfigRow(p.config_id, p.params, p.config.to_plugin_config(minimal=True) if p.config is not None else {},
                      trial, baseline)
            for p, trial in zip(points, trials or [None] * len(points), strict=True)
        ])  # fmt: skip

    def counts(self) -> tuple[int, int]:
        shared = getattr(self, "shared", None)
        if shared is not None:
            return shared.counts.calls, shared.counts.cache_hits
        return self.sent_by_workers, self.hits_by_workers


def sweep(
    spec: SweepSpec | Mapping[str, Any] | str | Path,
    *,
    store: Any | None = None,
    executor: str | None = None,
    workers: int | None = None,
    progress: bool = True,
    fault: str | None = None,
    reuse_calls: bool = True,
    retry_failed: bool = False,
) -> SweepResult:
    """Run (or resume) a sweep; results land in ``store`` (default: the lab store).

    ``executor`` / ``workers`` override the spec's (``auto``: processes on every core for offline
    summarizers, threads for litellm; ``ray`` or ``ray://HOST:PORT`` for Ray). ``fault`` makes
    units of that config id or conversation key fail (for testing the failure path).
    ``reuse_calls=False`` (in-process litellm sweeps) sends every request to the model: the naive
    sweep that benchmarks compare against. A resumed sweep keeps the runs that failed before
    (``failed_before`` counts them) unless ``retry_failed``: then they run again, model calls that
    succeeded before come from the ledger, and each new outcome replaces the failed row.
    """
    from lcm_lab.store import LabStore
    from lcm_lab.store.sweeps import register_sweep, set_sweep_status, sweep_row

    refuse_while_bootstrapping()  # a script without a main guard, re-imported by a process worker: before the store is touched
    spec = load_spec(spec)
    if executor is not None or workers is not None:
        overrides = {k: v for k, v in {"executor": executor, "workers": workers}.items() if v is not None}
        spec = parse_spec({**spec.model_dump(mode="json"), **overrides})
    sweep_id = sweep_id_for(spec)
    chosen = resolve_executor(spec.executor, spec.summarizer.name)
    if not reuse_calls and (spec.summarizer.name != "litellm" or chosen not in ("threads", "serial")):
        raise OptionError("reuse_calls=False applies to litellm sweeps on the threads or serial executor")
    n = spec.workers or default_workers(chosen)
    # Metrics registered outside the lab travel to worker processes and Ray tasks by value; one
    # that cannot is refused here, before the store is touched (never a None scored "ok").
    crosses = chosen == "ray" or chosen.startswith("ray://") or (chosen == "processes" and n > 1)
    custom = custom_metrics() if crosses else {}
    packed = pack_metrics(custom) if custom else None
    # The conversations are read before the sweep's row exists: a source that cannot be read (not
    # a transcript, skip past its end) is refused with nothing left behind in the store.
    data = read_conversations(spec)
    store = store if store is not None else LabStore()
    started = time.perf_counter()
    register_sweep(store, sweep_id, spec.name, _stored_spec(spec))
    # From here on the sweep's row records how this session ended: done, interrupted (Ctrl-C,
    # SIGTERM) or failed (an error; the runs finished before it stay, and the same spec resumes).
    outcome = "interrupted"
    session: _Session | None = None
    before: Mapping[str, Any] = {}
    try:
        before = sweep_row(store, sweep_id)["stats"]
        session = _Session(spec, data, sweep_id, store, chosen, n, progress, fault, reuse_calls, packed, retry_failed)
        _run_session(session, spec)
        outcome = "done"
    except Exception:
        outcome = "failed"
        raise
    finally:
        calls = hits = 0
        if session is not None:
            if session.bar is not None:
                session.bar.close()
            session.runner.close(abort=outcome != "done")
            session.flush()
            calls, hits = session.counts()
        stats = _stats(store, sweep_id, before, calls, hits, time.perf_counter() - started)
        if data.shared:
            stats["shared_sessions"] = data.shared
        set_sweep_status(store, sweep_id, outcome, stats)
        store.release()
    assert session is not None  # it ran to the end
    return SweepResult(sweep_id, stats["configs"], session.ok, session.failed, session.skipped, stats["naive_calls"],
                       calls, hits, time.perf_counter() - started, chosen, 1 if chosen == "serial" else n,
                       session.failed_calls, session.skipped_failed)


def _run_session(session: _Session, spec: SweepSpec) -> None:
    """Register and run every configuration the spec chooses, the plugin defaults first."""
    baseline = Point(BASELINE_ID, {}, LcmConfig())
    # the plugin defaults under every other engine the sweep varies: each version's own reference
    others = [engine_baseline(e) for e in spec.engines() if e != DEFAULT_ENGINE]
    session.register([baseline, *others], baseline=True)
    if others:
        session.run(session.units(others))
    if spec.search.method == "optuna":
        from lcm_lab.sweeps.study import run_study

        run_study(session, baseline)
        return
    points = grid_points(spec) if spec.search.method == "grid" else random_points(spec)
    units = session.units([baseline, *points])  # the bar's total, before the configurations are recorded
    session.register(points, trials=range(len(points)))
    session.run(units)


def _with_every_metric(result: UnitResult) -> UnitResult:
    """``result``, or an error result when it lacks a metric registered here (a worker that did not
    compute it would otherwise leave a ``None`` under status ``ok``)."""
    from lcm_lab.sweeps.metrics import METRICS

    missing = sorted(set(METRICS) - set(result.metrics)) if result.error is None else []
    if not missing:
        return result
    return result._replace(error=f"the worker did not compute metric(s) {', '.join(missing)} (registered after the sweep "
                                 "started, or in a module the worker cannot import)", metrics={}, stored=None, replay=None)


def _stats(store: Any, sweep_id: str, before: Mapping[str, Any], calls: int, hits: int, seconds: float) -> dict[str, Any]:
    """Cumulative over every session of the sweep: naive calls = every summarizer request of every
    finished run (what a sweep without the ledger would send); calls made = requests that reached
    a model."""
    from lcm_lab.store.sweeps import config_count, run_outcomes

    rows = run_outcomes(store, sweep_id)
    naive = sum(int(m.get("summarizer_calls") or 0) for status, m in rows if status == "ok")
    configs = config_count(store, sweep_id)
    return {
        "configs": configs,
        "runs_ok": sum(1 for r in rows if r[0] == "ok"),
        "runs_failed": sum(1 for r in rows if r[0] == "error"),
        "naive_calls": naive,
        "calls_made": int(before.get("calls_made", 0)) + calls,
        "cache_hits": int(before.get("cache_hits", 0)) + hits,
        "seconds": float(before.get("seconds", 0.0)) + seconds,
    }


def _stored_spec(spec: SweepSpec) -> dict[str, Any]:
    """The spec as the store keeps it: without executor and workers, and the api_base without
    the password a URL may carry (the workers get theirs from the spec in memory)."""
    from lcm_lab.summarizers.provider import display_url

    stored = spec.model_dump(mode="json", exclude={"executor", "workers"})
    if stored["summarizer"].get("api_base"):
        stored["summarizer"]["api_base"] = display_url(stored["summarizer"]["api_base"])
    return stored


def _progress(enabled: bool, sweep_id: str, total: int) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"sweep {sweep_id}", unit="run")
