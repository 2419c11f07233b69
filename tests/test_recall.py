"""Recall tools: grep (regex and BM25 full text, scoping, sorting, plugin fields), describe, expand_query, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.engine.types import Conversation, StoredMessage, Summary
from lcm_lab.recall_tools import FullTextQueryError, OfflineAnswerer, recall
from lcm_lab.recall_tools.answer import OFFLINE_LABEL
from lcm_lab.summarizers import get_summarizer

TEXTS = (
    ("2026-01-01 09:00:00", "user", "deploy deploy deploy deploy to the cluster"),
    ("2026-01-02 09:00:00", "assistant", "We chose a blue green deployment; blue and green run side by side."),
    ("2026-01-03 09:00:00", "user", "green then blue, the reversed order of words"),
    ("2026-01-04 09:00:00", "assistant", "deploy deploy deploy after lunch"),
    ("2026-01-05 09:00:00", "user", "the rare token zyxwvut appears once, next to a common word deploy and many other words around"),
    ("2026-01-06 09:00:00", "assistant", "Server db01 failed with ERROR 42 at /srv/app/main.py line 7"),
)


def _corpus() -> Replay:
    """A hand-made run: six messages and a two-level DAG over the first four."""
    messages = tuple(StoredMessage(i, role, text, len(text) // 4, ts) for i, (ts, role, text) in enumerate(TEXTS, start=1))  # type: ignore[arg-type]
    leaf_a = Summary("sum_leaf_a", "leaf", 0, "Deployment plan discussed. Expand for details about: cluster name", 12,
                     "2026-01-01T09:00:00.000Z", "2026-01-02T09:00:00.000Z", created_at="2026-01-02 10:00:00",
                     source_message_seqs=(1, 2))  # fmt: skip
    leaf_b = Summary("sum_leaf_b", "leaf", 0, "Order of colours debated; lunch deploy.", 9, "2026-01-03T09:00:00.000Z",
                     "2026-01-04T09:00:00.000Z", created_at="2026-01-04 10:00:00", source_message_seqs=(3, 4))  # fmt: skip
    top = Summary("sum_top", "condensed", 1, "Deployments and colour order.", 6, "2026-01-01T09:00:00.000Z",
                  "2026-01-04T09:00:00.000Z", descendant_count=2, created_at="2026-01-04 11:00:00",
                  source_summary_ids=("sum_leaf_a", "sum_leaf_b"))  # fmt: skip
    base = replay(Conversation("hand", stored_messages=messages), summarizer=get_summarizer("offline"))
    import dataclasses

    return dataclasses.replace(base, summaries=(leaf_a, leaf_b, top), run_id="run_hand")


@pytest.fixture(scope="module")
def rec():  # type: ignore[no-untyped-def]
    return recall(_corpus())


def ids(result) -> list[str]:  # type: ignore[no-untyped-def]
    return [m.id for m in result.matches]


def test_phrase_query_keeps_word_order(rec) -> None:  # type: ignore[no-untyped-def]
    both_words = ids(rec.grep("blue green", "full_text", "messages"))
    assert set(both_words) == {"2", "3"}
    assert ids(rec.grep('"blue green"', "full_text", "messages")) == ["2"]


def test_rare_term_outranks_common_term(rec) -> None:  # type: ignore[no-untyped-def]
    assert ids(rec.grep("zyxwvut", "full_text")) == ["5"]
    ranked = rec.grep("deploy zyxwvut", "full_text", "messages", sort="relevance", any_term=True)
    assert ids(ranked)[0] == "5"  # the only document with the rare term, despite a low tf of "deploy"
    strict = rec.grep("deploy zyxwvut", "full_text", "messages", sort="relevance")
    assert ids(strict) == ["5"]  # the tool's semantics: every term is required


def test_recency_relevance_and_hybrid_orders(rec) -> None:  # type: ignore[no-untyped-def]
    recency = rec.grep("deploy", "full_text", "messages", sort="recency")
    relevance = rec.grep("deploy", "full_text", "messages", sort="relevance")
    hybrid = rec.grep("deploy", "full_text", "messages", sort="hybrid")
    assert ids(recency) == ["5", "4", "1"]
    assert ids(relevance)[0] == "1"  # four occurrences in a short message
    assert ids(relevance)[-1] == "5"  # one occurrence in a long message
    rel = {m.id: m.relevance for m in relevance.matches}
    assert rel["1"] > rel["4"] > rel["5"]
    # hybrid = 0.7 * relevance / max + 0.3 * (time - oldest) / span, recomputed here from the parts
    day = {"1": 0.0, "4": 3.0, "5": 4.0}
    expected = sorted(rel, key=lambda k: -(0.7 * rel[k] / max(rel.values()) + 0.3 * day[k] / 4.0))
    assert ids(hybrid) == expected
    assert ids(hybrid) not in (ids(recency), ids(relevance))


@pytest.mark.parametrize("sort", ["recency", "relevance", "hybrid"])
@pytest.mark.parametrize("mode", ["full_text", "regex"])
def test_a_limit_shows_the_first_matches_of_the_whole_order(rec, sort: str, mode: str) -> None:  # type: ignore[no-untyped-def]
    """The order and the scores are computed over every match before the documents of the shown
    ones are read: a smaller limit is a prefix of a larger one, with the same total and scores."""
    pattern = "deploy" if mode == "full_text" else "e"
    whole = rec.grep(pattern, mode, "both", sort=sort, limit=200)
    assert whole.total_matches == len(whole.matches) >= 3
    for limit in (1, 2, whole.total_matches - 1):
        part = rec.grep(pattern, mode, "both", sort=sort, limit=limit)
        assert part.total_matches == whole.total_matches
        assert [(m.id, m.relevance, m.snippet) for m in part.matches] == [
            (m.id, m.relevance, m.snippet) for m in whole.matches[:limit]
        ]


def test_stemming_matches_inflections(rec) -> None:  # type: ignore[no-untyped-def]
    assert "2" in ids(rec.grep("deployments", "full_text", "messages"))


def test_regex_is_case_sensitive_re2_and_snippets_are_around_the_match(rec) -> None:  # type: ignore[no-untyped-def]
    assert ids(rec.grep("ERROR [0-9]+")) == ["6"]
    assert ids(rec.grep("error [0-9]+")) == []
    assert ids(rec.grep("(?i)error [0-9]+")) == ["6"]
    match = rec.grep("db0[0-9]").matches[0]
    assert "db01" in match.snippet and len(match.snippet) <= 202


def test_plugin_result_fields_scope_limit_and_time_bounds(rec) -> None:  # type: ignore[no-untyped-def]
    result = rec.grep("(?i)deploy", scope="summaries")
    assert ids(result) == ["sum_top", "sum_leaf_b", "sum_leaf_a"]  # newest first
    obj = result.matches[0].json()
    assert {"id", "type", "snippet", "conversationId", "createdAt", "depth", "kind", "summaryId"} <= set(obj)
    assert (obj["type"], obj["depth"], obj["kind"], obj["summaryId"]) == ("summary", 1, "condensed", "sum_top")
    msg = rec.grep("db01", scope="messages").matches[0].json()
    assert (msg["type"], msg["role"], msg["createdAt"]) == ("message", "assistant", "2026-01-06 09:00:00")
    limited = rec.grep("(?i)deploy", limit=2)
    assert len(limited.matches) == 2 and limited.total_matches == 7  # 4 messages + 3 summaries
    window = rec.grep("(?i)deploy", "regex", "messages", since="2026-01-02T00:00:00Z", before="2026-01-05")
    assert ids(window) == ["4", "2"]
    frame = result.df()
    assert list(frame["id"]) == ids(result) and result.pl().height == 3
    assert json.loads(json.dumps(result.json()))["totalMatches"] == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pattern": " "}, "non-empty"),
        ({"pattern": "x", "limit": 0}, "between 1 and 200"),
        ({"pattern": "x", "limit": 201}, "between 1 and 200"),
        ({"pattern": "x", "mode": "semantic"}, "mode"),
        ({"pattern": "x", "scope": "all"}, "scope"),
        ({"pattern": "x", "sort": "best"}, "sort"),
        ({"pattern": "x", "since": "2026-01-05", "before": "2026-01-01"}, "earlier"),
        ({"pattern": "("}, "invalid regex"),
    ],
)
def test_invalid_parameters_say_what_to_do(rec, kwargs, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        rec.grep(**kwargs)


def test_fts5_operators_are_refused_not_reinterpreted(rec) -> None:  # type: ignore[no-untyped-def]
    for query in ("deploy OR green", "dep*", "NEAR(a b)"):
        with pytest.raises(FullTextQueryError, match="mode='regex'"):
            rec.grep(query, "full_text")


def test_describe_summary_links_both_ways(rec) -> None:  # type: ignore[no-untyped-def]
    leaf = rec.describe("sum_leaf_a")
    assert leaf["messageIds"] == ["1", "2"] and leaf["childIds"] == ["sum_top"] and leaf["parentIds"] == []
    assert leaf["earliestAt"] == "2026-01-01T09:00:00.000Z" and leaf["kind"] == "leaf"
    top = rec.describe("sum_top")
    assert top["parentIds"] == ["sum_leaf_a", "sum_leaf_b"] and top["depth"] == 1 and top["descendantCount"] == 2
    with pytest.raises(KeyError, match="grep for it first"):
        rec.describe("sum_missing")


def test_expand_query_walks_down_to_sources_within_the_cap(rec) -> None:  # type: ignore[no-untyped-def]
    result = rec.expand_query("Where did we deploy?", summary_ids=["sum_top"])
    assert result.expanded_summary_count == 3
    assert result.answer.startswith(OFFLINE_LABEL) and result.answerer == "offline-quote"
    assert set(result.cited_ids) == {"1", "2", "3", "4"} and not result.truncated
    assert "cluster" in result.answer and result.model_calls == 0
    capped = rec.expand_query("Where did we deploy?", summary_ids=["sum_top"], max_expand_tokens=12)
    assert capped.truncated and capped.total_source_tokens <= 12
    assert capped.cited_ids == ("1",)  # the passage most about "deploy" fits first
    by_query = rec.expand_query("colour order?", query="colours order")
    assert set(by_query.seeds) == {"sum_top", "sum_leaf_b"} and {"3", "4"} <= set(by_query.cited_ids)
    with pytest.raises(ValueError, match="exactly one"):
        rec.expand_query("q", query="a", summary_ids=["sum_top"])


def test_expand_query_answers_through_a_model_via_the_ledger(rec, store) -> None:  # type: ignore[no-untyped-def]
    from fakeserver import FakeOpenAIServer

    from lcm_lab.recall_tools import ModelAnswerer
    from lcm_lab.store.ledger import Ledger

    with FakeOpenAIServer(responder=lambda body: "It ran on the cluster [msg 1].") as server:
        answerer = ModelAnswerer("openai/fake", ledger=Ledger(store), api_base=server.base_url, api_key="k")
        first = rec.expand_query("Where?", summary_ids=["sum_leaf_a"], answerer=answerer)
        second = rec.expand_query("Where?", summary_ids=["sum_leaf_a"], answerer=answerer)
        assert first.answer == second.answer == "It ran on the cluster [msg 1]."
        assert first.cited_ids == ("1",) and first.model_calls == 1 and first.answerer == "model:openai/fake"
        assert len(server.completion_requests) == 1  # the second answer came from the ledger cache
    assert store.fetch_all("SELECT count(*) FROM llm_calls WHERE purpose = 'expand-query'")[0][0] == 2


def test_offline_answerer_respects_its_token_cap() -> None:
    from lcm_lab.recall_tools import Passage

    long = Passage("1", 1, "user", "word " * 400, 500, None, "t", "s")
    answer = OfflineAnswerer().answer("q", [long], 60)
    assert answer.tokens <= 62 and answer.cited_ids == ("1",)


def test_loaded_lcm_db_session_family_and_cli(tmp_path: Path) -> None:
    from conftest import FIXTURES

    from lcm_lab.cli import main
    from lcm_lab.loading.dispatch import load_lcm_db
    from lcm_lab.store import LabStore

    db = tmp_path / "lab.duckdb"
    with LabStore(db) as lab:
        load_lcm_db(FIXTURES / "lcm-db-versions" / "lcm-v0.15.3.db.gz", lab)
        conversations = [int(c) for c in lab.conversations_df()["conversation_id"]]
        rec = recall(conversations[0], lab)
        assert rec.targets() == [f"conversation:{conversations[0]}"]  # its own session family only
        assert len(rec.targets(all_conversations=True)) == 1  # nothing else indexed yet
        hits = rec.grep("item 3", scope="messages")
        assert hits.matches and all(m.conversation_id == conversations[0] for m in hits.matches)
    assert main(["grep", "--db", str(db), "please check item [0-9]", "--scope", "messages", "--limit", "3", "--json"]) == 0


def test_cli_grep_json_lines_describe_expand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lcm_lab.cli import main
    from lcm_lab.store import LabStore
    from lcm_lab.store.replays import save_replay

    db = tmp_path / "lab.duckdb"
    with LabStore(db) as lab:
        run_id = save_replay(lab, _corpus())
    assert main(["grep", "--db", str(db), "(?i)deploy", "--run", run_id, "--json"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 7 and all(json.loads(line)["type"] in ("message", "summary") for line in lines)
    assert main(["grep", "--db", str(db), "deploy", "--mode", "full_text", "--sort", "relevance", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["id"] == "1"  # default scope: the whole store
    assert main(["describe", "--db", str(db), "sum_top", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["parentIds"] == ["sum_leaf_a", "sum_leaf_b"]
    assert main(["expand", "--db", str(db), "--prompt", "where?", "--summary-id", "sum_leaf_a", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["answerer"] == "offline-quote"
    assert main(["grep", "--db", str(db), "x", "--limit", "500", "--json"]) == 2
    assert "between 1 and 200" in json.loads(capsys.readouterr().out)["error"]


def test_full_text_survives_the_store_closing_its_idle_connection(tmp_path: Path) -> None:
    """DuckDB extensions are per connection: a file store reopens after idling, fts must load again."""
    from lcm_lab.store import LabStore

    store = LabStore(tmp_path / "lab.duckdb", idle_seconds=0)
    try:
        rec = recall(_corpus(), store)
        assert ids(rec.grep("zyxwvut", "full_text")) == ["5"]
        assert store.release()  # what the idle reaper does between notebook cells
        assert ids(rec.grep("zyxwvut", "full_text")) == ["5"]
    finally:
        store.close()
