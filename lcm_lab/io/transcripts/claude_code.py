"""Claude Code session JSONL (``~/.claude/projects/<cwd>/<sessionId>.jsonl``) → conversations.

Claude Code logs Anthropic Messages API objects, one streamed content block per line. The lab
engine ingests pi-shaped runtime messages, so each conversation is mapped as follows
(documented here because it is a choice, not a fact of either format):

===========================================  ================================================
Claude Code                                  runtime message (pi shape)
===========================================  ================================================
``assistant`` lines sharing ``message.id``   one ``{"role":"assistant", "content":[...],
                                             "api":"anthropic-messages", "provider":"anthropic",
                                             "model", "responseId": message.id, "usage",
                                             "stopReason", "timestamp"}`` at the first line's
                                             position (blocks in line order; usage and stop
                                             reason from the last line that has them)
``text`` block                               ``{"type":"text","text"}``
``thinking`` block                           ``{"type":"thinking","thinking","thinkingSignature"}``
``redacted_thinking`` block                  ``{"type":"thinking","thinking":"","thinkingSignature",
                                             "redacted":true}``
``tool_use`` block                           ``{"type":"toolCall","id","name","arguments"}``
``image`` block with base64 source           ``{"type":"image","data","mimeType"}``
other blocks                                 kept verbatim
``user`` line, ``tool_result`` blocks        one ``{"role":"toolResult","toolCallId","toolName",
                                             "content":[...],"isError","timestamp"}`` per block,
                                             ``toolName`` looked up from the matching tool_use
``user`` line, other content                 ``{"role":"user","content","timestamp"}`` (string
                                             content stays a string)
``system`` / other typed lines with a uuid   non-message entries (``type`` kept)
``summary`` lines                            :class:`RecordedEvent` ``kind="summary"``
``system`` ``compact_boundary``              :class:`RecordedEvent` ``kind="compact_boundary"``
                                             (``tokens_before`` = ``compactMetadata.preTokens``,
                                             summary = the following ``isCompactSummary`` text)
===========================================  ================================================

Usage maps ``input_tokens→input``, ``output_tokens→output``, ``cache_read_input_tokens→
cacheRead``, ``cache_creation_input_tokens→cacheWrite`` (cost zero: not logged). Stop reasons
map ``end_turn|stop_sequence→stop``, ``tool_use→toolUse``, ``max_tokens→length``, anything
else verbatim; without one, ``toolUse`` if the message calls a tool else ``stop``.

The main chain (``isSidechain`` false) is one conversation; every sidechain (sub-agent run) is
its own conversation with ``meta["sidechain"] = True`` and its parent session id. A file whose
main lines form more than one tree with messages (two sessions appended to one file) loads each
further tree as its own conversation ``<sessionId>:chain-<n>`` (``meta["main_chain"]``), with a
warning naming the line it starts on; the tree holding the last message stays the main one. Each
conversation follows the uuid/parentUuid tree from its last line (``logicalParentUuid``
bridges compact boundaries). Every source line is kept verbatim in
``LoadedConversation.meta["raw_entries"]`` (line → object) and
``Conversation.meta["source_lines"]`` maps each entry's line to all lines merged into it.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.errors import InputFileError
from lcm_lab.io.model import LoadedConversation, LoadIssue, RecordedEvent
from lcm_lab.io.transcripts.base import CLAUDE_CODE_JSONL, TranscriptFormatError, TranscriptRead
from lcm_lab.io.transcripts.jsonl import JsonlReader, RawLine
from lcm_lab.io.transcripts.pi import clean_id
from lcm_lab.io.transcripts.reread import KeptLines, LazyEntries, LineSource
from lcm_lab.io.transcripts.tree import off_branch_issue, select_leaf_path

_STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "toolUse", "max_tokens": "length"}


@dataclass(slots=True)
class _Line:
    """One line with a uuid. ``raw`` is the whole line, or when the reader re-reads lines
    (:class:`_LineBytes`) only the envelope keys structure needs (``_ENVELOPE``)."""

    line: int
    type: str
    entry_id: str | None
    parent_id: str | None
    sidechain: bool
    raw: dict[str, Any]


# Keys of a line that grouping and conversation metadata read; a re-read line keeps only these.
_ENVELOPE = ("agentId", "logicalParentUuid", "cwd", "version", "gitBranch")


@dataclass(slots=True)
class _Draft:
    """A runtime message under construction (assistant messages grow as lines merge in)."""

    line: int
    entry_id: str | None
    timestamp: str | None
    type: str
    message: dict[str, Any] | None
    source_lines: list[int] = field(default_factory=list)
    has_call: bool = False  # an assistant message calling a tool (its default stop reason is toolUse)
    pick: int = 0  # which runtime message of its first line this is (a user line splits into several)


def iso_to_epoch_ms(value: object) -> int | None:
    """``"2025-09-03T00:52:31.217Z"`` → ``1756860751217``; ``None`` when not an ISO time."""
    if not isinstance(value, str) or not value:
        return None
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return round(moment.timestamp() * 1000)


def _convert_block(block: object) -> object:
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "thinking":
        converted: dict[str, Any] = {"type": "thinking", "thinking": block.get("thinking", "")}
        if block.get("signature"):
            converted["thinkingSignature"] = block["signature"]
        return converted
    if kind == "redacted_thinking":
        return {"type": "thinking", "thinking": "", "thinkingSignature": block.get("data", ""), "redacted": True}
    if kind == "tool_use":
        return {"type": "toolCall", "id": block.get("id"), "name": block.get("name"), "arguments": block.get("input", {})}
    if kind == "image":
        source = block.get("source")
        if isinstance(source, dict) and source.get("type") == "base64":
            return {"type": "image", "data": source.get("data", ""), "mimeType": source.get("media_type", "")}
    return block


def _usage(raw_usage: object) -> dict[str, Any]:
    usage = raw_usage if isinstance(raw_usage, dict) else {}

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    parts = {
        "input": count("input_tokens"),
        "output": count("output_tokens"),
        "cacheRead": count("cache_read_input_tokens"),
        "cacheWrite": count("cache_creation_input_tokens"),
    }
    zero_cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return {**parts, "totalTokens": sum(parts.values()), "cost": zero_cost}


class _ConversationBuilder:
    """Turns the leaf path of one chain into runtime-message entries.

    ``raw_of`` gives a line's whole object (re-read from the file when the reader does not hold
    it). With ``hold`` False the drafts keep no message content (only what structure needs: the
    entries are then :class:`_RebuiltEntries`, which build each message again from its lines with
    a builder that holds).
    """

    def __init__(self, path: str, tool_names: Mapping[str, str], issues: list[LoadIssue], *,
                 raw_of: Callable[[_Line], dict[str, Any]] = lambda item: item.raw, hold: bool = True) -> None:  # fmt: skip
        self.path = path
        self.tool_names = tool_names
        self.issues = issues
        self.raw_of = raw_of
        self.hold = hold
        self.drafts: list[_Draft] = []
        self.assistant_by_id: dict[str, _Draft] = {}
        self.stop_reasons: dict[int, str | None] = {}
        self.events: list[RecordedEvent] = []
        self.pending_boundary: int | None = None
        self.calls_seen: set[str] = set()

    def add(self, item: _Line) -> None:
        raw = self.raw_of(item)
        timestamp = raw.get("timestamp") if isinstance(raw.get("timestamp"), str) else None
        message = raw.get("message")
        if item.type == "assistant" and isinstance(message, dict):
            self._add_assistant(item, raw, message, timestamp)
        elif item.type == "user" and isinstance(message, dict):
            self._add_user(item, raw, message, timestamp)
        else:
            if item.type in ("assistant", "user"):
                self.issues.append(
                    LoadIssue(self.path, item.line, f"{item.type} line without a message object; kept as a non-message entry", skipped=False)
                )
            self.drafts.append(_Draft(item.line, item.entry_id, timestamp, item.type, None, [item.line]))
            if item.type == "system" and raw.get("subtype") == "compact_boundary":
                self._add_boundary(item, raw, timestamp)

    def _add_boundary(self, item: _Line, raw: dict[str, Any], timestamp: str | None) -> None:
        metadata = raw.get("compactMetadata")
        pre_tokens = metadata.get("preTokens") if isinstance(metadata, dict) else None
        self.events.append(
            RecordedEvent(
                kind="compact_boundary",
                line=item.line,
                entry_id=item.entry_id,
                timestamp=timestamp,
                summary=None,
                tokens_before=pre_tokens if isinstance(pre_tokens, int) else None,
                raw=raw,
            )
        )
        self.pending_boundary = len(self.events) - 1

    def _add_assistant(self, item: _Line, raw: dict[str, Any], message: dict[str, Any], timestamp: str | None) -> None:
        content = message.get("content")
        blocks = [_convert_block(b) for b in content] if isinstance(content, list) else (
            [{"type": "text", "text": content}] if isinstance(content, str) else []
        )
        has_call = False
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                has_call = True
                if isinstance(block.get("id"), str):
                    self.calls_seen.add(block["id"])
        if not self.hold:
            blocks = []
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        draft = self.assistant_by_id.get(message_id) if message_id else None
        if draft is not None and draft.message is not None:
            draft.message["content"].extend(blocks)
            draft.source_lines.append(item.line)
        else:
            runtime: dict[str, Any] = {
                "role": "assistant",
                "content": blocks,
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": message.get("model", "unknown"),
            }
            if message_id:
                runtime["responseId"] = message_id
            runtime["usage"] = _usage(None)
            runtime["stopReason"] = "stop"
            runtime["timestamp"] = iso_to_epoch_ms(timestamp) or 0
            draft = _Draft(item.line, item.entry_id, timestamp, "message", runtime, [item.line])
            self.drafts.append(draft)
            if message_id:
                self.assistant_by_id[message_id] = draft
        assert draft.message is not None
        draft.has_call = draft.has_call or has_call
        if isinstance(message.get("usage"), dict):
            draft.message["usage"] = _usage(message["usage"])
        stop = message.get("stop_reason")
        if isinstance(stop, str):
            self.stop_reasons[id(draft)] = _STOP_REASONS.get(stop, stop)
        if raw.get("isApiErrorMessage") is True:
            self.stop_reasons[id(draft)] = "error"

    def _add_user(self, item: _Line, raw: dict[str, Any], message: dict[str, Any], timestamp: str | None) -> None:
        epoch = iso_to_epoch_ms(timestamp) or 0
        content = message.get("content")
        runtime_messages: list[dict[str, Any]] = []
        if isinstance(content, list):
            others: list[object] = []
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    runtime_messages.append(self._tool_result(item, block, epoch))
                else:
                    others.append(_convert_block(block))
            if others:
                runtime_messages.append({"role": "user", "content": others, "timestamp": epoch})
        else:
            runtime_messages.append({"role": "user", "content": content if content is not None else "", "timestamp": epoch})
        for index, runtime in enumerate(runtime_messages):
            entry_id = item.entry_id if index == 0 or item.entry_id is None else f"{item.entry_id}:{index}"
            self.drafts.append(_Draft(item.line, entry_id, timestamp, "message", runtime, [item.line], pick=index))
        if raw.get("isCompactSummary") is True and self.pending_boundary is not None:
            boundary = self.events[self.pending_boundary]
            text = content if isinstance(content, str) else "\n".join(
                b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
            ) if isinstance(content, list) else None
            self.events[self.pending_boundary] = RecordedEvent(
                kind=boundary.kind, line=boundary.line, entry_id=boundary.entry_id, timestamp=boundary.timestamp,
                summary=text, first_kept_entry_id=boundary.first_kept_entry_id,
                tokens_before=boundary.tokens_before, raw=boundary.raw,
            )
            self.pending_boundary = None
        if not self.hold:
            for runtime in runtime_messages:
                runtime["content"] = []

    def _tool_result(self, item: _Line, block: dict[str, Any], epoch: int) -> dict[str, Any]:
        call_id = block.get("tool_use_id")
        name = self.tool_names.get(call_id) if isinstance(call_id, str) else None
        if name is None:
            self.issues.append(
                LoadIssue(self.path, item.line, f"tool_result for unknown tool_use id {call_id!r}; toolName set to 'unknown'", skipped=False)
            )
        elif call_id not in self.calls_seen:
            self.issues.append(
                LoadIssue(self.path, item.line, f"tool_result {call_id!r} precedes its tool_use in this chain", skipped=False)
            )
        raw_content = block.get("content")
        if isinstance(raw_content, str):
            content: list[object] = [{"type": "text", "text": raw_content}]
        elif isinstance(raw_content, list):
            content = [_convert_block(b) for b in raw_content]
        else:
            content = []
        return {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name or "unknown",
            "content": content,
            "isError": block.get("is_error") is True,
            "timestamp": epoch,
        }

    def entries(self) -> tuple[tuple[InputEntry, ...], dict[int, tuple[int, ...]]]:
        result: list[InputEntry] = []
        source_lines: dict[int, tuple[int, ...]] = {}
        for draft in self.drafts:
            message = draft.message
            if message is not None and message.get("role") == "assistant":
                stop = self.stop_reasons.get(id(draft))
                message["stopReason"] = stop if stop is not None else "toolUse" if draft.has_call else "stop"
            result.append(InputEntry(draft.line, draft.type, message, draft.entry_id, draft.timestamp))
            source_lines[draft.line] = tuple(draft.source_lines)
        return tuple(result), source_lines


def _group_chains(lines: list[_Line]) -> list[tuple[str | None, list[_Line]]]:
    """Split tree lines into the main chain and one group per sidechain root."""
    parent_of = {item.entry_id: item.parent_id for item in lines if item.entry_id}
    root_cache: dict[str, str] = {}

    def root(entry_id: str) -> str:
        trail: list[str] = []
        current = entry_id
        while current in parent_of and current not in root_cache and current not in trail:
            trail.append(current)
            parent = parent_of[current]
            if parent is None:
                break
            current = parent
        found = root_cache.get(current, current)
        for visited in trail:
            root_cache[visited] = found
        return found

    main: list[_Line] = []
    sidechains: dict[str, list[_Line]] = {}
    for item in lines:
        if not item.sidechain:
            main.append(item)
            continue
        agent = item.raw.get("agentId")
        key = f"agent-{agent}" if isinstance(agent, str) and agent else root(item.entry_id or f"line{item.line}")
        sidechains.setdefault(key, []).append(item)
    groups: list[tuple[str | None, list[_Line]]] = []
    if main:
        groups.extend(_split_main_chains(main, root))
    groups.extend(sidechains.items())
    return groups


def _split_main_chains(main: list[_Line], root: Any) -> list[tuple[str | None, list[_Line]]]:
    """The main lines as one group, or, when they hold more than one tree with messages (two
    sessions in one file, a resumed session whose parent is elsewhere), one group per tree: the
    tree holding the last message stays the main conversation (key ``None``, what a single tree
    gives), each other one becomes ``chain-<n>`` in file order. Trees without messages stay with
    the main group, off its path, as before."""
    trees: dict[str, list[_Line]] = {}
    for item in main:
        trees.setdefault(root(item.entry_id or f"line{item.line}"), []).append(item)
    with_messages = [lines for lines in trees.values() if any(i.type in ("user", "assistant") for i in lines)]
    if len(with_messages) < 2:
        return [(None, main)]
    last_message = max((i for lines in with_messages for i in lines if i.type in ("user", "assistant")), key=lambda i: i.line)
    others = [lines for lines in with_messages if last_message not in lines]
    moved = {i.line for lines in others for i in lines}
    groups: list[tuple[str | None, list[_Line]]] = [(None, [i for i in main if i.line not in moved])]
    groups.extend((f"chain-{n}", lines) for n, lines in enumerate(sorted(others, key=lambda ls: ls[0].line), start=1))
    return groups


def _first_user_text(entries: tuple[InputEntry, ...]) -> str | None:
    for entry in entries:
        message = entry.message
        if message is not None and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return None


class _LineBytes:
    """Where the lines of a re-read session are (a :class:`LineSource`) with each line's uuid, in
    columns indexed by line number, and each line parsed again."""

    def __init__(self, source: LineSource) -> None:
        self.source = source
        self.kept = KeptLines()
        self.ids: list[str | None] = []  # by line number (None: no uuid, or the line is not kept)

    def keep(self, line: RawLine, entry_id: str | None) -> None:
        self.kept.add(line.number, *self.source.keep(line))
        self.ids.extend([None] * (line.number + 1 - len(self.ids)))
        self.ids[line.number] = entry_id

    def value(self, line: int) -> dict[str, Any]:
        kept = self.kept.of(line)
        value = self.source.parse(kept.offset, kept.size)
        if not isinstance(value, dict) or clean_id(value.get("uuid")) != self.ids[line]:
            raise InputFileError(self.source.path, f"line {line} changed while the file was loaded; load it again")
        return value

    def raw_of(self, item: _Line) -> dict[str, Any]:
        return self.value(item.line)

    def lines(self) -> Iterator[int]:
        """The kept lines, in order."""
        return (line for line, offset in enumerate(self.kept.offsets) if offset >= 0)


class _KeptRaw(Mapping[int, dict[str, Any]]):
    """``raw_entries`` of a re-read session: line → the line's object, parsed again on access."""

    def __init__(self, lines: _LineBytes, here: Iterable[int]) -> None:
        self.lines = lines
        self.here = array("q", here)  # the lines, in increasing order

    def __getitem__(self, line: int) -> dict[str, Any]:
        index = bisect_left(self.here, line)
        if index == len(self.here) or self.here[index] != line:
            raise KeyError(line)
        return self.lines.value(line)

    def __iter__(self) -> Iterator[int]:
        return iter(self.here)

    def __len__(self) -> int:
        return len(self.here)


