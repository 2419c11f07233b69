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
from lcm_lab.errors import InputError, JsonTooDeepError
from lcm_lab.io.file_kind import unreadable_reason

__all__ = ["load_config_file", "load_openclaw_config", "lcm_environment", "read_config_document", "read_json_file"]


def lcm_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables the plugin reads: every ``LCM_*`` plus ``TZ``."""
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if k.startswith("LCM_") or k == "TZ"}


def read_json_file(path: str | Path, what: str = "a JSON config file") -> Any:
    """The JSON document in ``path``, read as every small JSON input of the lab is: a FIFO, a
    device or an empty file is refused unopened (a FIFO without a writer blocked, ``/dev/zero``
    filled memory), at most the line cap is read (``LCM_LAB_MAX_LINE_MB``), a UTF-8 BOM is
    passed over and nesting deeper than the lab reads is refused (``JsonTooDeepError``: it
    overflowed the stack). Errors are :class:`ConfigError` naming the file (and the line of a
    syntax error)."""
    from lcm_lab.io.transcripts.jsonl import UTF8_BOM, parse_json_bytes, read_all_bytes

    file = Path(path)
    if not file.exists() and not file.is_symlink():
        raise ConfigError(f"{file}: config file not found")
    reason = unreadable_reason(file)
    if reason is not None:  # never opened
        raise ConfigError(f"{file}: {reason}; expected {what}")
    try:
        data = read_all_bytes(file).removeprefix(UTF8_BOM)
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read ({exc.strerror or exc})") from None
    try:
        return parse_json_bytes(data)
    except JsonTooDeepError as exc:
        raise ConfigError(f"{file}: {exc}") from None
    except ValueError as exc:
        line, message = _syntax_error(data, exc)
        raise ConfigError(f"{file}:{line}: not valid JSON ({message})") from None


def _syntax_error(data: bytes, exc: ValueError) -> tuple[int, str]:
    """The line and message of the standard library's parser for ``data`` (which failed)."""
    try:
        json.loads(data.decode("utf-8", "replace"))
    except json.JSONDecodeError as error:
        return error.lineno, error.msg
    except (ValueError, RecursionError):
        pass
    return 1, str(exc)


def read_config_document(path: str | Path) -> dict[str, Any]:
    """Parse a JSON config file (:func:`read_json_file`); errors name the file (and line for
    syntax errors)."""
    file = Path(path)
    doc = read_json_file(file)
    if not isinstance(doc, dict):
        raise ConfigError(f"{file}: expected a JSON object, got {type(doc).__name__}")
    return doc


def openclaw_plugin_config(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The plugin config keys of a parsed ``openclaw.json`` (``plugins.entries.lossless-claw.config``,
    empty when absent); a part of that path that is not an object is a :class:`ConfigError`
    naming it."""
    entry: Any = doc
    walked = []
    for key in ("plugins", "entries", "lossless-claw", "config"):
        walked.append(key)
        entry = entry.get(key)
        if entry is None:
            return {}
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{'.'.join(walked)} must be an object, not {type(entry).__name__}")
    return dict(entry)


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
