"""The one rule for model calls that failed, used by every command and library function whose
result rests on a model's summaries (a replay, a strategy run, a what-if rewrite, an upgrade
comparison, a priced replay, a sweep's runs):

* **every call failed**, or the provider refused the credentials: nothing of the result came from
  the model (each summary is the plugin's truncation fallback, or the engine dropped the pass),
  so it is an error (:class:`ModelCallsFailedError`, a :class:`~lcm_lab.errors.ModelError`) and
  the caller saves nothing;
* **some calls failed**: the result stands, with a warning that counts them by reason.

The calls are counted from the calls a result recorded (:func:`run_calls`, for a notebook's run
and a sweep's alike): a call whose reply the result could not use failed, whatever the transport
said (a clawvault reply with no observation line). A model summarizer's live tally
(:func:`calls_so_far` before, :func:`calls_since` after) agrees on the transport's failures call
for call (a call retried after a 429 or a 5xx is one call in both, and a compaction pass the
engine dropped because the credentials were refused is one refused call in both) and lends the
message its words: only the live tally keeps the first error's text.

A model's call that answered with a summary not shorter than its input failed at summarizing
too: the plugin asks again aggressively and then keeps a truncation of the source
(:func:`~lcm_lab.engine.compaction.sweep.shorter_than_input`; the replay reproduces that, as it
must). The same rule counts them: when no call of the result gave a summary the engine kept
(each failed or was not shorter), nothing came from the model and it is the same error; else the
warning says how many summaries are the truncation fallback because the model's output was not
shorter than its input. Only a model summarizer's calls (one that keeps a ``tally``) are counted
so: the offline and stub summarizers are the plugin's stand-ins, whose fallbacks are the
behaviour under study.

``lab.replay`` and every strategy's ``run`` apply the rule themselves (:func:`check_run`): the
error is raised, and the warning is a :class:`ModelCallsWarning`, which a notebook shows under the
cell. A caller that says it in its own words passes ``check_calls=False`` and calls
:func:`check_calls`; a library result that keeps the warning in a field (``compare_versions``,
``whatif.rewrite``, ``session_cost``) issues the same :class:`ModelCallsWarning` too (:func:`warn_failed_calls`).
The CLI collects the warning (:func:`collected_call_warnings`) and prints it as its one
``warning:`` line.

>>> check_calls(CallTally(4, {"timeout": 1}, "timed out"), "s1", "the replay was not saved")
(1, 's1: 1 of 4 model calls failed (timeout ×1; first error: timed out); their summaries are the truncation fallback')
>>> check_calls(CallTally(6, rejected=3, not_shorter=1), "s1", "the replay was not saved")[1]
"s1: 1 summaries are the truncation fallback because the model's output was not shorter than its input"
>>> check_calls(CallTally(2, {"connection": 2}), "s1", "the replay was not saved")
Traceback (most recent call last):
...
lcm_lab.summarizers.call_checks.ModelCallsFailedError: s1: 2 of 2 model calls failed (connection ×2); no summary came from the model, so the replay was not saved (check the model (--model, model=), its server (--api-base, api_base=) and that the server is up)
"""

from __future__ import annotations

import inspect
import os
import threading
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from lcm_lab.errors import ModelError
from lcm_lab.io.redaction import redact
from lcm_lab.summarizers.responses import MAX_USAGE_TOKENS

CHECK = "check the model (--model, model=), its server (--api-base, api_base=) and that the server is up"
LONGER = "the plugin keeps a summary only when it is shorter than its input: check the model (--model, model=) and its prompts (--prompts, prompts=)"


class ModelCallsFailedError(ModelError):
    """Every model call of a result failed, or the provider refused the credentials: nothing of it
    came from the model, so nothing was saved (the message counts the calls by reason)."""


class ModelCallsWarning(UserWarning):
    """Some model calls of a result failed, or gave summaries not shorter than their input: those
    summaries are the truncation fallback, the rest came from the model. The message counts them by
    reason; ``failed`` is how many summaries are the fallback so (:func:`check_calls`). A priced
    replay (``session_cost``) also counts here the summarizer calls it has no price for."""

    def __init__(self, message: str, failed: int) -> None:
        super().__init__(message)
        self.failed = failed


