"""The recall index: searchable documents of loaded conversations and replays, in DuckDB.

``index_conversation`` and ``index_replay`` copy a target's messages, summaries, large-file
payloads and summary edges into ``recall_docs``/``recall_edges`` (migration ``m008_recall``);
``search`` runs one ``lcm_grep`` query over chosen targets: regex through DuckDB's RE2
(``regexp_matches``), full text through DuckDB's ``fts`` extension (BM25, Porter stemmer, no stop
words — the plugin's FTS5 tables use ``porter unicode61``), loaded offline from the PyPI wheel
(one of the lab's three BM25s, each for its own job: ``docs/metrics.md``, "Three BM25s").

>>> from lcm_lab.store import LabStore
>>> store = LabStore(":memory:")
>>> fts_extension_path().name
'fts.duckdb_extension'
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from lcm_lab.errors import OptionError, UnknownNameError
from lcm_lab.io.data_paths import NOT_ON_DISK, payload_dir, resolve_data_path
from lcm_lab.store._duckdb import duckdb
from lcm_lab.store.core import LabStore, extension_path

FILE_SCAN_BYTES = 512_000  # the plugin searches the first 512,000 bytes of a large file
# Tokens as FTS5's unicode61 sees them (runs of letters and digits in any script), lower-cased;
# the plugin indexes with the Porter stemmer and keeps stop words, so the lab does too.
FTS_IGNORE = r"[^\p{L}\p{N}]+"

_DOC_COLUMNS = (
    "doc_key", "target", "conversation_id", "doc_type", "doc_id", "seq", "role", "kind", "depth",
    "token_count", "created_at", "created_ts", "content", "meta",
)  # fmt: skip
_TS = "TRY_CAST(replace(replace({c}, 'T', ' '), 'Z', '') AS TIMESTAMP)"


def fts_extension_path() -> Path:
    """DuckDB's full-text-search extension shipped in the PyPI package of the same duckdb version."""
    return extension_path("fts")


def load_fts(store: LabStore) -> None:
    """Load the fts extension from the local package (never INSTALL from the network)."""
    if not store._fts_loaded:  # reset by the store when its idle connection was closed and reopened
        store.con.execute(f"LOAD '{fts_extension_path()}'")
        store._fts_loaded = True


def targets_df(store: LabStore) -> pd.DataFrame:
    """The indexed targets (one row per conversation or run)."""
    return store.fetch_df("SELECT * FROM recall_targets ORDER BY indexed_at, target")


def is_indexed(store: LabStore, target: str) -> bool:
    return bool(store.fetch_all("SELECT 1 FROM recall_targets WHERE target = ?", [target]))


def _drop_target(store: LabStore, target: str) -> None:
    for table in ("recall_docs", "recall_edges", "recall_targets"):
        store.execute(f"DELETE FROM {table} WHERE target = ?", [target])


def conversation_family(store: LabStore, conversation_id: int) -> str:
    """The session family of a loaded conversation: same source and stable session identity."""
    row = store.fetch_all(
        "SELECT source_id, coalesce(session_key, session_id, CAST(conversation_id AS VARCHAR))"
        " FROM conversations WHERE conversation_id = ?",
        [conversation_id],
    )
    if not row:
        raise UnknownNameError(f"no conversation {conversation_id} in the lab store; see `lcm-lab load` and store.conversations_df()")
    return f"{row[0][0]}:{row[0][1]}"


def family_conversation_ids(store: LabStore, conversation_id: int) -> list[int]:
    """Loaded conversations in the session family of ``conversation_id`` (itself included)."""
    family = conversation_family(store, conversation_id)
    rows = store.fetch_all(
        "SELECT conversation_id FROM conversations WHERE source_id || ':' ||"
        " coalesce(session_key, session_id, CAST(conversation_id AS VARCHAR)) = ? ORDER BY conversation_id",
        [family],
    )
    return [int(r[0]) for r in rows]


def index_conversation(store: LabStore, conversation_id: int, *, refresh: bool = False) -> str:
    """Index one loaded conversation; returns its target (``conversation:<id>``)."""
    conversation_family(store, conversation_id)  # a clear error for an unknown id
    return index_conversations(store, [conversation_id], refresh=refresh)[0]


