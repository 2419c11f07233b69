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

from array import array
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.errors import InputFileError
from lcm_lab.io.model import LoadedConversation, LoadIssue, RecordedEvent
from lcm_lab.io.transcripts.base import CLAUDE_CODE_JSONL, TranscriptFormatError, TranscriptRead
from lcm_lab.io.transcripts.jsonl import JsonlReader, RawLine
from lcm_lab.io.transcripts.packed import PackedStrings
from lcm_lab.io.transcripts.pi import clean_id
from lcm_lab.io.transcripts.reread import KeptLines, LazyEntries, LineSource
from lcm_lab.io.transcripts.tree import (
    DANGLING,
    ROOT,
    IdColumns,
    Links,
    link_members,
    off_branch_issue,
    one_chain,
    parent_matches,
    select_leaf_positions,
)

if TYPE_CHECKING:
    from lcm_lab.io.transcripts.tree import Flags, Positions

_STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "toolUse", "max_tokens": "length"}


# Keys of a line that grouping and conversation metadata read (a row keeps only these).
_ENVELOPE = ("agentId", "cwd", "version", "gitBranch")


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


def _stamp(message: dict[str, Any], epoch: int | None) -> dict[str, Any]:
    """``message`` with its ``timestamp`` last, as pi writes it; none when the line's time is not an
    ISO time with a zone, never epoch 0 in its place (that dated such messages 1970-01-01). The
    stored time is then read from the line's text like any other (a time without a zone as UTC);
    one that is no time is stored as NULL, and the load counts it (``io/rows``)."""
    if epoch is not None:
        message["timestamp"] = epoch
    return message


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


class _EntryColumns:
    """Where each entry of a conversation comes from, as columns: its first line, which runtime
    message of that line it is (``pick``, kept only where it is not the first: a user line splits
    into several) and the further lines merged into it (the streamed blocks of one assistant
    message). About 24 bytes an entry, no object per entry."""

    def __init__(self) -> None:
        self.lines = array("q")
        self.picks: dict[int, int] = {}
        self.merged_into = array("q")  # (entry index, line) of every line merged into an earlier entry
        self.merged_lines = array("q")

    def add(self, line: int, pick: int = 0) -> int:
        self.lines.append(line)
        if pick:
            self.picks[len(self.lines) - 1] = pick
        return len(self.lines) - 1

    def merge(self, index: int, line: int) -> None:
        self.merged_into.append(index)
        self.merged_lines.append(line)