class _RebuiltEntries(LazyEntries):
    """A re-read conversation's entries: each message is built again, by a builder that holds
    content, from the lines merged into it (the one conversion path); other entries are held."""

    def __init__(self, drafts: Sequence[_Draft], source_lines: Mapping[int, tuple[int, ...]], by_line: Mapping[int, _Line],
                 lines: _LineBytes, tool_names: Mapping[str, str], path: str) -> None:  # fmt: skip
        # A message is its source lines; which runtime message of them it is (``pick``) is kept
        # only where it is not the first (a pair per message cost 56 bytes a message).
        self.items: list[InputEntry | tuple[int, ...]] = [
            InputEntry(d.line, d.type, None, d.entry_id, d.timestamp) if d.message is None else _shared(source_lines, d)
            for d in drafts
        ]  # fmt: skip
        self.picks = {index: d.pick for index, d in enumerate(drafts) if d.message is not None and d.pick}
        self.by_line, self.lines, self.tool_names, self.path = by_line, lines, tool_names, path

    def __len__(self) -> int:
        return len(self.items)

    def _part(self, index: slice) -> _RebuiltEntries:
        part = _RebuiltEntries((), {}, self.by_line, self.lines, self.tool_names, self.path)
        part.items = self.items[index]
        if self.picks:
            positions = range(len(self.items))[index]
            part.picks = {new: self.picks[old] for new, old in enumerate(positions) if old in self.picks}
        return part

    def _entry(self, index: int) -> InputEntry:
        item = self.items[index]
        if isinstance(item, InputEntry):
            return item
        builder = _ConversationBuilder(self.path, self.tool_names, [], raw_of=self.lines.raw_of)
        for line in item:
            builder.add(self.by_line[line])
        return builder.entries()[0][self.picks.get(index, 0)]


