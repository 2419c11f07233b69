"""Values every transcript reader returns, and the error for files that are no transcript."""

from __future__ import annotations

from dataclasses import dataclass

from lcm_lab.errors import InputError
from lcm_lab.io.model import LoadedConversation, LoadIssue

PI_JSONL = "pi-jsonl"
CLAUDE_CODE_JSONL = "claude-code-jsonl"
LOCOMO_JSON = "locomo-json"
OPENCLAW_SQLITE = "openclaw-sqlite"
LCM_DB = "lcm-db"  # recognised by detect_format, loaded by the store's lcm.db loader
OPENCLAW_STATE_DIR = "openclaw-state-dir"

TRANSCRIPT_KINDS: tuple[str, ...] = (PI_JSONL, CLAUDE_CODE_JSONL, LOCOMO_JSON, OPENCLAW_SQLITE)

SUPPORTED_FORMATS_TEXT = (
    "supported transcript formats: OpenClaw/pi session JSONL v1-v3 (pi-jsonl), Claude Code session "
    "JSONL (claude-code-jsonl), LoCoMo JSON (locomo-json), OpenClaw SQLite transcript store with a "
    "transcript_events table (openclaw-sqlite); lossless-claw lcm.db files and OpenClaw state "
    "directories are recognised too"
)


class TranscriptFormatError(InputError):
    """The file cannot be read as any supported transcript (says what it looks like instead)."""


@dataclass(frozen=True)
class TranscriptRead:
    """What one transcript file yielded.

    ``conversations`` holds one entry per session found (a pi file has one; a Claude Code file
    has the main chain plus one per sidechain; LoCoMo has ten; a SQLite store one per
    ``session_id``). ``issues`` name file and line for everything skipped or suspicious;
    ``skipped_lines`` counts input lines that were not loaded at all.
    """

    path: str
    kind: str
    conversations: tuple[LoadedConversation, ...]
    issues: tuple[LoadIssue, ...] = ()
    skipped_lines: int = 0
    version: int | str | None = None

    @property
    def message_count(self) -> int:
        """Number of message entries over all conversations."""
        return sum(
            1
            for loaded in self.conversations
            for entry in loaded.conversation.entries
            if entry.message is not None
        )

    @property
    def qa_count(self) -> int:
        """Number of QA items over all conversations."""
        return sum(len(loaded.qa_items) for loaded in self.conversations)