class _ConversationBuilder:
    """Turns the leaf path of one chain into runtime-message entries, a line at a time (``add``).

    With ``hold`` False it keeps no message: only where each entry comes from
    (:attr:`columns`, from which :class:`_RebuiltEntries` builds each message again with a
    builder that holds: the one conversion path), the issues and the recorded events.
    """

    def __init__(self, path: str, tool_names: Mapping[str, str], issues: list[LoadIssue], *, hold: bool = True) -> None:
        self.path = path
        self.tool_names = tool_names
        self.issues = issues
        self.hold = hold
        self.drafts: list[_Draft] = []
        self.columns = _EntryColumns()
        self.assistant_by_id: dict[str, int] = {}  # message id → the entry its lines merge into
        self.stop_reasons: dict[int, str | None] = {}
        self.events: list[RecordedEvent] = []
        self.pending_boundary: int | None = None
        self.calls_seen: set[str] = set()
        self.added = 0
        self._prompts: list[tuple[tuple[int, int, int], str, object]] = []  # (order, prompt, call id)

    def add(self, line: int, raw: dict[str, Any]) -> None:
        self.added += 1
        entry_type = raw.get("type") if isinstance(raw.get("type"), str) else "unknown"
        entry_id = clean_id(raw.get("uuid"))
        timestamp = raw.get("timestamp") if isinstance(raw.get("timestamp"), str) else None
        message = raw.get("message")
        if entry_type == "assistant" and isinstance(message, dict):
            self._add_assistant(line, entry_id, raw, message, timestamp)
        elif entry_type == "user" and isinstance(message, dict):
            self._add_user(line, entry_id, raw, message, timestamp)
        else:
            if entry_type in ("assistant", "user"):
                self.issues.append(
                    LoadIssue(self.path, line, f"{entry_type} line without a message object; kept as a non-message entry", skipped=False)
                )
            self._new(_Draft(line, entry_id, timestamp, entry_type, None, [line]))
            if entry_type == "system" and raw.get("subtype") == "compact_boundary":
                self._add_boundary(line, entry_id, raw, timestamp)

    def _new(self, draft: _Draft) -> int:
        """Start an entry; its index."""
        if self.hold:
            self.drafts.append(draft)
            return len(self.drafts) - 1
        return self.columns.add(draft.line, draft.pick)

    def _note_calls(self, entry: int, blocks: Sequence[object]) -> None:
        """Remember the tool calls among ``blocks`` (of entry ``entry``) that carry a prompt."""
        for at, block in enumerate(blocks):
            if isinstance(block, dict) and block.get("type") == "toolCall":
                arguments = block.get("arguments")
                if isinstance(arguments, dict) and isinstance(arguments.get("prompt"), str):
                    self._prompts.append(((entry, self.added, at), arguments["prompt"], block.get("id")))

    def prompt_calls(self) -> dict[str, object]:
        """Each prompt a tool call of these entries carries → the id of the last call with it, in
        entry order (how a sidechain finds the main-chain call that started it)."""
        return {prompt: call_id for _, prompt, call_id in sorted(self._prompts, key=lambda found: found[0])}

    def _add_boundary(self, line: int, entry_id: str | None, raw: dict[str, Any], timestamp: str | None) -> None:
        metadata = raw.get("compactMetadata")
        pre_tokens = metadata.get("preTokens") if isinstance(metadata, dict) else None
        self.events.append(
            RecordedEvent(
                kind="compact_boundary",
                line=line,
                entry_id=entry_id,
                timestamp=timestamp,
                summary=None,
                tokens_before=pre_tokens if isinstance(pre_tokens, int) else None,
                raw=raw,
            )
        )
        self.pending_boundary = len(self.events) - 1

    def _add_assistant(self, line: int, entry_id: str | None, raw: dict[str, Any], message: dict[str, Any],
                       timestamp: str | None) -> None:  # fmt: skip
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
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        index = self.assistant_by_id.get(message_id) if message_id else None
        if index is not None:
            self._note_calls(index, blocks)
            if not self.hold:
                self.columns.merge(index, line)
                return
            draft = self.drafts[index]
            assert draft.message is not None
            draft.message["content"].extend(blocks)
            draft.source_lines.append(line)
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
            _stamp(runtime, iso_to_epoch_ms(timestamp))
            index = self._new(_Draft(line, entry_id, timestamp, "message", runtime, [line]))
            self._note_calls(index, blocks)
            if message_id:
                self.assistant_by_id[message_id] = index
            if not self.hold:
                return
            draft = self.drafts[index]
        assert draft.message is not None
        draft.has_call = draft.has_call or has_call
        if isinstance(message.get("usage"), dict):
            draft.message["usage"] = _usage(message["usage"])
        stop = message.get("stop_reason")
        if isinstance(stop, str):
            self.stop_reasons[id(draft)] = _STOP_REASONS.get(stop, stop)
        if raw.get("isApiErrorMessage") is True:
            self.stop_reasons[id(draft)] = "error"

    def _add_user(self, line: int, entry_id: str | None, raw: dict[str, Any], message: dict[str, Any],
                  timestamp: str | None) -> None:  # fmt: skip
        epoch = iso_to_epoch_ms(timestamp)
        content = message.get("content")
        runtime_messages: list[dict[str, Any]] = []
        if isinstance(content, list):
            others: list[object] = []
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    runtime_messages.append(self._tool_result(line, block, epoch))
                else:
                    others.append(_convert_block(block))
            if others:
                runtime_messages.append(_stamp({"role": "user", "content": others}, epoch))
        else:
            runtime_messages.append(_stamp({"role": "user", "content": content if content is not None else ""}, epoch))
        for index, runtime in enumerate(runtime_messages):
            part_id = entry_id if index == 0 or entry_id is None else f"{entry_id}:{index}"
            entry = self._new(_Draft(line, part_id, timestamp, "message", runtime, [line], pick=index))
            if isinstance(runtime["content"], list):
                self._note_calls(entry, runtime["content"])
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

    def _tool_result(self, line: int, block: dict[str, Any], epoch: int | None) -> dict[str, Any]:
        call_id = block.get("tool_use_id")
        name = self.tool_names.get(call_id) if isinstance(call_id, str) else None
        if name is None:
            self.issues.append(
                LoadIssue(self.path, line, f"tool_result for unknown tool_use id {call_id!r}; toolName set to 'unknown'", skipped=False)
            )
        elif call_id not in self.calls_seen:
            self.issues.append(
                LoadIssue(self.path, line, f"tool_result {call_id!r} precedes its tool_use in this chain", skipped=False)
            )
        raw_content = block.get("content")
        if isinstance(raw_content, str):
            content: list[object] = [{"type": "text", "text": raw_content}]
        elif isinstance(raw_content, list):
            content = [_convert_block(b) for b in raw_content]
        else:
            content = []
        return _stamp({
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name or "unknown",
            "content": content,
            "isError": block.get("is_error") is True,
        }, epoch)  # fmt: skip

    def entries(self) -> tuple[tuple[InputEntry, ...], dict[int, tuple[int, ...]]]:
        """The held entries and each entry's line → the lines merged into it (``hold`` only)."""
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


