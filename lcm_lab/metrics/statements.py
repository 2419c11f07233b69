"""Statements versus pointers: which parts of a summary *state* something.

A fact counts as retained by a summary only when the summary states it: it occurs in a sentence
that relates it to something (who did what with it), not in a pointer line (``Expand for details
about: …``, ``Files: …``) or a bare list of names. Pointers are recoverable by expansion but do
not tell the model anything, and a list of every name, number and path of the source would
otherwise score as a perfect summary.

The split is deterministic and deliberately simple:

* a line opening with a label and a colon that introduces a list (``Files:``, ``Topics:``,
  ``Expand for details about:``, ``Entities:``, …) is a **pointer** line;
* every other line is cut into sentences; a sentence is a **statement** when it has at least two
  words, relates them (a function word such as ``the``, ``to``, ``was``, ``after``, or a verb-like
  word: ``-ed``/``-ing`` forms and common verbs, so telegraphic bullets like ``Fixed src/app.py``
  count) and is not list-shaped (four or more comma/semicolon items of at most three words on
  average, or three or more items without a single function word);
* everything else (headers, bare lists, lone commands, code) is **other**: neither stated nor a
  pointer.

>>> split_statements("Alice moved src/app.py to lib/ after the tests failed.\\nExpand for details about: Bob, 2023").stated
'Alice moved src/app.py to lib/ after the tests failed.'
>>> split_statements("Alice, Bob, src/app.py, 3 May 2023, Paris").stated
''
"""

from __future__ import annotations

import re
from typing import NamedTuple

POINTER_LABELS = (
    "expand for details about",
    "expand for details",
    "details about",
    "files",
    "paths",
    "topics",
    "keywords",
    "entities",
    "mentioned",
    "names",
    "people",
    "dates",
    "tags",
    "see also",
    "references",
)
_POINTER = re.compile(r"^\s*[-*]?\s*(?:" + "|".join(re.escape(p) for p in POINTER_LABELS) + r")\s*:", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\s*;\s+(?=[A-Z])")
_WORD = re.compile(r"[A-Za-z']+")
FUNCTION_WORDS = frozenset(
    """a an the to of in on at for with by from into onto about after before during since until
    and but or so because then than that which who whom whose when where while as if
    is was were are be been being am has have had do does did will would can could should may
    might must shall it its he she they we i you him her them us his their our my your me this
    these those there here not no""".split()
)
_VERBISH = re.compile(r"^[a-z]{2,}(?:ed|ing)$|^(?:" + "|".join(
    """use uses run runs ran add adds fix fixes set sets made make makes said says told tells asked asks went
    goes got gets gave gives took takes wrote writes read reads saw sees met meets found finds left leaves
    chose chooses wants needs plans keeps kept built builds shows shown""".split()
) + r")$")


class StatementSplit(NamedTuple):
    """A text cut into what it states, what it only points to, and the rest."""

    stated: str
    pointers: str
    other: str


def is_pointer_line(line: str) -> bool:
    """A labelled list line such as ``Files: a.py, b.py`` or ``Expand for details about: …``."""
    return _POINTER.match(line) is not None


def is_statement(sentence: str) -> bool:
    """Whether a sentence states something (function words, not list-shaped).

    >>> is_statement("The user asked to rename the column."), is_statement("Caroline, Melanie, the parade, 2023")
    (True, False)
    """
    words = [w.lower() for w in _WORD.findall(sentence)]
    if len(words) < 2:
        return False
    function = sum(1 for w in words if w in FUNCTION_WORDS)
    if function == 0 and not any(_VERBISH.match(w) for w in words):
        return False
    items = [i for i in re.split(r"[,;|]", sentence) if i.strip()]
    if len(items) >= 3 and function == 0:
        return False
    return not (len(items) >= 4 and sum(len(_WORD.findall(i)) for i in items) / len(items) <= 3)


def split_statements(text: str) -> StatementSplit:
    """Cut ``text`` into stated sentences, pointer lines and other text (each newline-joined)."""
    stated: list[str] = []
    pointers: list[str] = []
    other: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if is_pointer_line(line):
            pointers.append(line.strip())
            continue
        for sentence in _SENTENCE_END.split(line.strip()):
            if sentence.strip():
                (stated if is_statement(sentence) else other).append(sentence.strip())
    return StatementSplit("\n".join(stated), "\n".join(pointers), "\n".join(other))
