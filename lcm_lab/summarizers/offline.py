"""``offline``: a deterministic, model-free summarizer that writes statements, not inventories.

Every kept sentence of the source becomes part of an attributed statement — who said, asked,
decided, ran or reported what, and when — with its specifics verbatim::

    On 8 May 2023, Caroline said: I went to a LGBTQ support group yesterday (7 May 2023).
    The user asked: can you rename the column in src/app.py?
    The assistant ran `npm test`.
    A tool reported an error: TypeError: x is undefined.
    A tool showed code mentioning hideUserMessageSelector, SessionSelectorComponent and ui.setFocus.

Speakers are named by the header's sender metadata, or when the source addresses them
(``Hey Caroline!`` in an assistant message names the user), otherwise by role. Chat lines are cut
into sentences and each sentence is ranked by what it carries (errors, decisions, TODOs, paths,
commands, numbers, names, first-person events, when it happened) per token, so greetings and
small talk inside a message are dropped while its event is kept; kept sentences of one line are
joined behind one opener, in source order, until ``request.target_tokens`` (never more than 80 %
of the source, so a non-trivial source always shrinks and the engine's escalation stays on its
normal path). Dates are written the way the conversation's session stamps read (``8 May 2023``):
when the day changes, and on every statement that names a relative time, whose days, months and
years are resolved against the message date (``yesterday (7 May 2023)``, ``last year (2022)``).
Condensed passes keep the best statements of their input summaries with their dates. A short
``Expand for details about:`` footer (at most ``max_footer_items`` topics, only when something
was dropped) says what expansion would recover. Same input, same output.

>>> from lcm_lab.engine.protocol import SummaryRequest
>>> src = "\\n\\n".join(f"[2024-03-0{d} 10:00 UTC | user]\\nok thanks\\nThe build of api/server.py failed with error E{d}42."
...                    for d in range(1, 8))
>>> out = OfflineSummarizer().summarize(SummaryRequest(src, "leaf", 0, False, None, 60, 2108)).text
>>> out.splitlines()[0]
'On 1 March 2024, the user said: The build of api/server.py failed with error E142.'
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta

from lcm_lab.engine.protocol import SummaryRequest, SummaryResult
from lcm_lab.engine.tokens import estimate_tokens, truncate_to_tokens
from lcm_lab.io.redaction import redact
from lcm_lab.metrics.facts import extract_facts
from lcm_lab.prompts.render import CONDENSED_HEADER, LEAF_HEADER

OFFLINE_MODEL = "lcm-lab-offline-v3"
FOOTER_PREFIX = "Expand for details about: "
DEFAULT_FOOTER_ITEMS = 4
MAX_SHARE_OF_SOURCE = 0.8
SENTENCE_SPLIT_TOKENS = 48  # lines longer than this are split into sentences
MAX_UNIT_TOKENS = 48  # longer sentences (logs, dumps) are clipped
DATE_COST = 5  # tokens of an "On 8 May 2023, " prefix
TIME_BONUS = 2.0  # a piece that says when something happened answers "when" questions

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
_BULLET = re.compile(r"^(?:[-*+>]\s+|\d+[.)]\s+|#{1,6}\s+|\[[ xX]\]\s+)+")
_CODE_LINE = re.compile(
    r"^(?:\d+→|import |export |from \S+ import|const |let |var |function |class |def |private |public |protected |"
    r"return\b|if \(|for \(|while \(|else\b|try\b|catch\b|await |async |@\w|</?\w[^>]*>$|[}{\])]|//|/\*|\*)|[;{}(,]\s*$"
)
_ERROR = re.compile(
    r"\b(?:error|errors|exception|traceback|failed|failing|fails|failure|fatal|panic|crash(?:ed|es)?|denied|refused|timeout|timed out|broken|bug|regression|cannot|can't|unable)\b",
    re.IGNORECASE,
)
_DECIDED = re.compile(r"\b(?:decided|decide|agreed|chose|choose|going with|switch(?:ed)? to|settled on|we'll go with|let's go with|approved|rejected)\b", re.IGNORECASE)
_DECISION = re.compile(
    r"\b(?:decided|decision|agreed|chose|going with|switch(?:ed)? to|settled on|plan(?:ned)? (?:is|to)|will|we'll|i'll|let's|must|should|need(?:s)? to|instead|prefer(?:red)?)\b",
    re.IGNORECASE,
)
_TODO = re.compile(r"\b(?:todo|fixme|next step|next steps|remaining|blocked|blocker|follow[- ]up|pending|open question|still need)\b", re.IGNORECASE)
_DONE = re.compile(r"\b(?:done|fixed|merged|deployed|released|shipped|finished|completed|created|added|removed|renamed|updated|installed|passed)\b", re.IGNORECASE)
_FILLER = re.compile(
    r"^(?:ok(?:ay)?|k|null|thanks?(?: you)?(?: so much)?|thx|sure|great|cool|nice|yes|yep|yeah|no|nope|lol|haha|got it|sounds good|perfect|awesome|hi|hello|hey)[\s.!?,:)]*$",
    re.IGNORECASE,
)
_GREETING = re.compile(r"^(?:hey|hi|hello|thanks|thank you|wow|aw+|haha|lol|oh|bye)\b", re.IGNORECASE)
_MARKER = re.compile(r"^\[(?:Truncated from \d+ tokens|Capped(?: from \d+ tokens)?(?: to ~\d+)?|LCM fallback summary[^\]]*|Truncated for context management)\]$")
_POINTER = re.compile(r"^(?:Expand for details about|Files):\s*", re.IGNORECASE)
# "Hey Caroline!", "Thanks, Mel." or "..., Caroline!" name the *other* speaker.
_VOCATIVE = re.compile(
    r"(?:^|[.!?]\s+)(?i:hey|hi|hello|thanks|thank you|wow|yeah|yes|yep|sure|cool|congrats|nice|oh|aw+|haha|bye|great|sorry|good luck|way to go|woohoo)"
    r",?\s+([A-Z][a-z]+)\b|,\s+([A-Z][a-z]+)[!.?]"
)
_FIRST_PERSON_EVENT = re.compile(
    r"\b(?:I|we)(?:'m| am| was| were| went| have| had| got| ran| made| did| started| finished| just| will|'ll|'ve| bought| joined| took| visited| chose| decided| signed| lost| won)\b"
)
_STOPWORDS = frozenset(
    """a an the and or but if then so of to in on at by for with from as is are was were be been it its this that these
    those i you he she we they me my your our their his her them us do does did have has had not no yes can could would
    should will just about into over also very really there here what which who when where how why all any some more
    most thanks thank hey wow great awesome cool nice sure yeah glad good love know think feel much well""".split()
)
_SUBJECTS = {"user": "the user", "assistant": "the assistant", "tool": "a tool", "toolResult": "a tool", "system": "the system"}
_TOOL_ROLES = frozenset({"tool", "toolResult"})


@dataclass
class _Unit:
    order: int
    date: str | None  # ISO day of the source message (or of the inherited statement)
    body: str  # a sentence of the source, or an inherited statement without its date prefix
    score: float
    keys: tuple[str, ...]
    line: int = -1  # source line: kept sentences of one line form one statement
    subject: str = ""  # "Caroline", "the user", "a tool"; empty for inherited statements
    role: str = ""
    timed: bool = False  # names a relative time ("yesterday", "last week"): always dated

    @property
    def text(self) -> str:
        """The unit as a statement on its own (without a date prefix)."""
        return _statement(self.subject, self.role, [self.body]) if self.subject else self.body

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.body) + 1  # + the space or newline that joins it

    @property
    def lead_tokens(self) -> int:
        """Tokens of the statement opener (``Caroline said: ``) paid once per statement."""
        return estimate_tokens(_statement(self.subject, self.role, [""])) if self.subject else 0


class OfflineSummarizer:
    """Statement-writing, deterministic summaries (see the module docstring for the rules)."""

    def __init__(self, max_footer_items: int = DEFAULT_FOOTER_ITEMS) -> None:
        self.max_footer_items = max_footer_items

    @property
    def name(self) -> str:
        """``offline``, and a setting that is not the default in brackets (``offline(max_footer_items=0)``):
        the name a run records says all of the summarizer, so the store can build it again
        (:func:`lcm_lab.summarizers.rebuild_summarizer`)."""
        if self.max_footer_items == DEFAULT_FOOTER_ITEMS:
            return "offline"
        return f"offline(max_footer_items={self.max_footer_items})"

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        text = summarize_offline(request, self.max_footer_items)
        return SummaryResult(text=text, model=OFFLINE_MODEL, input_tokens=estimate_tokens(request.source_text),
                             output_tokens=estimate_tokens(text), cost_usd=0.0)


def summarize_offline(request: SummaryRequest, max_footer_items: int = DEFAULT_FOOTER_ITEMS) -> str:
    """The offline summary text for ``request`` (pure function).

    Secrets are redacted from the source before anything else: the summary clips sentences and
    lists identifiers from the clipped text, and a key cut there is no longer the key
    redaction looks for on the way out."""
    source = redact(request.source_text).strip()
    if not source:
        return ""
    source_tokens = estimate_tokens(source)
    budget = max(1, min(request.target_tokens, math.floor(source_tokens * MAX_SHARE_OF_SOURCE)))
    units, inherited = _parse(source)
    seen_before = {_norm(_strip_subject(_DATE_PREFIX.sub("", s))) for s in re.split(r"\n|(?<=[.!?])\s+", redact(request.previous_summary or "")) if s.strip()}
    units = [u for u in units if _norm(u.body) not in seen_before and _norm(_strip_subject(u.body)) not in seen_before]
    units = [_Unit(i, u.date, u.body, u.score, u.keys, u.line, u.subject, u.role, u.timed) for i, u in enumerate(units)]
    footer_reserve = min(max(10, budget // 8), 40) if max_footer_items else 0
    chosen = _select(units, budget - footer_reserve)
    body = _compose([u for u in units if u.order in chosen])
    while chosen and estimate_tokens(body) > budget - footer_reserve:  # estimates can overshoot
        chosen.discard(min(chosen, key=lambda o: (units[o].score / units[o].tokens**0.6, -o)))
        body = _compose([u for u in units if u.order in chosen])
    dropped = sorted((u for u in units if u.order not in chosen and u.score > 0.1), key=lambda u: (-u.score, u.order))
    topics = _dedupe([*inherited, *(k for u in dropped for k in u.keys[:2])])
    footer = _fit_list(FOOTER_PREFIX, topics[:max_footer_items], budget - estimate_tokens(body) - 1) if topics and max_footer_items else ""
    text = "\n".join(p for p in (body, footer) if p)
    if text and estimate_tokens(text) < source_tokens and estimate_tokens(text) <= budget:
        return text
    # Too small a source for statements: keep its opening, still shorter than the source.
    return truncate_to_tokens(source, max(1, min(budget, source_tokens - 1))).rstrip()


# -- parsing ---------------------------------------------------------------------------------


def _parse(source: str) -> tuple[list[_Unit], list[str]]:
    """Units of a leaf or condensed source, and the topics of inherited footers."""
    lines = source.split("\n")
    speakers = _speakers(lines)
    units: list[_Unit] = []
    inherited: list[str] = []
    role, date = "", None
    line_id = 0
    block_speakers = speakers
    code: list[str] = []

    def flush_code() -> None:
        if code:
            unit = _code_unit(len(units), date, role, code)
            if unit:
                units.append(unit)
            code.clear()

    for raw in lines:
        line = raw.strip()
        leaf = LEAF_HEADER.fullmatch(line)
        condensed = CONDENSED_HEADER.fullmatch(line)
        if leaf or condensed:
            flush_code()
            role = (leaf.group("role") or "") if leaf else ""
            sender = _sender_name(leaf.group("sender")) if leaf else None
            block_speakers = {**speakers, role: sender} if sender else speakers
            date = (leaf.group("at") if leaf else condensed.group("start"))[:10]  # type: ignore[union-attr]
            line_id += 1
            continue
        if not line or _MARKER.match(line):
            continue
        if _POINTER.match(line):
            inherited.extend(t.strip() for t in _POINTER.sub("", line).split(",") if t.strip())
            continue
        if role in _TOOL_ROLES and _CODE_LINE.search(line) or (role and _CODE_LINE.match(line) and not line[:1].isupper()):
            code.append(line)
            continue
        flush_code()
        line_id += 1
        if role:
            for piece in _pieces(_BULLET.sub("", line), split=role not in _TOOL_ROLES):
                units.append(_statement_unit(len(units), date, role, block_speakers, piece, line_id))
            continue
        for piece in _pieces(_BULLET.sub("", line), split=False):
            # condensed input: already statements; a date prefix holds until the next one
            match = _DATE_PREFIX.match(piece)
            date = _iso_day(match.group(1)) if match else date
            text = piece[match.end():] if match else piece
            text = text[:1].upper() + text[1:]
            units.append(_Unit(len(units), date, text, _score(_strip_subject(text), ""), _keys(text), line_id,
                               timed=bool(_RELATIVE_TIME.search(text))))
    flush_code()
    return units, _dedupe(inherited)


def _speakers(lines: list[str]) -> dict[str, str]:
    """Names of the user and the assistant, from how the other one addresses them."""
    votes: dict[str, Counter[str]] = {"user": Counter(), "assistant": Counter()}
    role = ""
    for line in lines:
        header = LEAF_HEADER.fullmatch(line.strip())
        if header:
            role = header.group("role") or ""
            continue
        other = {"user": "assistant", "assistant": "user"}.get(role)
        if other:
            for match in _VOCATIVE.finditer(line):
                votes[other][match.group(1) or match.group(2)] += 1
    names: dict[str, str] = {}
    for role_name, counter in votes.items():
        ranked = [(n, c) for n, c in counter.most_common(2) if n.lower() not in _SUBJECTS]
        if ranked and ranked[0][1] >= 2 and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
            names[role_name] = ranked[0][0]
    if len(set(names.values())) < len(names):
        return {}  # both roles got the same name: trust neither
    return names


def _sender_name(sender: str | None) -> str | None:
    """The display name in a header's sender metadata (``| {"name": "Ada"}``), if any."""
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