class _Rows:
    """Every line with a uuid, in file order, as columns (no object per line): line, uuid and
    parent uuid (:class:`IdColumns`), type, whether it is a sidechain line, and its envelope
    (``_ENVELOPE``: one shared dict for lines that have the same)."""

    def __init__(self) -> None:
        self.tree = IdColumns()
        self.types: list[str] = []
        self.type_of = array("I")
        self.sidechain = bytearray()
        self.envelopes: list[dict[str, Any]] = []
        self.envelope_of = array("I")
        self.logical: dict[int, str] = {}  # row → logicalParentUuid, for rows without a parent
        self._type_codes: dict[str, int] = {}
        self._envelope_codes: dict[tuple[tuple[str, Any], ...], int] = {}

    def __len__(self) -> int:
        return len(self.tree)

    def append(self, line: int, entry_type: str, entry_id: str, parent: str | None, value: dict[str, Any]) -> None:
        row = len(self.tree)
        self.tree.append(line, entry_id, parent)
        code = self._type_codes.get(entry_type)
        if code is None:
            code = self._type_codes[entry_type] = len(self.types)
            self.types.append(entry_type)
        self.type_of.append(code)
        self.sidechain.append(value.get("isSidechain") is True)
        self.envelope_of.append(self._envelope({key: value[key] for key in _ENVELOPE if key in value}))
        logical = clean_id(value.get("logicalParentUuid"))
        if parent is None and logical is not None:
            self.logical[row] = logical

    def _envelope(self, envelope: dict[str, Any]) -> int:
        try:
            key = tuple(envelope.items())
            code = self._envelope_codes.get(key)
        except TypeError:  # a value that is not hashable (a list): the line keeps its own
            key, code = None, None
        if code is None:
            code = len(self.envelopes)
            self.envelopes.append(envelope)
            if key is not None:
                self._envelope_codes[key] = code
        return code

    def bridge_compact_boundaries(self) -> None:
        """A line without a parent whose ``logicalParentUuid`` names a uuid of the file takes it
        as its parent (the chain continues across a compact boundary)."""
        known = self.tree.present(sorted(set(self.logical.values())))
        self.tree.set_parents({row: logical for row, logical in self.logical.items() if logical in known})

    def is_message(self) -> Flags:
        import numpy as np

        codes = np.frombuffer(self.type_of, dtype=np.uint32)
        message_codes = [code for code, name in enumerate(self.types) if name in ("user", "assistant")]
        return np.isin(codes, np.array(message_codes, dtype=np.uint32)).astype(np.uint8)

    def envelope(self, row: int) -> dict[str, Any]:
        return self.envelopes[self.envelope_of[row]]


