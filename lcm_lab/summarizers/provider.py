"""What the summarizer and the judge share about talking to a provider through litellm.

Only litellm's public API is used: its exception classes (every provider's errors are mapped
onto them), ``validate_environment`` for missing keys, ``completion_cost`` for prices from the
bundled price map, and the documented response fields (``choices``, ``usage``). The retry policy
is one function, :func:`retry_delay`, so summaries and judge calls back off the same way and
both honour a provider's ``Retry-After`` header.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import os
import re
import sys
import time
import warnings
from types import ModuleType
from typing import Any

from lcm_lab.errors import require_extra
from lcm_lab.summarizers.responses import usage_tokens

RETRYABLE = frozenset({"rate_limit", "server_error", "connection"})
_litellm: ModuleType | None = None
_MAX_RETRY_AFTER_S = 120.0  # a provider asking for longer is treated as "give up", not "wait"


# A URL's user info (``user:password@``): everything between the scheme and the last ``@`` of
# the authority. Matched by hand, so a URL too broken for urlsplit is still shown without it.
_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)?[^/?#@]*(?:@[^/?#@]*)*@")


def display_url(url: str) -> str:
    """``url`` as it may be shown or stored: any user info (``user:password@``) replaced.

    >>> display_url("ftp://u:zqPASSWORD@127.0.0.1:9/v1")
    'ftp://[redacted]@127.0.0.1:9/v1'
    >>> display_url("http://u:pw@h:notaport/"), display_url("http://127.0.0.1:8000/v1")
    ('http://[redacted]@h:notaport/', 'http://127.0.0.1:8000/v1')
    """
    return _USERINFO.sub(lambda m: f"{m.group('scheme') or ''}[redacted]@", url, count=1)


def api_base_problem(url: str) -> str | None:
    """Why ``url`` cannot be an ``api_base`` (an http(s) URL with a host and, if any, a valid
    port), or None. The one check for ``--api-base`` and a sweep spec's ``api_base``; the message
    shows the URL through :func:`display_url`, never with its password.

    >>> api_base_problem("http://127.0.0.1:8000/v1") is None
    True
    >>> api_base_problem("http://[::1/")
    "'http://[::1/' is not an http(s) URL with a host (e.g. http://127.0.0.1:8000/v1)"
    """
    from urllib.parse import urlsplit

    text = url.strip()
    try:
        parts = urlsplit(text)
        port_ok = parts.port is None or parts.port > 0
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and port_ok and " " not in text
    except ValueError:  # a bad port, an unclosed [IPv6 bracket
        ok = False
    if ok:
        return None
    return f"{display_url(text)!r} is not an http(s) URL with a host (e.g. http://127.0.0.1:8000/v1)"


def import_litellm() -> ModuleType:
    """Import litellm once, offline: it reaches only the model server a call names.

    litellm fetches things on its own: its price map at import (``LITELLM_LOCAL_MODEL_COST_MAP``
    reads the bundled one), tokenizers from the Hugging Face hub (``disable_hf_tokenizer_download``),
    other catalogs it checks ``LITELLM_OFFLINE_MODE`` for, and, for every ``huggingface/`` model,
    the model's ``config.json`` from huggingface.co, looked up in each call (twice) and in each
    price lookup without regard to its offline mode (1.110: 132 DNS lookups of huggingface.co in a
    replay whose every call went to a local ``--api-base``). That lookup only fills the model's
    context size into litellm's model info, which the lab never reads: it is answered with what
    litellm itself answers when the hub cannot be reached (unknown) (:func:`_no_hub_lookup`)."""
    global _litellm
    if _litellm is None:
        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        os.environ["LITELLM_OFFLINE_MODE"] = "true"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # third-party import-time deprecation noise
            litellm: Any = require_extra("litellm", "llm", "model summarizers, LLM judges and the cost model's prices")
        litellm.suppress_debug_info = True
        litellm.telemetry = False
        litellm.disable_hf_tokenizer_download = True
        utils = sys.modules.get("litellm.utils")
        if utils is not None and callable(getattr(utils, _HUB_LOOKUP, None)):
            setattr(utils, _HUB_LOOKUP, _no_hub_lookup)
        _litellm = litellm
    return _litellm


_HUB_LOOKUP = "_get_max_position_embeddings"  # in litellm.utils (a private name: a test checks it still is)


def _no_hub_lookup(model_name: str) -> None:
    """Stands in for litellm's ``utils._get_max_position_embeddings`` (a GET of
    ``https://huggingface.co/<model>/raw/main/config.json``): the context size is unknown."""
    return None


def ignore_litellm_pydantic_warnings() -> None:
    """Two pydantic warnings litellm causes and we cannot fix, ignored by their exact messages:
    its TypedDicts use ``ReadOnly``, which pydantic warns about when it builds their schemas lazily
    (inside a request, or when litellm imports a provider module on first use); and litellm 1.80
    serialises a response's ``Choices`` where its model declares a union, which pydantic warns
    about on every call ("Pydantic serializer warnings"). Re-inserted before each call so they
    also hold under a test runner's "error" filter.
    """
    warnings.filterwarnings("ignore", message=r".*using the `ReadOnly` qualifier", category=UserWarning)
    warnings.filterwarnings("ignore", message=r"Pydantic serializer warnings", category=UserWarning)


