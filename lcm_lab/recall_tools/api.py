"""``grep`` → ``describe`` → ``expand_query`` over a replay or a loaded lcm.db conversation.

The plugin's agent tools (``src/tools/lcm-grep-tool.ts``, ``lcm-describe-tool.ts``, ``lcm-expand-query-tool.ts``) with their parameters, defaults, caps and result fields:
a :class:`Recall` is bound to one *target* (a replay or a loaded conversation) and searches its
session family by default (``conversation_id=`` one conversation, ``all_conversations=True``
everything indexed in the store). Results come as frames (``.df()``/``.pl()``) and as the
plugin's JSON shape (``.json()``).

>>> from lcm_lab.engine.types import Conversation, StoredMessage
>>> from lcm_lab.engine.replay.driver import replay
>>> from lcm_lab.summarizers import get_summarizer
>>> chat = Conversation("doc", stored_messages=(
...     StoredMessage(1, "user", "deploy to db01 tonight", 6, "2026-01-01 10:00:00"),
...     StoredMessage(2, "assistant", "ok", 1, "2026-01-01 10:00:05")))
>>> run = replay(chat, summarizer=get_summarizer("offline"))
>>> hits = recall(run).grep("db0[0-9]")
>>> [(m.type, m.id) for m in hits.matches]
[('message', '1')]
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from lcm_lab.errors import OptionError, UnknownNameError, require_extra
from lcm_lab.recall_tools.answer import Answerer, Passage, get_answerer
from lcm_lab.recall_tools.query import parse_full_text, terms_of
from lcm_lab.store import recall_index as ix
from lcm_lab.store.core import LabStore
from lcm_lab.strategies.base import StrategyRun

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

    from lcm_lab.engine.replay.driver import Replay

Mode = Literal["regex", "full_text"]
Scope = Literal["messages", "summaries", "both", "files"]
Sort = Literal["recency", "relevance", "hybrid"]

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
SNIPPET_CHARS = 200
DEFAULT_ANSWER_TOKENS = 2000  # lcm_expand_query maxTokens
DEFAULT_EXPAND_TOKENS = 4000  # LCM_MAX_EXPAND_TOKENS: what the sub-agent may read
_SCOPES: dict[str, tuple[str, ...]] = {
    "messages": ("message",),
    "summaries": ("summary",),
    "both": ("message", "summary"),
    "files": ("file",),
}


@dataclass(frozen=True)
class GrepMatch:
    """One ``lcm_grep`` match (plugin fields plus the lab's ``target``, ``seq`` and ``relevance``)."""

    id: str
    type: str
    snippet: str
    conversation_id: int | None
    created_at: str | None
    target: str
    relevance: float
    role: str | None = None
    seq: int | None = None
    depth: int | None = None
    kind: str | None = None
    summary_id: str | None = None
    line: int | None = None
    byte_offset: int | None = None
    matched_text: str | None = None

    def json(self) -> dict[str, Any]:
        """The plugin's result object (camelCase; fields that do not apply are left out)."""
        out: dict[str, Any] = {
            "id": self.id, "type": self.type, "snippet": self.snippet, "conversationId": self.conversation_id,
            "createdAt": self.created_at, "target": self.target, "relevance": self.relevance,
        }  # fmt: skip
        extra = {
            "message": {"role": self.role, "seq": self.seq},
            "summary": {"depth": self.depth, "kind": self.kind, "summaryId": self.summary_id},
            "file": {"line": self.line, "byteOffset": self.byte_offset, "matchedText": self.matched_text},
        }[self.type]
        return {**out, **extra}


@dataclass(frozen=True)
class GrepResult:
    """Matches in ``sort`` order, the total before ``limit``, and the query that produced them."""

    matches: tuple[GrepMatch, ...]
    total_matches: int
    params: dict[str, Any]
    notes: tuple[str, ...] = ()

    def json(self) -> dict[str, Any]:
        return {
            "matches": [m.json() for m in self.matches],
            "totalMatches": self.total_matches,
            **{_camel(k): v for k, v in self.params.items()},
            "notes": list(self.notes),
        }

    def records(self) -> list[dict[str, Any]]:
        return [asdict(m) for m in self.matches]

    def df(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.records(), columns=list(GrepMatch.__dataclass_fields__))

    def pl(self) -> pl.DataFrame:
        pl = require_extra("polars", "polars", "polars frames (the *_pl readers)")
        return pl.from_pandas(self.df())

    @property
    def tokens(self) -> int:
        """What the result costs the agent: estimated tokens of its JSON."""
        from lcm_lab.engine.tokens import estimate_tokens

        return estimate_tokens(json.dumps(self.json(), ensure_ascii=False))


@dataclass(frozen=True)
class ExpandResult:
    """``lcm_expand_query``'s result plus the passages read and who answered."""

    answer: str
    cited_ids: tuple[str, ...]
    source_conversation_ids: tuple[int, ...]
    expanded_summary_count: int
    total_source_tokens: int
    truncated: bool
    answerer: str
    answer_tokens: int
    model_calls: int
    seeds: tuple[str, ...]
    passages: tuple[Passage, ...] = field(default=(), repr=False)
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "citedIds": list(self.cited_ids),
            "sourceConversationIds": list(self.source_conversation_ids),
            "expandedSummaryCount": self.expanded_summary_count,
            "totalSourceTokens": self.total_source_tokens,
            "truncated": self.truncated,
            "answerer": self.answerer,
            "answerTokens": self.answer_tokens,
            "modelCalls": self.model_calls,
            "diagnostics": {"seeds": list(self.seeds), **self.diagnostics},
        }


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _parenthesized(note: str) -> str:
    return f" ({note})" if note else ""