@dataclass
class CallTally:
    """How a model summarizer's logical calls ended (its ``tally``), or the calls a result
    recorded: how many, how many fell back after failing, by reason (``connection``,
    ``server_error``, ``timeout``, ``empty_response``, ...), and the first error seen (secrets
    redacted), so a shell can say a run's summaries did not come from the model."""

    calls: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    first_error: str | None = None
    auth_error: str | None = None  # the provider refused the credentials: what to fix (the engine drops the pass)
    rejected: int = 0  # calls that did not fail, whose summary the engine did not keep: not shorter than the input
    not_shorter: int = 0  # summaries that are the truncation fallback for that reason
    bad_usage: int = 0  # calls whose provider-reported usage was no token count (recorded as unknown)
    first_bad_usage: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    def record(self, failure: str | None = None, error: str | None = None) -> None:
        """Count one call; ``failure`` is its reason when it fell back."""
        with self._lock:
            self.calls += 1
            if failure is not None:
                self.failures[failure] = self.failures.get(failure, 0) + 1
                if self.first_error is None:
                    self.first_error = redact(error or failure)[:300]

    def record_bad_usage(self, what: str | None) -> None:
        """Count one call whose reported usage was no token count (``what``: which), if ``what``."""
        if what:
            with self._lock:
                self.bad_usage += 1
                self.first_bad_usage = self.first_bad_usage or redact(what)[:200]

    def record_auth(self, message: str) -> None:
        """Count one call the provider refused for its credentials (``message`` says which to fix)."""
        self.record("auth", message)
        with self._lock:
            self.auth_error = self.auth_error or redact(message)[:300]

    def copy(self) -> CallTally:
        with self._lock:
            return CallTally(self.calls, dict(self.failures), self.first_error, self.auth_error,
                             bad_usage=self.bad_usage, first_bad_usage=self.first_bad_usage)  # fmt: skip

    def since(self, earlier: CallTally) -> CallTally:
        """The calls made after ``earlier`` was copied."""
        now = self.copy()
        reasons = {k: n - earlier.failures.get(k, 0) for k, n in now.failures.items() if n > earlier.failures.get(k, 0)}
        bad = now.bad_usage - earlier.bad_usage
        return CallTally(now.calls - earlier.calls, reasons, now.first_error if reasons else None,
                         now.auth_error if "auth" in reasons else None, bad_usage=bad,
                         first_bad_usage=now.first_bad_usage if bad else None)  # fmt: skip

    def describe(self) -> str:
        """``84 of 84 model calls failed (connection ×84: APIConnectionError: …)``."""
        reasons = ", ".join(f"{kind} ×{n}" for kind, n in sorted(self.failures.items(), key=lambda kv: -kv[1]))
        first = f"; first error: {self.first_error}" if self.first_error else ""
        return f"{self.failed} of {self.calls} model calls failed ({reasons}{first})"


def calls_so_far(summarizer: object) -> CallTally | None:
    """A copy of a model summarizer's call tally (``None`` for a summarizer that keeps none)."""
    tally = getattr(summarizer, "tally", None)
    return None if tally is None else tally.copy()


def calls_since(summarizer: object, before: CallTally | None) -> CallTally | None:
    """The calls ``summarizer`` made since ``before`` (:func:`calls_so_far`), or ``None``."""
    tally = getattr(summarizer, "tally", None)
    return None if tally is None or before is None else tally.since(before)


def recorded_calls(calls: Iterable[Any], refused_passes: int = 0, credential: str | None = None,
                   summarizer: object = None) -> CallTally:  # fmt: skip
    """A tally of the summarizer calls a result recorded (``SummarizerCall.failure`` says which
    fell back, and why); ``refused_passes`` counts compaction passes the engine dropped because the
    provider refused the credentials (``credential`` names what to fix). For a model
    ``summarizer`` (one that keeps a tally) the summaries the engine did not keep because they were
    not shorter than their input are counted too (:func:`not_shorter_calls`)."""
    calls = list(calls)
    failures = Counter(str(call.failure) for call in calls if getattr(call, "failure", None))
    auth = None
    if refused_passes:
        auth = f"the provider rejected the credentials ({refused_passes} compaction passes dropped); check {credential or 'the API key'}"
        failures["auth"] += refused_passes
    rejected, not_shorter = not_shorter_calls(calls) if getattr(summarizer, "tally", None) is not None else (0, 0)
    return CallTally(len(calls) + refused_passes, dict(failures), auth, auth, rejected=rejected, not_shorter=not_shorter)


