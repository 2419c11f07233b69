"""Untrusted text (session ids, titles, labels from a file) made inert inside markdown.

Jupyter renders ``text/markdown`` with inline HTML, so text placed in markdown is HTML-escaped
and its markdown punctuation backslash-escaped: it shows as itself, never as a link, an image,
emphasis, a table cell boundary or a tag. (HTML the lab builds escapes with ``html.escape``.)
"""

from __future__ import annotations

import html
import re

# CommonMark lets a backslash escape any ASCII punctuation; these are the ones that open or close
# markup inside a line (code, emphasis, links and images, table cells, strikethrough). ``<`` and
# ``&`` are HTML-escaped instead; line-start markers (``#``, ``-``, ``>``) cannot occur because
# line breaks are flattened and the text is never placed at the start of a line by itself.
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]|~])")


def markdown_text(value: object) -> str:
    """``value`` as literal text inside markdown (also inside a table cell); line breaks become spaces.

    >>> markdown_text("<img src=x onerror=alert(1)>")
    '&lt;img src=x onerror=alert(1)&gt;'
    >>> markdown_text("a|b *c* [d](e)")
    'a\\\\|b \\\\*c\\\\* \\\\[d\\\\](e)'
    """
    flat = " ".join(str(value).splitlines())
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", html.escape(flat, quote=False))