def index_conversations(store: LabStore, conversation_ids: Sequence[int], *, refresh: bool = False) -> list[str]:
    """Index loaded conversations in bulk (all in SQL: a 500k-message store indexes in seconds)."""
    ids = [int(c) for c in conversation_ids]
    targets = [f"conversation:{c}" for c in ids]
    todo = [c for c, t in zip(ids, targets, strict=True) if refresh or not is_indexed(store, t)]
    for c, t in zip(ids, targets, strict=True):
        if c not in todo:
            _forget_refused_files(store, t, c)
    if not todo:
        return targets
    store.con.register("_recall_todo", pd.DataFrame({"conversation_id": pd.Series(todo, dtype="int64")}))
    try:
        with store.transaction():
            for c in todo if refresh else ():
                _drop_target(store, f"conversation:{c}")
            _bulk_insert(store)
            for c in todo:
                files = store.fetch_all(
                    "SELECT file_id, storage_uri, created_at, file_name, mime_type, byte_size, exploration_summary"
                    " FROM large_files WHERE conversation_id = ?",
                    [c],
                )
                missing = _insert_files(store, f"conversation:{c}", c, files)
                if missing:
                    store.execute("UPDATE _recall_missing SET n = n + ? WHERE conversation_id = ?", [missing, c])
            store.execute(
                """
                INSERT INTO recall_targets (target, kind, run_id, conversation_id, family, label, docs, files_without_payload)
                SELECT 'conversation:' || c.conversation_id, 'conversation', NULL, c.conversation_id,
                       c.source_id || ':' || coalesce(c.session_key, c.session_id, CAST(c.conversation_id AS VARCHAR)),
                       NULL, (SELECT count(*) FROM recall_docs d WHERE d.target = 'conversation:' || c.conversation_id),
                       m.n
                FROM conversations c JOIN _recall_missing m USING (conversation_id)
                """
            )
            store.execute("DROP TABLE _recall_missing")
    finally:
        store.con.unregister("_recall_todo")
    return targets


def _bulk_insert(store: LabStore) -> None:
    """Messages, summaries and edges of the conversations in ``_recall_todo``."""
    store.execute("CREATE TEMP TABLE _recall_missing AS SELECT conversation_id, 0 AS n FROM _recall_todo")
    base = store.next_id("recall_docs", "doc_key")
    store.execute(
        f"""
        INSERT INTO recall_docs
        SELECT ? + row_number() OVER (ORDER BY conversation_id, seq), 'conversation:' || conversation_id,
               conversation_id, 'message', CAST(coalesce(origin_message_id, seq) AS VARCHAR), seq, role, NULL, NULL,
               token_count, created_at, {_TS.format(c="created_at")}, coalesce(content, ''), NULL
        FROM messages WHERE conversation_id IN (SELECT conversation_id FROM _recall_todo)
        """,
        [base],
    )
    base = store.next_id("recall_docs", "doc_key")
    store.execute(
        f"""
        INSERT INTO recall_docs
        SELECT ? + row_number() OVER (ORDER BY conversation_id, creation_order, summary_id), 'conversation:' || conversation_id,
               conversation_id, 'summary', summary_id, NULL, NULL, kind, depth, token_count, coalesce(created_at, latest_at),
               {_TS.format(c="coalesce(created_at, latest_at)")}, content,
               to_json({{'earliest_at': earliest_at, 'latest_at': latest_at, 'descendant_count': descendant_count,
                        'file_ids': file_ids, 'model': model}})::VARCHAR
        FROM summaries WHERE conversation_id IN (SELECT conversation_id FROM _recall_todo)
        """,
        [base],
    )
    store.execute(
        "INSERT INTO recall_edges SELECT 'conversation:' || conversation_id, summary_id, ordinal, source_summary_id, NULL"
        " FROM summary_sources WHERE conversation_id IN (SELECT conversation_id FROM _recall_todo)"
    )
    store.execute(
        "INSERT INTO recall_edges SELECT 'conversation:' || conversation_id, summary_id, ordinal, NULL, seq"
        " FROM summary_messages WHERE conversation_id IN (SELECT conversation_id FROM _recall_todo)"
    )