def _snippet(content: str, pos: int) -> str:
    start = max(0, pos - 60)
    text = content[start : start + SNIPPET_CHARS].replace("\n", " ").strip()
    return ("…" if start else "") + text + ("…" if start + SNIPPET_CHARS < len(content) else "")


def _first_term_pos(content: str, terms: Sequence[str]) -> int:
    lowered = content.lower()
    found = [p for p in (lowered.find(t[:5]) for t in terms if t) if p >= 0]
    return min(found) if found else 0


def _python_search(pattern: str, content: str) -> re.Match[str] | None:
    """Where a match starts, for the snippet (DuckDB's RE2 found the documents; Python's ``re``
    agrees on the RE2 subset users write; if it cannot compile the pattern the snippet starts at 0)."""
    try:
        return re.search(pattern, content)
    except re.error:
        return None


def _file_position(content: str, pos: int, matched: str) -> tuple[int, int, str]:
    line = content.count("\n", 0, pos) + 1
    return line, len(content[:pos].encode("utf-8")), matched


def _opt_int(value: Any) -> int | None:
    if value is None or value != value:  # None or NaN (pandas)
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class Recall:
    """The recall tools bound to one indexed target of a lab store (see module docstring)."""

    def __init__(self, store: LabStore, target: str) -> None:
        self.store = store
        self.target = target
        self.info = ix.target_info(store, target)
        self._family = ix.family_targets(store, target)

    def __repr__(self) -> str:
        return f"Recall({self.target!r}, docs={self.info['docs']})"

    # -- scoping --------------------------------------------------------------------------------

    def targets(self, conversation_id: int | None = None, all_conversations: bool = False) -> list[str]:
        """The targets a call searches: one conversation, everything, or this target's session family."""
        if conversation_id is not None:
            return [ix.index_conversation(self.store, conversation_id)]
        if all_conversations:
            return ix.all_targets(self.store)
        return list(self._family)

    def _no_summaries(self, targets: Sequence[str]) -> str:
        """Why ``targets`` hold no summary when every one is a run of another strategy (truncate,
        ClawVault, ...: no summary DAG): "run:… was made by the truncate strategy, which keeps no summaries"; else empty."""
        runs = ix.strategy_runs(self.store, targets)
        if not targets or len(runs) < len(targets):
            return ""
        return "; ".join(f"{target} was made by the {strategy} strategy" for target, strategy in runs.items()) + ", which keeps no summaries"

    # -- lcm_grep -------------------------------------------------------------------------------

    def grep(
        self,
        pattern: str,
        mode: Mode = "regex",
        scope: Scope = "both",
        *,
        conversation_id: int | None = None,
        all_conversations: bool = False,
        since: str | None = None,
        before: str | None = None,
        limit: int = DEFAULT_LIMIT,
        sort: Sort = "recency",
        any_term: bool = False,
    ) -> GrepResult:
        """``lcm_grep``: regex (default, RE2, case-sensitive unless ``(?i)``) or full text (BM25).

        ``any_term`` relaxes full text to match any term (the lab's expand seeding; the tool
        itself requires every term). Raises ``ValueError`` on invalid parameters.
        """
        pattern = (pattern or "").strip()
        if not pattern:
            raise OptionError("grep needs a non-empty pattern")
        if mode not in ("regex", "full_text"):
            raise OptionError(f"mode must be 'regex' or 'full_text', not {mode!r}")
        if scope not in _SCOPES:
            raise OptionError(f"scope must be one of {', '.join(_SCOPES)}, not {scope!r}")
        if sort not in ("recency", "relevance", "hybrid"):
            raise OptionError(f"sort must be 'recency', 'relevance' or 'hybrid', not {sort!r}")
        if not 1 <= int(limit) <= MAX_LIMIT:
            raise OptionError(f"limit must be between 1 and {MAX_LIMIT} (got {limit})")
        since_at, before_at = ix.timestamp(since, "since"), ix.timestamp(before, "before")
        if since_at is not None and before_at is not None and since_at >= before_at:
            raise OptionError("`since` must be earlier than `before`")
        targets = self.targets(conversation_id, all_conversations)
        terms: Sequence[str] = ()
        if mode == "regex":
            rows, total = ix.search(self.store, targets, doc_types=_SCOPES[scope], regex=pattern, since=since,
                                     before=before, sort=sort, limit=int(limit))  # fmt: skip
        else:
            query = parse_full_text(pattern)
            terms = query.terms
            rows, total = ix.search(
                self.store, targets, doc_types=_SCOPES[scope], fts_query=query.text, phrase_patterns=query.phrase_patterns,
                since=since, before=before, sort=sort, limit=int(limit), conjunctive=not any_term,
            )  # fmt: skip
        matches = tuple(self._match(row, mode, pattern, terms) for row in rows)
        params = {"pattern": pattern, "mode": mode, "scope": scope, "sort": sort, "limit": int(limit),
                  "since": since, "before": before, "targets": targets}  # fmt: skip
        notes = []
        if scope == "files":
            refused = ix.refused_payloads(self.store, targets)
            missing = max(0, ix.files_without_payload(self.store, targets) - len(refused))
            if missing:
                notes.append(f"{missing} large file(s) have no payload on disk (storage_uri unreadable) and were not searched")
            notes.extend(f"large file {file_id} not read: its storage_uri {uri!r} is {problem}" for file_id, uri, problem in refused)
        return GrepResult(matches, total, params, tuple(notes))

    def _match(self, row: dict[str, Any], mode: str, pattern: str, terms: Sequence[str]) -> GrepMatch:
        content = row["content"]
        if mode == "regex":
            found = _python_search(pattern, content)
            pos, matched = (found.start(), found.group(0)) if found else (0, "")
        else:
            pos = _first_term_pos(content, terms)
            matched = content[pos : pos + max((len(t) for t in terms), default=0)]
        kind = row["doc_type"]
        line = offset = None
        if kind == "file":
            line, offset, matched = _file_position(content, pos, matched)
        return GrepMatch(
            id=row["doc_id"], type=kind, snippet=_snippet(content, pos), conversation_id=_opt_int(row["conversation_id"]),
            created_at=row["created_at"], target=row["target"], relevance=float(row["relevance"]),
            role=row["role"] if kind == "message" else None, seq=_opt_int(row["seq"]),
            depth=_opt_int(row["depth"]), kind=row["kind"] if kind == "summary" else None,
            summary_id=row["doc_id"] if kind == "summary" else None,
            line=line, byte_offset=offset, matched_text=matched if kind == "file" else None,
        )  # fmt: skip

    # -- lcm_describe ---------------------------------------------------------------------------

    def describe(self, id: str, *, conversation_id: int | None = None, all_conversations: bool = False) -> dict[str, Any]:
        """``lcm_describe``: a summary (content, DAG links, sources) or a large file, as plugin JSON."""
        targets = self.targets(conversation_id, all_conversations)
        found = ix.documents(self.store, targets, id)
        if found.empty:
            for file_id, uri, problem in ix.refused_payloads(self.store, targets, include_missing=True):
                if file_id == id:
                    raise UnknownNameError(f"{id}: not read, its storage_uri {uri!r} is {problem}")
            raise UnknownNameError(f"{id!r} is not a summary or file id in {', '.join(targets)}"
                                   f"{_parenthesized(self._no_summaries(targets))}; grep for it first")
        row = found.iloc[0].to_dict()
        meta = json.loads(row["meta"]) if row.get("meta") else {}
        if row["doc_type"] == "file":
            return {"id": id, "type": "file", "conversationId": _opt_int(row["conversation_id"]), "content": row["content"],
                    "fileName": meta.get("file_name"), "mimeType": meta.get("mime_type"), "byteSize": meta.get("byte_size"),
                    "explorationSummary": meta.get("exploration_summary"), "storagePath": meta.get("storage_uri"),
                    "target": row["target"]}  # fmt: skip
        edges = ix.edges_of(self.store, row["target"])
        inputs = [e[2] for e in edges if e[0] == id and e[2] is not None]
        seqs = [e[3] for e in edges if e[0] == id and e[3] is not None]
        children = sorted({e[0] for e in edges if e[2] == id})
        message_ids = ix.messages_by_seq(self.store, row["target"], seqs)["doc_id"].tolist() if seqs else []
        return {
            "id": id, "type": "summary", "conversationId": _opt_int(row["conversation_id"]), "kind": row["kind"],
            "depth": _opt_int(row["depth"]), "content": row["content"], "tokenCount": _opt_int(row["token_count"]),
            "createdAt": row["created_at"], "earliestAt": meta.get("earliest_at"), "latestAt": meta.get("latest_at"),
            "descendantCount": meta.get("descendant_count"), "parentIds": inputs, "childIds": children,
            "messageIds": message_ids, "sourceSeqs": seqs, "fileIds": list(meta.get("file_ids") or []),
            "model": meta.get("model"), "target": row["target"],
        }  # fmt: skip

    # -- lcm_expand_query -----------------------------------------------------------------------

    def expand_query(
        self,
        prompt: str,
        *,
        query: str | None = None,
        summary_ids: Sequence[str] | None = None,
        max_tokens: int = DEFAULT_ANSWER_TOKENS,
        max_expand_tokens: int = DEFAULT_EXPAND_TOKENS,
        seeds: int = 5,
        answerer: Answerer | str | None = None,
        conversation_id: int | None = None,
        all_conversations: bool = False,
    ) -> ExpandResult:
        """``lcm_expand_query``: find summaries (``query``) or take ``summary_ids``, walk the DAG down
        to their source messages, read the passages most relevant to ``prompt`` within
        ``max_expand_tokens``, and answer within ``max_tokens`` through ``answerer``
        (default: the offline deterministic answerer, which quotes passages and says so)."""
        if not prompt or not prompt.strip():
            raise OptionError("expand_query needs a prompt (the question to answer)")
        if (query is None) == (summary_ids is None):
            raise OptionError("expand_query takes exactly one of query= or summary_ids=")
        targets = self.targets(conversation_id, all_conversations)
        diagnostics: dict[str, Any] = {}
        if summary_ids is None:
            hits = self.grep(query or "", "full_text", "summaries", conversation_id=conversation_id,
                             all_conversations=all_conversations, sort="relevance", limit=seeds)  # fmt: skip
            diagnostics["search"] = "all-terms"
            if not hits.matches:
                hits = self.grep(query or "", "full_text", "summaries", conversation_id=conversation_id,
                                 all_conversations=all_conversations, sort="relevance", limit=seeds, any_term=True)  # fmt: skip
                diagnostics["search"] = "any-term"
            seed_refs = [(m.target, m.id) for m in hits.matches]
            note = "" if seed_refs else self._no_summaries(targets)
            if note:
                diagnostics["note"] = note
        else:
            seed_refs = []
            for sid in summary_ids:
                found = ix.documents(self.store, targets, sid, ("summary",))
                if found.empty:
                    raise UnknownNameError(f"summary {sid!r} not found in {', '.join(targets)}{_parenthesized(self._no_summaries(targets))}")
                seed_refs.append((str(found.iloc[0]["target"]), sid))
        passages, expanded = self._walk(seed_refs)
        wanted = set(terms_of(prompt)) | set(terms_of(query or ""))
        chosen, used, truncated = _select(passages, wanted, max_expand_tokens)
        responder = get_answerer(answerer)
        answer = responder.answer(prompt, chosen, max_tokens)
        conversations = sorted({p.conversation_id for p in chosen if p.conversation_id is not None})
        return ExpandResult(
            answer=answer.text, cited_ids=answer.cited_ids, source_conversation_ids=tuple(conversations),
            expanded_summary_count=expanded, total_source_tokens=used, truncated=truncated,
            answerer=responder.label, answer_tokens=answer.tokens, model_calls=answer.model_calls,
            seeds=tuple(sid for _, sid in seed_refs), passages=tuple(chosen), diagnostics=diagnostics,
        )  # fmt: skip

    def _walk(self, seeds: Iterable[tuple[str, str]]) -> tuple[list[Passage], int]:
        """Source messages under the seed summaries (depth first, each once) and summaries expanded."""
        passages: list[Passage] = []
        expanded: set[tuple[str, str]] = set()
        seen_seqs: set[tuple[str, int]] = set()
        by_target: dict[str, dict[str, list[tuple[int, str | None, int | None]]]] = {}
        for target, seed in seeds:
            if target not in by_target:
                graph: dict[str, list[tuple[int, str | None, int | None]]] = {}
                for sid, ordinal, src, seq in ix.edges_of(self.store, target):
                    graph.setdefault(sid, []).append((ordinal, src, seq))
                by_target[target] = graph
            graph = by_target[target]
            stack, seqs = [seed], []
            while stack:
                sid = stack.pop()
                if (target, sid) in expanded:
                    continue
                expanded.add((target, sid))
                children = graph.get(sid, [])
                stack.extend(src for _, src, _ in reversed(children) if src is not None)
                seqs.extend(seq for _, _, seq in children if seq is not None and (target, seq) not in seen_seqs)
            for row in ix.messages_by_seq(self.store, target, sorted(set(seqs))).to_dict("records"):
                seen_seqs.add((target, int(row["seq"])))
                passages.append(Passage(row["doc_id"], int(row["seq"]), row["role"], row["content"],
                                        int(row["token_count"] or 0), _opt_int(row["conversation_id"]), target, seed))  # fmt: skip
        return passages, len(expanded)


