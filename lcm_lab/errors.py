"""Errors that are the user's to fix, as opposed to bugs in the lab.

Library code raises a :class:`UserError` (or a subclass) when the input or an option is wrong:
a truncated file, a missing API key, a budget that is not a positive integer. The message is
one line that names the file or option and says what to do. ``lcm-lab`` prints it and exits
with status 2; notebooks see an ordinary exception. This module imports nothing, so every
layer (the pure engine included) can use it.

>>> str(InputFileError("session.jsonl.gz", "truncated gzip data; re-copy the file"))
'session.jsonl.gz: truncated gzip data; re-copy the file'
"""

from __future__ import annotations

import os
from types import ModuleType


class UserError(Exception):
    """A problem with the user's input, options or environment (not a bug in the lab)."""


class InputFileError(UserError, ValueError):
    """An input file cannot be used as given; the message starts with its path."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class BrokenGzipError(InputFileError, EOFError):
    """A ``.gz`` file ends early or is corrupt (also an ``EOFError``, as gzip itself raises)."""


class OptionError(UserError, ValueError):
    """An option or argument value is not acceptable; the message names the option."""


class MissingCredentialsError(UserError, RuntimeError):
    """A model provider needs an API key that is not set; the message names the variable."""


MAIN_GUARD_FIX = "put the sweep call under if __name__ == '__main__':"


class MemoryLimitError(UserError, RuntimeError):
    """DuckDB ran out of the memory it may use (``LCM_LAB_MEMORY_LIMIT``); the message says how
    to raise the cap."""


class MainGuardError(UserError, RuntimeError):
    """A script started worker processes (spawn) without a main guard, so every worker re-imports
    it and runs its top-level code, the sweep call included; the message says how to fix it."""


class MissingExtraError(UserError, ImportError):
    """A feature needs a package of one of lcm_lab's optional extras; the message names the extra."""


def require_extra(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``, or raise :class:`MissingExtraError` saying which extra
    installs it.

    >>> require_extra("json", "llm", "this").__name__
    'json'
    >>> require_extra("no_such_module_here", "llm", "model summarizers")
    Traceback (most recent call last):
    lcm_lab.errors.MissingExtraError: model summarizers need no_such_module_here, which lcm_lab installs with an extra: pip install 'lcm_lab[llm]'
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module.split(".")[0]:
            raise  # the module is there but one of its own imports is missing: not ours to explain
        raise MissingExtraError(
            f"{feature} need {module}, which lcm_lab installs with an extra: pip install 'lcm_lab[{extra}]'"
        ) from exc
