"""The production judge model: litellm behind the call ledger, no fallback.

:class:`LedgerJudge` is a ``complete(messages, **params) -> str`` callable for
:mod:`lcm_lab.metrics.judge`. It uses the summarizer layer's litellm import (offline price map)
and error classification, and the lab's call ledger: each request is looked up by the ledger's
cache key (model, messages, template hash, temperature, max tokens, seed) and recorded with
``purpose`` (``judge-probe``, ``judge-verify``, ...), model, template name and hash — errors
included, never cached. Rate limits, server errors and dropped connections are retried like
summarizer calls (exponential backoff or the provider's ``Retry-After``); any final failure raises :class:`~lcm_lab.metrics.judge.JudgeError`.

>>> import os
>>> os.environ.pop(JUDGE_MODEL_ENV, None) and None
>>> try:
...     judge_from_environment()
... except JudgeError as exc:
...     print(str(exc).split(";")[0])
no judge model configured
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from lcm_lab.errors import MissingCredentialsError, ModelError
from lcm_lab.io import env
from lcm_lab.metrics.judge import JudgeError

if TYPE_CHECKING:
    from lcm_lab.store.ledger import Ledger

JUDGE_MODEL_ENV = env.JUDGE_MODEL
JUDGE_API_BASE_ENV = env.JUDGE_API_BASE


class MissingJudgeKeyError(JudgeError, MissingCredentialsError):
    """The judge model's provider key is not set (the message names the variable)."""


class JudgeCallError(JudgeError, ModelError):
    """The judge or answer model gave no reply after its retries (a dead server, a server error,
    a timeout, refused credentials): the model's configuration is the user's to fix, so the CLI
    says it in one line; still a :class:`JudgeError` for the judges that catch those."""