def _select(passages: Sequence[Passage], wanted: set[str], cap: int) -> tuple[list[Passage], int, bool]:
    """The passages most relevant to ``wanted`` terms that fit in ``cap`` tokens, in reading order."""

    def score(p: Passage) -> float:
        words = terms_of(p.content)
        return sum(words.count(t) for t in wanted) / (1 + len(words)) ** 0.5 if words else 0.0

    ranked = sorted(range(len(passages)), key=lambda i: (-score(passages[i]), i))
    chosen, used = [], 0
    for i in ranked:
        if used + passages[i].tokens <= cap:
            chosen.append(i)
            used += passages[i].tokens
    truncated = len(chosen) < len(passages)
    return [passages[i] for i in sorted(chosen)], used, truncated


def _replay_target(replay: Replay | StrategyRun) -> str:
    if replay.run_id:
        return f"run:{replay.run_id}"
    setting = (replay.strategy, sorted(replay.strategy_params.items())) if isinstance(replay, StrategyRun) else replay.config
    digest = hashlib.sha256(
        repr((replay.conversation.session_id, replay.token_budget, setting, len(replay.messages),
              [s.summary_id for s in replay.summaries])).encode()
    ).hexdigest()[:12]  # fmt: skip
    return f"replay:{digest}"


def index_replay(store: LabStore, replay: Replay | StrategyRun, *, refresh: bool = False) -> str:
    """Index a run's messages, summaries and edges for recall (target ``run:<id>`` when saved).

    A run of another strategy (truncate, full, ClawVault, ...) has no summary DAG and no large
    files: its messages are indexed, so ``grep`` finds them, and ``describe`` and ``expand_query``
    find no summary in it (their errors say which strategy it is)."""
    if isinstance(replay, StrategyRun) and replay.replay is not None:
        replay = replay.replay  # an LCM run of the strategy bench: its replay
    target = _replay_target(replay)
    if ix.is_indexed(store, target) and not refresh:
        return target
    conversation_id = replay.conversation.meta.get("conversation_id") if replay.conversation.meta else None
    docs: list[dict[str, Any]] = [
        {"doc_type": "message", "doc_id": str(m.message_id if m.message_id is not None else m.seq), "seq": m.seq,
         "role": m.role, "token_count": m.token_count, "created_at": m.created_at, "content": m.content}
        for m in replay.messages
    ]  # fmt: skip
    edges: list[tuple[str, int, str | None, int | None]] = []
    for s in replay.summaries:
        meta = {"earliest_at": s.earliest_at, "latest_at": s.latest_at, "descendant_count": s.descendant_count,
                "file_ids": list(s.file_ids), "model": s.model}  # fmt: skip
        docs.append({"doc_type": "summary", "doc_id": s.summary_id, "kind": s.kind, "depth": s.depth,
                     "token_count": s.token_count, "created_at": s.created_at or s.latest_at, "content": s.content,
                     "meta": json.dumps(meta)})  # fmt: skip
        edges.extend((s.summary_id, i, src, None) for i, src in enumerate(s.source_summary_ids))
        edges.extend((s.summary_id, i, None, seq) for i, seq in enumerate(s.source_message_seqs))
    return ix.index_documents(
        store, target, kind="run", family=target, docs=docs, edges=edges, run_id=replay.run_id,
        conversation_id=conversation_id, label=replay.conversation.session_id,
        files_without_payload=0 if isinstance(replay, StrategyRun) else len(replay.large_files),
    )  # fmt: skip


