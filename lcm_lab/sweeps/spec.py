"""The sweep specification: what to vary, over which conversations, and what to optimise.

Validated at the edge with pydantic; every error names the key (as a dotted path) and what is
allowed there. Plugin knobs use the plugin's own camelCase keys and are checked by
:class:`~lcm_lab.engine.config.lcm_config.LcmConfig` itself, so an impossible configuration is refused
before anything runs.

>>> spec = SweepSpec.model_validate({
...     "name": "tail", "conversations": [{"path": "datasets/locomo/locomo10.json", "limit": 1}],
...     "token_budget": 6000, "space": {"freshTailCount": [8, 32]},
...     "objectives": [{"metric": "peak_context_tokens", "direction": "minimize"}]})
>>> [c.params for c in grid_points(spec)]
[{'freshTailCount': 8}, {'freshTailCount': 32}]
>>> try:
...     parse_spec({**spec.model_dump(), "spaec": {}})
... except SweepSpecError as exc:
...     print(str(exc).splitlines()[1])
  spaec: unknown key; allowed keys: base, constraints, conversations, executor, name, objectives, scoring, search, space, strategy_config, summarizer, token_budget, workers
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Final, Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from lcm_lab.engine.config.lcm_config import FIELDS, ConfigError, LcmConfig
from lcm_lab.engine.js.depth import MAX_JSON_DEPTH, value_depth
from lcm_lab.engine.tokens import MAX_TOKEN_BUDGET
from lcm_lab.engine.versions import DEFAULT_ENGINE, ENGINE_VERSIONS
from lcm_lab.errors import SpecError
from lcm_lab.sweeps import sent_metrics as _sent_metrics  # noqa: F401  (registers the sent-token metrics)
from lcm_lab.sweeps.metrics import METRICS
from lcm_lab.sweeps.strategy_space import LCM, STRATEGY_KEY, parameter_kinds, strategy_problems

# Plugin keys a sweep may vary: the scalar knobs (numbers, integers, booleans, choices).
KNOBS: dict[str, Any] = {f.keys[0]: f for f in FIELDS if f.kind in ("int", "number", "bool", "choice")}
# The lossless-claw version an LCM configuration replays: one more LCM dimension (not a plugin
# key), so a sweep can re-tune the plugin for another engine version (lcm_lab.engine.versions).
ENGINE_KEY = "engine"

# A spec's numbers are finite: NaN passed every comparison (``high >= low``) and broke later.
Finite = Annotated[float, Field(allow_inf_nan=False)]

# The most configurations one sweep runs (a grid's points, or ``search.trials``): the grid is
# counted before anything is built, so a spec past it is refused up front.
MAX_CONFIGURATIONS: Final = 10_000


class SweepSpecError(SpecError):
    """A sweep spec that cannot run; the message lists every problem with its key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ConversationSource(_Strict):
    """Conversations read from a transcript file (LoCoMo JSON, pi/OpenClaw JSONL, ...): ``path``,
    or ``dataset``, a file of the data bundled with lcm_lab (``locomo/locomo10.json``), which
    works wherever the lab is installed."""

    path: str | None = None
    dataset: str | None = None
    skip: int = Field(0, ge=0)
    limit: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _one_file(self) -> ConversationSource:
        if (self.path is None) == (self.dataset is None):
            raise ValueError("give exactly one of path (a transcript file) and dataset (a bundled one, e.g. locomo/locomo10.json)")
        if self.dataset is not None:
            from lcm_lab.bundled import datasets_path

            datasets_path(self.dataset)  # an unknown one is an error naming the bundled ones
        return self

    @model_serializer(mode="wrap")
    def _without_the_unused_key(self, handler: Any) -> dict[str, Any]:
        # the key not given is left out, so specs from before ``dataset`` keep their sweep id
        return {k: v for k, v in handler(self).items() if not (k in ("path", "dataset") and v is None)}

    def file(self) -> Path:
        """The transcript file to read."""
        if self.dataset is not None:
            from lcm_lab.bundled import datasets_path

            return datasets_path(self.dataset)
        return Path(str(self.path))


