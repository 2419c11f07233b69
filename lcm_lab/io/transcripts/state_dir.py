"""An OpenClaw state directory (``~/.openclaw`` or ``$OPENCLAW_STATE_DIR``) as a list of sources.

Layout (OpenClaw's; lossless-claw's ``src/migrate-sessions.ts`` scans the same ``agents/<agent>/sessions``):

* ``lcm.db`` — lossless-claw's database (loaded by the store's lcm.db loader);
* ``agents/<agentId>/sessions/<sessionId>.jsonl`` — session transcripts (JSONL era), with
  ``sessions.json`` mapping session keys to session ids/files; reset or deleted generations
  are kept as ``<file>.jsonl.reset.<ts>`` / ``.deleted.<ts>`` (archived); pre-compaction
  checkpoints ``*.checkpoint.*.jsonl`` duplicate the live file and are listed only on request;
* ``agents/<agentId>/agent/openclaw-agent.sqlite`` — the SQLite transcript store (≥ 2026.9).

:func:`scan_state_dir` lists what is there (cheap: no parsing) so a loader can show progress;
:func:`read_state_dir_item` reads one listed transcript with its session key and archive flag.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from tqdm.auto import tqdm

from lcm_lab.errors import InputFileError
from lcm_lab.io.data_paths import within
from lcm_lab.io.file_kind import unreadable_reason
from lcm_lab.io.model import LoadedConversation, LoadIssue
from lcm_lab.io.transcripts.base import (
    LCM_DB,
    OPENCLAW_SQLITE,
    PI_JSONL,
    TranscriptFormatError,
    TranscriptRead,
)
from lcm_lab.io.transcripts.jsonl import UTF8_BOM, parse_json_bytes, read_all_bytes

_ARCHIVED = re.compile(r"\.jsonl\.(reset|deleted)(\.|$)")
_CHECKPOINT = re.compile(r"\.checkpoint\..*\.jsonl$")


@dataclass(frozen=True)
class StateDirItem:
    """One loadable source inside a state directory."""

    path: Path
    kind: str  # pi-jsonl | openclaw-sqlite | lcm-db
    agent_id: str | None = None
    session_key: str | None = None
    archived: bool = False
    checkpoint: bool = False
    size: int = 0


@dataclass(frozen=True)
class StateDirScan:
    """Everything found under a state directory, in load order (lcm.db last)."""

    root: Path
    items: tuple[StateDirItem, ...]
    issues: tuple[LoadIssue, ...] = ()

    @property
    def total_bytes(self) -> int:
        return sum(item.size for item in self.items)


def _session_keys(sessions_json: Path, root: Path, issues: list[LoadIssue]) -> dict[str, str]:
    """Map session id and transcript file name → session key from ``sessions.json``.

    The index is read like every other file of the state directory: a link out of it is not
    followed, and like every one-document JSON input: a FIFO or device is not opened and at
    most the line cap (``LCM_LAB_MAX_LINE_MB``) is read. Each refusal is an issue naming the
    file (the transcripts still load, without session keys)."""

    def unknown(problem: str) -> dict[str, str]:
        issues.append(LoadIssue(str(sessions_json), None, f"session index: {problem}; session keys unknown", skipped=False))
        return {}

    if not within(sessions_json, root):
        return unknown(f"a link to {os.path.realpath(sessions_json)}, outside the state directory, not read")
    reason = unreadable_reason(sessions_json)
    if reason is not None:
        return unknown(f"{reason}, not read")
    try:
        store = parse_json_bytes(read_all_bytes(sessions_json).removeprefix(UTF8_BOM))
    except InputFileError as error:
        return unknown(error.problem)
    except (OSError, ValueError) as error:
        return unknown(f"not readable as JSON ({error})")
    if not isinstance(store, dict):
        return unknown("not a JSON object")
    keys: dict[str, str] = {}
    for session_key, record in store.items():
        if not isinstance(record, dict):
            continue
        if isinstance(record.get("sessionId"), str):
            keys[record["sessionId"]] = session_key
        if isinstance(record.get("sessionFile"), str):
            keys[Path(record["sessionFile"]).name] = session_key
    return keys


def _readable(path: Path, root: Path, issues: list[LoadIssue]) -> int | None:
    if not within(path, root):
        issues.append(LoadIssue(str(path), None, f"a link to {os.path.realpath(path)}, outside the state directory; "
                                                 "skipped (pass that file itself to load it)"))  # fmt: skip
        return None
    try:
        size = path.stat().st_size
        if not os.access(path, os.R_OK):  # the same error open() gives (root passes this check)
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        with path.open("rb"):
            pass
    except OSError as error:
        issues.append(LoadIssue(str(path), None, f"cannot read file ({error}); skipped"))
        return None
    return size


def _session_item(path: Path, agent_id: str, keys: dict[str, str], size: int) -> StateDirItem:
    name = path.name
    archived = bool(_ARCHIVED.search(name))
    base = name.split(".jsonl", 1)[0]
    session_key = keys.get(f"{base}.jsonl") or keys.get(base)
    return StateDirItem(
        path=path,
        kind=PI_JSONL,
        agent_id=agent_id,
        session_key=session_key,
        archived=archived,
        checkpoint=bool(_CHECKPOINT.search(name)),
        size=size,
    )


def scan_state_dir(root: str | Path, *, include_checkpoints: bool = False) -> StateDirScan:
    """List the transcripts and databases of an OpenClaw state directory (no parsing).

    Unreadable files are reported as issues and left out.

    >>> scan = scan_state_dir("~/.openclaw")  # doctest: +SKIP
    >>> [(item.kind, item.path.name) for item in scan.items]  # doctest: +SKIP
    [('pi-jsonl', 'ab9b….jsonl'), ('lcm-db', 'lcm.db')]
    """
    root_path = Path(root).expanduser()
    if not root_path.is_dir():
        raise TranscriptFormatError(f"{root_path}: not a directory")
    issues: list[LoadIssue] = []
    items: list[StateDirItem] = []
    agents = root_path / "agents"
    for agent_dir in sorted(p for p in agents.iterdir() if p.is_dir()) if agents.is_dir() else ():
        agent_id = agent_dir.name
        sessions = agent_dir / "sessions"
        index = sessions / "sessions.json"
        keys = _session_keys(index, root_path, issues) if index.is_file() else {}
        if sessions.is_dir():
            for path in sorted(sessions.iterdir()):
                if ".jsonl" not in path.name or path.is_dir():
                    continue
                size = _readable(path, root_path, issues)
                if size is None:
                    continue
                item = _session_item(path, agent_id, keys, size)
                if item.checkpoint and not include_checkpoints:
                    continue
                items.append(item)
        store = agent_dir / "agent" / "openclaw-agent.sqlite"
        if store.is_file():
            size = _readable(store, root_path, issues)
            if size is not None:
                items.append(StateDirItem(store, OPENCLAW_SQLITE, agent_id=agent_id, size=size))
    lcm_db = root_path / "lcm.db"
    if lcm_db.is_file():
        size = _readable(lcm_db, root_path, issues)
        if size is not None:
            items.append(StateDirItem(lcm_db, LCM_DB, size=size))
    if not items and not issues:
        raise TranscriptFormatError(
            f"{root_path}: no agents/*/sessions/*.jsonl, agents/*/agent/openclaw-agent.sqlite or lcm.db found; "
            "not an OpenClaw state directory"
        )
    return StateDirScan(root_path, tuple(items), tuple(issues))


def read_state_dir_item(item: StateDirItem, *, reread: bool = False) -> TranscriptRead:
    """Read one transcript item of a scan, stamping session key, agent and archive flag
    (``reread``: as :func:`~lcm_lab.io.transcripts.read_transcript`)."""
    from lcm_lab.io.transcripts import read_transcript  # late: the package imports this module

    if item.kind == LCM_DB:
        raise TranscriptFormatError(f"{item.path}: an lcm.db is loaded by the store's lcm.db loader, not as a transcript")
    read = read_transcript(item.path, kind=item.kind, reread=reread)
    stamped: list[LoadedConversation] = []
    for loaded in read.conversations:
        conversation = loaded.conversation
        if item.session_key is not None and conversation.session_key is None:
            conversation = replace(conversation, session_key=item.session_key)
        stamped.append(
            replace(
                loaded,
                conversation=conversation,
                archived=loaded.archived or item.archived,
                meta={**loaded.meta, "agent_id": item.agent_id, "checkpoint": item.checkpoint},
            )
        )
    return replace(read, conversations=tuple(stamped))


def iter_state_dir(
    root: str | Path, *, progress: bool = True, include_checkpoints: bool = False
) -> Iterator[tuple[StateDirItem, TranscriptRead | TranscriptFormatError | None]]:
    """Read every transcript of a state directory with a progress bar (bytes).

    Yields ``(item, read)``; ``read`` is ``None`` for ``lcm-db`` items (the store loads those)
    and the :class:`TranscriptFormatError` for a file that could not be read at all, so one bad
    file never stops the rest.
    """
    scan = scan_state_dir(root, include_checkpoints=include_checkpoints)
    with tqdm(total=scan.total_bytes, unit="B", unit_scale=True, disable=not progress, desc="transcripts") as bar:
        for item in scan.items:
            result: TranscriptRead | TranscriptFormatError | None
            if item.kind == LCM_DB:
                result = None
            else:
                try:
                    result = read_state_dir_item(item)
                except TranscriptFormatError as error:
                    result = error
            bar.update(item.size)
            yield item, result
