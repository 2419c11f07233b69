"""The sweep specification: what to vary, over which conversations, and what to optimise.

Validated at the edge with pydantic; every error names the key (as a dotted path) and what is
allowed there. Plugin knobs use the plugin's own camelCase keys and are checked by
:class:`~lcm_lab.engine.config.LcmConfig` itself, so an impossible configuration is refused
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
  spaec: unknown key; allowed keys: base, constraints, conversations, executor, name, objectives, scoring, search, space, summarizer, token_budget, workers
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from lcm_lab.engine.config import FIELDS, ConfigError, LcmConfig
from lcm_lab.sweeps.metrics import METRICS

# Plugin keys a sweep may vary: the scalar knobs (numbers, integers, booleans, choices).
KNOBS: dict[str, Any] = {f.keys[0]: f for f in FIELDS if f.kind in ("int", "number", "bool", "choice")}
RESERVED_DIMENSIONS = ("strategy",)  # compaction strategies arrive with issue 11


class SweepSpecError(ValueError):
    """A sweep spec that cannot run; the message lists every problem with its key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ConversationSource(_Strict):
    """Conversations read from a transcript file (LoCoMo JSON, pi/OpenClaw JSONL, ...)."""

    path: str
    skip: int = Field(0, ge=0)
    limit: int | None = Field(None, ge=1)


class SummarizerSpec(_Strict):
    """Who writes the summaries; ``litellm`` calls go through the ledger."""

    name: Literal["offline", "stub-v1", "litellm"] = "offline"
    model: str | None = None
    api_base: str | None = None
    concurrency: int = Field(16, ge=1)
    temperature: float | None = None
    seed: int | None = None
    prompts: str | None = None
    max_retries: int = Field(3, ge=0)

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

    low: float
    high: float
    step: float | None = Field(None, gt=0)
    log: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if self.high < self.low:
            raise ValueError(f"high ({self.high:g}) must be >= low ({self.low:g})")
        if self.log and self.low <= 0:
            raise ValueError("log ranges need low > 0")
        return self


class SearchSpec(_Strict):
    """How configurations are chosen: every grid point, random draws, or an Optuna study."""

    method: Literal["grid", "random", "optuna"] = "grid"
    trials: int | None = Field(None, ge=1)
    seed: int = 0
    sampler: Literal["tpe", "nsga2", "random"] | None = None

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
    max: float | None = None
    min: float | None = None

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


Choices = list[int | float | bool | str]


class SweepSpec(_Strict):
    """A whole sweep (see ``docs/sweeps.md`` and ``lcm-lab sweep --example``)."""

    name: str
    conversations: list[ConversationSource] = Field(min_length=1)
    token_budget: int = Field(gt=0)
    summarizer: SummarizerSpec = SummarizerSpec()
    base: dict[str, Any] = Field(default_factory=dict)
    space: dict[str, Choices | Range] = Field(min_length=1)
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
            if key in RESERVED_DIMENSIONS:
                raise ValueError(f"{key}: the strategy dimension is not available yet (issue 11); vary plugin keys")
            if key not in KNOBS:
                raise ValueError(f"{key}: not a plugin knob a sweep can vary; allowed: {', '.join(sorted(KNOBS))}")
            if isinstance(values, list) and not values:
                raise ValueError(f"{key}: empty list of values")
        return space

    @field_validator("executor")
    @classmethod
    def _executor(cls, value: str) -> str:
        if value in EXECUTORS or value.startswith("ray://"):
            return value
        raise ValueError(f"unknown executor {value!r}; allowed: {', '.join(EXECUTORS)} or ray://HOST:PORT")

    @model_validator(mode="after")
    def _search_fits_space(self) -> SweepSpec:
        if self.search.method == "grid":
            for key, values in self.space.items():
                if isinstance(values, Range) and values.step is None:
                    raise ValueError(f"space.{key}: a grid needs a list of values or a range with step")
        if self.search.method == "optuna" and self.search.sampler == "nsga2" and len(self.objectives) < 2:
            raise ValueError("sampler 'nsga2' is for two or more objectives")
        return self