class SummarizerSpec(_Strict):
    """Who writes the summaries; ``litellm`` calls go through the ledger."""

    name: Literal["offline", "stub-v1", "litellm"] = "offline"
    model: str | None = None
    api_base: str | None = None
    concurrency: int = Field(16, ge=1)
    temperature: Finite | None = None
    seed: int | None = None
    prompts: str | None = None
    max_retries: int = Field(3, ge=0)

    @field_validator("api_base")
    @classmethod
    def _api_base(cls, value: str | None) -> str | None:
        from lcm_lab.summarizers.provider import api_base_problem

        if value is not None and (problem := api_base_problem(value)) is not None:
            raise ValueError(problem)
        return value.strip() if value is not None else None

    @model_validator(mode="after")
    def _model_for_litellm(self) -> SummarizerSpec:
        if self.name == "litellm" and not self.model:
            raise ValueError("summarizer 'litellm' needs model (e.g. openai/gpt-4o-mini)")
        if self.name != "litellm":
            given = [k for k in ("model", "api_base", "temperature", "seed", "prompts") if getattr(self, k) is not None]
            if given:
                raise ValueError(f"{', '.join(given)} apply only to summarizer 'litellm' (got {self.name!r})")
        return self


class Range(_Strict):
    """A numeric range: ``low``..``high`` (``step`` makes it a grid; ``log`` samples log-uniformly)."""

    low: Finite
    high: Finite
    step: Finite | None = Field(None, gt=0)
    log: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if self.high < self.low:
            raise ValueError(f"high ({self.high:g}) must be >= low ({self.low:g})")
        if self.log and self.low <= 0:
            raise ValueError("log ranges need low > 0")
        if self.log and self.step is not None:  # a grid or Optuna would step linearly, or refuse
            raise ValueError("a log range is drawn log-uniformly and takes no step; list the values for a log-spaced grid")
        return self

    def integer_problem(self) -> str | None:
        """Why the range cannot hold an integer parameter's values (``None``: it can). A grid, a
        random draw and Optuna would each round a fractional end or step their own way (``step:
        0.5`` from 4 listed 4, 4, 5, 6, 6), so an integer parameter takes integer ends and step.

        >>> Range(low=4, high=6, step=0.5).integer_problem()
        'an integer parameter needs integer low, high and step (got step 0.5)'
        """
        ends = (("low", self.low), ("high", self.high), ("step", self.step))
        fractional = [f"{name} {value:g}" for name, value in ends if value is not None and not float(value).is_integer()]
        return f"an integer parameter needs integer low, high and step (got {', '.join(fractional)})" if fractional else None


class SearchSpec(_Strict):
    """How configurations are chosen: every grid point, random draws, or an Optuna study."""

    method: Literal["grid", "random", "optuna"] = "grid"
    trials: int | None = Field(None, ge=1)
    seed: int = 0
    sampler: Literal["tpe", "nsga2", "random"] | None = None

    @field_validator("trials")
    @classmethod
    def _at_most(cls, value: int | None) -> int | None:
        if value is not None and value > MAX_CONFIGURATIONS:
            raise ValueError(f"{value:,} is more configurations than one sweep runs (at most {MAX_CONFIGURATIONS:,}); "
                             "ask for fewer trials, or split the space over several sweeps")
        return value

    @model_validator(mode="after")
    def _trials(self) -> SearchSpec:
        if self.method in ("random", "optuna") and self.trials is None:
            raise ValueError(f"search method {self.method!r} needs trials (how many configurations to try)")
        if self.method != "optuna" and self.sampler is not None:
            raise ValueError("sampler applies only to method 'optuna'")
        return self


class ObjectiveSpec(_Strict):
    metric: str
    direction: Literal["maximize", "minimize"]

    @field_validator("metric")
    @classmethod
    def _known(cls, value: str) -> str:
        return _known_metric(value)


class ConstraintSpec(_Strict):
    """A feasibility bound on a metric's mean over the conversations (``max`` and/or ``min``)."""

    metric: str
    max: Finite | None = None
    min: Finite | None = None

    @field_validator("metric")
    @classmethod
    def _known(cls, value: str) -> str:
        return _known_metric(value)

    @model_validator(mode="after")
    def _bound(self) -> ConstraintSpec:
        if self.max is None and self.min is None:
            raise ValueError("a constraint needs max or min")
        return self


class ScoringSpec(_Strict):
    """What is scored for each run (QA needs LoCoMo QA items; fact retention is at the last turn)."""

    qa: bool = True