def _pieces(line: str, split: bool = True) -> list[str]:
    """Sentences of a chat line (each is ranked on its own), or the whole line; overlong pieces are clipped."""
    pieces = [p.strip() for p in _SENTENCE.split(line) if p.strip()] if split or estimate_tokens(line) > SENTENCE_SPLIT_TOKENS else [line]
    return [p if estimate_tokens(p) <= MAX_UNIT_TOKENS else truncate_to_tokens(p, MAX_UNIT_TOKENS - 1).rstrip() + "…" for p in pieces]


def _keys(text: str) -> tuple[str, ...]:
    return tuple(_dedupe([f.text for f in extract_facts(text) if f.kind != "command"]))


def _score(text: str, role: str, speakers: frozenset[str] = frozenset()) -> float:
    """Information of a piece: errors, decisions, TODOs, facts (speaker names excluded), content
    words, first-person events; greetings and pieces with under two content words score ~0."""
    if _FILLER.match(text):
        return 0.0
    words = [w.strip(".,;:!?\"'()[]").lower() for w in text.split()]
    content = [w for w in words if len(w) > 3 and w not in _STOPWORDS and w.capitalize() not in speakers]
    if len(content) < 2:
        return 0.05
    facts = [f for f in extract_facts(text) if f.text not in speakers]
    score = 1.0 + 0.3 * min(5, len(content))
    score += 1.5 if _FIRST_PERSON_EVENT.search(text) else 0.0
    score += 3.0 if _ERROR.search(text) else 0.0
    score += 2.5 if _DECISION.search(text) else 0.0
    score += 3.0 if _TODO.search(text) else 0.0
    score += 1.5 if _DONE.search(text) else 0.0
    score += 2.0 * min(3, sum(f.kind in ("path", "url", "command", "error", "identifier", "hash") for f in facts))
    score += 1.2 * min(3, sum(f.kind in ("name", "datetime", "number_unit", "money", "version") for f in facts))
    score += 1.0 if text.endswith("?") else 0.0
    score += {"user": 1.5, "assistant": 0.8}.get(role, 0.0)
    if estimate_tokens(text) < 5 or _GREETING.match(text):
        score *= 0.4
    return score * (0.7 if role in _TOOL_ROLES else 1.0)


