"""What-if edits: dissolve, rewrite, reassemble as derived runs in the lab store; sources never written."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DATASETS, FIXTURES, gunzip_to

import lcm_lab as lab
from lcm_lab.cli import main
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.store import LabStore
from lcm_lab.store.ledger import Ledger
from lcm_lab.store.replays import load_replay
from lcm_lab.summarizers.offline import OFFLINE_MODEL
from lcm_lab.summarizers.stub import StubV1Summarizer
from lcm_lab.testing import FakeOpenAIServer, Reply
from lcm_lab.whatif import EditError

INLINE = LcmConfig.from_plugin_config({
    "freshTailCount": 4, "leafChunkTokens": 1500, "leafMinFanout": 4, "condensedMinFanout": 3, "sweepMaxDepth": -1,
    "condensedTargetTokens": 300, "summaryPrefixTargetTokens": 1500, "proactiveThresholdCompactionMode": "inline",
})  # fmt: skip


@pytest.fixture(scope="module")
def run() -> Replay:
    """synth-1 under a deep inline setting: the model receives a condensed summary, leaves and a raw tail."""
    conversation = read_transcript(FIXTURES / "reference-runs" / "inputs" / "synth-1.jsonl.gz").conversations[0].conversation
    return replay(conversation, INLINE, StubV1Summarizer(), token_budget=12_000)


@pytest.fixture
def saved(run: Replay) -> Iterator[tuple[LabStore, str]]:
    store = LabStore(":memory:")
    yield store, lab.save_replay(store, run, label="synth-1 inline 12k")
    store.close()


def condensed_in_context(run: Replay) -> str:
    return next(str(i.ref) for i in run.final_context if i.kind == "summary" and run.summary(str(i.ref)).kind == "condensed")


def test_dissolve_restores_the_inputs_in_place_as_a_derived_run(run: Replay, saved: tuple[LabStore, str]) -> None:
    store, run_id = saved
    target = condensed_in_context(run)
    inputs = run.summary(target).source_summary_ids
    result = lab.whatif.dissolve(run_id, target, store=store)
    before, after = list(run.final_context), list(result.run.final_context)
    at = before.index(next(i for i in before if i.ref == target))
    assert [i.ref for i in after[at : at + len(inputs)]] == list(inputs)  # in order, where the summary was
    assert after[:at] == before[:at] and after[at + len(inputs):] == before[at + 1:]
    assert result.run.final_tokens == run.final_tokens - run.summary(target).token_count + sum(run.summary(s).token_count for s in inputs)
    assert run.final_context == tuple(before)  # the original is untouched
    assert result.run.turns[:-1] == run.turns[:-1]  # the turn history is the parent's
    # what the model receives is re-assembled under the run's budget by the engine
    sent = result.run.sent()
    assert sent.path == "assembled" and sent.estimated_tokens <= run.token_budget
    diff = result.context_diff()
    assert diff.loc[diff["status"] == "removed", "ref"].tolist() == [target]
    assert set(diff.loc[diff["status"] == "added", "ref"]) <= set(inputs)
    # saved with its parent and edit; rebuilt from the store exactly
    assert result.parent_run_id == run_id and result.run_id != run_id
    assert load_replay(store, result.run_id) == result.run
    assert lab.whatif.reassemble(result.run_id, store=store) == sent
    edits = lab.whatif.edits_df(store)
    assert edits[["run_id", "parent_run_id", "op"]].values.tolist() == [[result.run_id, run_id, "dissolve"]]
    assert json.loads(edits["edit"][0])["restored"] == list(inputs)
    # the same edit again is the same run
    assert lab.whatif.dissolve(run_id, target, store=store).run_id == result.run_id
    assert len(lab.whatif.edits_df(store)) == 1


def test_dissolve_refuses_what_does_not_apply(run: Replay, saved: tuple[LabStore, str]) -> None:
    store, run_id = saved
    consumed = run.summary(condensed_in_context(run)).source_summary_ids[0]
    with pytest.raises(EditError, match="not in the run's final context"):
        lab.whatif.dissolve(run_id, consumed, store=store)
    with pytest.raises(EditError, match="no summary 'sum_nope'"):
        lab.whatif.dissolve(run_id, "sum_nope", store=store)
    with pytest.raises(EditError, match="no replay 'run_nope'"):
        lab.whatif.dissolve("run_nope", consumed, store=store)
    with pytest.raises(EditError, match="summary ids or depth"):
        lab.whatif.rewrite(run_id, store=store)
    with pytest.raises(EditError, match="no summaries at depth 9"):
        lab.whatif.rewrite(run_id, depth=9, store=store)
    with pytest.raises(EditError, match="prompt sets apply to model summarizers"):
        lab.whatif.rewrite(run_id, depth=0, prompt_set="somewhere", store=store)


def test_rewrite_a_depth_offline_keeps_the_dag_and_changes_the_texts(run: Replay, saved: tuple[LabStore, str]) -> None:
    store, run_id = saved
    result = lab.whatif.rewrite(run_id, depth=0, store=store)
    leaves = [s for s in run.summaries if s.depth == 0]
    assert len(result.calls) >= len(leaves)  # one call each, two when escalated
    assert {c.kind for c in result.calls} == {"leaf"} and {c.depth for c in result.calls} == {0}
    rewritten = result.run.summaries_by_id
    assert [s.summary_id for s in result.run.summaries] == [s.summary_id for s in run.summaries]  # same DAG
    assert all(rewritten[s.summary_id].model == OFFLINE_MODEL for s in leaves)
    assert all(rewritten[s.summary_id].content == s.content for s in run.summaries if s.depth > 0)  # consumers keep their text
    assert set(result.changed_summary_ids) <= {s.summary_id for s in leaves} and result.changed_summary_ids
    for sid in result.changed_summary_ids:
        assert rewritten[sid].token_count == estimate_tokens(rewritten[sid].content)
    # the leaf call sees the same source text the engine built for the original pass
    original_sources = {c.source_text for t in run.turns for c in t.calls if c.kind == "leaf"}
    assert {c.source_text for c in result.calls} <= original_sources
    assert result.edit["summarizer"] == "offline" and result.edit["depth"] == 0
    assert load_replay(store, result.run_id) == result.run
    widget = result.summary_diff(labels=("stub-v1", "offline"))
    assert {p.left_id for p in widget.pairs} == set(result.changed_summary_ids)
    assert all(p.left_id == p.right_id for p in widget.pairs)
    table = lab.whatif.compare(result.parent, result.run, labels=["original", "rewrite"])
    assert table["run"].tolist() == ["original", "rewrite"]
    assert table["edit"].tolist()[1] == "rewrite" and table["parent_run_id"].tolist()[1] == run_id
    assert {"sent_tokens", "stored_tokens", "fact_retention", "fact_retention_raw"} <= set(table.columns)
    assert table["stored_tokens"].tolist() == [run.final_tokens, result.run.final_tokens]


def test_rewrite_with_a_model_goes_through_the_ledger_and_its_cache(run: Replay, saved: tuple[LabStore, str]) -> None:
    store, run_id = saved
    top = condensed_in_context(run)
    ids = [*run.summary(top).source_summary_ids, top]  # inputs first, so the top is written from their new texts
    with FakeOpenAIServer() as server:
        result = lab.whatif.rewrite(run_id, ids, model="openai/fake-small", api_base=server.base_url, api_key="sk-test-unused",
                                    store=store)  # fmt: skip
        requests = len(server.completion_requests)
        again = lab.whatif.rewrite(run_id, ids, model="openai/fake-small", api_base=server.base_url, api_key="sk-test-unused",
                                   store=store)  # fmt: skip
        assert len(server.completion_requests) == requests  # everything came from the cache
    assert requests == len(result.calls) >= len(ids)
    assert again.run_id == result.run_id and again.run.summaries == result.run.summaries
    assert all(c.cached for c in again.calls) and not any(c.cached for c in result.calls)
    calls = Ledger(store).calls(result.run_id)
    assert len(calls) == 2 * requests and sum(1 for c in calls if c["cache_hit"]) == requests
    assert {c["model"] for c in calls} == {"openai/fake-small"}
    assert {(c["kind"], c["depth"]) for c in calls} == {("condensed", run.summary(s).depth) for s in ids}
    new = result.run.summaries_by_id
    assert all(new[s].model == "fake-small" or new[s].model.endswith("fake-small") for s in ids)
    # the condensed request was built from the inputs' new texts
    top_call = next(c for c in result.calls if c.depth == run.summary(top).depth)
    assert all(new[s].content.strip() in top_call.source_text for s in run.summary(top).source_summary_ids)
    assert "sk-test-unused" not in json.dumps(result.edit) and "127.0.0.1" not in json.dumps(result.edit)


def test_user_lcm_db_is_never_written(tmp_path: Path) -> None:
    db = gunzip_to(DATASETS / "lcm-db" / "before-compaction__C1-defaults-32k.db.gz", tmp_path)
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    files = sorted(p.name for p in tmp_path.iterdir())
    store = LabStore(tmp_path.parent / f"{tmp_path.name}-lab.duckdb")
    try:
        lab.load_lcm_db(db, store)
        conversation = store.conversation(int(store.conversations_df()["conversation_id"][0]))
        recorded = replay(conversation, LcmConfig(), StubV1Summarizer(), token_budget=128_000, from_recorded=True)
        assert recorded.final_context == conversation.context_items  # the recorded state, not compacted again
        target = condensed_in_context(recorded)
        dissolved = lab.whatif.dissolve(recorded, target, store=store)
        rewritten = lab.whatif.rewrite(dissolved.run_id, [target], store=store)
        assert dissolved.run.final_tokens > recorded.final_tokens and rewritten.changed_summary_ids == (target,)
    finally:
        store.close()
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == files  # no -wal, -shm or journal either


def test_cli_dissolve_rewrite_reassemble_list(run: Replay, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "lab.duckdb"
    with LabStore(db) as store:
        run_id = lab.save_replay(store, run)
    target = condensed_in_context(run)
    assert main(["whatif", "dissolve", run_id, target, "--db", str(db), "--json", "--no-scores"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parent_run_id"] == run_id and out["edit"]["op"] == "dissolve"
    assert [r["run"] for r in out["compare"]] == ["original", "dissolve"]
    assert out["compare"][1]["stored_tokens"] > out["compare"][0]["stored_tokens"]
    assert main(["whatif", "rewrite", out["run_id"], "--depth", "0", "--db", str(db), "--no-scores"]) == 0
    printed = capsys.readouterr().out
    assert "rewrite of " + out["run_id"] in printed and "stored_tokens" in printed and "sent_tokens" in printed
    assert main(["whatif", "reassemble", run_id, "--token-budget", "3000", "--db", str(db), "--json"]) == 0
    items = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert items and sum(i["tokens"] for i in items) <= 3000 * 1.2
    assert main(["whatif", "list", "--db", str(db), "--json"]) == 0
    assert [json.loads(line)["op"] for line in capsys.readouterr().out.splitlines()] == ["dissolve", "rewrite"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["whatif", "dissolve", "run_nope", "sum_x"], "no replay 'run_nope'"),
        (["whatif", "dissolve", "{run}", "sum_nope"], "no summary 'sum_nope'"),
        (["whatif", "rewrite", "{run}", "--depth", "7"], "no summaries at depth 7"),
        (["whatif", "rewrite", "{run}", "--depth", "0", "--prompts", "x"], "--api-base and --prompts apply to --model"),
        (["whatif", "rewrite", "{run}", "--depth", "0", "--summarizer", "offline", "--model", "m"], "choose one"),
    ],
)
def test_cli_user_errors_exit_2_with_one_line(run: Replay, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              argv: list[str], message: str) -> None:
    db = tmp_path / "lab.duckdb"
    with LabStore(db) as store:
        run_id = lab.save_replay(store, run)
    assert main([a.replace("{run}", run_id) for a in argv] + ["--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lcm-lab whatif: ") and message in err


@pytest.mark.parametrize("value", ["-1", "abc", "1.5"])
def test_cli_rewrite_refuses_a_bad_max_retries_in_one_line(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["whatif", "rewrite", "run_x", "--depth", "0", "--model", "openai/fake-model", "--max-retries", value])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and f"--max-retries: {value} is not a whole number ≥ 0" in err, err


def test_cli_rewrite_takes_the_summarizer_options_of_replay(run: Replay, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Before: ``--max-retries`` (and the rest of replay's summarizer options) was an unrecognized
    argument, and a model rewrite always retried three times."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    db = tmp_path / "lab.duckdb"
    with LabStore(db) as store:
        run_id = lab.save_replay(store, run)
    # one summary (an escalation may add a call) whose source (470 tokens) is longer than the fake
    # model's summary: the first leaf's 81 tokens are not, so its every rewrite was the truncation fallback
    leaf = [s.summary_id for s in run.summaries if s.kind == "leaf"][2]
    argv = ["whatif", "rewrite", run_id, "--summary-id", leaf, "--model", "openai/fake-model", "--cache", "off", "--db", str(db),
            "--no-scores"]  # fmt: skip
    for retries, failed in ((1, 1), (2, 0)):  # the first call meets two 500s: with one retry it fails, with two it is answered
        # every request beyond one per call is a retry
        with FakeOpenAIServer() as server:
            server.enqueue(Reply(status=500), Reply(status=500))
            assert main([*argv, "--api-base", server.base_url, "--max-retries", str(retries), "--json"]) == 0
            out = json.loads(capsys.readouterr().out)
            assert out["failed_calls"] == failed and len(server.completion_requests) - out["summarizer_calls"] == retries, out
