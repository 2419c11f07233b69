"""``offline``: a deterministic extractive summarizer that needs no model.

It keeps the most informative lines or sentences of the source — decisions, errors, file
paths, commands, numbers, names, TODOs, questions — in their original order under their
``[YYYY-MM-DD HH:MM UTC | role]`` (leaf) or ``[start - end]`` (condensed) headers, fits them into
``request.target_tokens`` (never more than 80 % of the source, so a non-trivial source always
shrinks and the engine's escalation stays on its normal path), lists the file paths it saw,
and ends with ``Expand for details about: …`` naming what it dropped. Same input, same output.

>>> from lcm_lab.engine.protocol import SummaryRequest
>>> src = "\\n\\n".join(f"[2024-03-0{d} 10:00 UTC | user]\\nok thanks\\nThe build of api/server.py failed with error E{d}42."
...                    for d in range(1, 8))
>>> out = OfflineSummarizer().summarize(SummaryRequest(src, "leaf", 0, False, None, 60, 2108)).text
>>> "api/server.py" in out, out.splitlines()[-1].startswith("Expand for details about:")
(True, True)
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from lcm_lab.engine.protocol import SummaryRequest, SummaryResult
from lcm_lab.engine.tokens import estimate_tokens, truncate_to_tokens
from lcm_lab.prompts.render import CONDENSED_HEADER, LEAF_HEADER

OFFLINE_MODEL = "lcm-lab-offline-v1"
FOOTER_PREFIX = "Expand for details about: "
MAX_SHARE_OF_SOURCE = 0.8
SENTENCE_SPLIT_TOKENS = 48  # lines longer than this are split into sentences
MAX_UNIT_TOKENS = 96  # longer sentences (code dumps, logs) are clipped

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
_PATH = re.compile(
    r"(?<![\w/])(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?"
    r"|(?<![\w/.-])[\w.-]+/[\w./-]*[\w-]\.[A-Za-z0-9]{1,6}\b"
    r"|\b[\w-]+\.(?:py|ts|tsx|js|jsx|mjs|json|jsonl|md|go|rs|toml|ya?ml|sh|txt|sql|db|csv|html|css|c|h|cpp|java|rb|lock|ini|cfg|env|log)\b"
)
_URL = re.compile(r"https?://[^\s)>\]]+")
_CODE = re.compile(r"`([^`\n]{2,80})`")
_COMMAND = re.compile(
    r"^(?:\$ |> )|\b(?:git|npm|pnpm|yarn|pip|python3?|make|docker|kubectl|cargo|go|node|curl|ssh|sudo|pytest|uv|brew|apt(?:-get)?|openclaw)\s+[\w-]"
)
_NUMBER = re.compile(r"(?<![\w.])[$€£]?\d[\d,.:/%-]*\b")
_NAME = re.compile(r"(?<=[a-z,;:] )[A-Z][a-zA-Z]+(?: [A-Z][a-zA-Z]+)*")
_ERROR = re.compile(
    r"\b(?:error|errors|exception|traceback|failed|failing|fails|failure|fatal|panic|crash(?:ed|es)?|denied|refused|timeout|timed out|broken|bug|regression|cannot|can't|unable)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:decided|decide|decision|agreed|agree|chose|choose|going with|switch(?:ed)? to|settled on|plan(?:ned)? (?:is|to)|will|we'll|i'll|let's|must|should|need(?:s)? to|require[sd]?|requirement|constraint|prefer(?:red)?|approved|rejected|instead)\b",
    re.IGNORECASE,
)
_TODO = re.compile(r"\b(?:todo|fixme|next step|next steps|remaining|blocked|blocker|follow[- ]up|pending|open question|still need)\b", re.IGNORECASE)
_DONE = re.compile(r"\b(?:done|fixed|merged|deployed|released|shipped|finished|completed|created|added|removed|renamed|updated|installed|passed)\b", re.IGNORECASE)
_FILLER = re.compile(
    r"^(?:ok(?:ay)?|k|thanks?(?: you)?(?: so much)?|thx|sure|great|cool|nice|yes|yep|yeah|no|nope|lol|haha|got it|sounds good|perfect|awesome|hi|hello|hey)[\s.!?,:)]*$",
    re.IGNORECASE,
)
_GREETING = re.compile(r"^(?:hey|hi|hello|thanks|thank you|wow|aw+|haha|lol|oh)\b", re.IGNORECASE)
_MARKER = re.compile(r"^\[(?:Truncated from \d+ tokens|Capped(?: from \d+ tokens)?(?: to ~\d+)?|LCM fallback summary[^\]]*|Truncated for context management)\]$")
_STOPWORDS = frozenset(
    "a an the and or but if then so of to in on at by for with from as is are was were be been it its this that these those "
    "i you he she we they me my your our their his her them us do does did have has had not no yes can could would should "
    "will just about into over also very really there here what which who when where how why all any some more most".split()
)


@dataclass
class _Unit:
    block: int
    order: int
    text: str
    tokens: int
    score: float
    keys: tuple[str, ...]


@dataclass
class _Block:
    header: str | None
    units: list[_Unit] = field(default_factory=list)


@dataclass
class _Parsed:
    blocks: list[_Block]
    inherited_topics: list[str]
    paths: list[str]


class OfflineSummarizer:
    """Extractive, deterministic summaries (see the module docstring for the rules).

    ``max_footer_items`` bounds the ``Expand for details about:`` list; ``list_files`` adds a
    ``Files:`` line naming the paths in the source.
    """

    name = "offline"

    def __init__(self, max_footer_items: int = 8, list_files: bool = True) -> None:
        self.max_footer_items = max_footer_items
        self.list_files = list_files

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        text = summarize_offline(request, self.max_footer_items, self.list_files)
        return SummaryResult(
            text=text,
            model=OFFLINE_MODEL,
            input_tokens=estimate_tokens(request.source_text),
            output_tokens=estimate_tokens(text),
            cost_usd=0.0,
        )


def summarize_offline(request: SummaryRequest, max_footer_items: int = 8, list_files: bool = True) -> str:
    """The offline summary text for ``request`` (pure function)."""
    source = request.source_text.strip()
    if not source:
        return ""
    source_tokens = estimate_tokens(source)
    budget = max(1, min(request.target_tokens, math.floor(source_tokens * MAX_SHARE_OF_SOURCE)))
    parsed = _parse(source, request.kind)
    seen_before = {_norm(line) for line in (request.previous_summary or "").splitlines() if line.strip()}
    units = [u for b in parsed.blocks for u in b.units if _norm(u.text) not in seen_before]

    files_line = ""
    if list_files and parsed.paths:
        files_line = _fit_list("Files: ", parsed.paths, max(8, min(budget // 6, 120)))
    footer_reserve = min(max(12, budget // 5), 60)
    body_budget = budget - footer_reserve - (estimate_tokens(files_line) + 1 if files_line else 0)
    selected = _select(units, parsed.blocks, body_budget)
    dropped = [u for u in units if u.order not in selected]

    body = _compose(parsed.blocks, selected)
    topics = _footer_topics(dropped, parsed.inherited_topics)
    parts = [p for p in (files_line, body) if p]
    used = estimate_tokens("\n".join(parts))
    footer = _fit_list(FOOTER_PREFIX, topics or ["verbatim wording of the messages"], max(8, budget - used - 1), max_footer_items)
    text = "\n".join([*parts, footer])
    if estimate_tokens(text) < source_tokens and estimate_tokens(text) <= max(budget, estimate_tokens(footer) + 1):
        return text
    # Too small a source for a structured summary: keep its opening, still shorter than the source.
    return truncate_to_tokens(source, max(1, min(budget, source_tokens - 1))).rstrip()


# -- parsing ---------------------------------------------------------------------------------


def _parse(source: str, kind: str) -> _Parsed:
    blocks: list[_Block] = [_Block(None)]
    inherited: list[str] = []
    paths: list[str] = []
    order = 0
    for raw_line in source.split("\n"):
        line = raw_line.strip()
        if not line:
            continue
        header = _header(line, kind)
        if header is not None:
            blocks.append(_Block(header))
            continue
        if line.startswith(FOOTER_PREFIX.strip()):
            inherited.extend(t.strip() for t in line[len(FOOTER_PREFIX.strip()) :].split(",") if t.strip())
            continue
        if _MARKER.match(line):
            continue
        if line.startswith("Files: "):
            paths.extend(p.strip() for p in line[7:].split(",") if p.strip())
            continue
        role = _role(blocks[-1].header)
        for piece in _pieces(line):
            unit = _make_unit(len(blocks) - 1, order, piece, role)
            order += 1
            blocks[-1].units.append(unit)
            paths.extend(m.group() for m in _PATH.finditer(piece))
    return _Parsed(blocks, _dedupe(inherited), _dedupe(paths))


def _header(line: str, kind: str) -> str | None:
    match = LEAF_HEADER.fullmatch(line)
    if match:
        parts = [match.group("at")]
        if match.group("role"):
            parts.append(match.group("role"))
        speaker = _speaker_name(match.group("sender"))
        if speaker:
            parts.append(speaker)
        return "[" + " | ".join(parts) + "]"
    if CONDENSED_HEADER.fullmatch(line):
        return line
    return None


def _speaker_name(sender: str | None) -> str | None:
    if not sender or "{" not in sender:
        return None
    try:
        meta = json.loads(sender[sender.index("{") :])
    except json.JSONDecodeError:
        return None
    if isinstance(meta, dict):
        for key in ("name", "label", "displayName", "username", "sender"):
            if isinstance(meta.get(key), str) and meta[key].strip():
                return meta[key].strip()[:40]
    return None


def _role(header: str | None) -> str:
    if header and " | " in header:
        return header.split(" | ")[1].rstrip("]")
    return ""


def _pieces(line: str) -> list[str]:
    if estimate_tokens(line) <= SENTENCE_SPLIT_TOKENS:
        return [line]
    pieces = [p.strip() for p in _SENTENCE.split(line) if p.strip()]
    return [_clip(p) for p in pieces]


def _clip(text: str) -> str:
    if estimate_tokens(text) <= MAX_UNIT_TOKENS:
        return text
    return truncate_to_tokens(text, MAX_UNIT_TOKENS - 1).rstrip() + "…"


def _make_unit(block: int, order: int, text: str, role: str) -> _Unit:
    tokens = estimate_tokens(text) + 1  # + the newline that joins it
    if _FILLER.match(text):
        return _Unit(block, order, text, tokens, 0.05, ())
    paths = [m.group() for m in _PATH.finditer(text)]
    urls = _URL.findall(text)
    code = _CODE.findall(text)
    names = [n for n in _NAME.findall(text) if n.split()[0].lower() not in _STOPWORDS]
    numbers = _NUMBER.findall(text)
    score = 1.0
    score += 3.0 if _ERROR.search(text) else 0.0
    score += 2.5 if _DECISION.search(text) else 0.0
    score += 3.0 if _TODO.search(text) else 0.0
    score += 1.5 if _DONE.search(text) else 0.0
    score += 2.5 * min(2, len(paths)) + 1.0 * min(1, len(urls))
    score += 2.0 if (code or _COMMAND.search(text)) else 0.0
    score += 0.8 * min(3, len(numbers)) + 0.8 * min(3, len(names))
    score += 1.0 if text.endswith("?") else 0.0
    score += 0.5 if role == "user" else 0.0
    if tokens < 5 or _GREETING.match(text):
        score *= 0.5
    keys = tuple(_dedupe([*paths, *urls, *code, *names]))
    if not keys:
        keys = (_topic_phrase(text),) if _topic_phrase(text) else ()
    return _Unit(block, order, text, tokens, score, keys)


def _topic_phrase(text: str) -> str:
    words = [w.strip(".,;:!?\"'()[]") for w in text.split()]
    content = [w for w in words if len(w) > 3 and w.lower() not in _STOPWORDS and w.isascii() and w.isalpha()]
    return " ".join(content[:3]).lower()


# -- selection and output --------------------------------------------------------------------


def _select(units: list[_Unit], blocks: list[_Block], budget: int) -> set[int]:
    """Greedy by information density; a block's header is paid for by its first chosen unit."""
    header_cost = {i: (estimate_tokens(b.header) + 1 if b.header else 0) for i, b in enumerate(blocks)}
    first_in_block = {b.units[0].order for b in blocks if b.units}
    seen: set[str] = set()

    def density(unit: _Unit) -> float:
        bonus = 0.6 if unit.order in first_in_block else 0.0
        return (unit.score + bonus) / (unit.tokens**0.6)

    chosen: set[int] = set()
    opened: set[int] = set()
    spent = 0
    for unit in sorted(units, key=lambda u: (-density(u), u.order)):
        norm = _norm(unit.text)
        if unit.score <= 0.05 or norm in seen:
            continue
        cost = unit.tokens + (header_cost[unit.block] if unit.block not in opened else 0)
        if spent + cost > budget:
            continue
        chosen.add(unit.order)
        opened.add(unit.block)
        seen.add(norm)
        spent += cost
    return chosen


def _compose(blocks: list[_Block], selected: set[int]) -> str:
    lines: list[str] = []
    for block in blocks:
        picked = [u.text for u in block.units if u.order in selected]
        if not picked:
            continue
        if block.header:
            lines.append(block.header)
        lines.extend(picked)
    return "\n".join(lines)


def _footer_topics(dropped: list[_Unit], inherited: list[str]) -> list[str]:
    ranked = sorted((u for u in dropped if u.score > 0.05), key=lambda u: (-u.score, u.order))
    topics: list[str] = []
    for unit in ranked:
        topics.extend(unit.keys[:2])
    return _dedupe([*inherited[:4], *topics, *inherited[4:]])


def _fit_list(prefix: str, items: list[str], max_tokens: int, max_items: int | None = None) -> str:
    chosen = items[: max_items or len(items)]
    while chosen:
        line = prefix + ", ".join(chosen)
        if estimate_tokens(line) <= max_tokens:
            return line
        chosen = chosen[:-1]
    return prefix.rstrip() + " " + truncate_to_tokens(items[0], max(1, max_tokens - estimate_tokens(prefix))) if items else ""


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.lower()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return out