class _Roots:
    """The root uuid each row's parent chain leads to, as the grouping names groups: the first
    uuid without a parent, a parent uuid no line has (dangling), or in a loop the entry the walk
    met again. Walks share what they found, in the order rows are asked for (which, in a loop,
    decides the name), exactly as a walk over a dict of uuids would."""

    _UNKNOWN = -1

    def __init__(self, rows: _Rows) -> None:
        self.rows = rows
        self._links: tuple[Links, Positions] | None = None  # linked when a root is first asked for
        self.dangling: dict[bytes, int] = {}  # a dangling parent's text → its code (-2, -3, ...)
        self.names: dict[int, str] = {}  # code → the uuid it stands for

    def _linked(self) -> tuple[Links, Positions]:
        import numpy as np

        if self._links is None:
            links = link_members(self.rows.tree, np.arange(len(self.rows), dtype=np.int64))
            self._links = links, np.full(len(self.rows), self._UNKNOWN, dtype=np.int64)  # by an id's last row: its root
        return self._links

    def code(self, row: int) -> int:
        """The root of ``row``: a row (>= 0, the root's last occurrence) or a dangling parent's code (< -1)."""
        (links, found), tree = self._linked(), self.rows.tree
        current = int(links.last_of[row])
        trail: list[int] = []
        seen: set[int] = set()
        root = current
        while found[current] == self._UNKNOWN and current not in seen:
            trail.append(current)
            seen.add(current)
            parent = int(links.parent_of[current])
            if parent == ROOT:
                root = current
                break
            if parent == DANGLING or not parent_matches(tree, current, parent):
                root = self._dangling(tree.parents.raw(current))
                break
            current = root = parent
        else:  # a row whose root is known, or the row a loop came back to (then that row names it)
            if found[current] != self._UNKNOWN:
                root = int(found[current])
        for visited in trail:
            found[visited] = root
        return root

    def _dangling(self, text: bytes | None) -> int:
        assert text is not None
        code = self.dangling.get(text)
        if code is None:
            code = self.dangling[text] = -2 - len(self.dangling)
            self.names[code] = text.decode("utf-8", "surrogatepass")
        return code

    def name(self, code: int) -> str:
        """The uuid a root code stands for."""
        if code not in self.names:
            self.names[code] = str(self.rows.tree.ids[code])
        return self.names[code]


def _group_chains(rows: _Rows) -> list[tuple[str | None, Positions]]:
    """Split the rows into the main chain and one group per sidechain root (each a sorted array of rows)."""
    import numpy as np

    if not len(rows):
        return []
    roots = _Roots(rows)
    side = np.frombuffer(rows.sidechain, dtype=np.uint8)
    main = np.flatnonzero(side == 0)
    sidechains: dict[str, array[int]] = {}
    for row in np.flatnonzero(side).tolist():
        agent = rows.envelope(row).get("agentId")
        key = f"agent-{agent}" if isinstance(agent, str) and agent else roots.name(roots.code(row))
        sidechains.setdefault(key, array("q")).append(row)
    groups: list[tuple[str | None, Positions]] = []
    if len(main):
        groups.extend(_split_main_chains(rows, roots, main))
    groups.extend((key, np.frombuffer(members, dtype=np.int64)) for key, members in sidechains.items())
    return groups


