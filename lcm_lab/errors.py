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
    """A problem with the user's input, options or environment (not a bug in the lab).

    Every subclass below names one kind of mistake, so a caller can catch the kind it can handle
    (``except lab.errors.StoreError``) or all of them (``except lab.UserError``). See
    ``docs/errors.md`` for the table of kinds, typical causes and what to do.
    """

    def __reduce__(self) -> tuple[object, ...]:
        # Pickled as its class, args and attributes, whatever its __init__ takes: an error raised
        # in a load worker reaches the parent whole (an InputFileError(path, problem) did not
        # unpickle, which broke the worker pool).
        return (_rebuild, (type(self), self.args, self.__dict__))


def _rebuild(cls: type[UserError], args: tuple[object, ...], state: dict[str, object]) -> UserError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


# -- the kinds ---------------------------------------------------------------------------------


class InputError(UserError, ValueError):
    """Input data (a transcript, an lcm.db, a config file) cannot be read as given."""


class OptionError(UserError, ValueError):
    """An option or argument value is not acceptable; the message names the option."""


class SpecError(UserError, ValueError):
    """A spec (sweep, strategy, plugin configuration, template) is invalid; the message lists the
    problems with their keys."""


class NotFoundError(UserError, LookupError):
    """Something named by the user does not exist: a file, a run id, a sweep id, a conversation."""


class DataError(UserError, ValueError):
    """Data that was read is inconsistent (a summary DAG with a cycle, a column of the wrong type)."""


class StoreError(UserError):
    """The lab store cannot be used: not a store, damaged, busy, read-only when a write is needed."""


class OutputError(UserError, OSError):
    """An output cannot be written where asked (exists, a dangling link, a directory)."""


class EnvironmentFaultError(UserError, OSError):
    """The machine refused: disk full, permission denied, a read-only file system."""


class ModelError(UserError, RuntimeError):
    """A model provider cannot be used as configured (credentials, a malformed api base)."""


class DependencyError(UserError, ImportError):
    """An optional package or a DuckDB extension that a feature needs is not installed."""


# -- specific errors -------------------------------------------------------------------------


class InputFileError(InputError):
    """An input file cannot be used as given; the message starts with its path."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class BrokenGzipError(InputFileError, EOFError):
    """A ``.gz`` file ends early or is corrupt (also an ``EOFError``, as gzip itself raises)."""


class UnknownNameError(NotFoundError, KeyError):
    """No run, sweep, conversation, summary or template of that name (also a ``KeyError``, which
    callers caught before; its text is the plain message, not KeyError's quoted repr)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class MissingFileError(NotFoundError, FileNotFoundError):
    """A file or directory named by the user does not exist (also a ``FileNotFoundError``)."""


class DagCycleError(DataError):
    """A summary DAG whose source edges loop back (lossless-claw never writes one; a crafted or
    damaged lcm.db or store can hold one)."""

    def __init__(self, summary_id: str) -> None:
        self.summary_id = summary_id
        super().__init__(f"the summary DAG has a cycle through {summary_id}: its sources lead back to it; "
                         f"check the lcm.db with `lcm-lab doctor`")


class MissingCredentialsError(ModelError):
    """A model provider needs an API key that is not set; the message names the variable."""


def os_fault(exc: OSError) -> UserError | None:
    """The user error an ``OSError`` from the machine stands for (disk full, read-only file system,
    permission denied, a missing or wrong kind of file, with its path), or ``None`` for the rest.

    >>> import errno
    >>> str(os_fault(OSError(errno.ENOSPC, "No space left on device", "out.html")))
    'out.html: disk full (no space left on device); free space and run the command again'
    """
    import errno

    where = f"{shown_path(exc.filename)}: " if exc.filename else ""
    if exc.errno == errno.ENAMETOOLONG:
        return InputError(f"{where}the path or one of its names is too long for the file system "
                          f"(at most 255 bytes a name, 4096 a path); use a shorter path")
    if exc.errno == errno.ELOOP:
        return InputError(f"{where}too many levels of symbolic links (a link loop?); point at the file itself")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return EnvironmentFaultError(f"{where}disk full (no space left on device); free space and run the command again")
    if exc.errno == errno.EROFS:
        return EnvironmentFaultError(f"{where}the file system is read-only")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return EnvironmentFaultError(f"{where}permission denied")
    if not exc.filename:
        return None
    if exc.errno == errno.ENOENT:
        return NotFoundError(f"{where}no such file or directory")
    if exc.errno == errno.EISDIR:
        return InputError(f"{where}is a directory; expected a file")
    if exc.errno == errno.ENOTDIR:
        return InputError(f"{where}a part of this path is a file, not a directory")
    if exc.errno == errno.EEXIST:
        return OutputError(f"{where}already exists (a file where a directory or a new file was wanted); "
                           f"choose another path or move it aside")
    if exc.errno == errno.ENXIO:
        return InputError(f"{where}no such device or address (a FIFO with no reader, or a device that is gone)")
    if exc.errno == errno.EINVAL:
        return InputError(f"{where}the file system does not accept this path (invalid argument)")
    return None


def shown_path(path: object, limit: int = 160) -> str:
    """A path as a one-line message shows it: as given with every control character written as
    its escape (a newline in a file name is ``\\n``, so the message stays one line and cannot
    forge another), or, when longer than ``limit`` characters, its start and end around the
    number of characters left out (a message stays readable).

    >>> shown_path("data/" + "x" * 300)
    'data/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…[217 characters]…xxxxxxxx'
    >>> print(shown_path("lab\\nwarning: forged.duckdb"))
    lab\\nwarning: forged.duckdb
    """
    # The one home of terminal escaping, imported when a message is made (this module imports nothing).
    from lcm_lab.io.terminal import terminal_text

    text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else str(path)
    if len(text) > limit:
        head, tail = limit - 80, 8
        text = f"{text[:head]}…[{len(text) - head - tail} characters]…{text[-tail:]}"
    return terminal_text(text, keep="")


MAIN_GUARD_FIX = "put the sweep call under if __name__ == '__main__':"


class MemoryLimitError(StoreError, RuntimeError):
    """DuckDB ran out of the memory it may use (``LCM_LAB_MEMORY_LIMIT``); the message says how
    to raise the cap."""


class MainGuardError(SpecError, RuntimeError):
    """A script started worker processes (spawn) without a main guard, so every worker re-imports
    it and runs its top-level code, the sweep call included; the message says how to fix it."""


class MissingExtraError(DependencyError):
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


class JsonTooDeepError(InputError):
    """Input JSON is nested deeper than the lab reads (lcm_lab.engine.js.depth.MAX_JSON_DEPTH)."""