def _statement(subject: str, role: str, pieces: list[str]) -> str:
    """``Caroline said: …``, ``The user asked: …?``, ``The assistant ran `cmd`.``: who did what."""
    joined = " ".join(p for p in pieces if p)
    if len(pieces) == 1 and pieces[0].startswith("$ "):
        return f"{subject} ran `{pieces[0][2:].strip()}`."
    if role in _TOOL_ROLES:
        return f"{subject} reported{' an error' if _ERROR.search(joined) else ''}: {joined}"
    if pieces and all(p.endswith("?") for p in pieces if p) and any(pieces):
        return f"{subject} asked: {joined}"
    if _TODO.search(joined):
        return f"{subject} noted as still open: {joined}"
    if _DECIDED.search(joined):
        return f"{subject} decided: {joined}"
    return f"{subject} said: {joined}"


def _statement_unit(order: int, date: str | None, role: str, speakers: dict[str, str], piece: str, line: int) -> _Unit:
    subject = speakers.get(role) or _SUBJECTS.get(role, "someone")
    names = frozenset(speakers.values())
    timed = bool(_RELATIVE_TIME.search(piece))
    body = _resolve_times(piece, date) if timed and role not in _TOOL_ROLES else piece
    score = _score(piece, role, names) + (TIME_BONUS if timed and role not in _TOOL_ROLES else 0.0)
    return _Unit(order, date, body, score, tuple(k for k in _keys(piece) if k not in names), line, subject, role,
                 timed and role not in _TOOL_ROLES)