def _split_main_chains(rows: _Rows, roots: _Roots, main: Positions) -> list[tuple[str | None, Positions]]:
    """The main rows as one group, or, when they hold more than one tree with messages (two
    sessions in one file, a resumed session whose parent is elsewhere), one group per tree: the
    tree holding the last message stays the main conversation (key ``None``, what a single tree
    gives), each other one becomes ``chain-<n>`` in file order. Trees without messages stay with
    the main group, off its path."""
    import numpy as np

    if one_chain(rows.tree, main):  # the usual file: one tree, no walk needed
        return [(None, main)]
    codes = np.fromiter((roots.code(row) for row in main.tolist()), dtype=np.int64, count=len(main))
    message = rows.is_message()[main] == 1
    with_messages = np.unique(codes[message])
    if len(with_messages) < 2:
        return [(None, main)]
    last_tree = codes[np.flatnonzero(message)[-1]]
    groups: list[tuple[str | None, Positions]] = [(None, main[~np.isin(codes, with_messages[with_messages != last_tree])])]
    others = [main[codes == code] for code in with_messages if code != last_tree]
    others.sort(key=lambda members: int(members[0]))
    groups.extend((f"chain-{n}", members) for n, members in enumerate(others, start=1))
    return groups


def _first_user_text(entries: Sequence[InputEntry]) -> str | None:
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
    """Where the lines of a re-read session are (a :class:`LineSource`), and each line parsed
    again, checked against the uuid it had (``rows``: the lines with one, in increasing order)."""

    def __init__(self, source: LineSource) -> None:
        self.source = source
        self.kept = KeptLines()
        self.id_lines = array("q")  # the lines with a uuid that are rows, increasing, and their uuids
        self.ids = PackedStrings()
        self.other_ids: dict[int, str] = {}  # kept lines with a uuid that are not rows (summary lines)

    def keep(self, line: RawLine) -> None:
        self.kept.add(line.number, *self.source.keep(line))

    def value(self, line: int) -> dict[str, Any]:
        kept = self.kept.of(line)
        value = self.source.parse(kept.offset, kept.size)
        if not isinstance(value, dict) or clean_id(value.get("uuid")) != self._id(line):
            raise InputFileError(self.source.path, f"line {line} changed while the file was loaded; load it again")
        return value

    def _id(self, line: int) -> str | None:
        at = bisect_left(self.id_lines, line)
        if at < len(self.id_lines) and self.id_lines[at] == line:
            return self.ids[at]
        return self.other_ids.get(line)

    def lines(self) -> Positions:
        """The kept lines, in order."""
        import numpy as np

        return np.flatnonzero(np.frombuffer(self.kept.offsets, dtype=np.int64) >= 0)


class _KeptRaw(Mapping[int, dict[str, Any]]):
    """``raw_entries`` of a re-read session: line → the line's object, parsed again on access."""

    def __init__(self, lines: _LineBytes, here: Positions) -> None:
        self.lines = lines
        self.here = here  # the lines, in increasing order

    def __getitem__(self, line: int) -> dict[str, Any]:
        index = int(self.here.searchsorted(line))
        if index == len(self.here) or int(self.here[index]) != line:
            raise KeyError(line)
        return self.lines.value(line)

    def __iter__(self) -> Iterator[int]:
        return iter(self.here.tolist())

    def __len__(self) -> int:
        return len(self.here)


class _Sources:
    """Each entry's lines as numpy columns over :class:`_EntryColumns`: ``first`` line, and its
    merged lines ``merged[starts[i]:ends[i]]`` (shared by the parts of a slice)."""

    def __init__(self, columns: _EntryColumns) -> None:
        import numpy as np

        self.first = np.frombuffer(columns.lines, dtype=np.int64).copy()
        into = np.frombuffer(columns.merged_into, dtype=np.int64)
        order = np.argsort(into, kind="stable")
        into = into[order]
        self.merged = np.frombuffer(columns.merged_lines, dtype=np.int64)[order]
        every = np.arange(len(self.first), dtype=np.int64)
        self.starts, self.ends = np.searchsorted(into, every), np.searchsorted(into, every, side="right")
        self.picks = columns.picks

    def of(self, index: int) -> tuple[int, ...]:
        start, end = int(self.starts[index]), int(self.ends[index])
        return (int(self.first[index]), *self.merged[start:end].tolist())


