"""Hard-fact extraction: the specifics a continuing agent needs verbatim.

Factory's probe evaluation found the "artifact trail" (files, commands, identifiers) the weakest
dimension of every compaction method. This module makes that deterministic: regular expressions
pull typed facts out of source text, and :class:`TextIndex` answers "which texts contain this
fact?" quickly (token postings, then a boundary-aware check) so retention can be measured per
summary and per turn without an LLM.

Fact types, in the order they claim text (an earlier type wins an overlapping span, so the path
inside a URL is not counted again): ``url``, ``command``, ``error``, ``path``, ``datetime``, ``money``,
``version``, ``number_unit``, ``hash``, ``identifier``, ``name`` (a path claims first, so the version
inside ``pkg@1.1.3/index.js`` is not a second fact).

What counts as a hard fact is written down with the hand-labelled set that measures the
extractor (``tests/fixtures/fact-labels.md``): specifics a continuing reader needs verbatim —
paths, commands, identifiers, error messages, numbers with units, dates, versions, URLs, proper
names. Not facts: capitalised sentence/list/comment openers, headings, UI label strings, CSS
fragments, slash-joined alternatives (``and/or``, ``Print/JSON``).

>>> [(f.kind, f.text) for f in extract_facts("Run `pytest -x tests/` then open https://x.org/a.")]
[('command', 'pytest -x tests/'), ('url', 'https://x.org/a')]
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

FACT_TYPES: tuple[str, ...] = (
    "url",
    "command",
    "error",
    "path",
    "datetime",
    "money",
    "version",
    "number_unit",
    "hash",
    "identifier",
    "name",
)

# How much a fact of each type counts in weighted retention (paths and ids
# over numbers over names): what an agent cannot continue without weighs most.
FACT_WEIGHTS: dict[str, float] = {
    "url": 3.0,
    "command": 3.0,
    "error": 3.0,
    "path": 3.0,
    "hash": 3.0,
    "identifier": 3.0,
    "datetime": 2.0,
    "money": 2.0,
    "version": 2.0,
    "number_unit": 2.0,
    "name": 1.0,
}

_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
    "|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_COMMANDS = (
    "git|npm|npx|pnpm|yarn|pip|pip3|python|python3|pytest|node|deno|bun|cargo|rustc|go|make|cmake|"
    "docker|kubectl|helm|terraform|ls|cat|cd|grep|rg|sed|awk|find|curl|wget|ssh|scp|rsync|rm|mv|cp|"
    "mkdir|chmod|chown|touch|tar|unzip|bash|sh|zsh|uv|brew|apt|apt-get|tsc|vitest|jest|ruff|mypy|"
    "openclaw|sqlite3|psql|redis-cli|systemctl|journalctl|gh|head|tail|wc|sort|echo|export|source|kill"
)
_UNITS = (
    "ms|µs|us|ns|s|sec|secs|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?|"
    "[KMGT]i?B|kb|mb|gb|tb|bytes?|bits?|tokens?|px|pt|em|rem|°[CF]|km|m|cm|mm|mi|kg|g|lbs?|"
    "lines?|files?|tests?|requests?|rps|qps|fps|Hz|kHz|MHz|GHz|cores?|threads?|x|%|"
    "characters?|chars|words?|messages?|items?|errors?|warnings?|commits?|steps?"
)

_PATTERNS: dict[str, re.Pattern[str]] = {
    "url": re.compile(r"\b(?:https?|ftp|file)://[^\s<>\"'`)\]}]+"),
    "command": re.compile(
        rf"(?:^|(?<=\n))\s*\$ (?P<c1>[^\n]+)|`(?P<c2>(?:{_COMMANDS})\b[^`\n]*)`",
    ),
    "error": re.compile(
        r"\b(?:[A-Z][A-Za-z0-9]*(?:Error|Exception|Failure)|E[A-Z]{3,}|(?:fatal|error)(?=:))"
        r"(?::[ \t]*(?:[^\n.,;]|[.,;](?![ \t]|$)){1,100})?"
        r"|\bexit(?:ed)? (?:code|status) \d+"
    ),
    "datetime": re.compile(
        r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z?)?"
        rf"|\b\d{{1,2}} (?:{_MONTHS})\.?,? \d{{4}}"
        rf"|\b(?:{_MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?\b"
        rf"|\b(?:{_MONTHS}) \d{{4}}\b"
        r"|(?<![:\w])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?:\s?[ap]\.?m\.?)?(?![\d:])"
        r"|\b(?:[Nn]ext|[Ll]ast|[Tt]his) (?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b"
        r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b"
    ),
    "money": re.compile(
        r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:[kKmMbB]n?|million|billion|thousand)\b)?"
        r"|\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|JPY|dollars|euros|cents)\b"
    ),
    "version": re.compile(r"\bv?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?\b|\bv\d+(?:\.\d+)?\b"),
    "number_unit": re.compile(rf"(?<![\w.\[-])\d+(?:[.,]\d+)?(?:\s?[-–]\s?\d+(?:[.,]\d+)?)?\s?(?:{_UNITS})(?![\w-])"),
    "path": re.compile(
        r"(?<![\w/.:-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]+/?"
        r"|(?<![\w.-])/?[\w-]+\.(?:py|ts|tsx|js|jsx|mjs|cjs|json|jsonl|md|txt|yaml|yml|toml|rs|go|sh|db|"
        r"sql|csv|tsv|html|css|c|h|cc|cpp|hpp|java|kt|rb|php|lock|log|cfg|ini|env|xml|ipynb|png|jpg|svg|gif|webp|pdf|gz|zip)\b"
        r"|(?<![\w/.-])[\w.-]{2,}/(?=[\s,;:)]|$)"
    ),
    "hash": re.compile(
        r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
        r"|\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b",
        re.IGNORECASE,
    ),
    "identifier": re.compile(
        r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"  # snake_case, sum_abc, file_…
        r"|\b[a-z]+(?:[A-Z][a-z0-9]*)+\b"  # camelCase
        r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b"  # PascalCase (ContextAssembler)
        r"|\b[A-Z]{2,}-\d+\b"  # tickets PROJ-123
        r"|\b[A-Z]{2,}[0-9]+[A-Z0-9]*\b"  # SOC2, ES2022
        r"|#[A-Za-z][\w-]+"  # channels, tags
    ),
    "name": re.compile(r"\b(?:[A-Z]\.){1,3} ?[A-Z][a-z]+\b|\b[A-Z][a-z][A-Za-z'’-]*(?:\s+(?:[A-Z][a-z][A-Za-z'’-]*|de|van|von|da|del|of))*(?<!\s(?:de|of))\b"),
}

# Capitalised words that are not names (sentence openers, pronouns, calendar words, ...).
_NOT_NAMES = frozenset(
    """a about after again all also an and any are as at be because been before but by can could
    did do does done during each even every for from had has have he her here hers him his how i if
    in into is it its just let like many may maybe me more most my no not now of off oh ok okay on
    once one only or our out over please see she so some still such than thanks thank that the their
    them then there these they this those though through to too two under until up us very was we
    well were what when where which while who why will with would yes yeah yet you your yours hey hi
    hello good nice wow sure sounds sorry also absolutely awesome cool congrats congratulations
    definitely hmm really right totally true wait done next first second third last note todo
    monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday
    january february march april june july august september october november december
    user assistant tool system summary error warning info debug true false null none
    create add use make build run check set get install fix update remove delete write read
    implement integrate ensure include verify return show try""".split()
)

# Extensionless two-part relative paths are usually alternatives ("and/or", "output/render")
# unless they start in a conventional source directory or are quoted (an import specifier).
_DIR_ROOTS = frozenset(
    """src lib libs packages package apps app bin tests test spec docs doc scripts config configs
    components types modes core dist build public assets datasets reports notebooks node_modules
    benchmarks examples fixtures tools utils internal cmd pkg vendor""".split()
)
# Attribute and method names that every program of a framework uses: not specific facts.
_GENERIC_IDENTIFIERS = frozenset({"classname", "htmlfor", "innerhtml", "textcontent", "onclick", "onchange", "onsubmit"})
_HEX_COLOUR = re.compile(r"#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})")

_SENTENCE_START = re.compile(r"(?:[.!?:;]\s+|[\"“('`>]\s*)$")
# What may precede a sentence on its line: indentation, bullets, numbering, checkboxes, comment
# leaders, quote marks, bold markers, line-number gutters (``12→``).
_LINE_LEADER = re.compile(r"[\s\-*+#>/|\[\]xX\d.)→\"“'`(]*")
_HEADING = re.compile(r"^\s*#{1,6}\s")


@dataclass(frozen=True)
class Fact:
    """One hard fact: its type, the text as written, its match key, and where it first appeared."""

    kind: str
    text: str
    key: str
    seq: int | None = None  # message seq of the first mention (None for free text)


def normalize(text: str) -> str:
    """Lower-case, whitespace collapsed to single spaces (used for facts and for targets)."""
    return " ".join(text.lower().split())


def fact_key(kind: str, text: str) -> str:
    """The string a target must contain for the fact to count as present.

    Trailing punctuation is stripped (a sentence's full stop is not part of a path), and for
    numbers with units and money the space between number and unit is dropped.
    """
    key = normalize(text)
    if kind != "command":
        key = key.rstrip(".,;:!?)]}'\"")
    if kind in ("number_unit", "money"):
        key = re.sub(r"(?<=\d) (?=\D)", "", key)
    return key


def _overlaps(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    """Whether ``span`` overlaps a taken span. ``taken`` is sorted and its spans are disjoint, so
    only the last span starting before ``span`` ends can overlap (a scan of all was quadratic)."""
    i = bisect.bisect_left(taken, (span[1],))
    return i > 0 and taken[i - 1][1] > span[0]


def _trim_name(surface: str, start: int) -> tuple[int, str]:
    """Drop non-name words (``Hey``, ``Thanks``) from both ends of a capitalised run."""
    words = list(re.finditer(r"\S+", surface))
    while words and words[0].group(0).lower().strip("'’") in _NOT_NAMES:
        words.pop(0)
    while words and words[-1].group(0).lower().strip("'’") in _NOT_NAMES:
        words.pop()
    if not words:
        return start, ""
    return start + words[0].start(), surface[words[0].start() : words[-1].end()]


def _line_before(source: str, start: int) -> str:
    return source[source.rfind("\n", 0, start) + 1 : start]


def _at_sentence_start(source: str, start: int) -> bool:
    before = _line_before(source, start)
    return _LINE_LEADER.fullmatch(before) is not None or _SENTENCE_START.search(before[-4:]) is not None


def _is_name(text: str, start: int, source: str) -> bool:
    words = text.split()
    if all(w.lower().strip("'’") in _NOT_NAMES for w in words):
        return False
    if _HEADING.match(_line_before(source, start)):
        return False  # headings name topics ("Code Duplication Issues"), not facts
    if len(words) == 1:
        if len(text) < 3:
            return False
        # A single capitalised word at a sentence start is usually just a sentence start.
        if _at_sentence_start(source, start):
            return False
    return True


def _is_path(surface: str, start: int, end: int, source: str) -> bool:
    if "/" not in surface and "." not in surface:
        return False
    if re.fullmatch(r"[\d/.]+", surface):
        return False  # dates like 5/6/2023 and plain numbers
    parts = surface.split("/")
    if len(parts) == 2 and all(parts) and not surface.startswith((".", "~")) and "." not in parts[1]:
        quoted = source[start - 1 : start] in ("'", '"', "`") and source[end : end + 1] in ("'", '"', "`")
        return quoted or parts[0].lower() in _DIR_ROOTS
    return True


def _is_identifier(surface: str, start: int, end: int, source: str) -> bool:
    if surface.lower() in _GENERIC_IDENTIFIERS or _HEX_COLOUR.fullmatch(surface):
        return False
    # A word inside a path-like token (``esm/module_job:271``) is a fragment of it.
    return source[start - 1 : start] != "/" and source[end : end + 1] != "/"


_FACTS_MEMO: dict[tuple[str, int | None, tuple[str, ...]], tuple[Fact, ...]] = {}
_FACTS_MEMO_LIMIT = 100_000


def extract_facts(text: str, seq: int | None = None, kinds: Sequence[str] = FACT_TYPES) -> list[Fact]:
    """Typed hard facts in ``text``, in order of appearance, de-duplicated by (type, key).

    Memoised: every run of a conversation scores the same messages (a sweep scores hundreds).
    """
    key = (text, seq, tuple(kinds))
    hit = _FACTS_MEMO.get(key)
    if hit is None:
        hit = tuple(_extract_facts(text, seq, kinds))
        if len(_FACTS_MEMO) >= _FACTS_MEMO_LIMIT:
            _FACTS_MEMO.clear()
        _FACTS_MEMO[key] = hit
    return list(hit)


def _extract_facts(text: str, seq: int | None, kinds: Sequence[str]) -> list[Fact]:
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, Fact]] = []
    seen: set[tuple[str, str]] = set()
    for kind in FACT_TYPES:
        if kind not in kinds and kind != "url":
            continue
        for match in _PATTERNS[kind].finditer(text):
            start, end = match.span()
            surface = match.group(0)
            if kind == "command":
                group = "c1" if match.group("c1") is not None else "c2"
                start, end = match.span(group)
                surface = match.group(group).strip()
            if kind == "name":
                start, surface = _trim_name(surface, start)
                end = start + len(surface)
            elif kind != "command":
                surface = surface.strip().rstrip(".,;:!?)]}'\"")
            surface = surface.strip()
            if not surface or _overlaps((start, end), taken):
                continue
            if kind == "path" and not _is_path(surface, start, end, text):
                continue
            if kind == "identifier" and not _is_identifier(surface, start, end, text):
                continue
            if kind == "name" and not _is_name(surface, start, text):
                continue
            bisect.insort(taken, (start, end))
            if kind not in kinds:
                continue
            key = fact_key(kind, surface)
            if len(key) < 2 or (kind, key) in seen:
                continue
            seen.add((kind, key))
            found.append((start, Fact(kind, surface, key, seq)))
    return [fact for _, fact in sorted(found, key=lambda pair: pair[0])]


def facts_from_texts(texts: Iterable[tuple[int, str]], kinds: Sequence[str] = FACT_TYPES) -> list[Fact]:
    """Facts of ``(seq, text)`` pairs in order; a fact repeated later keeps its first seq."""
    seen: set[tuple[str, str]] = set()
    out: list[Fact] = []
    for seq, text in texts:
        for fact in extract_facts(text, seq=seq, kinds=kinds):
            if (fact.kind, fact.key) in seen:
                continue
            seen.add((fact.kind, fact.key))
            out.append(fact)
    return out


_TOKEN = re.compile(r"[a-z0-9]+")


@functools.lru_cache(maxsize=65_536)  # re's own cache holds 512: a run's thousands of facts thrash it
def _boundary_pattern(key: str) -> re.Pattern[str]:
    left = r"(?<![a-z0-9])" if key[:1].isalnum() else ""
    right = r"(?![a-z0-9])" if key[-1:].isalnum() else ""
    return re.compile(left + re.escape(key) + right)


class TextIndex:
    """Which of many texts contain a fact (boundary-aware, case/whitespace-insensitive).

    >>> idx = TextIndex([(1, "Edit src/app.py now"), (2, "nothing here")])
    >>> idx.containing(Fact("path", "src/app.py", "src/app.py"))
    frozenset({1})
    """

    def __init__(self, texts: Iterable[tuple[object, str]]) -> None:
        self.refs: list[object] = []
        self.texts: list[str] = []
        self.squeezed: list[str] = []
        self._postings: dict[str, set[int]] = {}
        for ref, text in texts:
            norm = normalize(text)
            i = len(self.refs)
            self.refs.append(ref)
            self.texts.append(norm)
            squeezed = re.sub(r"(?<=\d) (?=\D)", "", norm)
            self.squeezed.append(squeezed)
            for token in set(_TOKEN.findall(norm)) | set(_TOKEN.findall(squeezed)):
                self._postings.setdefault(token, set()).add(i)
        self._memo: dict[tuple[str, str], frozenset[object]] = {}

    def containing(self, fact: Fact) -> frozenset[object]:
        """Refs of the texts that contain ``fact.key``."""
        memo_key = (fact.kind, fact.key)
        if memo_key in self._memo:
            return self._memo[memo_key]
        tokens = set(_TOKEN.findall(fact.key))
        if tokens:
            postings = [self._postings.get(t, set()) for t in tokens]
            candidates = set.intersection(*postings) if all(postings) else set()
        else:
            candidates = set(range(len(self.refs)))
        pattern = _boundary_pattern(fact.key)
        corpus = self.squeezed if fact.kind in ("number_unit", "money") else self.texts
        hits = frozenset(self.refs[i] for i in sorted(candidates) if pattern.search(corpus[i]))
        self._memo[memo_key] = hits
        return hits
