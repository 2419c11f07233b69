"""The deterministic stub summarizers used to produce the reference runs.

``stub-v1`` is defined in the reference runs' README (``tests/fixtures/reference-runs/README.upstream.md``, section 2): its output names the call's kind, depth,
input size and hashes of source and previous context, padded with ``filler`` words so that
outputs grow with the input (≈ 21 + 0.0875 × input tokens). ``legacy-golden-10.1`` is the stub of
the plugin's golden end-to-end run (``datasets/lossless-claw-ref/golden-session.jsonl``). Both make engine fidelity checkable without a model.
"""

from __future__ import annotations

import hashlib

from lcm_lab.engine.compaction.source_text import FILE_ID, may_name_file_id
from lcm_lab.engine.protocol import SummaryRequest, SummaryResult
from lcm_lab.engine.tokens import estimate_tokens

CANONICAL_FILE_ID = "file_0000000000000000"


def canon_file_ids(text: str) -> str:
    """Replace every externalised-payload id by a constant (ids are random in the plugin)."""
    return FILE_ID.sub(CANONICAL_FILE_ID, text) if may_name_file_id(text) else text


def canon_sha256(text: str) -> str:
    return hashlib.sha256(canon_file_ids(text).encode("utf-8")).hexdigest()


class StubV1Summarizer:
    """``stub-v1``: ``SUMMARY kind=… depth=… in=… src=… prev=… aggr=…`` + ``filler`` padding."""

    name = "stub-v1"

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        text = request.source_text
        tin = estimate_tokens(text)
        src = canon_sha256(text)[:12]
        prev = "none" if request.previous_summary is None else canon_sha256(request.previous_summary)[:12]
        output = (
            f"SUMMARY kind={request.kind} depth={request.depth} in={tin} src={src} prev={prev}"
            f" aggr={1 if request.aggressive else 0}" + " filler" * (tin // 20)
        )
        return SummaryResult(text=output, model="unknown")


class LegacyGoldenSummarizer:
    """The stub of the plugin's golden end-to-end run (``datasets/lossless-claw-ref/golden-session.jsonl``): ``SUMMARY(leaf, in=N)`` / ``SUMMARY(dD, in=N)``."""

    name = "legacy-golden-10.1"

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        tin = estimate_tokens(request.source_text)
        label = "leaf" if request.kind == "leaf" else f"d{request.depth}"
        return SummaryResult(text=f"SUMMARY({label}, in={tin})", model="unknown")