class _SourceLines(Mapping[int, tuple[int, ...]]):
    """``meta["source_lines"]`` of a re-read conversation: an entry's line → every line merged
    into it, in entry order, answered from :class:`_Sources` (a dict of tuples cost about 150
    bytes an entry)."""

    def __init__(self, sources: _Sources) -> None:
        import numpy as np

        first = sources.first
        order = np.argsort(first, kind="stable")
        keep = np.ones(len(order), dtype=bool)
        keep[1:] = first[order][1:] != first[order][:-1]  # a line split into several entries is one key
        self.sources = sources
        self.sorted_at = order[keep]  # the entry of each distinct line, by line
        self.sorted_lines = first[self.sorted_at]

    def __getitem__(self, line: int) -> tuple[int, ...]:
        at = int(self.sorted_lines.searchsorted(line))
        if at == len(self.sorted_lines) or int(self.sorted_lines[at]) != line:
            raise KeyError(line)
        return self.sources.of(int(self.sorted_at[at]))

    def __iter__(self) -> Iterator[int]:
        import numpy as np

        return iter(self.sources.first[np.sort(self.sorted_at)].tolist())

    def __len__(self) -> int:
        return len(self.sorted_at)


class _RebuiltEntries(LazyEntries):
    """A re-read conversation's entries: each is built again, by a builder that holds, from the
    lines it came from (the one conversion path)."""

    def __init__(self, sources: _Sources, lines: _LineBytes, tool_names: Mapping[str, str], path: str,
                 at: range | None = None) -> None:  # fmt: skip
        self.sources, self.lines, self.tool_names, self.path = sources, lines, tool_names, path
        self.at = at if at is not None else range(len(sources.first))  # which entries of ``sources``

    def __len__(self) -> int:
        return len(self.at)

    def _part(self, index: slice) -> _RebuiltEntries:
        return _RebuiltEntries(self.sources, self.lines, self.tool_names, self.path, self.at[index])

    def _entry(self, index: int) -> InputEntry:
        at = self.at[index]
        builder = _ConversationBuilder(self.path, self.tool_names, [])
        for line in self.sources.of(at):
            builder.add(line, self.lines.value(line))
        return builder.entries()[0][self.sources.picks.get(at, 0)]