def not_shorter_calls(calls: Sequence[Any]) -> tuple[int, int]:
    """How many of the recorded ``calls`` (in the order made) did not fail but gave a summary the
    escalation did not keep because it was not shorter than its input, and how many summaries are
    the truncation fallback for that reason. The escalation (``src/compaction.ts``
    ``summarizeWithEscalation``) makes its aggressive call right after the normal call whose
    summary it did not keep, and falls back when the aggressive one is not shorter either; other
    calls (1.0's pending pipeline, a strategy's) are kept as answered."""
    from lcm_lab.engine.compaction.sweep import kept_by_escalation

    rejected = not_shorter = 0
    for before, call in zip(calls, calls[1:], strict=False):
        if not getattr(call, "aggressive", False):
            continue
        rejected += 0 if getattr(before, "failure", None) else 1  # the normal call it follows was not shorter
        if not getattr(call, "failure", None) and not kept_by_escalation(call):
            rejected, not_shorter = rejected + 1, not_shorter + 1
    return rejected, not_shorter


def run_calls(run: Any, summarizer: object = None, before: CallTally | None = None) -> CallTally:
    """How the one rule counts a finished replay's or strategy run's calls, for every caller (a
    notebook's run, a sweep's unit, a priced replay): :func:`recorded_calls` of its turns' calls and
    the passes dropped for refused credentials (the summarizer's ``credential()`` names the key to
    fix, when it has one). An LCM strategy run's calls are those of the replay it carries; another
    strategy's are its own (``ModelCall.failure``: clawvault's compression calls, a reply with no
    observation line among the failed ones, which the summarizer's live tally counts as answered).
    With ``before`` (:func:`calls_so_far`) the messages are the live tally's (the first error's
    text, the provider's words on refused credentials: :func:`with_live_words`), the counts still
    the run's."""
    run = getattr(run, "replay", None) or run
    refused = sum(1 for turn in run.turns for sweep in getattr(turn, "sweeps", ()) if sweep.auth_failure)
    credential = getattr(summarizer, "credential", None)
    named = credential() if refused and callable(credential) else None
    recorded = recorded_calls((call for turn in run.turns for call in turn.calls), refused, named, summarizer)
    return with_live_words(recorded, summarizer, before)


def with_live_words(recorded: CallTally, summarizer: object, before: CallTally | None) -> CallTally:
    """``recorded`` (the counts) with what only the summarizer's live tally since ``before`` knows:
    the first error's text, the provider's words on refused credentials, and the calls whose
    reported usage was no token count (a result keeps no usage)."""
    live = calls_since(summarizer, before)
    if live is None:
        return recorded
    recorded.bad_usage, recorded.first_bad_usage = live.bad_usage, live.first_bad_usage
    if recorded.failed:
        recorded.first_error = live.first_error or recorded.first_error
        recorded.auth_error = live.auth_error or recorded.auth_error
    return recorded


