"""Which configuration keys each engine version accepts (``src/db/config.ts`` at each pinned commit).

1.0 removed ``transcriptGcEnabled`` and ``autoRotateSessionFiles`` (transcript GC and session-file
rotation are gone) and added, renamed or re-defaulted nothing else. A replay under 1.0 with
either key set is a :class:`~lcm_lab.errors.UserError` naming the keys, so a setting that would
silently do nothing is never mistaken for one that was tested.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lcm_lab.engine.config.fields import ConfigError
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.versions import ENGINE_VERSIONS

__all__ = ["REMOVED_KEYS", "check_engine", "check_engine_config", "check_plugin_keys"]

# plugin key → LcmConfig attribute, per version that no longer has it
REMOVED_KEYS: dict[str, dict[str, str]] = {
    "0.15.3": {},
    "1.0": {"transcriptGcEnabled": "transcript_gc_enabled", "autoRotateSessionFiles": "auto_rotate_session_files"},
}


def check_engine(engine: str) -> None:
    """A known engine version, else a ``ConfigError`` listing the versions."""
    if engine not in ENGINE_VERSIONS:
        raise ConfigError(f"engine {engine!r}: unknown lossless-claw version; expected one of {', '.join(ENGINE_VERSIONS)}")


def _removed_message(engine: str, keys: list[str]) -> str:
    return f"{', '.join(keys)}: not a lossless-claw {engine} config key (removed in {engine}); drop it or replay with engine 0.15.3"


def check_engine_config(engine: str, config: LcmConfig) -> None:
    """Raise when ``config`` sets (to a non-default value) a key that ``engine`` removed."""
    check_engine(engine)
    default = LcmConfig()
    used = [key for key, attr in REMOVED_KEYS[engine].items() if getattr(config, attr) != getattr(default, attr)]
    if used:
        raise ConfigError(_removed_message(engine, used))


def check_plugin_keys(engine: str, plugin_config: Mapping[str, Any]) -> None:
    """Raise when a plugin config object names a key that ``engine`` removed (whatever its value)."""
    check_engine(engine)
    used = [key for key in REMOVED_KEYS[engine] if key in plugin_config]
    if used:
        raise ConfigError(_removed_message(engine, used))
