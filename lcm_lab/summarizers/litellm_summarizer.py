"""``litellm``: summaries from any model litellm can reach, through the call ledger.

Every call renders the prompt set (:mod:`lcm_lab.prompts`), looks its cache key up in the
ledger, and otherwise runs ``litellm.acompletion`` on the shared background loop inside the
summarizer's :class:`~lcm_lab.summarizers.pool.CallPool`. Behaviour follows the plugin
(``src/summarize.ts``, ``src/summary-fallback.ts``):

* authentication failures (401/403) raise :class:`SummarizerAuthError` at once — the engine
  aborts the pass and writes nothing;
* rate limits (429), server errors (5xx) and dropped connections are retried with exponential
  backoff (``min(base × 2^i, max)``, or the provider's ``Retry-After``), then give up
  (:mod:`lcm_lab.summarizers.provider`, shared with the judge);
* a timeout (``summary_timeout_ms`` per call) is not retried;
* an empty or reasoning-only reply is retried once with ``max(2 × max_tokens, target)``;
* a reply bigger than its request allows (:func:`~lcm_lab.summarizers.responses.oversize`: 32
  bytes per token of ``max_tokens``, at least 64 KiB) is a failed call (``response_too_large``),
  neither kept nor written to the ledger whole, and not retried;
* when a call finally fails (timeout, retries exhausted, still empty), the result is the
  summarizer-internal fallback: a source prefix ending in
  ``[LCM fallback summary; truncated for context management]``.

Every attempt is written to the ledger (errors included, never cached); a successful reply is
cached under the key of the logical request, so a repeated replay costs nothing.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lcm_lab.engine.protocol import SummarizerAuthError, SummarizerError, SummaryRequest, SummaryResult
from lcm_lab.errors import MissingCredentialsError
from lcm_lab.io.redaction import redact, register_secret
from lcm_lab.prompts import PromptSet, RenderedPrompt, render_request, resolve_prompt_set
from lcm_lab.store.ledger import Ledger, LedgerEntry, cache_key
from lcm_lab.summarizers.call_checks import CallTally
from lcm_lab.summarizers.pool import CallPool
from lcm_lab.summarizers.provider import (
    RETRYABLE,
    classify_error,
    ignore_litellm_pydantic_warnings,
    import_litellm,
    missing_api_keys,
    response_cost,
    response_usage,
    retry_delay,
)
from lcm_lab.summarizers.responses import TOO_LARGE, oversize, strip_reasoning, summarizer_fallback
from lcm_lab.summarizers.spend import SpendGuard


class MissingApiKeyError(SummarizerError, MissingCredentialsError):
    """The summary model's provider key is not set (the message names the variable)."""


@dataclass
class _Attempt:
    """What one HTTP attempt produced, kept until the caller thread writes it to the ledger."""

    attempt: int
    max_tokens: int
    latency_ms: float
    text: str | None = None
    raw_text: str | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    error_class: str | None = None
    error_message: str | None = None
    bad_usage: str | None = None  # the usage the provider reported that is no token count (recorded as unknown)


@dataclass
class _Outcome:
    text: str | None  # None: the call failed (fallback)
    attempts: list[_Attempt] = field(default_factory=list)
    failure: str | None = None


