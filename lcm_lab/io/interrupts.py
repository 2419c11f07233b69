"""Ctrl-C and SIGTERM during a command: raised where the command is, and never lost.

While :func:`handled` is active (``lcm-lab`` installs it first thing), SIGINT raises
``KeyboardInterrupt`` and SIGTERM :class:`Terminated` (a ``KeyboardInterrupt`` too), so the
command's cleanup runs: transactions roll back, sweeps stop their workers.

Python runs a signal handler in the main thread between two steps of Python code and raises its
exception there. When that code was called by a C extension, the extension may swallow the
exception: DuckDB imports pandas on a connection's first query, and a Ctrl-C or SIGTERM that
lands during that import made the import fail, which DuckDB takes for "pandas is not installed";
the command ran to its end and exited 0 with no word. So the handlers also count the signals:
the lab store checks the count around everything it asks DuckDB (:func:`raise_if_swallowed`),
and the CLI once more at the end of a command, so a swallowed signal is raised again there.

Three more ways a signal went wrong, all below Python:

* One that landed while DuckDB's C module initialised itself (``import duckdb``, 0.1 s) failed
  that import ("ImportError: initialization failed") and left a half-made module behind, and
  the interpreter then crashed at exit (SIGSEGV). The store imports DuckDB inside
  :func:`deferred`, which holds signals back until the import is done and raises them after.
* One that landed during a DuckDB ``COMMIT`` raised while DuckDB's worker thread was still
  finishing the commit (DuckDB checks for signals while it waits): the command said "rolled back"
  of a commit that went through, and the interpreter then shut down under that thread, which
  aborted the process when it asked for the GIL (SIGABRT, "terminate called without an active
  exception"). The store commits and rolls back inside :func:`deferred`, and the CLI closes the
  stores a command opened (their last checkpoint) while the handlers are still in force.
* A ``KeyboardInterrupt`` that passed through C code running Python source (``PyRun_*``) sets
  CPython's flag for an unhandled Ctrl-C even when the CLI handles it, and the process then
  ended by SIGINT instead of with its status (1 run in 16). :func:`forget_unhandled_ctrl_c`
  clears the flag once the CLI has said its line.

And one more above it: a handler that ran inside a finaliser (``__del__``, a weakref callback)
cannot raise out of it, and Python printed "Exception ignored in …" with a traceback before the
CLI's line; while :func:`handled` is active such an exception is not printed (it is counted,
and raised again).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

INTERRUPTED = 130  # 128 + SIGINT, as shells report it
TERMINATED = 143  # 128 + SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command was (as Ctrl-C is), so that its cleanup runs: a sweep
    stops its workers and records itself as interrupted, a load rolls back."""


_received: list[int] = []  # the signals that arrived while handled() is active, in order
_deferring: list[bool] = []  # non-empty while deferred() holds signals back
_active: list[bool] = []  # non-empty while handled() is active
_rolled_back: list[bool] = []  # non-empty once the lab store rolled a transaction back (see report)


def _handle(signum: int, frame: Any) -> None:
    _received.append(signum)
    if _deferring:
        return  # raised when deferred() ends
    if signum == signal.SIGTERM:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
        raise Terminated()
    raise KeyboardInterrupt()


@contextmanager
def handled(*, whole_process: bool = False) -> Iterator[None]:
    """Handle SIGINT and SIGTERM as described above for the block (in the main thread; elsewhere
    signals cannot be handled and the block runs as it is); the previous handlers come back after.

    ``whole_process``: the block is all the process does (``lcm-lab``, ``python -m lcm_lab``), and
    afterwards both signals end it as the system does, with their status and without Python's
    ``KeyboardInterrupt`` (which, in the interpreter's own clean-up, was ignored: exit 0)."""
    if _active or threading.current_thread() is not threading.main_thread():
        yield  # already handled (python -m lcm_lab starts before the CLI module loads), or cannot be
        return
    _received.clear()  # a process may run several commands (tests, notebooks)
    _rolled_back.clear()
    previous = {sig: signal.signal(sig, _handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    unraisable = sys.unraisablehook

    def hook(info: Any) -> None:
        if not isinstance(info.exc_value, KeyboardInterrupt):
            unraisable(info)

    sys.unraisablehook = hook
    _active.append(True)
    try:
        yield
    finally:
        _active.pop()
        sys.unraisablehook = unraisable
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if whole_process else handler)


def report(prefix: str, exc: KeyboardInterrupt) -> int:
    """Say in one line on stderr that the command was interrupted or terminated, and what became
    of its writes (the rest was rolled back only if a transaction was: a signal that came after
    the last commit loses nothing); its exit status."""
    stopped_by_sigterm = isinstance(exc, Terminated) or terminated()
    what = "terminated (SIGTERM)" if stopped_by_sigterm else "interrupted"
    kept = "what was committed before is kept, the rest was rolled back" if _rolled_back else "what was committed is kept"
    if sys.stderr is not None:  # None: started with 2>&-
        print(f"{prefix}: {what}; {kept}", file=sys.stderr)
    forget_unhandled_ctrl_c()  # handled here: the exit status is this one, not death by SIGINT
    return TERMINATED if stopped_by_sigterm else INTERRUPTED


@contextmanager
def deferred() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM back during the block (the initialisation of a C module that must
    not be cut short) and raise one that arrived once it has ended. Signals arrive in the main
    thread: elsewhere the block runs as it is (held back there, they would wait for this thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    since = mark()
    _deferring.append(True)
    try:
        yield
    finally:
        _deferring.pop()
    raise_if_swallowed(since)


def rolled_back() -> None:
    """Note that a transaction was rolled back (the lab store calls it), for :func:`report`."""
    _rolled_back.append(True)


def forget_unhandled_ctrl_c() -> None:
    """Clear CPython's flag for a Ctrl-C nobody handled (see the module docstring): running any
    source through ``PyRun_SimpleString`` resets it, so an empty one does."""
    import ctypes

    ctypes.pythonapi.PyRun_SimpleString(b"")


def mark() -> int:
    """How many signals have arrived so far: pass it to :func:`raise_if_swallowed` later."""
    return len(_received)


def raise_if_swallowed(since: int) -> None:
    """Raise again a signal that arrived after :func:`mark` returned ``since``, for a caller that
    got here normally: its exception was swallowed on the way. Only in the main thread (where
    signals arrive); elsewhere this does nothing."""
    if len(_received) > since and threading.current_thread() is threading.main_thread():
        raise Terminated() if signal.SIGTERM in _received[since:] else KeyboardInterrupt()


def terminated() -> bool:
    """Whether SIGTERM arrived (code between the handler and the CLI may turn :class:`Terminated`
    into a plain ``KeyboardInterrupt``, as Ray's ``ray.wait`` does; the exit status still says SIGTERM)."""
    return signal.SIGTERM in _received