def _code_unit(order: int, date: str | None, role: str, lines: list[str]) -> _Unit | None:
    names = _dedupe([f.text for f in extract_facts("\n".join(lines), kinds=("path", "identifier", "error", "url"))])[:4]
    if not names:
        return None
    listed = ", ".join(f"`{n}`" for n in names[:-1]) + (f" and `{names[-1]}`" if len(names) > 1 else f"`{names[0]}`")
    subject = _SUBJECTS.get(role, "someone") if role in _TOOL_ROLES else (_SUBJECTS.get(role) or "someone")
    text = f"{subject} showed code with {listed}."
    return _Unit(order, date, text, 1.0 + 0.6 * len(names), tuple(names), -2 - order)


# -- dates -----------------------------------------------------------------------------------

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December")
_WEEKDAYS = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_WEEKDAY = r"(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?"
_RELATIVE_TIME = re.compile(
    rf"\b(?:yesterday|tomorrow|today|tonight|this (?:morning|afternoon|evening|week(?:end)?|month|year)"
    rf"|(?:last|next|past) (?:night|week(?:end)?|month|year|{_WEEKDAY})"
    rf"|(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten) (?:days?|weeks?|weekends?|months?|years?) ago"
    rf"|a (?:few|couple(?: of)?) (?:days|weeks|months|years) ago)\b",
    re.IGNORECASE,
)
_RESOLVABLE = re.compile(
    rf"\b(?P<word>yesterday|tomorrow)\b"
    rf"|\b(?P<dir>last|next) (?P<unit>month|year|{_WEEKDAY})(?![\w-])"
    rf"|\b(?P<n>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten) (?P<ago>days?|weeks?|months?|years?) ago\b",
    re.IGNORECASE,
)
_DATE_PREFIX = re.compile(r"^On (\d{4}-\d{2}-\d{2}|\d{1,2} (?:" + "|".join(_MONTHS) + r") \d{4}), ")