def check_calls(tally: CallTally | None, where: str, outcome: str) -> tuple[int, str | None]:
    """How many of the result's summaries are the truncation fallback because of the model (one
    per failed call, one per summary not shorter than its input) and the warning to show when
    some are; raises :class:`ModelCallsFailedError` when no call gave a summary the engine kept
    (every one failed or was not shorter) or the provider refused the credentials. ``where``
    starts the message (a session, an engine version), ``outcome`` says what was not done
    (``the replay was not saved``)."""
    if tally is None or not (tally.failed or tally.rejected or tally.bad_usage):
        return 0, None
    if tally.auth_error is not None:  # the engine dropped those passes: nothing of the result can be trusted
        refused = tally.failures.get("auth", 0)
        raise ModelCallsFailedError(f"{where}: {tally.auth_error} ({refused} of {tally.calls} model calls refused); {outcome}")
    failed = [tally.describe()] if tally.failed else []
    if tally.failed + tally.rejected >= tally.calls:
        fell_back = f" ({tally.not_shorter} summaries are the truncation fallback)" if tally.not_shorter else ""
        longer = [f"{tally.rejected} of {tally.calls} model calls gave a summary not shorter than its input{fell_back}"] if tally.rejected else []
        hint = [CHECK] if tally.failed else []
        hint += [LONGER] if tally.rejected else []
        raise ModelCallsFailedError(f"{where}: {'; '.join(failed + longer)}; no summary came from the model, so {outcome} "
                                    f"({'; '.join(hint)})")  # fmt: skip
    said = [f"{failed[0]}; their summaries are the truncation fallback"] if failed else []
    if tally.not_shorter:
        said.append(f"{tally.not_shorter} summaries are the truncation fallback because the model's output was not shorter than its input")
    if tally.bad_usage:
        said.append(f"{tally.bad_usage} model calls reported usage that is not a whole number of tokens from 0 to "
                    f"{MAX_USAGE_TOKENS:,} (first: {tally.first_bad_usage}): recorded as unknown")  # fmt: skip
    return tally.failed + tally.not_shorter, (f"{where}: {'; '.join(said)}" if said else None)


def ledger_note(calls: Sequence[Any]) -> str:
    """How many of a result's summarizer calls the call ledger answered instead of the model, in a
    sweep's words, for a replay's or a rewrite's line (nothing when none was). The ledger's key
    leaves out the server (``api_base``), so answers another server gave come back too.

    >>> from types import SimpleNamespace as Call
    >>> ledger_note([Call(cached=True), Call(cached=False)])
    ' (1 served from the ledger, 1 sent to a model)'
    """
    hits = sum(1 for call in calls if getattr(call, "cached", False))
    return f" ({hits} served from the ledger, {len(calls) - hits} sent to a model)" if hits else ""


def check_run(run: Any, summarizer: object, before: CallTally | None) -> int:
    """The rule applied to a finished replay or strategy run for a library caller (``lab.replay``,
    ``Strategy.run``): no call gave a summary the engine kept (every one failed or was not shorter
    than its input), or the credentials were refused, raises :class:`ModelCallsFailedError`; some
    such calls issue one :class:`ModelCallsWarning`, attributed to the line outside the lab that
    asked for the run (a notebook cell, a script). Returns how many summaries are the fallback so.

    The calls are counted by :func:`run_calls`, as a sweep counts them; ``before``
    (:func:`calls_so_far`) lends the summarizer's live tally's words to the message."""
    tally = run_calls(run, summarizer, before)
    failed, message = check_calls(tally, run.conversation.session_id, "the replay was not saved")
    warn_failed_calls(failed, message)
    return failed


def warn_failed_calls(failed: int, message: str | None) -> None:
    """Show what :func:`check_calls` returned as one :class:`ModelCallsWarning`, attributed to the
    line outside the lab that asked for the result (a notebook cell, a script); nothing when no
    call failed (``message`` is ``None``). Every library result that keeps the warning in a field
    of its own (``compare_versions``, ``whatif.rewrite``, ``session_cost``) issues it here too, so a notebook shows it."""
    if message is not None:
        warnings.warn(ModelCallsWarning(message, failed), stacklevel=_first_level_outside_the_lab())


def _first_level_outside_the_lab() -> int:
    """The ``stacklevel`` (for a ``warnings.warn`` in the caller) of the nearest frame whose code is
    not in the lcm_lab package: the user's line, whichever public function it called."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, level = inspect.currentframe(), 0
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return max(level, 1)


@contextmanager
def collected_call_warnings() -> Iterator[list[ModelCallsWarning]]:
    """Collect the :class:`ModelCallsWarning` s issued inside the block instead of showing them, for
    a shell that prints them its own way (the CLI's ``warning:`` line after the run's line); every
    other warning is shown, or raised, as the filters say. Not for threads: the warnings filters
    are process-wide."""
    caught: list[ModelCallsWarning] = []
    with warnings.catch_warnings():
        warnings.simplefilter("always", ModelCallsWarning)  # each one, even a repeat of the last
        show = warnings.showwarning

        def keep(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
            if isinstance(message, ModelCallsWarning):
                caught.append(message)
            else:
                show(message, category, *args, **kwargs)

        warnings.showwarning = keep
        yield caught
