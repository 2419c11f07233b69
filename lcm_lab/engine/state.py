"""The mutable working state of one conversation during a replay.

It plays the role of lossless-claw's SQLite tables for one conversation: stored messages,
summaries, and the ordered context items. Ordinals are list positions (the plugin resequences
ordinals to 0..n-1 after every compaction write, so only their order ever matters). The stored
token total is kept incrementally so that the per-turn threshold test costs O(1).
"""

from __future__ import annotations

from collections.abc import Iterable

from lcm_lab.engine.compaction.source_text import sender_label
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import ContextItem, LargeFile, StoredMessage, Summary


class EngineState:
    """Messages, summaries and context items of one conversation."""

    def __init__(
        self,
        messages: Iterable[StoredMessage] = (),
        summaries: Iterable[Summary] = (),
        context: Iterable[ContextItem] = (),
        large_files: Iterable[LargeFile] = (),
    ) -> None:
        self.messages: dict[int, StoredMessage] = {m.seq: m for m in messages}
        self.summaries: dict[str, Summary] = {s.summary_id: s for s in summaries}
        self.context: list[ContextItem] = list(context)
        self.large_files: list[LargeFile] = list(large_files)
        self._source_tokens: dict[int, int] = {}
        self.include_sender_tokens = True  # the plugin's accounting (QUIRK 6)
        self._max_seq = max(self.messages, default=0)
        # Bumped by every mutation below, so that derived values (the fresh tail) can be memoised.
        self.version = 0
        # Bumped only when existing context positions change (a range replaced, a /new prune):
        # between two values, the context only grew at its end.
        self.rewrites = 0
        self.stable_event_keys: set[str] = {m.stable_event_key for m in self.messages.values() if m.stable_event_key}
        self._stored = sum(self.stored_item_tokens(item) for item in self.context)

    # -- token measures ------------------------------------------------------------------------
    def stored_item_tokens(self, item: ContextItem) -> int:
        """What ``getContextTokenCount`` adds up: the stored ``token_count`` column."""
        if item.kind == "message":
            message = self.messages.get(int(item.ref))
            return message.token_count if message else 0
        summary = self.summaries.get(str(item.ref))
        return summary.token_count if summary else 0

    def stored_tokens(self) -> int:
        return self._stored

    def message_source_tokens(self, seq: int) -> int:
        """Per-message tokens as compaction counts them: stored count (or an estimate when not
        positive) plus the rendered sender identity of group-chat user messages (§4.2)."""
        cached = self._source_tokens.get(seq)
        if cached is not None:
            return cached
        message = self.messages.get(seq)
        if message is None:
            return 0
        tokens = message.token_count if message.token_count > 0 else estimate_tokens(message.content)
        sender = sender_label(message) if self.include_sender_tokens else None
        if sender:
            tokens += estimate_tokens(sender)
        self._source_tokens[seq] = tokens
        return tokens

    def summary_tokens(self, summary_id: str) -> int:
        summary = self.summaries.get(summary_id)
        if summary is None:
            return 0
        return summary.token_count if summary.token_count > 0 else estimate_tokens(summary.content)

    # -- mutations -----------------------------------------------------------------------------
    def next_seq(self) -> int:
        return self._max_seq + 1

    def append_message(self, message: StoredMessage) -> None:
        self.messages[message.seq] = message
        self._max_seq = max(self._max_seq, message.seq)
        if message.stable_event_key:
            self.stable_event_keys.add(message.stable_event_key)
        item = ContextItem.message(message.seq)
        self.context.append(item)
        self.version += 1
        self._stored += self.stored_item_tokens(item)

    def add_summary(self, summary: Summary, start: int, end: int) -> None:
        """Insert ``summary`` and replace context positions ``start..end`` (inclusive) by it."""
        self.insert_summary(summary)
        self.replace_range(summary.summary_id, start, end)

    def insert_summary(self, summary: Summary) -> None:
        """A summary row that is not (yet) in the context (e.g. a child of a published parent)."""
        self.summaries[summary.summary_id] = summary

    def replace_range(self, summary_id: str, start: int, end: int) -> None:
        """Replace context positions ``start..end`` (inclusive) by the stored summary ``summary_id``."""
        removed = self.context[start : end + 1]
        self._stored -= sum(self.stored_item_tokens(item) for item in removed)
        self._forget_parsed_metadata(removed)
        item = ContextItem.summary(summary_id)
        self.context[start : end + 1] = [item]
        self.version += 1
        self.rewrites += 1
        self._stored += self.stored_item_tokens(item)

    def _forget_parsed_metadata(self, leaving: Iterable[ContextItem]) -> None:
        """The messages among ``leaving`` (context items about to leave the context) drop their
        parts' parsed metadata: a long replay held it for every message it ever saw, a third of
        its memory, while only messages in the context are read again and again."""
        for item in leaving:
            message = self.messages.get(int(item.ref)) if item.kind == "message" else None
            for part in message.parts if message else ():
                part.forget_parsed_metadata()

    def prune_for_new_session(self, retain_depth: int) -> None:
        """``/new``: drop raw messages and summaries shallower than ``retain_depth`` from context."""
        if retain_depth < 0:
            kept = [item for item in self.context if item.kind == "summary"]
        else:
            kept = [
                item
                for item in self.context
                if item.kind == "summary" and self.summaries[str(item.ref)].depth >= retain_depth
            ]
        self._forget_parsed_metadata(self.context)
        self.context = kept
        self.version += 1
        self.rewrites += 1
        self._stored = sum(self.stored_item_tokens(item) for item in self.context)