def _human_day(iso: str) -> str:
    """``2023-05-08`` → ``8 May 2023`` (the way the conversation's own session stamps read)."""
    try:
        day = date.fromisoformat(iso)
    except ValueError:
        return iso
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


def _iso_day(text: str) -> str:
    """The ISO day of a date prefix in either spelling."""
    parts = text.split()
    if len(parts) == 3 and parts[1] in _MONTHS:
        return f"{int(parts[2]):04d}-{_MONTHS.index(parts[1]) + 1:02d}-{int(parts[0]):02d}"
    return text


def _shift_month(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _resolve_times(text: str, iso: str | None) -> str:
    """Relative days, months and years resolved against the message date and written next to
    the words (``yesterday (7 May 2023)``, ``last year (2022)``); week-sized spans keep the
    statement's own date."""
    if not iso:
        return text
    try:
        day = date.fromisoformat(iso)
    except ValueError:
        return text

    def resolve(match: re.Match[str]) -> str:
        word, unit = (match.group("word") or "").lower(), (match.group("unit") or "").lower()
        if word:
            return f"{match.group(0)} ({_human_day(str(day + timedelta(days=-1 if word == 'yesterday' else 1)))})"
        if unit:
            sign = -1 if match.group("dir").lower() == "last" else 1
            if unit == "year":
                return f"{match.group(0)} ({day.year + sign})"
            if unit == "month":
                month = _shift_month(day, sign)
                return f"{match.group(0)} ({_MONTHS[month.month - 1]} {month.year})"
            target = _WEEKDAYS[unit[:3]]
            delta = (day.weekday() - target) % 7 or 7
            return f"{match.group(0)} ({_human_day(str(day + timedelta(days=-delta if sign < 0 else (7 - delta) or 7)))})"
        n = int(match.group("n")) if match.group("n").isdigit() else _NUMBERS[match.group("n").lower()]
        ago = match.group("ago").lower().rstrip("s")
        if ago == "year":
            return f"{match.group(0)} ({day.year - n})"
        if ago == "month":
            month = _shift_month(day, -n)
            return f"{match.group(0)} ({_MONTHS[month.month - 1]} {month.year})"
        return f"{match.group(0)} (around {_human_day(str(day - timedelta(days=n * (7 if ago == 'week' else 1))))})"

    return _RESOLVABLE.sub(resolve, text)


def dated_statement(text: str, iso_day: str | None, speaker: str) -> str:
    """One message stated the way this summarizer states it: its day, who said it, relative times
    resolved. The QA ceiling (:mod:`lcm_lab.metrics.verdicts`) writes gold evidence this way, so
    no date-writing summary can hold more of it than the ceiling does.

    >>> dated_statement("I went there yesterday.", "2023-05-08", "Caroline")
    'On 8 May 2023, Caroline said: I went there yesterday (7 May 2023).'
    """
    body = _resolve_times(text, iso_day)
    return f"On {_human_day(iso_day)}, {speaker} said: {body}" if iso_day else f"{speaker} said: {body}"


def _strip_subject(text: str) -> str:
    return re.sub(r"^[\w ]+? (?:said|asked|decided|reported(?: an error)?|noted as still open): ", "", text)


# -- selection and output --------------------------------------------------------------------


def _select(units: list[_Unit], budget: int) -> set[int]:
    """Greedy by information per token, each piece once; a statement opener and a date cost a
    few tokens the first time (a timed piece always pays for its date)."""
    chosen: set[int] = set()
    dates: set[str | None] = set()
    lines: set[int] = set()
    seen: set[str] = set()
    spent = 0
    for unit in sorted(units, key=lambda u: (-u.score / u.tokens**0.6, u.order)):
        norm = _norm(_strip_subject(unit.body))
        if unit.score <= 0.1 or norm in seen:
            continue
        cost = unit.tokens + (unit.lead_tokens if unit.line not in lines else 0)
        cost += DATE_COST if unit.date and (unit.date not in dates or unit.timed) else 0
        if spent + cost > budget:
            continue
        chosen.add(unit.order)
        dates.add(unit.date)
        lines.add(unit.line)
        seen.add(norm)
        spent += cost
    return chosen


def _compose(units: list[_Unit]) -> str:
    """One line per statement: kept sentences of a source line joined behind their opener; the
    date written when it changes and on every statement that names a relative time."""
    groups: list[list[_Unit]] = []
    for unit in units:
        if groups and unit.subject and groups[-1][0].line == unit.line and groups[-1][0].subject:
            groups[-1].append(unit)
        else:
            groups.append([unit])
    lines: list[str] = []
    last_date: str | None = None
    for group in groups:
        head = group[0]
        text = _statement(head.subject, head.role, [u.body for u in group]) if head.subject else head.body
        text = text[:1].upper() + text[1:]
        if head.date and (head.date != last_date or any(u.timed for u in group)):
            opener = text.split(" ", 1)[0]
            text = f"On {_human_day(head.date)}, {opener.lower() if opener in ('A', 'The') else opener}{text[len(opener):]}"
            last_date = head.date
        lines.append(text)
    return "\n".join(lines)


def _fit_list(prefix: str, items: list[str], max_tokens: int) -> str:
    for i in range(len(items), 0, -1):
        line = prefix + ", ".join(items[:i])
        if estimate_tokens(line) <= max_tokens:
            return line
    return ""


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item and item.lower() not in seen:
            seen.add(item.lower())
            out.append(item)
    return out
