"""The one rule for model calls that failed, used by every command and library function whose
result rests on a model's summaries (a replay, a strategy run, a what-if rewrite, an upgrade
comparison, a priced replay, a sweep's runs):

* **every call failed**, or the provider refused the credentials: nothing of the result came from
  the model (each summary is the plugin's truncation fallback, or the engine dropped the pass),
  so it is an error (:class:`ModelCallsFailedError`, a :class:`~lcm_lab.errors.ModelError`) and
  the caller saves nothing;
* **some calls failed**: the result stands, with a warning that counts them by reason.

The calls are counted either by a model summarizer's live tally (:func:`calls_so_far` before,
:func:`calls_since` after) or from the calls a result recorded (:func:`recorded_calls`).

>>> from lcm_lab.summarizers.litellm_summarizer import CallTally
>>> check_calls(CallTally(4, {"timeout": 1}, "timed out"), "s1", "the replay was not saved")
(1, 's1: 1 of 4 model calls failed (timeout ×1; first error: timed out); their summaries are the truncation fallback')
>>> check_calls(CallTally(2, {"connection": 2}), "s1", "the replay was not saved")
Traceback (most recent call last):
...
lcm_lab.summarizers.call_checks.ModelCallsFailedError: s1: 2 of 2 model calls failed (connection ×2); no summary came from the model, so the replay was not saved (check the model (--model, model=), its server (--api-base, api_base=) and that the server is up)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lcm_lab.errors import ModelError

if TYPE_CHECKING:
    from lcm_lab.summarizers.litellm_summarizer import CallTally

CHECK = "check the model (--model, model=), its server (--api-base, api_base=) and that the server is up"


class ModelCallsFailedError(ModelError):
    """Every model call of a result failed, or the provider refused the credentials: nothing of it
    came from the model, so nothing was saved (the message counts the calls by reason)."""


def calls_so_far(summarizer: object) -> CallTally | None:
    """A copy of a model summarizer's call tally (``None`` for a summarizer that keeps none)."""
    tally = getattr(summarizer, "tally", None)
    return None if tally is None else tally.copy()


def calls_since(summarizer: object, before: CallTally | None) -> CallTally | None:
    """The calls ``summarizer`` made since ``before`` (:func:`calls_so_far`), or ``None``."""
    tally = getattr(summarizer, "tally", None)
    return None if tally is None or before is None else tally.since(before)


def recorded_calls(calls: Iterable[Any], refused_passes: int = 0, credential: str | None = None) -> CallTally:
    """A tally of the summarizer calls a result recorded (``SummarizerCall.failure`` says which
    fell back, and why); ``refused_passes`` counts compaction passes the engine dropped because the
    provider refused the credentials (``credential`` names what to fix)."""
    from lcm_lab.summarizers.litellm_summarizer import CallTally

    calls = list(calls)
    failures = Counter(str(call.failure) for call in calls if getattr(call, "failure", None))
    auth = None
    if refused_passes:
        auth = f"the provider rejected the credentials ({refused_passes} compaction passes dropped); check {credential or 'the API key'}"
        failures["auth"] += refused_passes
    return CallTally(len(calls) + refused_passes, dict(failures), auth, auth)


def run_calls(run: Any, summarizer: object = None) -> CallTally:
    """:func:`recorded_calls` of a replay: its turns' calls and the passes dropped for refused
    credentials (the summarizer's ``credential()`` names the key to fix, when it has one)."""
    refused = sum(1 for turn in run.turns for sweep in getattr(turn, "sweeps", ()) if sweep.auth_failure)
    credential = getattr(summarizer, "credential", None)
    named = credential() if refused and callable(credential) else None
    return recorded_calls((call for turn in run.turns for call in turn.calls), refused, named)


def check_calls(tally: CallTally | None, where: str, outcome: str) -> tuple[int, str | None]:
    """How many of the calls in ``tally`` failed and the warning to show when some did; raises
    :class:`ModelCallsFailedError` when every one failed or the provider refused the credentials.
    ``where`` starts the message (a session, an engine version), ``outcome`` says what was not
    done (``the replay was not saved``)."""
    if tally is None or not tally.failed:
        return 0, None
    if tally.auth_error is not None:  # the engine dropped those passes: nothing of the result can be trusted
        refused = tally.failures.get("auth", 0)
        raise ModelCallsFailedError(f"{where}: {tally.auth_error} ({refused} of {tally.calls} model calls refused); {outcome}")
    if tally.failed >= tally.calls:
        raise ModelCallsFailedError(f"{where}: {tally.describe()}; no summary came from the model, so {outcome} ({CHECK})")
    return tally.failed, f"{where}: {tally.describe()}; their summaries are the truncation fallback"