def _known_metric(value: str) -> str:
    if value not in METRICS:
        raise ValueError(f"unknown metric {value!r}; allowed: {', '.join(sorted(METRICS))}")
    return value


Choices = list[int | Finite | bool | str]
StrategyValue = Choices | Range | bool | int | float | str | None


class SweepSpec(_Strict):
    """A whole sweep (see ``docs/sweeps.md`` and ``lcm-lab sweep --example``)."""

    name: str
    conversations: list[ConversationSource] = Field(min_length=1)
    token_budget: int
    summarizer: SummarizerSpec = SummarizerSpec()
    base: dict[str, Any] = Field(default_factory=dict)
    space: dict[str, Choices | Range] = Field(min_length=1)
    strategy_config: dict[str, dict[str, StrategyValue]] = Field(default_factory=dict)
    search: SearchSpec = SearchSpec()
    objectives: list[ObjectiveSpec] = Field(min_length=1)
    constraints: list[ConstraintSpec] = Field(default_factory=list)
    scoring: ScoringSpec = ScoringSpec()
    executor: str = "auto"
    workers: int | None = Field(None, ge=1)

    @field_validator("space")
    @classmethod
    def _dimensions(cls, space: dict[str, Any]) -> dict[str, Any]:
        for key, values in space.items():
            if key == STRATEGY_KEY:
                if not isinstance(values, list):
                    raise ValueError("strategy: a list of strategies (e.g. [lcm, observer_regex, truncate])")
                continue
            if key == ENGINE_KEY:
                known = ", ".join(ENGINE_VERSIONS)
                if not isinstance(values, list) or not values:
                    raise ValueError(f"engine: a list of lossless-claw versions (e.g. [{known}])")
                unknown = [str(v) for v in values if str(v) not in ENGINE_VERSIONS]
                if unknown:
                    raise ValueError(f"engine: unknown lossless-claw version {', '.join(unknown)}; known: {known}")
                if len({str(v) for v in values}) != len(values):
                    raise ValueError("engine: a version is listed twice")
                continue
            if key not in KNOBS:
                allowed = ", ".join([STRATEGY_KEY, ENGINE_KEY, *sorted(KNOBS)])
                raise ValueError(f"{key}: not a plugin knob a sweep can vary; allowed: {allowed}")
            if isinstance(values, list) and not values:
                raise ValueError(f"{key}: empty list of values")
        return space

    @field_validator("token_budget")
    @classmethod
    def _budget(cls, value: int) -> int:
        if not 1 <= value <= MAX_TOKEN_BUDGET:
            raise ValueError(f"{value} is out of range; a token budget is a whole number of tokens from 1 to {MAX_TOKEN_BUDGET:,}")
        return value

    @field_validator("executor")
    @classmethod
    def _executor(cls, value: str) -> str:
        if value in EXECUTORS or value.startswith("ray://"):
            return value
        raise ValueError(f"unknown executor {value!r}; allowed: {', '.join(EXECUTORS)} or ray://HOST:PORT")

    def engines(self) -> list[str]:
        """The lossless-claw versions the spec's LCM configurations replay (the default one when
        ``space`` has no ``engine`` dimension)."""
        values = self.space.get(ENGINE_KEY)
        return [DEFAULT_ENGINE] if values is None else [str(v) for v in values]  # type: ignore[union-attr]

    def strategies(self) -> list[str] | None:
        """The strategies the spec varies (``None``: no strategy dimension, LCM only)."""
        values = self.space.get(STRATEGY_KEY)
        return None if values is None else [str(v) for v in values]  # type: ignore[union-attr]

    @model_validator(mode="after")
    def _strategies_fit(self) -> SweepSpec:
        strategies = self.strategies()
        if strategies is None:
            if self.strategy_config:
                raise ValueError("strategy_config: needs a strategy dimension (space.strategy: [lcm, observer_regex, ...])")
            return self
        knobs = [k for k in self.space if k != STRATEGY_KEY]
        problems = strategy_problems(list(self.space[STRATEGY_KEY]), knobs, self.strategy_config, self.summarizer.name)  # type: ignore[arg-type]
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @model_validator(mode="after")
    def _integer_ranges(self) -> SweepSpec:
        """An integer parameter's range (plugin knob or strategy parameter), whatever the search."""
        for strategy, dims in dimensions(self):
            for d in dims:
                if d.kind == "int" and isinstance(d.values, Range) and (problem := d.values.integer_problem()):
                    where = f"space.{d.key}" if strategy in (None, LCM) else f"strategy_config.{strategy}.{d.key}"
                    raise ValueError(f"{where}: {problem}")
        return self

    @model_validator(mode="after")
    def _search_fits_space(self) -> SweepSpec:
        if self.search.method == "grid":
            ranges = [(f"space.{k}", v) for k, v in self.space.items()]
            ranges += [(f"strategy_config.{s}.{k}", v) for s, ps in self.strategy_config.items() for k, v in ps.items()]
            for key, values in ranges:
                if isinstance(values, Range) and values.step is None:
                    raise ValueError(f"{key}: a grid needs a list of values or a range with step")
            if (too_large := _grid_size_problem(self)) is not None:
                raise ValueError(too_large)
        if self.search.method == "optuna" and self.search.sampler == "nsga2" and len(self.objectives) < 2:
            raise ValueError("sampler 'nsga2' is for two or more objectives")
        return self