EXECUTORS = ("auto", "serial", "processes", "threads", "ray")


class Point(NamedTuple):
    """One configuration of a sweep: the varied values and the resolved plugin config."""

    config_id: str
    params: dict[str, Any]
    config: LcmConfig


def config_id(params: Mapping[str, Any]) -> str:
    """A short id for a parameter assignment (the same values give the same id).

    >>> config_id({"freshTailCount": 8}) == config_id({"freshTailCount": 8})
    True
    """
    canonical = json.dumps(dict(params), sort_keys=True, separators=(",", ":"))
    return "c_" + hashlib.sha256(canonical.encode()).hexdigest()[:10]


def sweep_id_for(spec: SweepSpec) -> str:
    """Content id of what a sweep computes (executor and workers do not change results)."""
    payload = spec.model_dump(mode="json", exclude={"executor", "workers"})
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return "sw_" + hashlib.sha256(canonical.encode()).hexdigest()[:12]


def build_config(spec: SweepSpec, params: Mapping[str, Any]) -> LcmConfig:
    """``base`` plus ``params`` resolved as the plugin would (errors name the plugin key)."""
    return LcmConfig.from_plugin_config({**spec.base, **params})


def point(spec: SweepSpec, params: Mapping[str, Any]) -> Point:
    clean = {k: _plain(v) for k, v in params.items()}
    return Point(config_id(clean), clean, build_config(spec, clean))


def _plain(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and not isinstance(value, bool):
        return value
    return value


def _grid_values(key: str, values: Choices | Range) -> list[Any]:
    if isinstance(values, list):
        return list(values)
    assert values.step is not None
    count = math.floor((values.high - values.low) / values.step + 1e-9) + 1
    out = [values.low + i * values.step for i in range(count)]
    if KNOBS[key].kind == "int":
        return [int(round(v)) for v in out]
    return [round(v, 10) for v in out]


def grid_points(spec: SweepSpec) -> list[Point]:
    """Every combination of the space's values, in spec order."""
    keys = list(spec.space)
    combos = itertools.product(*(_grid_values(k, spec.space[k]) for k in keys))
    return [point(spec, dict(zip(keys, combo, strict=True))) for combo in combos]


def parse_spec(data: Mapping[str, Any] | SweepSpec) -> SweepSpec:
    """Validate a spec (a mapping, e.g. parsed YAML) into :class:`SweepSpec`.

    Raises :class:`SweepSpecError` listing every problem as ``key: message`` — including plugin
    configurations the plugin could not use (checked on ``base`` and on each end of every range).
    """
    if isinstance(data, SweepSpec):
        spec = data
    else:
        try:
            spec = SweepSpec.model_validate(dict(data))
        except ValidationError as exc:
            raise SweepSpecError(_describe(exc)) from None
    problems = _config_problems(spec)
    if problems:
        raise SweepSpecError("invalid sweep spec:\n" + "\n".join(f"  {p}" for p in problems))
    return spec


def _config_problems(spec: SweepSpec) -> list[str]:
    problems = []
    try:
        build_config(spec, {})
    except ConfigError as exc:
        problems.append(f"base: {exc}")
    for key, values in spec.space.items():
        candidates = _grid_values(key, values) if isinstance(values, list) or values.step else [values.low, values.high]
        if isinstance(values, Range) and KNOBS[key].kind == "int":
            candidates = [int(v) for v in candidates]
        for value in candidates:
            try:
                build_config(spec, {key: value})
            except ConfigError as exc:
                problems.append(f"space.{key}: {exc}")
                break
    return problems


def _describe(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        loc = [str(p) for p in error["loc"]]
        # pydantic reports a union member's type in the path (space.x.list[...]); drop it.
        loc = [p for p in loc if not p.startswith(("list[", "Range", "function-after"))]
        where = ".".join(loc) or "spec"
        if error["type"] == "extra_forbidden":
            allowed = _allowed_keys(error["loc"][:-1])
            lines.append(f"{where}: unknown key; allowed keys: {', '.join(allowed)}")
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
