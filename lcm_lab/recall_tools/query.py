"""Full-text queries as ``lcm_grep`` takes them (an FTS5 subset), translated for DuckDB's BM25.

Supported: bare terms (all required, as FTS5's implicit AND), an explicit ``AND``, and quoted
phrases (the words in order, only punctuation or spaces between them). FTS5 operators the
lab cannot reproduce exactly (``OR``, ``NOT``, ``NEAR``, prefix ``*``, ``^``, column filters)
are refused with an error saying to use ``mode="regex"`` — never silently reinterpreted.

>>> q = parse_full_text('deploy "blue green" AND rollback')
>>> q.terms, q.phrases
(('blue', 'green', 'deploy', 'rollback'), (('blue', 'green'),))
>>> print(q.phrase_patterns[0])
(?i)(?:^|[^\\p{L}\\p{N}])blue[^\\p{L}\\p{N}]+green(?:[^\\p{L}\\p{N}]|$)
"""

from __future__ import annotations

import re
from typing import NamedTuple

from lcm_lab.errors import OptionError

_WORD = re.compile(r"[^\W_]+")
_QUOTED = re.compile(r'"([^"]*)"')
_REFUSED = re.compile(r"(\bOR\b|\bNOT\b|\bNEAR\b|[*^{}:()+-])")


class FullTextQueryError(OptionError):
    """A full-text query uses FTS5 syntax the lab does not reproduce."""


class FullTextQuery(NamedTuple):
    terms: tuple[str, ...]
    phrases: tuple[tuple[str, ...], ...]

    @property
    def text(self) -> str:
        """The terms as one string for ``match_bm25``."""
        return " ".join(self.terms)

    @property
    def phrase_patterns(self) -> tuple[str, ...]:
        """One RE2 pattern per phrase of two or more words."""
        return tuple(
            r"(?i)(?:^|[^\p{L}\p{N}])" + r"[^\p{L}\p{N}]+".join(re.escape(w) for w in phrase) + r"(?:[^\p{L}\p{N}]|$)"
            for phrase in self.phrases
            if len(phrase) > 1
        )


def terms_of(text: str) -> list[str]:
    """Lower-cased runs of letters and digits of ``text`` (FTS5 unicode61 tokens).

    >>> terms_of("Where's the DB-host? db01 テスト")
    ['where', 's', 'the', 'db', 'host', 'db01', 'テスト']
    """
    return [w.lower() for w in _WORD.findall(text)]


def parse_full_text(pattern: str) -> FullTextQuery:
    """Parse a ``full_text`` pattern; raises :class:`FullTextQueryError` on unsupported syntax."""
    if pattern.count('"') % 2:
        raise FullTextQueryError(f"unbalanced quote in full-text query {pattern!r}")
    phrases = [tuple(terms_of(p)) for p in _QUOTED.findall(pattern)]
    rest = _QUOTED.sub(" ", pattern)
    refused = _REFUSED.search(rest)
    if refused:
        raise FullTextQueryError(
            f"full-text query {pattern!r} uses {refused.group(0)!r}, FTS5 syntax the lab does not reproduce; "
            "use mode='regex' for alternation, wildcards or anchors"
        )
    bare = [w for w in terms_of(rest) if w != "and" or "AND" not in rest]
    terms: list[str] = []
    for phrase in phrases:
        terms.extend(phrase)
    terms.extend(bare)
    if not terms:
        raise FullTextQueryError(f"full-text query {pattern!r} has no words to search for")
    return FullTextQuery(tuple(terms), tuple(p for p in phrases if p))