def classify_error(exc: BaseException) -> str:
    """``auth``, ``rate_limit``, ``server_error``, ``timeout``, ``connection``, ``bad_request`` or ``other``.

    litellm maps every provider's failures onto its exception classes; those decide. Errors
    that did not come through litellm fall back to their HTTP ``status_code``.

    >>> classify_error(TimeoutError())
    'timeout'
    """
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return "timeout"
    litellm = sys.modules.get("litellm")  # not imported means the error cannot be one of its classes
    if litellm is not None:
        # Order matters: Timeout derives from APIConnectionError, ContextWindowExceeded from BadRequest.
        for kind, names in (
            ("auth", ("AuthenticationError", "PermissionDeniedError")),
            ("timeout", ("Timeout",)),
            ("rate_limit", ("RateLimitError",)),
            ("server_error", ("InternalServerError", "ServiceUnavailableError", "BadGatewayError", "APIError")),
            ("connection", ("APIConnectionError",)),
            ("bad_request", ("BadRequestError", "NotFoundError", "UnprocessableEntityError", "UnsupportedParamsError")),
        ):
            classes = tuple(c for c in (getattr(litellm, n, None) for n in names) if isinstance(c, type))
            if classes and isinstance(exc, classes):
                return kind
    status = getattr(exc, "status_code", None)
    if status in (401, 403):
        return "auth"
    if status == 429:
        return "rate_limit"
    if isinstance(status, int) and status >= 500:
        return "server_error"
    if isinstance(status, int) and 400 <= status < 500:
        return "bad_request"
    return "other"


def retry_after_seconds(exc: BaseException) -> float | None:
    """The provider's ``Retry-After`` (seconds or an HTTP date) on a failed call, if it sent one.

    >>> class Failed(Exception):
    ...     class response:
    ...         headers = {"retry-after": "3"}
    >>> retry_after_seconds(Failed())
    3.0
    >>> class Mapped(Exception):
    ...     litellm_response_headers = {"retry-after": "2"}
    >>> retry_after_seconds(Mapped())
    2.0
    """
    # Some litellm releases (1.79 for one) give mapped errors a stand-in ``response`` without the
    # provider's headers and keep those on ``litellm_response_headers`` only.
    value = None
    for headers in (getattr(getattr(exc, "response", None), "headers", None), getattr(exc, "litellm_response_headers", None)):
        if headers is None:
            continue
        try:
            value = headers.get("retry-after") or headers.get("Retry-After")
        except Exception:  # headers of an unexpected shape: no hint
            continue
        if value:
            break
    if not value:
        return None
    value = str(value).strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_delay(exc: BaseException, failures: int, base_s: float, max_s: float) -> float | None:
    """Seconds to wait before retry number ``failures`` (1-based), or None to give up.

    ``Retry-After`` wins when the provider sends one (capped at two minutes; longer means give
    up); otherwise exponential backoff ``min(base × 2^(failures-1), max)``.
    """
    hinted = retry_after_seconds(exc)
    if hinted is not None:
        return hinted if hinted <= _MAX_RETRY_AFTER_S else None
    return float(min(base_s * 2 ** (failures - 1), max_s))


def response_usage(response: Any) -> tuple[int | None, int | None, str | None]:
    """A completion's prompt and completion tokens (:func:`usage_tokens`), and what was wrong
    with them when the provider reported one that is no token count (``None`` when nothing was)."""
    usage = getattr(response, "usage", None)
    counts = {key: getattr(usage, key, None) for key in ("prompt_tokens", "completion_tokens")}
    bad = [f"{key} {value!r}"[:60] for key, value in counts.items() if value is not None and usage_tokens(value) is None]
    return usage_tokens(counts["prompt_tokens"]), usage_tokens(counts["completion_tokens"]), ", ".join(bad) or None


def response_cost(response: Any) -> float | None:
    """The price of a completion from litellm's bundled price map; None when the model has no
    entry there (a local server, a new model): unknown, not zero."""
    litellm = import_litellm()
    try:
        cost: float | None = litellm.completion_cost(completion_response=response)
    except Exception:  # litellm raises for models missing from its price map
        return None
    return None if cost is None or not math.isfinite(cost) or cost < 0 else float(cost)


def missing_api_keys(model: str, api_base: str | None) -> list[str]:
    """Environment variables litellm says ``model`` needs and that are not set (base URLs aside)."""
    litellm = import_litellm()
    status = litellm.validate_environment(model=model, api_base=api_base)
    return [k for k in status.get("missing_keys", []) if not k.endswith(("_API_BASE", "_BASE_URL"))]
