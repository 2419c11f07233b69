"""Summarizers: the only place in lcm_lab that talks to models.

* ``stub-v1`` / ``legacy-golden-10.1`` — the reference-run stubs (engine fidelity);
* ``offline`` — deterministic extractive summaries, no model (the default);
* ``litellm`` — any litellm model, through the prompt sets and the call ledger.

>>> get_summarizer("offline").name
'offline'
>>> try:
...     get_summarizer("nope")
... except SummarizerConfigError as exc:
...     print(exc)
unknown summarizer 'nope'; choose one of: offline, stub-v1, legacy-golden-10.1, litellm
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lcm_lab.errors import OptionError

if TYPE_CHECKING:
    from lcm_lab.engine.protocol import Summarizer
    from lcm_lab.summarizers.litellm_summarizer import LiteLLMSummarizer
    from lcm_lab.summarizers.offline import OfflineSummarizer
    from lcm_lab.summarizers.stub import LegacyGoldenSummarizer, StubV1Summarizer, canon_file_ids

SUMMARIZER_NAMES: tuple[str, ...] = ("offline", "stub-v1", "legacy-golden-10.1", "litellm")
DEFAULT_SUMMARIZER = "offline"


class SummarizerConfigError(OptionError):
    """A summarizer was asked for with options that do not apply or are missing."""


def get_summarizer(name: str, **options: Any) -> Summarizer:
    """Build a summarizer by registry name; ``options`` go to its constructor.

    ``get_summarizer("litellm", model="openai/gpt-4o-mini", ledger=Ledger(store))``.
    """
    if name == "offline":
        from lcm_lab.summarizers.offline import OfflineSummarizer

        return OfflineSummarizer(**options)
    if name in ("stub-v1", "legacy-golden-10.1"):
        from lcm_lab.summarizers.stub import LegacyGoldenSummarizer, StubV1Summarizer

        if options:
            raise SummarizerConfigError(f"summarizer {name!r} takes no options (got {', '.join(sorted(options))})")
        return StubV1Summarizer() if name == "stub-v1" else LegacyGoldenSummarizer()
    if name == "litellm":
        if not options.get("model"):
            raise SummarizerConfigError("summarizer 'litellm' needs a model, e.g. model='openai/gpt-4o-mini'")
        from lcm_lab.summarizers.litellm_summarizer import LiteLLMSummarizer

        model = options.pop("model")
        return LiteLLMSummarizer(model, **options)
    raise SummarizerConfigError(f"unknown summarizer {name!r}; choose one of: {', '.join(SUMMARIZER_NAMES)}")


_OFFLINE_NAME = re.compile(r"offline(?:\(max_footer_items=(\d+)\))?")


def rebuild_summarizer(name: str, models: Iterable[str] = ()) -> Summarizer | None:
    """The summarizer a run recorded as ``name`` (``Replay.summarizer``) when the lab can build
    exactly that one again: a deterministic summarizer whose name says all of its settings
    (``offline``, ``offline(max_footer_items=0)``, ``stub-v1``, ``legacy-golden-10.1``). ``models``
    are the models the run's calls recorded: an offline run written by another version of the
    offline summarizer is not rebuilt. ``None`` for a model's summarizer (``litellm``): a model is
    named by the caller, never assumed.

    >>> rebuild_summarizer("offline(max_footer_items=0)").max_footer_items
    0
    >>> rebuild_summarizer("offline", ["lcm-lab-offline-v1"]) is None, rebuild_summarizer("litellm") is None
    (True, True)
    """
    if name in ("stub-v1", "legacy-golden-10.1"):
        return get_summarizer(name)
    offline = _OFFLINE_NAME.fullmatch(name)
    if offline is None:
        return None
    from lcm_lab.summarizers.offline import DEFAULT_FOOTER_ITEMS, OFFLINE_MODEL

    if any(model != OFFLINE_MODEL for model in models):
        return None
    footer = offline.group(1)
    return get_summarizer("offline", max_footer_items=DEFAULT_FOOTER_ITEMS if footer is None else int(footer))


# Imported on first use, so the CLI and ``SUMMARIZER_NAMES`` stay cheap to import.
_LAZY = {
    "OfflineSummarizer": "lcm_lab.summarizers.offline",
    "StubV1Summarizer": "lcm_lab.summarizers.stub",
    "LegacyGoldenSummarizer": "lcm_lab.summarizers.stub",
    "canon_file_ids": "lcm_lab.summarizers.stub",
    "LiteLLMSummarizer": "lcm_lab.summarizers.litellm_summarizer",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lcm_lab.summarizers' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "DEFAULT_SUMMARIZER",
    "SUMMARIZER_NAMES",
    "LegacyGoldenSummarizer",
    "LiteLLMSummarizer",
    "OfflineSummarizer",
    "StubV1Summarizer",
    "SummarizerConfigError",
    "canon_file_ids",
    "get_summarizer",
    "rebuild_summarizer",
]
