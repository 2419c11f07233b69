"""An offline QA reader that needs the question: BM25 passage retrieval + answer recall@k.
(One of the lab's three BM25s, each for its own job: ``docs/metrics.md``, "Three BM25s".)

A context (what the model receives, the full history, a truncation, another conversation's text)
is cut into short *passages*; the question retrieves the ``k`` passages most relevant to it
(Okapi BM25 over the question's content words); the item is credited iff the normalised gold
answer occurs contiguously inside one of them (DPR's "answer recall@k", Karpukhin et al. 2020).
A context that merely *holds* the answer string somewhere earns nothing unless the answer sits
next to the words of the question.

Passage construction is what keeps candidate-answer lists from earning credit:

* text is split into lines and sentences;
* a segment that reads as a list (≥ 4 comma/semicolon/pipe/bullet-separated parts, median part
  ≤ 3 words) becomes one passage per part, so a part holding a date or a name carries none of
  the question's words and is not retrieved;
* a long segment with almost no function words (< 15 %, ≥ 8 words: "keyword soup") becomes one
  passage per word, for the same reason;
* other long segments are cut into windows of :data:`WINDOW` words (half overlapping).

Metadata is stripped from every context alike (:func:`reader_text`): summary XML tags and their
attributes and ``[YYYY-MM-DD …]`` message headers never reach the reader, so no context gets
tokens (years, dates) the others cannot have.

>>> index = Bm25Index.of_texts(["I went to a LGBTQ support group yesterday.", "We had pizza on 7 May 2023.",
...                          "Caroline, Melanie, 7 May 2023, Sweden, LGBTQ, pottery"])
>>> index.answer_recall(["Where did she go for the LGBTQ support group?"], ["yesterday"], k=1).tolist()
[1.0]
>>> index.answer_recall(["When did Caroline visit Sweden?"], ["7 May 2023"], k=3).tolist()
[0.0]
>>> Bm25Index.build(["Caroline, Melanie, 7 May 2023, Sweden"]).answer_recall(  # the list as one passage
...     ["When did Caroline visit Sweden?"], ["7 May 2023"]).tolist()
[1.0]
"""

from __future__ import annotations

import functools
import re
import statistics
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from lcm_lab.metrics.base import assembled_message_text

K1, B = 1.5, 0.75  # BM25 constants (Robertson & Zaragoza's usual values)
WINDOW = 40  # words per passage cut from a long prose segment
TOP_K = 10

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation + "‘’“”"})
_HEADER = re.compile(r"^\s*\[\d{4}-\d{2}-\d{2}[^\]\n]*\]\s*", re.MULTILINE)
_TAG = re.compile(r"</?[a-zA-Z_][\w-]*(?:\s[^<>]*)?/?>")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_LIST_SEP = re.compile(r"\s*(?:[,;|•·]|\s-\s)\s*")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
FUNCTION_WORDS = frozenset(
    "a an the and or but if of to in on at by for with from about into over after before as is am are was were be been "
    "being do does did have has had i you he she it we they me him her us them my your his its our their this that these "
    "those there here not no so than then too very just also what when where who whom which why how will would can could "
    "should shall might must up out off again all any some each more most other such only own same".split()
)


def answer_tokens(text: str) -> list[str]:
    """LoCoMo-style normalised tokens (lower case, punctuation and articles removed).

    >>> answer_tokens("The 7th of May, 2023!")
    ['7th', 'of', 'may', '2023']
    """
    lowered = text.lower().translate(_PUNCT)
    return _ARTICLES.sub(" ", lowered).split()


def stem(word: str) -> str:
    """A crude suffix strip so that plural/verb forms match (``agencies`` ~ ``agency``).

    >>> [stem(w) for w in ("agencies", "painted", "swimming", "is", "class")]
    ['agency', 'paint', 'swimm', 'is', 'class']
    """
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def answer_key(answer: str) -> frozenset[str]:
    """The stemmed content tokens an answer needs to be credited (all tokens if it has no content word).

    >>> sorted(answer_key("The adoption agencies"))
    ['adoption', 'agency']
    """
    tokens = answer_tokens(answer)
    content = [t for t in tokens if t not in FUNCTION_WORDS] or tokens
    return frozenset(map(stem, content))


def reader_text(message: Mapping[str, Any]) -> str:
    """The text of one message as the reader sees it: content only, metadata stripped.

    >>> reader_text({"content": '<summary id="s1" earliest_at="2023-05-08T13:56:00">\\n<content>\\n'
    ...              '[2023-05-08 14:12 UTC | user]\\nI went hiking.\\n</content></summary>'})
    'I went hiking.'
    """
    text = assembled_message_text(message)
    return _HEADER.sub("", _TAG.sub("\n", text)).strip()


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _split_segment(segment: str) -> list[str]:
    parts = [p for p in _LIST_SEP.split(segment) if p.strip()]
    if len(parts) >= 4 and statistics.median(len(_words(p)) for p in parts) <= 3:
        return parts
    words = segment.split()
    if len(words) >= 8 and sum(1 for w in _words(segment) if w in FUNCTION_WORDS) < 0.15 * len(words):
        return words
    if len(words) <= WINDOW:
        return [segment]
    out: list[str] = []
    current: list[str] = []
    for sentence in _SENTENCE.split(segment):
        if current and len(" ".join(current).split()) + len(sentence.split()) > WINDOW:
            out.append(" ".join(current))
            current = []
        current.append(sentence)
    out.append(" ".join(current))
    return [p for chunk in out for p in (_windows(chunk) if len(chunk.split()) > WINDOW else [chunk])]


