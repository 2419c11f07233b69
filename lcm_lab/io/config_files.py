"""Read lossless-claw configuration from files and the process environment (the impure edge).

:class:`~lcm_lab.engine.config.lcm_config.LcmConfig` resolves from a ``Mapping`` environment and parsed
documents; this module supplies them:

* :func:`load_config_file` — a JSON file holding either plugin config keys (as ``plugin_config``
  in the reference traces) or a whole ``openclaw.json``;
* :func:`load_openclaw_config` — ``~/.openclaw/openclaw.json`` (or ``$OPENCLAW_STATE_DIR``) plus
  the ``LCM_*`` variables of this process, as the plugin would see them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lcm_lab.engine.config.lcm_config import ConfigError, LcmConfig
from lcm_lab.io.file_kind import special_file_reason

__all__ = ["load_config_file", "load_openclaw_config", "lcm_environment", "read_config_document"]


def lcm_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables the plugin reads: every ``LCM_*`` plus ``TZ``."""
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if k.startswith("LCM_") or k == "TZ"}


def read_config_document(path: str | Path) -> dict[str, Any]:
    """Parse a JSON config file; errors name the file (and line for syntax errors)."""
    file = Path(path)
    special = special_file_reason(file)
    if special is not None:  # never opened: a FIFO without a writer would block
        raise ConfigError(f"{file}: {special}; expected a JSON config file")
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{file}: config file not found") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{file}: expected a JSON object, got {type(doc).__name__}")
    return doc


def load_config_file(path: str | Path, environ: Mapping[str, str] | None = None) -> LcmConfig:
    """An ``LcmConfig`` from a plugin-config JSON file or an ``openclaw.json``.

    ``environ`` (default: no environment) overrides the file the way ``LCM_*`` variables
    override plugin config in the plugin.
    """
    doc = read_config_document(path)
    env = dict(environ or {})
    try:
        if "plugins" in doc:
            return LcmConfig.from_openclaw_json(doc, env)
        return LcmConfig.resolve(env, doc)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def load_openclaw_config(
    state_dir: str | Path | None = None, environ: Mapping[str, str] | None = None
) -> LcmConfig:
    """The configuration a running plugin would resolve on this machine (read-only)."""
    source = os.environ if environ is None else environ
    base = (
        Path(state_dir) if state_dir else Path(source.get("OPENCLAW_STATE_DIR") or Path.home() / ".openclaw")
    )
    file = base / "openclaw.json"
    env = lcm_environment(source)
    if not file.exists():
        return LcmConfig.resolve(env, {})
    return load_config_file(file, env)