def _payload_root(store: LabStore, conversation_id: int) -> Path | None:
    """The payload directory beside the lcm.db a loaded conversation came from."""
    rows = store.fetch_all(
        "SELECT s.path FROM conversations c JOIN sources s USING (source_id) WHERE c.conversation_id = ?", [conversation_id]
    )
    return payload_dir(rows[0][0]) if rows and rows[0][0] else None


def _read_payload(uri: str | None, root: Path | None) -> str | None:
    """The first 512,000 bytes of a large file, read-only, or ``None`` when it is not on disk or
    its recorded path is refused (:func:`lcm_lab.io.data_paths.resolve_data_path`)."""
    if not uri or root is None:
        return None
    path = resolve_data_path(uri, root).path
    if path is None:
        return None
    try:
        with path.open("rb") as handle:
            return handle.read(FILE_SCAN_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None


def _forget_refused_files(store: LabStore, target: str, conversation_id: int) -> None:
    """Drop file documents an earlier index copied from a path the resolver now refuses (a store
    indexed before paths were confined must not keep serving what it read)."""
    root = _payload_root(store, conversation_id)
    rows = store.fetch_all("SELECT doc_key, meta FROM recall_docs WHERE target = ? AND doc_type = 'file'", [target])
    stale = [key for key, meta in rows
             if root is None or resolve_data_path(str(json.loads(meta or "{}").get("storage_uri") or ""), root).path is None]  # fmt: skip
    if stale:
        with store.transaction():
            store.execute(f"DELETE FROM recall_docs WHERE doc_key IN ({', '.join('?' * len(stale))})", stale)
            store.execute("UPDATE recall_targets SET files_without_payload = files_without_payload + ?, docs = docs - ?"
                          " WHERE target = ?", [len(stale), len(stale), target])  # fmt: skip


def refused_payloads(store: LabStore, targets: Sequence[str], *, include_missing: bool = False) -> list[tuple[str, str, str]]:
    """``(file_id, storage_uri, problem)`` of the loaded conversations' large files in ``targets``
    whose recorded path the resolver refuses (it leaves the payload directory); with
    ``include_missing``, also those whose payload is not on disk or that record no path."""
    ids = [int(t.split(":", 1)[1]) for t in targets if t.startswith("conversation:")]
    refused = []
    for conversation_id in ids:
        root = _payload_root(store, conversation_id)
        rows = store.fetch_all("SELECT file_id, storage_uri FROM large_files WHERE conversation_id = ? ORDER BY file_id",
                               [conversation_id])  # fmt: skip
        for file_id, uri in rows:
            if uri and root is not None:
                problem = resolve_data_path(uri, root).problem
            else:
                problem = NOT_ON_DISK if uri else "empty"
            missing = problem in (NOT_ON_DISK, "empty")
            if problem is not None and (include_missing or not missing):
                refused.append((str(file_id), str(uri or ""), problem))
    return refused


def _insert_files(store: LabStore, target: str, conversation_id: int | None, files: Iterable[tuple[Any, ...]]) -> int:
    rows, missing = [], 0
    root = None if conversation_id is None else _payload_root(store, conversation_id)
    for file_id, uri, created_at, name, mime, size, exploration in files:
        payload = _read_payload(uri, root)
        if payload is None:
            missing += 1
            continue
        meta = {"file_name": name, "mime_type": mime, "byte_size": size, "exploration_summary": exploration, "storage_uri": uri}
        rows.append({"doc_type": "file", "doc_id": file_id, "created_at": created_at, "content": payload, "meta": json.dumps(meta)})
    _insert_docs(store, target, conversation_id, rows)
    return missing


def _insert_docs(store: LabStore, target: str, conversation_id: int | None, rows: Sequence[Mapping[str, Any]]) -> None:
    if not rows:
        return
    base = store.next_id("recall_docs", "doc_key")
    frame = pd.DataFrame([{c: row.get(c) for c in _DOC_COLUMNS} for row in rows])
    frame["doc_key"] = range(base, base + len(rows))
    frame["target"] = target
    frame["conversation_id"] = conversation_id
    frame = frame.astype({"seq": "Int64", "depth": "Int64", "token_count": "Int64", "created_ts": "object"})
    store.con.register("_recall_rows", frame)
    try:
        store.execute(
            f"INSERT INTO recall_docs SELECT doc_key, target, conversation_id, doc_type, doc_id, seq, role, kind, depth,"
            f" token_count, created_at, {_TS.format(c='created_at')}, content, meta FROM _recall_rows"
        )
    finally:
        store.con.unregister("_recall_rows")


def index_documents(
    store: LabStore,
    target: str,
    *,
    kind: str,
    family: str,
    docs: Sequence[Mapping[str, Any]],
    edges: Sequence[tuple[str, int, str | None, int | None]],
    run_id: str | None = None,
    conversation_id: int | None = None,
    label: str | None = None,
    files_without_payload: int = 0,
) -> str:
    """Index a target given as documents (``doc_type``, ``doc_id``, ``content``, …) and edges
    ``(summary_id, ordinal, source_summary_id, source_seq)``; replaces an earlier index of it."""
    with store.transaction():
        _drop_target(store, target)
        _insert_docs(store, target, conversation_id, docs)
        if edges:
            frame = pd.DataFrame(edges, columns=["summary_id", "ordinal", "source_summary_id", "source_seq"])
            frame = frame.astype({"source_seq": "Int64"})
            store.con.register("_recall_edges", frame)
            try:
                store.execute(
                    "INSERT INTO recall_edges SELECT ?, summary_id, ordinal, source_summary_id, source_seq FROM _recall_edges",
                    [target],
                )
            finally:
                store.con.unregister("_recall_edges")
        store.execute(
            "INSERT INTO recall_targets (target, kind, run_id, conversation_id, family, label, docs, files_without_payload)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [target, kind, run_id, conversation_id, family, label, len(docs), files_without_payload],
        )
    return target


def ensure_fts(store: LabStore) -> None:
    """(Re)build the BM25 index when the documents changed since it was built."""
    load_fts(store)
    count, max_key = store.fetch_all("SELECT count(*), coalesce(max(doc_key), 0) FROM recall_docs")[0]
    built = store.fetch_all("SELECT built_docs, built_max_key FROM recall_fts_state")
    if built and tuple(built[0]) == (count, max_key):
        return
    with store.bulk_load():  # under the load's memory cap: uncapped, a 260k-message store's index took 1.1 GB
        store.execute(
            f"PRAGMA create_fts_index('recall_docs', 'doc_key', 'content', stemmer = 'porter', stopwords = 'none',"
            f" ignore = '{FTS_IGNORE}', strip_accents = 1, lower = 1, overwrite = 1)"
        )
        store.execute("DELETE FROM recall_fts_state")
        store.execute("INSERT INTO recall_fts_state VALUES (?, ?)", [count, max_key])


TIME_FORMS = "an ISO 8601 date or time, e.g. 2025-06-01, 2025-06-01T12:30 or 2025-06-01T12:30:00Z"


def timestamp(value: str | dt.datetime | None, name: str = "since") -> dt.datetime | None:
    """A ``since``/``before`` bound as naive UTC; :class:`OptionError` naming ``name`` when it is
    not a date or time.

    >>> timestamp("2025-06-01T12:30:00Z")
    datetime.datetime(2025, 6, 1, 12, 30)
    >>> timestamp("2025-13-45", "before")
    Traceback (most recent call last):
    lcm_lab.errors.OptionError: before '2025-13-45': month must be in 1..12; expected an ISO 8601 date or time, e.g. 2025-06-01, 2025-06-01T12:30 or 2025-06-01T12:30:00Z
    """
    if value is None or isinstance(value, dt.datetime):
        return value
    try:
        parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        reason = "not a date or time" if str(exc).startswith("Invalid isoformat") else str(exc)
        raise OptionError(f"{name} {value!r}: {reason}; expected {TIME_FORMS}") from None
    return parsed.astimezone(dt.UTC).replace(tzinfo=None) if parsed.tzinfo else parsed



def search(
    store: LabStore,
    targets: Sequence[str],
    *,
    doc_types: Sequence[str],
    regex: str | None = None,
    fts_query: str | None = None,
    phrase_patterns: Sequence[str] = (),
    since: str | dt.datetime | None = None,
    before: str | dt.datetime | None = None,
    sort: str = "recency",
    limit: int = 50,
    hybrid_weight: float = 0.7,
    conjunctive: bool = True,
) -> tuple[list[dict[str, Any]], int]:
    """Matching documents as dicts (at most ``limit``, in ``sort`` order) and the total number of matches.

    Exactly one of ``regex`` (RE2, case-sensitive unless ``(?i)``) and ``fts_query`` (BM25 over
    stemmed terms, every term required) is given; ``phrase_patterns`` are extra RE2 filters
    (quoted phrases); ``conjunctive=False`` lets full text match any term. ``relevance`` is the BM25 score (full text) or the number of regex
    matches; ``hybrid`` blends relevance normalised by its maximum (weight ``hybrid_weight``)
    with recency normalised over the matches' time span.
    """
    if not targets:
        return [], 0
    params: list[Any] = []
    where = [f"doc_type IN ({', '.join('?' for _ in doc_types)})"]
    params += list(doc_types)
    if set(targets) != set(all_targets(store)):  # every target: no filter to evaluate
        where.append(f"target IN ({', '.join('?' for _ in targets)})")
        params += list(targets)
    if since is not None:
        where.append("created_ts >= ?")
        params.append(timestamp(since, "since"))
    if before is not None:
        where.append("created_ts < ?")
        params.append(timestamp(before, "before"))
    for pattern in phrase_patterns:
        where.append("regexp_matches(content, ?)")
        params.append(pattern)
    if regex is not None:
        where.append("regexp_matches(content, ?)")
        params.append(regex)
        # Counting matches costs a second regex pass: only when the order needs it.
        relevance = "1.0" if sort == "recency" else "len(regexp_extract_all(content, ?))"
        select_params: list[Any] = [] if sort == "recency" else [regex]
    elif fts_query is not None:
        ensure_fts(store)
        relevance = f"fts_main_recall_docs.match_bm25(doc_key, ?, conjunctive := {int(conjunctive)})"
        select_params = [fts_query]
    else:
        raise ValueError("search needs a regex or a full-text query")
    # A regex hit always has relevance ≥ 1: filtering on it again would let DuckDB push the
    # match-counting regex below the target filter and run it over every document of the store.
    keep = "TRUE" if regex is not None else "relevance IS NOT NULL AND relevance > 0"
    order = {
        "recency": "created_ts DESC NULLS LAST, doc_key DESC",
        "relevance": "relevance DESC, created_ts DESC NULLS LAST, doc_key DESC",
        "hybrid": "hybrid DESC, relevance DESC, doc_key DESC",
    }[sort]
    # The scores and their window run over the keys only; the documents are read for the shown
    # hits (the whole rows of 260k hits under one window took 770 MB for a 50-line answer).
    sql = f"""
        WITH hits AS (
            SELECT doc_key, created_ts, {relevance} AS relevance FROM recall_docs
            WHERE {" AND ".join(where)}
        ), matched AS (
            SELECT * FROM hits WHERE {keep}
        ), scored AS (
            SELECT *, count(*) OVER () AS total,
                   ? * relevance / nullif(max(relevance) OVER (), 0)
                   + (1 - ?) * coalesce(
                       (epoch(created_ts) - min(epoch(created_ts)) OVER ())
                       / nullif(max(epoch(created_ts)) OVER () - min(epoch(created_ts)) OVER (), 0), 1.0) AS hybrid
            FROM matched
        ), shown AS (
            SELECT doc_key, relevance, total, hybrid, row_number() OVER (ORDER BY {order}) AS shown_rank
            FROM (SELECT * FROM scored ORDER BY {order} LIMIT ?)
        )
        SELECT d.*, shown.relevance, shown.total, shown.hybrid
        FROM shown JOIN recall_docs d USING (doc_key) ORDER BY shown.shown_rank
    """
    try:
        cursor = store.execute(sql, [*select_params, *params, hybrid_weight, hybrid_weight, limit])
    except duckdb.InvalidInputException as exc:
        if regex is None:
            raise
        reason = str(exc).splitlines()[0].removeprefix("Invalid Input Error: ")
        raise OptionError(f"invalid regex {regex!r}: {reason} (RE2 syntax, see https://github.com/google/re2/wiki/Syntax)") from None
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    return rows, int(rows[0]["total"]) if rows else 0


def documents(store: LabStore, targets: Sequence[str], doc_id: str, doc_types: Sequence[str] = ("summary", "file")) -> pd.DataFrame:
    """Every indexed document with id ``doc_id`` among ``targets`` (summaries and files by default)."""
    marks = ", ".join("?" for _ in targets)
    kinds = ", ".join("?" for _ in doc_types)
    return store.fetch_df(
        f"SELECT * FROM recall_docs WHERE doc_id = ? AND target IN ({marks}) AND doc_type IN ({kinds}) ORDER BY doc_key",
        [doc_id, *targets, *doc_types],
    )


def messages_by_seq(store: LabStore, target: str, seqs: Sequence[int]) -> pd.DataFrame:
    """The message documents of ``target`` with these seqs (in seq order)."""
    if not seqs:
        return pd.DataFrame(columns=list(_DOC_COLUMNS))
    marks = ", ".join("?" for _ in seqs)
    return store.fetch_df(
        f"SELECT * FROM recall_docs WHERE target = ? AND doc_type = 'message' AND seq IN ({marks}) ORDER BY seq",
        [target, *seqs],
    )


def summaries_of(store: LabStore, target: str) -> pd.DataFrame:
    """The summary documents of ``target``."""
    return store.fetch_df("SELECT * FROM recall_docs WHERE target = ? AND doc_type = 'summary' ORDER BY doc_key", [target])


def edges_of(store: LabStore, target: str) -> list[tuple[str, int, str | None, int | None]]:
    """The summary -> source edges of ``target``, in (summary, ordinal) order."""
    rows = store.fetch_all(
        "SELECT summary_id, ordinal, source_summary_id, source_seq FROM recall_edges WHERE target = ?"
        " ORDER BY summary_id, source_summary_id IS NULL, ordinal",
        [target],
    )
    return [(r[0], int(r[1]), r[2], None if r[3] is None else int(r[3])) for r in rows]


def family_targets(store: LabStore, target: str) -> list[str]:
    """Every indexed target of the same session family as ``target`` (itself included)."""
    rows = store.fetch_all(
        "SELECT target FROM recall_targets WHERE family = (SELECT family FROM recall_targets WHERE target = ?) ORDER BY target",
        [target],
    )
    return [r[0] for r in rows]


def all_targets(store: LabStore) -> list[str]:
    return [r[0] for r in store.fetch_all("SELECT target FROM recall_targets ORDER BY target")]


def target_info(store: LabStore, target: str) -> dict[str, Any]:
    rows = store.fetch_df("SELECT * FROM recall_targets WHERE target = ?", [target])
    if rows.empty:
        raise UnknownNameError(f"{target!r} is not indexed for recall")
    return rows.iloc[0].to_dict()


def strategy_runs(store: LabStore, targets: Sequence[str]) -> dict[str, str]:
    """The saved runs among ``targets`` made by a strategy other than LCM (truncate, ClawVault, ...),
    which keep no summaries, with the strategy's name."""
    if not targets:
        return {}
    marks = ", ".join("?" for _ in targets)
    rows = store.fetch_all(
        f"SELECT t.target, r.strategy FROM recall_targets t JOIN replays r ON r.run_id = t.run_id"
        f" WHERE t.target IN ({marks}) AND coalesce(r.strategy, 'lcm') <> 'lcm' ORDER BY t.target",
        list(targets),
    )
    return {r[0]: r[1] for r in rows}


def files_without_payload(store: LabStore, targets: Sequence[str]) -> int:
    """Large files of ``targets`` whose payload was not on disk when they were indexed."""
    if not targets:
        return 0
    marks = ", ".join("?" for _ in targets)
    return int(store.fetch_all(f"SELECT coalesce(sum(files_without_payload), 0) FROM recall_targets WHERE target IN ({marks})",
                               list(targets))[0][0])
