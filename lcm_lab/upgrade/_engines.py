"""The one place the upgrade comparison runs a replay under a chosen lossless-claw version.

Every version goes through the same call, ``lcm_lab.engine.replay.driver.replay(..., engine=...)``,
so the comparison holds nothing version-specific: a new engine version is compared as soon as the
driver accepts its name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.protocol import Summarizer
from lcm_lab.engine.types import Conversation
from lcm_lab.engine.versions import ENGINE_VERSIONS, EngineVersion
from lcm_lab.errors import OptionError


def check_versions(versions: Sequence[str]) -> tuple[str, ...]:
    """``versions`` as a tuple of known engine names, at least two and none twice.

    >>> check_versions(["0.15.3", "1.0"])
    ('0.15.3', '1.0')
    >>> check_versions(["0.15.3"])
    Traceback (most recent call last):
    ...
    lcm_lab.errors.OptionError: versions: compare needs at least two engine versions (got 0.15.3); known: 0.15.3, 1.0
    """
    out = tuple(str(v) for v in versions)
    known = ", ".join(ENGINE_VERSIONS)
    unknown = [v for v in out if v not in ENGINE_VERSIONS]
    if unknown:
        raise OptionError(f"versions: unknown engine version {', '.join(unknown)}; known: {known}")
    if len(out) < 2:
        raise OptionError(f"versions: compare needs at least two engine versions (got {', '.join(out) or 'none'}); known: {known}")
    if len(set(out)) != len(out):
        raise OptionError(f"versions: {', '.join(out)} names a version twice")
    return out


def run_engine(
    engine: str, conversation: Conversation, config: LcmConfig, summarizer: Summarizer, token_budget: int, **options: Any
) -> Any:
    """``replay(conversation, config, summarizer, token_budget, engine=engine, **options)``: the one
    call every version of a comparison goes through."""
    from lcm_lab.engine.replay.driver import replay

    return replay(conversation, config, summarizer, token_budget, engine=check_engine(engine), **options)


def check_engine(engine: str) -> EngineVersion:
    """``engine`` as a known version name, else an :class:`~lcm_lab.errors.OptionError`."""
    if engine not in ENGINE_VERSIONS:
        raise OptionError(f"engine {engine!r}: unknown lossless-claw version; known: {', '.join(ENGINE_VERSIONS)}")
    return engine