def recall(source: Replay | StrategyRun | str | int, store: LabStore | None = None, *, refresh: bool = False) -> Recall:
    """Recall tools over ``source``: a :class:`Replay` (or any strategy's run), a saved run id, or a
    loaded conversation id.

    A replay without a store is indexed into a private in-memory store.
    """
    if isinstance(source, bool):
        raise TypeError("recall() takes a Replay, a run id or a conversation id")
    if isinstance(source, int):
        if store is None:
            raise OptionError("recall(conversation_id) needs the lab store the conversation was loaded into")
        for member in ix.family_conversation_ids(store, source):  # the default scope is the whole family
            ix.index_conversation(store, member, refresh=refresh)
        return Recall(store, ix.index_conversation(store, source))
    if isinstance(source, str):
        if store is None:
            raise OptionError("recall(run_id) needs the lab store the run was saved in")
        from lcm_lab.store.replays import load_replay

        target = f"run:{source}"
        if refresh or not ix.is_indexed(store, target):
            index_replay(store, load_replay(store, source), refresh=True)
        return Recall(store, target)
    store = store if store is not None else LabStore(":memory:")
    return Recall(store, index_replay(store, source, refresh=refresh))


def index_store(store: LabStore) -> list[str]:
    """Index every loaded conversation and saved replay not indexed yet; returns all targets."""
    from lcm_lab.store.replays import load_replay, run_ids
    from lcm_lab.store.sources import conversation_ids

    with store.bulk_load():  # the documents are copied in SQL: under the load's memory cap
        ix.index_conversations(store, conversation_ids(store))
        for run_id in run_ids(store):
            if not ix.is_indexed(store, f"run:{run_id}"):
                index_replay(store, load_replay(store, run_id))
    return ix.all_targets(store)