EXECUTORS = ("auto", "serial", "processes", "threads", "ray")


class Point(NamedTuple):
    """One configuration of a sweep: the varied values (``params``, with ``strategy`` when the
    spec varies it), the resolved plugin config (LCM) or the strategy's own parameters (others),
    and the lossless-claw version an LCM configuration replays (``engine``)."""

    config_id: str
    params: dict[str, Any]
    config: LcmConfig | None
    strategy: str = LCM
    strategy_params: dict[str, Any] | None = None
    engine: str = DEFAULT_ENGINE  # LCM: the lossless-claw version (lcm_lab.engine.versions)


class Dimension(NamedTuple):
    """One varied parameter of one strategy: its key, kind and values (a list or a range)."""

    key: str
    kind: str
    values: Choices | Range


def config_id(params: Mapping[str, Any]) -> str:
    """A short id for a parameter assignment (the same values give the same id).

    >>> config_id({"freshTailCount": 8}) == config_id({"freshTailCount": 8})
    True
    """
    canonical = json.dumps(dict(params), sort_keys=True, separators=(",", ":"))
    return "c_" + hashlib.sha256(canonical.encode()).hexdigest()[:10]


def sweep_id_for(spec: SweepSpec) -> str:
    """Content id of what a sweep computes (executor and workers do not change results; an empty
    ``strategy_config`` is left out, so sweeps from before the strategy dimension keep their id)."""
    exclude = {"executor", "workers"} | (set() if spec.strategy_config else {"strategy_config"})
    payload = spec.model_dump(mode="json", exclude=exclude)
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return "sw_" + hashlib.sha256(canonical.encode()).hexdigest()[:12]


def build_config(spec: SweepSpec, params: Mapping[str, Any]) -> LcmConfig:
    """``base`` plus ``params`` resolved as the plugin would (errors name the plugin key)."""
    knobs = {k: v for k, v in params.items() if k not in (STRATEGY_KEY, ENGINE_KEY)}
    return LcmConfig.from_plugin_config({**spec.base, **knobs})


def fixed_params(spec: SweepSpec, strategy: str) -> dict[str, Any]:
    """The single values ``strategy_config`` gives ``strategy`` (lists and ranges are varied)."""
    return {k: v for k, v in spec.strategy_config.get(strategy, {}).items() if not isinstance(v, list | Range)}


def dimensions(spec: SweepSpec) -> list[tuple[str | None, list[Dimension]]]:
    """What varies, per strategy: ``[(None, plugin knobs)]`` for a spec without a strategy
    dimension, else one entry per listed strategy (LCM: the plugin knobs of ``space``; others:
    the lists and ranges of their ``strategy_config``)."""
    knobs = [Dimension(k, "choice" if k == ENGINE_KEY else KNOBS[k].kind, v) for k, v in spec.space.items() if k != STRATEGY_KEY]
    strategies = spec.strategies()
    if strategies is None:
        return [(None, knobs)]
    out: list[tuple[str | None, list[Dimension]]] = []
    for name in strategies:
        if name == LCM:
            out.append((name, knobs))
            continue
        kinds = parameter_kinds(name)
        varied = [Dimension(k, kinds[k].kind, v) for k, v in spec.strategy_config.get(name, {}).items()
                  if isinstance(v, list | Range)]
        out.append((name, varied))
    return out