def _shared(source_lines: Mapping[int, tuple[int, ...]], draft: _Draft) -> tuple[int, ...]:
    """The draft's source lines, as the tuple ``source_lines`` already holds when it is the same."""
    mine = tuple(draft.source_lines)
    held = source_lines.get(draft.line)
    return held if held == mine else mine


def _shared_envelope(envelopes: dict[tuple[tuple[str, Any], ...], dict[str, Any]], envelope: dict[str, Any]) -> dict[str, Any]:
    """One dict for every line with the same envelope (lines of a session mostly share their cwd,
    version and branch: a dict per line cost about 64 bytes a line). Never mutated."""
    try:
        return envelopes.setdefault(tuple(envelope.items()), envelope)
    except TypeError:  # a value that is not hashable (a list): the line keeps its own
        return envelope


def read_claude_code_jsonl(path: str | Path, *, reread: bool = False) -> TranscriptRead:
    """Read a Claude Code session file into the main conversation plus one per sidechain.

    With ``reread``, lines are not held: each keeps its envelope and where its bytes are, the
    entries build each message again from its lines when used (:class:`_RebuiltEntries`) and
    ``raw_entries`` parses each line again, so a big session loads in bounded memory.
    """
    file_path = Path(path)
    display = str(path)
    reader = JsonlReader(file_path, display_path=display)
    lines = _LineBytes(LineSource(file_path)) if reread else None
    issues: list[LoadIssue] = []
    tree_lines: list[_Line] = []
    raw_entries: dict[int, dict[str, Any]] = {}
    envelopes: dict[tuple[tuple[str, Any], ...], dict[str, Any]] = {}
    summaries: list[RecordedEvent] = []
    untracked: dict[str, int] = {}
    tool_names: dict[str, str] = {}
    session_ids: dict[str, int] = {}
    custom_title: str | None = None
    for line, value in reader:
        if not isinstance(value, dict):
            reader.skipped_lines += 1
            issues.append(LoadIssue(display, line, f"expected a JSON object, found {type(value).__name__}; skipped"))
            continue
        entry_id = clean_id(value.get("uuid"))
        if lines is not None:
            assert reader.current is not None
            lines.keep(reader.current, entry_id)
        else:
            raw_entries[line] = value
        entry_type = value.get("type") if isinstance(value.get("type"), str) else "unknown"
        if isinstance(value.get("sessionId"), str):
            session_ids[value["sessionId"]] = session_ids.get(value["sessionId"], 0) + 1
        if entry_type == "summary":
            summary = value.get("summary")
            summaries.append(
                RecordedEvent("summary", line, clean_id(value.get("leafUuid")), None,
                              summary if isinstance(summary, str) else None, raw=value)
            )
            continue
        if entry_type == "custom-title" and isinstance(value.get("customTitle"), str):
            custom_title = value["customTitle"]
        message = value.get("message")
        if entry_type == "assistant" and isinstance(message, dict) and isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    tool_names[block["id"]] = str(block.get("name"))
        if entry_id is None:
            untracked[entry_type] = untracked.get(entry_type, 0) + 1
            continue
        parent = clean_id(value.get("parentUuid"))
        if lines is not None:
            envelope = _shared_envelope(envelopes, {key: sys.intern(v) if isinstance(v := value[key], str) else v
                                                    for key in _ENVELOPE if key in value})  # fmt: skip
            entry_id, parent = sys.intern(entry_id), None if parent is None else sys.intern(parent)
            tree_lines.append(_Line(line, sys.intern(entry_type), entry_id, parent, value.get("isSidechain") is True,
                                    envelope))  # fmt: skip
        else:
            tree_lines.append(_Line(line, entry_type, entry_id, parent, value.get("isSidechain") is True, value))

    if not tree_lines and not summaries:
        raise TranscriptFormatError(
            f"{display}: no Claude Code entries (lines with a uuid) found; not a Claude Code session"
        )
    known = {item.entry_id for item in tree_lines}
    for item in tree_lines:
        logical = clean_id(item.raw.get("logicalParentUuid"))
        if item.parent_id is None and logical in known:
            item.parent_id = logical
    session_id = max(session_ids, key=lambda key: session_ids[key]) if session_ids else file_path.stem
    sidechain_lines = {item.line for item in tree_lines if item.sidechain}
    conversations: list[LoadedConversation] = []
    main_tool_calls: dict[str, str] = {}
    groups = _group_chains(tree_lines)
    moved_lines = {item.line for key, group in groups if key is not None and key.startswith("chain-") for item in group}
    for group_key, group in groups:
        extra_chain = group_key is not None and group_key.startswith("chain-")
        if extra_chain:
            issues.append(LoadIssue(display, group[0].line, (
                f"a second main chain starts here (root uuid {group[0].entry_id!r}, {len(group)} entries, not connected to the "
                f"main one); loaded as its own conversation {session_id}:{group_key}"
            ), skipped=False))  # fmt: skip
        selection = select_leaf_path(group)
        if selection.problem is not None:
            issues.append(LoadIssue(display, selection.problem_line, selection.problem, skipped=False))
        elif (branches := off_branch_issue(selection.left_out_lines)) is not None:
            issues.append(LoadIssue(display, *branches, skipped=False))
        for earlier, later, entry_id in selection.duplicate_lines:
            issues.append(LoadIssue(display, later, f"duplicate uuid {entry_id!r} (also on line {earlier}); the later occurrence wins", skipped=False))
        if lines is None:
            builder = _ConversationBuilder(display, tool_names, issues)
        else:
            builder = _ConversationBuilder(display, tool_names, issues, raw_of=lines.raw_of, hold=False)
        for item in selection.nodes:
            builder.add(item)
        entries, source_lines = builder.entries()
        if lines is not None:
            by_line = {item.line: item for item in selection.nodes}
            entries = _RebuiltEntries(builder.drafts, source_lines, by_line, lines, tool_names, display)  # type: ignore[assignment]
        sidechain = group_key is not None and not extra_chain
        events = tuple(builder.events) if group_key is not None else tuple(summaries) + tuple(builder.events)
        meta: dict[str, Any] = {
            "format": CLAUDE_CODE_JSONL,
            "sidechain": sidechain,
            "last_line": reader.last_line,
            "source_lines": source_lines,
        }
        first = group[0].raw
        for key, name in (("cwd", "cwd"), ("version", "claude_code_version"), ("gitBranch", "git_branch")):
            if isinstance(first.get(key), str):
                meta[name] = first[key]
        if extra_chain:
            meta["main_chain"] = group_key
        elif sidechain:
            meta["parent_session_id"] = session_id
            prompt = _first_user_text(entries)
            if prompt is not None and prompt in main_tool_calls:
                meta["parent_tool_call_id"] = main_tool_calls[prompt]
        else:
            for entry in entries:
                content = entry.message.get("content") if entry.message else None
                for block in content if isinstance(content, list) else ():
                    if not isinstance(block, dict) or block.get("type") != "toolCall":
                        continue
                    arguments = block.get("arguments")
                    if isinstance(arguments, dict) and isinstance(arguments.get("prompt"), str):
                        main_tool_calls[arguments["prompt"]] = block.get("id")
        conversation_id = (session_id if group_key is None else f"{session_id}:{group_key}" if extra_chain
                           else f"{session_id}:sidechain:{group_key}")  # fmt: skip
        title = None if group_key is not None else custom_title or (summaries[-1].summary if summaries else None)
        # The lines this conversation keeps raw: its group's, or for the main chain every line
        # that no sidechain or extra chain took (lines without a uuid included).
        if group_key is not None:
            here = [item.line for item in group]
        else:
            here = [line for line in (lines.lines() if lines is not None else raw_entries)
                    if line not in sidechain_lines and line not in moved_lines]  # fmt: skip
        raw_here: Mapping[int, dict[str, Any]] = (
            {line: raw_entries[line] for line in here} if lines is None else _KeptRaw(lines, here)
        )  # fmt: skip
        conversations.append(
            LoadedConversation(
                conversation=Conversation(
                    session_id=conversation_id, entries=entries, title=title, source=display, meta=meta
                ),
                events=events,
                meta={
                    "leaf_path": selection.mode,
                    "off_path_entries": len(group) - len(selection.nodes),
                    "untracked_entry_types": dict(untracked) if not sidechain else {},
                    "raw_entries": raw_here,
                },
            )
        )
    if not conversations:
        conversations.append(
            LoadedConversation(
                Conversation(session_id=session_id, source=display, meta={"format": CLAUDE_CODE_JSONL, "sidechain": False, "last_line": reader.last_line}),
                events=tuple(summaries),
                meta={"leaf_path": "tree", "off_path_entries": 0, "untracked_entry_types": dict(untracked), "raw_entries": {}},
            )
        )
    all_issues = sorted([*reader.issues, *issues], key=lambda issue: (issue.line is None, issue.line or 0))
    version = next((c.conversation.meta.get("claude_code_version") for c in conversations), None)
    return TranscriptRead(
        path=display,
        kind=CLAUDE_CODE_JSONL,
        conversations=tuple(conversations),
        issues=tuple(all_issues),
        skipped_lines=reader.skipped_lines,
        version=version if isinstance(version, str) else None,
    )