def read_claude_code_jsonl(path: str | Path, *, reread: bool = False) -> TranscriptRead:
    """Read a Claude Code session file into the main conversation plus one per sidechain.

    With ``reread``, lines are not held: the reader keeps where each line's bytes are and, per
    line with a uuid, columns of what grouping needs (:class:`_Rows`); the entries build each
    message again from its lines when used (:class:`_RebuiltEntries`) and ``raw_entries`` parses
    each line again, so a big session loads in bounded memory.
    """
    import numpy as np

    file_path = Path(path)
    display = str(path)
    reader = JsonlReader(file_path, display_path=display)
    lines = _LineBytes(LineSource(file_path)) if reread else None
    issues: list[LoadIssue] = []
    rows = _Rows()
    raw_entries: dict[int, dict[str, Any]] = {}
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
            lines.keep(reader.current)
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
            if lines is not None and entry_id is not None:
                lines.other_ids[line] = entry_id
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
        rows.append(line, entry_type, entry_id, clean_id(value.get("parentUuid")), value)

    if not len(rows) and not summaries:
        raise TranscriptFormatError(
            f"{display}: no Claude Code entries (lines with a uuid) found; not a Claude Code session"
        )
    if lines is not None:
        lines.id_lines, lines.ids = rows.tree.lines, rows.tree.ids
    rows.bridge_compact_boundaries()
    session_id = max(session_ids, key=lambda key: session_ids[key]) if session_ids else file_path.stem
    row_lines = np.frombuffer(rows.tree.lines, dtype=np.int64)
    sidechain_lines = row_lines[np.frombuffer(rows.sidechain, dtype=np.uint8) == 1]
    conversations: list[LoadedConversation] = []
    main_tool_calls: dict[str, object] = {}
    groups = _group_chains(rows)
    moved = [members for key, members in groups if key is not None and key.startswith("chain-")]
    moved_lines = row_lines[np.concatenate(moved)] if moved else np.empty(0, dtype=np.int64)
    selections = [select_leaf_positions(rows.tree, group) for _, group in groups]
    rows.tree.release_parents()
    for (group_key, group), selection in zip(groups, selections, strict=True):
        extra_chain = group_key is not None and group_key.startswith("chain-")
        first_row = int(group[0])
        if extra_chain:
            issues.append(LoadIssue(display, rows.tree.lines[first_row], (
                f"a second main chain starts here (root uuid {rows.tree.ids[first_row]!r}, {len(group)} entries, not connected "
                f"to the main one); loaded as its own conversation {session_id}:{group_key}"
            ), skipped=False))  # fmt: skip
        if selection.problem is not None:
            issues.append(LoadIssue(display, selection.problem_line, selection.problem, skipped=False))
        elif (branches := off_branch_issue(row_lines[selection.left_out(group)])) is not None:
            issues.append(LoadIssue(display, *branches, skipped=False))
        for earlier, later in selection.duplicates:
            issues.append(LoadIssue(display, rows.tree.lines[later], f"duplicate uuid {rows.tree.ids[later]!r} (also on line "
                                    f"{rows.tree.lines[earlier]}); the later occurrence wins", skipped=False))  # fmt: skip
        builder = _ConversationBuilder(display, tool_names, issues, hold=lines is None)
        for line in row_lines[selection.positions].tolist():
            builder.add(line, raw_entries[line] if lines is None else lines.value(line))
        entries: Sequence[InputEntry]
        source_lines: Mapping[int, tuple[int, ...]]
        if lines is None:
            entries, source_lines = builder.entries()
        else:
            sources = _Sources(builder.columns)
            entries, source_lines = _RebuiltEntries(sources, lines, tool_names, display), _SourceLines(sources)
        sidechain = group_key is not None and not extra_chain
        events = tuple(builder.events) if group_key is not None else tuple(summaries) + tuple(builder.events)
        prompt_calls = builder.prompt_calls()
        del builder
        meta: dict[str, Any] = {
            "format": CLAUDE_CODE_JSONL,
            "sidechain": sidechain,
            "last_line": reader.last_line,
            "source_lines": source_lines,
        }
        first = rows.envelope(first_row)
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
            main_tool_calls = prompt_calls
        conversation_id = (session_id if group_key is None else f"{session_id}:{group_key}" if extra_chain
                           else f"{session_id}:sidechain:{group_key}")  # fmt: skip
        title = None if group_key is not None else custom_title or (summaries[-1].summary if summaries else None)
        # The lines this conversation keeps raw: its group's, or for the main chain every line
        # that no sidechain or extra chain took (lines without a uuid included).
        if group_key is not None:
            here = row_lines[group]
        else:
            every = lines.lines() if lines is not None else np.fromiter(raw_entries, dtype=np.int64, count=len(raw_entries))
            here = every[~np.isin(every, sidechain_lines) & ~np.isin(every, moved_lines)]
        raw_here: Mapping[int, dict[str, Any]] = (
            {line: raw_entries[line] for line in here.tolist()} if lines is None else _KeptRaw(lines, here)
        )  # fmt: skip
        conversations.append(
            LoadedConversation(
                conversation=Conversation(
                    session_id=conversation_id, entries=entries, title=title, source=display, meta=meta  # type: ignore[arg-type]
                ),
                events=events,
                meta={
                    "leaf_path": selection.mode,
                    "off_path_entries": len(group) - len(selection.positions),
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