class LedgerJudge:
    """A litellm chat model for judging, cached and recorded in the call ledger.

    ``temperature`` defaults to 0 (judges should be as stable as the provider allows); repeats
    differ by ``seed``, which is part of the cache key.
    """

    def __init__(
        self,
        model: str,
        *,
        ledger: Ledger | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float | None = 0.0,
        timeout_s: float = 120.0,
        run_id: str | None = None,
        max_retries: int = 3,
        backoff_base_ms: float = 500,
        backoff_max_ms: float = 8_000,
    ) -> None:
        if not model:
            raise JudgeError("no judge model given")
        self.model = model
        self.ledger = ledger
        self.api_base = api_base
        self._api_key = api_key
        self.temperature = temperature
        self.timeout_s = timeout_s
        self.run_id = run_id
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_ms / 1000
        self.backoff_max_s = backoff_max_ms / 1000
        self._check_credentials()

    def __repr__(self) -> str:
        return f"LedgerJudge({self.model!r}, api_base={self.api_base!r})"

    def _check_credentials(self) -> None:
        if self._api_key:
            return
        from lcm_lab.summarizers.provider import missing_api_keys

        try:
            missing = missing_api_keys(self.model, self.api_base)
        except Exception as exc:
            raise JudgeError(f"litellm cannot use judge model {self.model!r}: {exc}") from exc
        if missing:
            raise MissingJudgeKeyError(f"judge model {self.model!r} needs an API key: set {' or '.join(missing)} or pass api_key=")

    def __call__(self, messages: list[dict[str, str]], **params: Any) -> str:
        from lcm_lab.store.ledger import LedgerEntry, cache_key
        from lcm_lab.summarizers.provider import (
            RETRYABLE,
            classify_error,
            ignore_litellm_pydantic_warnings,
            import_litellm,
            response_usage,
            retry_delay,
        )
        from lcm_lab.summarizers.responses import TOO_LARGE, oversize

        max_tokens = int(params.get("max_tokens") or 1024)
        seed = params.get("seed")
        template_hash = params.get("template_hash")
        key = cache_key(
            model=self.model, messages=messages, template_hash=template_hash, temperature=self.temperature,
            max_tokens=max_tokens, seed=seed, reasoning_effort=None,
        )
        entry: dict[str, Any] = {
            "purpose": str(params.get("purpose") or "judge"),
            "summarizer": "judge",
            "model": self.model,
            "cache_key": key,
            "run_id": self.run_id,
            "api_base": self.api_base,
            "template_name": params.get("template_name"),
            "template_hash": template_hash,
            "params": {"max_tokens": max_tokens, "seed": seed, "temperature": self.temperature},
            "request_messages": messages,
        }
        if self.ledger is not None:
            hit = self.ledger.lookup(key)
            if hit is not None:
                self.ledger.record(LedgerEntry(**entry, cache_hit=True, response_text=hit.response_text, cost_usd=0.0))
                return hit.response_text
        litellm = import_litellm()
        ignore_litellm_pydantic_warnings()
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": max_tokens, "timeout": self.timeout_s, "num_retries": 0}
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if seed is not None:
            kwargs["seed"] = seed
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        failures = 0
        while True:  # transient failures are retried like summarizer calls (backoff, Retry-After)
            started = time.perf_counter()
            try:
                response = litellm.completion(**kwargs)
                break
            except Exception as exc:
                latency = (time.perf_counter() - started) * 1000
                kind = classify_error(exc)
                if self.ledger is not None:
                    self.ledger.record(LedgerEntry(**entry, latency_ms=latency, error_class=kind, error_message=f"{type(exc).__name__}: {exc}"[:2000]))
                failures += 1
                delay = retry_delay(exc, failures, self.backoff_base_s, self.backoff_max_s) if kind in RETRYABLE else None
                if delay is None or failures > self.max_retries:
                    raise JudgeCallError(_call_failed(self.model, kind, failures, exc)) from exc
                time.sleep(delay)
        latency = (time.perf_counter() - started) * 1000
        choice = response.choices[0] if getattr(response, "choices", None) else None
        text = getattr(getattr(choice, "message", None), "content", None)
        input_tokens, output_tokens, _bad = response_usage(response)  # unknown when no token count
        invalid: JudgeError | None = None
        too_big = oversize(text, max_tokens) if isinstance(text, str) else None
        if too_big is not None:  # neither kept nor stored, as a summarizer's
            text, invalid = None, JudgeError(f"judge model {self.model!r}: {too_big}")
        ok = isinstance(text, str) and bool(text.strip())
        validate = params.get("validate")
        if ok and validate is not None:
            try:
                validate(text)
            except JudgeError as exc:  # recorded as an error, never cached, then raised
                ok, invalid = False, exc
        if self.ledger is not None:
            self.ledger.record(
                LedgerEntry(
                    **entry, cacheable=ok, response_text=text if isinstance(text, str) else None,
                    finish_reason=getattr(choice, "finish_reason", None), input_tokens=input_tokens,
                    output_tokens=output_tokens, latency_ms=latency,
                    error_class=None if ok else (TOO_LARGE if too_big else "invalid_output" if invalid else "empty_response"),
                    error_message=None if ok else (str(invalid)[:2000] if invalid else "no content"),
                )
            )
        if invalid is not None:
            raise invalid
        if not ok:
            raise JudgeError(f"judge model {self.model!r} returned an empty reply")
        return str(text)


def judge_from_environment(ledger: Ledger | None = None, **options: Any) -> LedgerJudge:
    """The judge named by ``$LCM_LAB_JUDGE_MODEL`` (and ``$LCM_LAB_JUDGE_API_BASE``); an error
    when none is configured — LLM-judged metrics never silently fall back."""
    model = env.text(JUDGE_MODEL_ENV)
    if not model:
        raise JudgeError(f"no judge model configured; set {JUDGE_MODEL_ENV} (e.g. openai/gpt-4o-mini) or pass a model to LedgerJudge")
    return LedgerJudge(model, ledger=ledger, api_base=env.text(JUDGE_API_BASE_ENV), **options)


def _call_failed(model: str, kind: str, attempts: int, exc: BaseException) -> str:
    """What to say when the judge model gave no reply: which model, why, what to check."""
    from lcm_lab.summarizers.call_checks import CHECK

    fix = "the provider rejected the credentials; check the API key" if kind == "auth" else CHECK
    return f"judge model {model!r} failed ({kind}) after {attempts} attempt(s); {fix}: {f'{type(exc).__name__}: {exc}'[:300]}"