def _windows(text: str) -> list[str]:
    words = text.split()
    step = WINDOW // 2
    return [" ".join(words[i : i + WINDOW]) for i in range(0, len(words) - step, step)]


def passages(text: str) -> list[str]:
    """Cut a context text into reader passages (see the module docstring).

    >>> passages("Caroline went hiking. Mel painted a sunset!\\nNames: Caroline, Melanie, Sweden, 7 May 2023")
    ['Caroline went hiking. Mel painted a sunset!', 'Names: Caroline', 'Melanie', 'Sweden', '7 May 2023']
    """
    out: list[str] = []
    for line in text.splitlines():
        if line.strip():
            out.extend(p.strip() for p in _split_segment(line.strip()) if p.strip())
    return out


def query_terms(text: str) -> list[str]:
    """Content words of a question (function words dropped).

    >>> query_terms("When did Caroline go to the LGBTQ support group?")
    ['caroline', 'go', 'lgbtq', 'support', 'group']
    """
    return [w for w in _words(text) if w not in FUNCTION_WORDS]


# Probes read many contexts that share most of their messages (one per probe point and setting):
# a message's passages and a passage's terms are computed once (pure functions of the text).
@functools.lru_cache(maxsize=200_000)
def _text_passages(text: str) -> tuple[str, ...]:
    return tuple(passages(text))


@functools.lru_cache(maxsize=400_000)
def _passage_terms(text: str) -> tuple[tuple[str, ...], frozenset[str]]:
    """A passage's indexed words (function words dropped, repeats kept) and its stemmed answer tokens."""
    return tuple(w for w in _words(text) if w not in FUNCTION_WORDS), frozenset(map(stem, answer_tokens(text)))


@dataclass(frozen=True)
class Bm25Index:
    """BM25 over a list of passages, scored for many questions at once (sparse matrix product)."""

    passages: tuple[str, ...]
    vocabulary: Mapping[str, int]
    weights: sparse.csr_matrix  # passages × terms, BM25 term weights (idf × saturated tf)
    normalised: tuple[frozenset[str], ...]  # stemmed answer tokens of each passage

    @staticmethod
    def build(texts: Sequence[str]) -> Bm25Index:
        """Index ``texts`` (each already a passage)."""
        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        terms = [_passage_terms(text) for text in texts]
        for i, (words, _) in enumerate(terms):
            for word in words:
                rows.append(i)
                cols.append(vocab.setdefault(word, len(vocab)))
        n = len(texts)
        tf = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, max(len(vocab), 1)))
        tf.sum_duplicates()
        lengths = np.asarray(tf.sum(axis=1)).ravel()
        avg = lengths.mean() if n and lengths.mean() > 0 else 1.0
        df = np.bincount(tf.indices, minlength=tf.shape[1])
        idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        norm = K1 * (1 - B + B * lengths / avg)
        data = tf.data * (K1 + 1) / (tf.data + np.repeat(norm, np.diff(tf.indptr)))
        weights = sparse.csr_matrix((data * idf[tf.indices], tf.indices, tf.indptr), shape=tf.shape)
        normalised = tuple(answer for _, answer in terms)
        return Bm25Index(tuple(texts), vocab, weights, normalised)

    @staticmethod
    def of_texts(texts: Sequence[str]) -> Bm25Index:
        """Index the passages of several context texts (one per message or summary)."""
        return Bm25Index.build([p for text in texts for p in _text_passages(text)])

    def top_k(self, questions: Sequence[str], k: int = TOP_K) -> list[list[int]]:
        """Indices of the ``k`` best passages per question, best first; only passages sharing at
        least one question term (score > 0) are ever returned."""
        rows: list[int] = []
        cols: list[int] = []
        for i, question in enumerate(questions):
            for term in set(query_terms(question)):
                if term in self.vocabulary:
                    rows.append(i)
                    cols.append(self.vocabulary[term])
        query = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(questions), self.weights.shape[1]))
        scores = (query @ self.weights.T).toarray() if len(self.passages) else np.zeros((len(questions), 0))
        out: list[list[int]] = []
        for row in scores:
            if not row.size:
                out.append([])
                continue
            take = min(k, row.size)
            best = np.argpartition(-row, take - 1)[:take]
            best = best[np.argsort(-row[best], kind="stable")]
            out.append([int(j) for j in best if row[j] > 0])
        return out

    def answer_recall(self, questions: Sequence[str], answers: Sequence[str], k: int = TOP_K) -> np.ndarray:
        """1.0 per question whose answer's content tokens all occur in one of its top-``k`` passages."""
        hits = self.top_k(questions, k)
        result = np.zeros(len(questions))
        for i, (found, answer) in enumerate(zip(hits, answers, strict=True)):
            needle = answer_key(answer)
            if needle and any(needle <= self.normalised[j] for j in found):
                result[i] = 1.0
        return result