class LiteLLMSummarizer:
    """A :class:`~lcm_lab.engine.protocol.Summarizer` backed by a litellm model.

    ``model`` is a litellm model string (``openai/gpt-4o-mini``, ``anthropic/claude-…``,
    ``gemini/…``, ``ollama/llama3``; with ``api_base`` any OpenAI-compatible server via
    ``openai/<name>``). ``api_key`` is used for requests only and never stored; without it the
    provider's environment variable must be set, or construction fails naming it.
    """

    name = "litellm"

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        prompts: PromptSet | str | os.PathLike[str] | None = None,
        ledger: Ledger | None = None,
        run_id: str | None = None,
        concurrency: int = 16,
        pool: CallPool | None = None,
        summary_timeout_ms: int = 60_000,
        max_retries: int = 3,
        backoff_base_ms: float = 500,
        backoff_max_ms: float = 8_000,
        temperature: float | None = None,
        seed: int | None = None,
        reasoning_effort: str | None = None,
        fallback_max_tokens: int = 512,
        max_calls_per_window: int | None = None,
        window_seconds: float = 600,
        max_cost_usd: float | None = None,
        completion_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.provider = model.split("/", 1)[0] if "/" in model else None
        self.api_base = api_base
        self._api_key = api_key
        register_secret(api_key)  # a key given in code is a secret wherever text leaves the lab
        self.prompts = resolve_prompt_set(prompts)
        self.ledger = ledger
        self.run_id = run_id
        self.pool = pool or CallPool(concurrency)
        self.timeout_s = summary_timeout_ms / 1000
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_ms / 1000
        self.backoff_max_s = backoff_max_ms / 1000
        self.temperature = temperature
        self.seed = seed
        self.reasoning_effort = reasoning_effort
        self.fallback_max_tokens = fallback_max_tokens
        self.guard = SpendGuard(max_calls_per_window, window_seconds, max_cost_usd)
        self.tally = CallTally()
        self.completion_kwargs = dict(completion_kwargs or {})
        if "api_key" in self.completion_kwargs:
            raise ValueError("pass api_key= directly, not inside completion_kwargs")
        self._check_credentials()

    def __repr__(self) -> str:
        return f"LiteLLMSummarizer({self.model!r}, api_base={self.api_base!r}, prompts={self.prompts.name!r})"

    # -- credentials -------------------------------------------------------------------------
    def credential(self) -> str:
        """The credential a refused call should make the user check, named (never its value)."""
        from lcm_lab.summarizers.provider import display_url

        if self._api_key:
            what = "the api_key passed to the summarizer"
        else:
            what = f"the API key in {self.provider.upper() if self.provider else 'OPENAI'}_API_KEY"
        if self.api_base and display_url(self.api_base) != self.api_base:
            what += " and the user info in the api_base URL"
        return what

    def _check_credentials(self) -> None:
        if self._api_key or "mock_response" in self.completion_kwargs:
            return
        try:
            missing = missing_api_keys(self.model, self.api_base)
        except Exception as exc:  # unknown provider prefix and the like
            raise SummarizerError(f"litellm cannot use model {self.model!r}: {exc}") from exc
        if self.api_base and self.provider in (None, "ollama", "hosted_vllm", "lm_studio", "llamafile"):
            missing = []
        if missing:
            hint = " (for a local OpenAI-compatible server that ignores keys, any non-empty value works)" if self.api_base else ""
            raise MissingApiKeyError(
                f"model {self.model!r} needs an API key: set {' or '.join(missing)} in the environment"
                f" or pass api_key=...{hint}"
            )

    # -- the protocol ------------------------------------------------------------------------
    def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Render, consult the cache, call the model (with retries) and record everything."""
        return self.complete(render_request(self.prompts, request), request)

    def complete(self, rendered: RenderedPrompt, request: SummaryRequest) -> SummaryResult:
        """Send messages the caller rendered (a context strategy's own prompt) through the same
        cache, retries, spend guard and ledger as summaries; ``request`` gives the token limits."""
        started = time.perf_counter()
        key = self.cache_key_for(rendered, request.max_tokens)
        if self.ledger is not None:
            hit = self.ledger.lookup(key)
            if hit is not None:
                text = strip_reasoning(hit.response_text)
                latency = (time.perf_counter() - started) * 1000
                self.ledger.record(
                    self._entry(request, rendered, key, request.max_tokens, attempt=1, cache_hit=True, response_text=hit.response_text,
                                finish_reason=hit.finish_reason, input_tokens=hit.input_tokens, output_tokens=hit.output_tokens,
                                cost_usd=0.0, latency_ms=latency)
                )
                self.tally.record()
                return SummaryResult(
                    text=text, model=self.model, template_hash=rendered.template_hash, input_tokens=hit.input_tokens,
                    output_tokens=hit.output_tokens, cost_usd=0.0, latency_ms=latency, cached=True,
                    extra={"cache_key": key, "cached_call_id": hit.call_id, "template_name": rendered.template_name,
                           "system_template_hash": rendered.system_hash, "attempts": 0},
                )
        outcome = _Outcome(None)
        try:
            self.pool.run(lambda: self._call(rendered, request, outcome))
        except SummarizerAuthError as exc:  # the engine drops the pass silently: the tally tells the shells
            self.tally.record_auth(str(exc))
            raise
        finally:
            self._record_attempts(request, rendered, key, outcome)
        latency = (time.perf_counter() - started) * 1000
        last = outcome.attempts[-1] if outcome.attempts else None
        cost = sum(a.cost_usd or 0.0 for a in outcome.attempts) if any(a.cost_usd is not None for a in outcome.attempts) else None
        extra: dict[str, object] = {
            "cache_key": key,
            "template_name": rendered.template_name,
            "system_template_hash": rendered.system_hash,
            "attempts": len(outcome.attempts),
        }
        self.tally.record(None if outcome.text is not None else outcome.failure or "failed", last.error_message if last else None)
        self.tally.record_bad_usage(next((a.bad_usage for a in outcome.attempts if a.bad_usage), None))
        if outcome.text is None:
            extra["fallback"] = outcome.failure or "failed"
            return SummaryResult(
                text=summarizer_fallback(request.source_text, self.fallback_max_tokens), model=self.model,
                template_hash=rendered.template_hash, cost_usd=cost, latency_ms=latency, extra=extra,
            )
        return SummaryResult(
            text=outcome.text, model=self.model, template_hash=rendered.template_hash,
            input_tokens=last.input_tokens if last else None, output_tokens=last.output_tokens if last else None,
            cost_usd=cost, latency_ms=latency, extra=extra,
        )

    def cache_key_for(self, rendered: RenderedPrompt, max_tokens: int) -> str:
        """The ledger key of a rendered request (what changes the output, nothing else)."""
        return cache_key(
            model=self.model, messages=rendered.messages, template_hash=rendered.template_hash,
            temperature=self.temperature, max_tokens=max_tokens, seed=self.seed, reasoning_effort=self.reasoning_effort,
        )

    # -- the async call ----------------------------------------------------------------------
    def _completion_kwargs(self, messages: list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "timeout": self.timeout_s,
            "max_retries": 0,  # retries are ours (and recorded); the SDK's own are off
            "num_retries": 0,
            "drop_params": True,
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.seed is not None:
            kwargs["seed"] = self.seed
        if self.reasoning_effort is not None:
            kwargs["reasoning_effort"] = self.reasoning_effort
        kwargs.update(self.completion_kwargs)
        return kwargs

    async def _call(self, rendered: RenderedPrompt, request: SummaryRequest, outcome: _Outcome) -> None:
        litellm = import_litellm()
        ignore_litellm_pydantic_warnings()
        max_tokens = request.max_tokens
        transient_failures = 0
        empty_retried = False
        while True:
            self.guard.before_call()
            number = len(outcome.attempts) + 1
            async with self.pool.slot():
                t0 = time.perf_counter()
                try:
                    response = await litellm.acompletion(**self._completion_kwargs(rendered.messages, max_tokens))
                    error: BaseException | None = None
                except Exception as exc:  # classified below; nothing is swallowed silently
                    response, error = None, exc
                latency = (time.perf_counter() - t0) * 1000
            if error is not None:
                kind = classify_error(error)
                outcome.attempts.append(
                    _Attempt(number, max_tokens, latency, error_class=kind, error_message=f"{type(error).__name__}: {error}"[:2000])
                )
                if kind == "auth":
                    raise SummarizerAuthError(
                        f"{self.model}: the provider rejected the credentials ({type(error).__name__}); check {self.credential()}"
                    ) from error
                if kind in RETRYABLE and transient_failures < self.max_retries:
                    transient_failures += 1
                    delay = retry_delay(error, transient_failures, self.backoff_base_s, self.backoff_max_s)
                    if delay is not None:
                        await asyncio.sleep(delay)
                        continue
                outcome.failure = kind
                return
            attempt = self._parse_response(response, number, max_tokens, latency)
            outcome.attempts.append(attempt)
            self.guard.add_cost(attempt.cost_usd)
            if attempt.text:
                outcome.text = attempt.text
                return
            if attempt.error_class == TOO_LARGE:  # asking again would read as much again
                outcome.failure = TOO_LARGE
                return
            if not empty_retried:
                empty_retried = True
                max_tokens = max(2 * request.max_tokens, request.target_tokens)
                continue
            outcome.failure = "empty_response"
            return

    @staticmethod
    def _parse_response(response: Any, number: int, max_tokens: int, latency: float) -> _Attempt:
        choice = response.choices[0] if getattr(response, "choices", None) else None
        message = getattr(choice, "message", None)
        raw = getattr(message, "content", None) if message is not None else None
        raw_text = raw if isinstance(raw, str) else None
        input_tokens, output_tokens, bad_usage = response_usage(response)
        cost = None if bad_usage else response_cost(response)  # None: no entry in litellm's price map (unknown, not zero)
        too_big = oversize(raw_text, max_tokens)
        if too_big is not None:  # neither kept nor stored: a failed call
            return _Attempt(
                attempt=number, max_tokens=max_tokens, latency_ms=latency, finish_reason=getattr(choice, "finish_reason", None),
                input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost, error_class=TOO_LARGE, error_message=too_big,
                bad_usage=bad_usage,
            )
        text = strip_reasoning(raw_text)
        return _Attempt(
            attempt=number, max_tokens=max_tokens, latency_ms=latency, text=text, raw_text=raw_text,
            finish_reason=getattr(choice, "finish_reason", None),
            input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost, bad_usage=bad_usage,
            error_class=None if text else "empty_response",
            error_message=None if text else ("reasoning only" if getattr(message, "reasoning_content", None) or raw_text else "no content"),
        )

    # -- ledger ------------------------------------------------------------------------------
    def _entry(self, request: SummaryRequest, rendered: RenderedPrompt, key: str, max_tokens: int, **values: Any) -> LedgerEntry:
        params: dict[str, Any] = {
            "max_tokens": max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "reasoning_effort": self.reasoning_effort,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "target_tokens": request.target_tokens,
        }
        extra = {k: v for k, v in self.completion_kwargs.items() if isinstance(v, (str, int, float, bool)) and "key" not in k.lower()}
        if extra:
            params["completion_kwargs"] = extra
        return LedgerEntry(
            purpose="summary" if request.kind in ("leaf", "condensed") else request.kind, summarizer=self.name, model=self.model, cache_key=key, run_id=self.run_id,
            provider=self.provider, api_base=self.api_base, kind=request.kind, depth=request.depth,
            aggressive=request.aggressive, template_name=rendered.template_name, template_hash=rendered.template_hash,
            system_template_hash=rendered.system_hash, params=params, request_messages=rendered.messages, **values,
        )

    def _record_attempts(self, request: SummaryRequest, rendered: RenderedPrompt, key: str, outcome: _Outcome) -> None:
        if self.ledger is None:
            return
        secrets = [self._api_key] if self._api_key else []
        for attempt in outcome.attempts:
            message = attempt.error_message
            if message and secrets:
                message = redact(message, secrets)
            self.ledger.record(
                self._entry(
                    request, rendered, key, attempt.max_tokens, attempt=attempt.attempt, cache_hit=False,
                    cacheable=attempt.text is not None and bool(attempt.text) and attempt.error_class is None,
                    response_text=attempt.raw_text, finish_reason=attempt.finish_reason,
                    input_tokens=attempt.input_tokens, output_tokens=attempt.output_tokens, cost_usd=attempt.cost_usd,
                    latency_ms=attempt.latency_ms, error_class=attempt.error_class, error_message=message,
                )
            )

    def with_options(self, **changes: Any) -> LiteLLMSummarizer:
        """A copy with other settings (shares pool and ledger unless replaced, and the call tally)."""
        return replace_summarizer(self, **changes)


def replace_summarizer(summarizer: LiteLLMSummarizer, **changes: Any) -> LiteLLMSummarizer:
    """Build a new :class:`LiteLLMSummarizer` from ``summarizer``'s settings plus ``changes``."""
    settings: dict[str, Any] = {
        "api_base": summarizer.api_base,
        "api_key": summarizer._api_key,
        "prompts": summarizer.prompts,
        "ledger": summarizer.ledger,
        "run_id": summarizer.run_id,
        "pool": summarizer.pool,
        "summary_timeout_ms": summarizer.timeout_s * 1000,
        "max_retries": summarizer.max_retries,
        "backoff_base_ms": summarizer.backoff_base_s * 1000,
        "backoff_max_ms": summarizer.backoff_max_s * 1000,
        "temperature": summarizer.temperature,
        "seed": summarizer.seed,
        "reasoning_effort": summarizer.reasoning_effort,
        "fallback_max_tokens": summarizer.fallback_max_tokens,
        "max_calls_per_window": summarizer.guard.max_calls_per_window,
        "window_seconds": summarizer.guard.window_seconds,
        "max_cost_usd": summarizer.guard.max_cost_usd,
        "completion_kwargs": summarizer.completion_kwargs,
    }
    settings.update(changes)
    model = settings.pop("model", summarizer.model)
    copy = LiteLLMSummarizer(model, **settings)
    copy.tally = summarizer.tally  # a copy's calls count as the original's (the shell reads one tally)
    return copy


__all__ = ["LiteLLMSummarizer", "classify_error", "import_litellm", "replace_summarizer"]