def point(spec: SweepSpec, params: Mapping[str, Any]) -> Point:
    """The configuration ``params`` stands for (``strategy`` absent: LCM with plugin knobs)."""
    clean = {k: _plain(v) for k, v in params.items()}
    strategy = str(clean.get(STRATEGY_KEY, LCM))
    if strategy == LCM:
        return Point(config_id(clean), clean, build_config(spec, clean), engine=str(clean.get(ENGINE_KEY, DEFAULT_ENGINE)))
    own = {**fixed_params(spec, strategy), **{k: v for k, v in clean.items() if k != STRATEGY_KEY}}
    return Point(config_id(clean), clean, None, strategy, own)


def _plain(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and not isinstance(value, bool):
        return value
    return value


def value_count(values: Choices | Range) -> float:
    """How many values a dimension's grid has, counted without listing them (``inf`` when a
    range's span over its step is too large for a float).

    >>> value_count([8, 16]), value_count(Range(low=0.1, high=0.9, step=0.1)), value_count(Range(low=0, high=1, step=1e-300)) > 1e299
    (2.0, 9.0, True)
    """
    if isinstance(values, list):
        return float(len(values))
    assert values.step is not None
    spans = (values.high - values.low) / values.step
    return float(math.floor(spans + 1e-9) + 1) if math.isfinite(spans) else math.inf


def grid_size(spec: SweepSpec) -> float:
    """How many configurations :func:`grid_points` lists, counted arithmetically (nothing is built)."""
    return sum(math.prod(value_count(d.values) for d in dims) for _, dims in dimensions(spec))


def _count(n: float) -> str:
    return f"{int(n):,}" if n < 1e15 else f"{n:.3g}"


def _grid_size_problem(spec: SweepSpec) -> str | None:
    """Why the spec's grid is too large to run (it names the size and the largest dimensions)."""
    size = grid_size(spec)
    if size <= MAX_CONFIGURATIONS:
        return None
    counts = {d.key: value_count(d.values) for _, dims in dimensions(spec) for d in dims}
    widest = sorted(counts, key=lambda key: -counts[key])[:3]
    named = "; ".join(f"{key}: {_count(counts[key])} values" for key in widest)
    return (f"space: the grid has {_count(size)} configurations ({named}), more than one sweep runs "
            f"(at most {MAX_CONFIGURATIONS:,}); use fewer values or larger steps, or search: {{method: random, trials: N}}")


def grid_values(kind: str, values: Choices | Range) -> list[Any]:
    """A dimension's grid: its list, or a range's steps (integers for integer parameters)."""
    if isinstance(values, list):
        return list(values)
    assert values.step is not None
    count = value_count(values)
    if count > MAX_CONFIGURATIONS:
        raise SweepSpecError(f"a range of {_count(count)} values is more than one sweep runs (at most {MAX_CONFIGURATIONS:,})")
    out = [values.low + i * values.step for i in range(int(count))]
    if kind == "int":
        return [int(round(v)) for v in out]
    return [round(v, 10) for v in out]


def grid_points(spec: SweepSpec) -> list[Point]:
    """Every combination of the space's values, in spec order; with a strategy dimension, every
    strategy with every combination of *its own* parameters (truncation runs once, not once per
    plugin knob value)."""
    points = []
    for strategy, dims in dimensions(spec):
        combos = itertools.product(*(grid_values(d.kind, d.values) for d in dims))
        for combo in combos:
            head = {} if strategy is None else {STRATEGY_KEY: strategy}
            points.append(point(spec, {**head, **dict(zip([d.key for d in dims], combo, strict=True))}))
    return points


def parse_spec(data: Mapping[str, Any] | SweepSpec) -> SweepSpec:
    """Validate a spec (a mapping, e.g. parsed YAML) into :class:`SweepSpec`.

    Raises :class:`SweepSpecError` listing every problem as ``key: message`` — including plugin
    configurations the plugin could not use (checked on ``base`` and on each end of every range)
    and strategy parameters the strategy refuses.
    """
    if isinstance(data, SweepSpec):
        spec = data
    else:
        if (depth := value_depth(data)) > MAX_JSON_DEPTH:
            raise SweepSpecError(f"invalid sweep spec: nested {depth:,} levels deep; a spec is read to at most "
                                 f"{MAX_JSON_DEPTH} levels")
        try:
            spec = SweepSpec.model_validate(dict(data))
        except ValidationError as exc:
            raise SweepSpecError(_describe(exc)) from None
    problems = _config_problems(spec)
    if problems:
        raise SweepSpecError("invalid sweep spec:\n" + "\n".join(f"  {p}" for p in problems))
    return spec


def _candidates(kind: str, values: Choices | Range) -> list[Any]:
    """The values of a dimension to check against the plugin: every grid value, or (a range
    without step, or one too long to list, which only a random or Optuna search draws from) its ends."""
    if isinstance(values, list) or (values.step and value_count(values) <= MAX_CONFIGURATIONS):
        return grid_values(kind, values)
    ends = [values.low, values.high]
    return [int(v) for v in ends] if kind == "int" else ends


def _config_problems(spec: SweepSpec) -> list[str]:
    problems = []
    try:
        build_config(spec, {})
    except ConfigError as exc:
        problems.append(f"base: {exc}")
    for strategy, dims in dimensions(spec):
        if strategy not in (None, LCM):
            problems += _strategy_value_problems(spec, strategy, dims)
            continue
        if strategy is None and spec.strategies() is not None:
            continue
        for d in dims:
            for value in _candidates(d.kind, d.values):
                try:
                    build_config(spec, {d.key: value})
                except ConfigError as exc:
                    problems.append(f"space.{d.key}: {exc}")
                    break
    return problems


def _strategy_value_problems(spec: SweepSpec, strategy: str, dims: list[Dimension]) -> list[str]:
    """What the strategy itself refuses (e.g. ``observe_threshold: 0``), per varied value."""
    from lcm_lab.strategies import get_strategy
    from lcm_lab.strategies.base import StrategyError

    fixed = fixed_params(spec, strategy)
    checks = [(f"strategy_config.{strategy}", {})]
    checks += [(f"strategy_config.{strategy}.{d.key}", {d.key: v}) for d in dims for v in _candidates(d.kind, d.values)]
    problems: list[str] = []
    for where, change in checks:
        if strategy == "recorded":
            break  # its events come from each conversation's source, when the sweep runs
        try:
            get_strategy(strategy, **{**fixed, **change})
        except StrategyError as exc:
            line = f"{where}: {exc}"
            if line not in problems and not any(p.startswith(where + ":") for p in problems):
                problems.append(line)
    return problems


_UNION_MEMBERS = ("bool", "int", "float", "str", "none")


def _plain_loc(error: Any) -> list[str]:
    # pydantic reports a union member's type in the path (space.x.list[...]); drop it.
    return [p for p in map(str, error["loc"]) if not p.startswith(("list[", "Range", "function-after")) and p not in _UNION_MEMBERS]


def _describe(exc: ValidationError) -> str:
    lines = []
    errors = exc.errors()
    # A mapping given where a list or a range goes is a range: its own errors say what is wrong,
    # not the list member's "Input should be a valid list".
    ranges = {".".join(_plain_loc(e)) for e in errors if any("Range" in str(p) for p in e["loc"]) and e["type"] != "model_type"}
    for error in errors:
        loc = _plain_loc(error)
        where = ".".join(loc) or "spec"
        if error["type"] == "list_type" and any(r == where or r.startswith(where + ".") for r in ranges):
            continue
        if error["type"] == "extra_forbidden":
            allowed = _allowed_keys(error["loc"][:-1])
            lines.append(f"{where}: unknown key; allowed keys: {', '.join(allowed)}")
        elif not loc:
            # spec-level checks name their keys themselves (``space.strategy: ...``), one per line
            message = error["msg"].removeprefix("Value error, ")
            for line in message.splitlines():
                keyed = line.split(":", 1)[0].split(".", 1)[0] in SweepSpec.model_fields
                lines.append(line if keyed else f"spec: {line}")
        else:
            message = error["msg"].removeprefix("Value error, ")
            lines.append(f"{where}: {message}")
    unique = list(dict.fromkeys(lines))
    return "invalid sweep spec:\n" + "\n".join(f"  {line}" for line in unique)


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    model: Any = SweepSpec
    for part in loc:
        if isinstance(part, int):
            continue
        if part == "Range":
            model = Range
            continue
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            break
        annotation = field.annotation
        inner = getattr(annotation, "__args__", None)
        candidates = [annotation, *(inner or ())]
        model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if model is None:
            return []
    return sorted(getattr(model, "model_fields", {}))
