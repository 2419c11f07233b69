"""Which lossless-claw release wrote an lcm.db, read from its schema alone.

lossless-claw keeps no schema version number (src/db/migration.ts ``runLcmMigrations`` probes
``PRAGMA table_info`` and adds what is missing), so the presence of tables and columns is the
version. Each marker below is the first release tag whose ``src/db/migration.ts`` creates that
table or column (checked with ``git show <tag>:src/db/migration.ts`` over every tag of the
upstream repository). A file matches the newest marker it has; releases between two markers
changed nothing in the schema, so the answer is a range of releases.

1.0 (the ``next/1.0`` line) is recognised by its pending-summary tables. It dropped
``messages.openclaw_sender_metadata`` and ``conversation_bootstrap_state`` from a fresh schema
but does not remove them from a file it upgrades, so a 1.0 file that still has them was written
by an older release first (:attr:`LcmDbVersion.upgraded_from_0x`).

>>> detect_version({"conversations": ("conversation_id",), "messages": ("message_id",), "summaries": ("model",)}).label
'0.5.0–0.5.3'
>>> detect_version({"pending_compaction_batches": ("batch_id",), "messages": ("message_id",)}).label
'1.0'
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import NamedTuple

# Release tags of the 0.x line, oldest first (upstream `git tag`, pre-releases left out).
RELEASES_0X: tuple[str, ...] = (
    "0.1.2", "0.1.3", "0.1.4", "0.3.0", "0.4.0", "0.5.0", "0.5.1", "0.5.2", "0.5.3", "0.6.0", "0.6.1",
    "0.6.2", "0.6.3", "0.7.0", "0.8.0", "0.8.1", "0.8.2", "0.9.0", "0.9.1", "0.9.2", "0.9.3", "0.9.4",
    "0.10.0", "0.11.0", "0.11.1", "0.11.2", "0.11.3", "0.12.0", "0.13.0", "0.13.1", "0.13.2", "0.14.0",
    "0.15.0", "0.15.1", "0.15.2", "0.15.3",
)  # fmt: skip

# (first release with it, table or table.column), newest first.
_MARKERS: tuple[tuple[str, str], ...] = (
    ("0.15.2", "messages.openclaw_sender_metadata"),
    ("0.14.0", "conversations.archive_cause"),
    ("0.13.0", "messages.transcript_entry_id"),
    ("0.12.0", "conversation_compaction_maintenance.retry_attempts"),
    ("0.11.0", "focus_briefs"),
    ("0.10.0", "messages.large_content"),
    ("0.9.2", "conversation_compaction_telemetry.last_observed_prompt_token_count"),
    ("0.9.0", "messages.identity_hash"),
    ("0.8.1", "lcm_migration_state"),
    ("0.7.0", "conversation_compaction_telemetry"),
    ("0.6.0", "conversations.archived_at"),
    ("0.5.0", "summaries.model"),
    ("0.4.0", "conversations.session_key"),
    ("0.3.0", "summaries.descendant_token_count"),
)
# Main after the v0.15.3 tag (4214b480, the engine the lab replays as "0.15.3") adds this column;
# such a file is labelled MAIN_AFTER_0153.
_MAIN_AFTER_0153_MARKER = "conversation_compaction_maintenance.resolution_reason"
MAIN_AFTER_0153 = "0.15.3+"
V1_MARKER = "pending_compaction_batches"
# What a fresh 1.0 schema no longer has (a 1.0 file with them was upgraded from 0.x).
V1_DROPPED: tuple[str, ...] = ("messages.openclaw_sender_metadata", "conversation_bootstrap_state")


class LcmDbVersion(NamedTuple):
    """The releases whose schema an lcm.db has: ``first`` to ``last`` (tags without the ``v``)."""

    first: str
    last: str
    upgraded_from_0x: bool = False

    @property
    def is_v1(self) -> bool:
        return self.first.startswith("1.")

    @property
    def label(self) -> str:
        """``1.0``, ``0.12.0`` or a range such as ``0.14.0–0.15.1``."""
        if self.is_v1:
            return "1.0"
        return self.first if self.first == self.last else f"{self.first}–{self.last}"

    def describe(self) -> str:
        """One line for a person: which releases, and whether a 1.0 file was upgraded."""
        if self.is_v1:
            base = "lossless-claw 1.0 (next/1.0 line: pending summaries, turn receipts, no sender metadata)"
            return base + ("; upgraded from a 0.x file (its legacy sender metadata / bootstrap table kept)"
                           if self.upgraded_from_0x else "")  # fmt: skip
        if self.first == MAIN_AFTER_0153:
            return "lossless-claw 0.15.3 (main after the v0.15.3 tag)"
        return f"lossless-claw {self.label}" + ("" if self.first == self.last else " (same schema in every release of the range)")

    def includes(self, release: str) -> bool:
        """Whether ``release`` (e.g. ``0.9.0``, ``1.0``) has this schema."""
        if self.is_v1 or release.startswith("1."):
            return self.is_v1 == release.startswith("1.")
        if self.first == MAIN_AFTER_0153:
            return release == "0.15.3"
        order = RELEASES_0X.index
        return release in RELEASES_0X and order(self.first) <= order(release) <= order(self.last)


def _has(columns: Mapping[str, Collection[str]], marker: str) -> bool:
    table, _, column = marker.partition(".")
    return table in columns and (not column or column in columns[table])


def detect_version(columns: Mapping[str, Collection[str]]) -> LcmDbVersion:
    """The release range of a schema given as ``{table: column names}`` (every table of the file)."""
    if _has(columns, V1_MARKER):
        return LcmDbVersion("1.0.0-beta.0", "1.0", any(_has(columns, m) for m in V1_DROPPED))
    if _has(columns, _MAIN_AFTER_0153_MARKER):
        return LcmDbVersion(MAIN_AFTER_0153, MAIN_AFTER_0153)
    next_first = None
    for first, marker in _MARKERS:
        if _has(columns, marker):
            return LcmDbVersion(first, _release_before(next_first))
        next_first = first
    return LcmDbVersion("0.1.2", _release_before(next_first))


def _release_before(release: str | None) -> str:
    if release is None:
        return RELEASES_0X[-1]
    return RELEASES_0X[RELEASES_0X.index(release) - 1]


__all__ = ["MAIN_AFTER_0153", "RELEASES_0X", "V1_DROPPED", "LcmDbVersion", "detect_version"]
