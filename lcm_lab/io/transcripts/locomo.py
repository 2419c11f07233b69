"""LoCoMo (snap-research/LoCoMo ``locomo10.json``) → conversations with QA items.

Each sample becomes one conversation converted the way the reference runs converted it
(``tests/fixtures/reference-runs/README.upstream.md``, section 6), so a replay of a LoCoMo sample loaded here matches the traces:

* ``speaker_a`` → role ``user``, ``speaker_b`` → role ``assistant``;
* timestamps: the session's ``date_time`` (``"1:56 pm on 8 May, 2023"``) read as UTC, plus one
  minute per dialogue line within the session;
* text, plus `` [shares image: <blip_caption>]`` when the line has a caption;
  content ``[{"type": "text", "text": ...}]``;
* assistant messages carry the pi assistant envelope with ``api/provider/model = "locomo"``,
  zero usage and ``stopReason: "stop"``;
* ``session_id`` = ``uuid5(NAMESPACE_URL, "locomo:<sample_id>")``; ``InputEntry.line`` is the
  line the message occupies in the equivalent pi JSONL (header = line 1, first dialogue line =
  2), ``InputEntry.entry_id`` the dialogue id (``D1:3``) that QA evidence refers to.

QA items keep their evidence ids (split where the dataset packs several into one string) and
categories (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial; category 5
items carry ``adversarial_answer``).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.io.model import LoadedConversation, LoadIssue, QAItem
from lcm_lab.io.transcripts.base import LOCOMO_JSON, TranscriptFormatError, TranscriptRead
from lcm_lab.io.transcripts.jsonl import parse_json_bytes, read_all_bytes

_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_ID = re.compile(r"D\d+:\d+")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"
_SHOWN_MISSING = 5  # missing evidence ids named in the one warning (all are counted)
_DIALOGUE_KEYS = frozenset({"speaker", "dia_id", "text", "blip_caption"})


def parse_locomo_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → ``datetime(2023, 5, 8, 13, 56, tzinfo=UTC)``."""
    return datetime.strptime(text.strip(), _DATE_FORMAT).replace(tzinfo=UTC)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _epoch_ms(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


def _assistant(text: str, epoch: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "locomo",
        "provider": "locomo",
        "model": "locomo",
        "usage": {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": "stop",
        "timestamp": epoch,
    }


def locomo_session_id(sample_id: str) -> str:
    """The session id the reference converter gave a LoCoMo sample."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"locomo:{sample_id}"))


def _answer_text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _qa_items(sample_id: str, qa: object, where: str, issues: list[LoadIssue]) -> tuple[QAItem, ...]:
    if not isinstance(qa, list):
        issues.append(LoadIssue(where, None, f"sample {sample_id}: 'qa' is not a list; no QA items loaded"))
        return ()
    items: list[QAItem] = []
    for index, item in enumerate(qa):
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            issues.append(LoadIssue(where, None, f"sample {sample_id}: QA item {index} has no question; skipped"))
            continue
        evidence: list[str] = []
        raw_evidence = item.get("evidence") if isinstance(item.get("evidence"), list) else []
        for ref in raw_evidence:
            parts = [p for p in re.split(r"[;,\s]+", str(ref)) if p]
            for part in parts:
                if not _EVIDENCE_ID.fullmatch(part):
                    issues.append(
                        LoadIssue(where, None, f"sample {sample_id}: QA item {index} evidence {part!r} is not a dialogue id; kept as is", skipped=False)
                    )
                evidence.append(part)
        category = item.get("category")
        items.append(
            QAItem(
                qa_id=f"{sample_id}:q{index}",
                question=item["question"],
                answer=_answer_text(item.get("answer")),
                category=category if isinstance(category, int) and not isinstance(category, bool) else None,
                evidence=tuple(evidence),
                adversarial_answer=_answer_text(item.get("adversarial_answer")),
            )
        )
    return tuple(items)


def _convert_sample(sample: Mapping[str, Any], index: int, where: str, issues: list[LoadIssue]) -> LoadedConversation:
    sample_id = str(sample.get("sample_id", f"sample-{index}"))
    dialogue = sample.get("conversation")
    if not isinstance(dialogue, dict):
        raise TranscriptFormatError(f"{where}: sample {index} ({sample_id}) has no 'conversation' object")
    speaker_a, speaker_b = dialogue.get("speaker_a"), dialogue.get("speaker_b")
    roles = {speaker_a: "user", speaker_b: "assistant"}
    numbers = sorted(int(m.group(1)) for key in dialogue if (m := _SESSION_KEY.fullmatch(key)))
    entries: list[InputEntry] = []
    extras: dict[str, dict[str, Any]] = {}
    session_dates: dict[int, str] = {}
    line = 1  # the header's line in the equivalent JSONL
    first_moment: datetime | None = None
    for number in numbers:
        turns = dialogue.get(f"session_{number}")
        date_text = dialogue.get(f"session_{number}_date_time")
        if not isinstance(turns, list):
            issues.append(LoadIssue(where, None, f"sample {sample_id}: session_{number} is not a list; skipped"))
            continue
        if not isinstance(date_text, str):
            raise TranscriptFormatError(f"{where}: sample {sample_id} session {number} has no date_time")
        try:
            start = parse_locomo_date(date_text)
        except ValueError:
            raise TranscriptFormatError(
                f"{where}: sample {sample_id} session {number} date_time {date_text!r} is not like '1:56 pm on 8 May, 2023'"
            ) from None
        session_dates[number] = date_text
        first_moment = first_moment or start
        for position, turn in enumerate(turns):
            if not isinstance(turn, dict) or not isinstance(turn.get("text"), str):
                issues.append(LoadIssue(where, None, f"sample {sample_id}: session {number} line {position} has no text; skipped"))
                continue
            line += 1
            role = roles.get(turn.get("speaker"))
            if role is None:
                issues.append(
                    LoadIssue(where, None, f"sample {sample_id}: speaker {turn.get('speaker')!r} is neither speaker_a nor speaker_b; treated as user", skipped=False)
                )
                role = "user"
            text = turn["text"]
            caption = turn.get("blip_caption")
            if isinstance(caption, str) and caption:
                text = f"{text} [shares image: {caption}]"
            moment = start + timedelta(minutes=position)
            epoch = _epoch_ms(moment)
            if role == "user":
                message: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": epoch}
            else:
                message = _assistant(text, epoch)
            dia_id = turn.get("dia_id") if isinstance(turn.get("dia_id"), str) else None
            entries.append(InputEntry(line=line, type="message", message=message, entry_id=dia_id, timestamp=_iso(moment)))
            extra = {k: v for k, v in turn.items() if k not in _DIALOGUE_KEYS}
            if extra and dia_id:
                extras[dia_id] = extra
    conversation = Conversation(
        session_id=locomo_session_id(sample_id),
        entries=tuple(entries),
        title=f"LoCoMo {sample_id}: {speaker_a} & {speaker_b}",
        source=where,
        meta={
            "format": LOCOMO_JSON,
            "sample_id": sample_id,
            "sample_index": index,
            "speaker_a": speaker_a,
            "speaker_b": speaker_b,
            "header_timestamp": _iso(first_moment) if first_moment else None,
            "last_line": line,
        },
    )
    return LoadedConversation(
        conversation=conversation,
        qa_items=_qa_items(sample_id, sample.get("qa"), where, issues),
        meta={
            "session_dates": session_dates,
            "dialogue_extras": extras,
            "session_summary": sample.get("session_summary"),
            "event_summary": sample.get("event_summary"),
            "observation": sample.get("observation"),
        },
    )


def _missing_evidence(conversations: tuple[LoadedConversation, ...]) -> list[str]:
    """``id in sample`` for every well-formed evidence id that names no dialogue line of its sample
    (the real locomo10.json has three, such as ``D30:05``); malformed ids are said where read."""
    missing = []
    for item in conversations:
        known = {entry.entry_id for entry in item.conversation.entries}
        sample_id = item.conversation.meta.get("sample_id")
        missing += [f"{ref} in {sample_id}" for qa in item.qa_items for ref in qa.evidence
                    if _EVIDENCE_ID.fullmatch(ref) and ref not in known]  # fmt: skip
    return missing


def looks_like_locomo(value: object) -> bool:
    """True for a LoCoMo document: a list of samples (or one sample) with a conversation."""
    samples = value if isinstance(value, list) else [value]
    return bool(samples) and all(
        isinstance(s, dict) and isinstance(s.get("conversation"), dict) and "speaker_a" in s["conversation"]
        for s in samples
    )


def read_locomo_json(path: str | Path) -> TranscriptRead:
    """Read a LoCoMo JSON file (the whole list of samples, or a single sample object)."""
    display = str(path)
    try:
        document = parse_json_bytes(read_all_bytes(path))  # one JSON document
    except ValueError as error:
        raise TranscriptFormatError(f"{display}: not valid JSON ({error}); expected LoCoMo JSON") from None
    if not looks_like_locomo(document):
        raise TranscriptFormatError(
            f"{display}: JSON but not LoCoMo (expected a list of samples with 'conversation' holding "
            "speaker_a, speaker_b and session_<n> lists)"
        )
    samples = document if isinstance(document, list) else [document]
    issues: list[LoadIssue] = []
    conversations = tuple(_convert_sample(sample, index, display, issues) for index, sample in enumerate(samples))
    missing = _missing_evidence(conversations)
    if missing:
        shown = ", ".join(missing[:_SHOWN_MISSING]) + (", …" if len(missing) > _SHOWN_MISSING else "")
        issues.append(LoadIssue(display, None, f"{len(missing)} QA evidence id(s) name no dialogue line of their "
                                f"sample ({shown}); kept as is, so no message supports them", skipped=False))
    return TranscriptRead(
        path=display,
        kind=LOCOMO_JSON,
        conversations=conversations,
        issues=tuple(issues),
        skipped_lines=sum(1 for issue in issues if issue.skipped),
        version=None,
    )
