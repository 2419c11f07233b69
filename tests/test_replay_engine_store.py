"""``Replay.engine`` survives the lab store (payload and ``replays.engine``), old stores and old payloads
load as 0.15.3, and the engine appears where runs are listed."""

from __future__ import annotations

import dataclasses
import json
import zlib
from pathlib import Path

import pytest
from conftest import FIXTURES, gunzip_to

from lcm_lab.cli import main
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.engine.types import Conversation, StoredMessage
from lcm_lab.store import LabStore
from lcm_lab.store.replays import encode_replay, load_replay, replays_df, save_replay, write_encoded_replays
from lcm_lab.summarizers import get_summarizer


@pytest.fixture(scope="module")
def run_0153() -> Replay:
    messages = tuple(StoredMessage(i, "user" if i % 2 else "assistant", f"message {i} " * 40, 120) for i in range(1, 41))
    return replay(Conversation("engine-test", stored_messages=messages), summarizer=get_summarizer("offline"), token_budget=2000)


def test_engine_survives_save_and_load(run_0153: Replay) -> None:
    run_10 = dataclasses.replace(run_0153, engine="1.0")
    with LabStore(":memory:") as store:
        old_id, new_id = save_replay(store, run_0153), save_replay(store, run_10)
        assert old_id != new_id  # the engine is part of the run
        assert load_replay(store, old_id).engine == "0.15.3"  # type: ignore[union-attr]
        assert load_replay(store, new_id).engine == "1.0"  # type: ignore[union-attr]
        frame = replays_df(store).set_index("run_id")
        assert frame.loc[old_id, "engine"] == "0.15.3" and frame.loc[new_id, "engine"] == "1.0"


def test_the_sweep_writer_records_the_engine(run_0153: Replay) -> None:
    with LabStore(":memory:") as store:
        encoded = encode_replay(dataclasses.replace(run_0153, engine="1.0"))
        assert write_encoded_replays(store, [encoded]) == 1
        assert store.fetch_all("SELECT engine FROM replays WHERE run_id = ?", [encoded.run_id]) == [("1.0",)]


def _payload_without_engine(payload: bytes) -> bytes:
    data = json.loads(zlib.decompress(payload))
    del data["engine"]
    return zlib.compress(json.dumps(data).encode(), 6)


def test_a_store_from_before_the_engine_column_loads_its_runs_as_0153(run_0153: Replay, tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    with LabStore(path) as store:
        run_id = save_replay(store, run_0153)
        # as an older lab left it: no engine column, no record of the migration, a payload without the field
        payload = store.fetch_all("SELECT payload FROM replays WHERE run_id = ?", [run_id])[0][0]
        store.execute("UPDATE replays SET payload = ? WHERE run_id = ?", [_payload_without_engine(bytes(payload)), run_id])
        store.execute("ALTER TABLE replays DROP COLUMN engine")
        store.execute("DELETE FROM schema_migrations WHERE name = 'm011_replay_engine'")
    with LabStore(path) as store:
        assert store.fetch_all("SELECT engine FROM replays") == [("0.15.3",)]
        assert load_replay(store, run_id).engine == "0.15.3"  # type: ignore[union-attr]
        assert "m011_replay_engine" in store.applied_migrations


def test_the_replay_command_names_the_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    transcript = gunzip_to(FIXTURES / "reference-runs" / "inputs" / "golden-session.jsonl.gz", tmp_path)
    db = str(tmp_path / "lab.duckdb")
    assert main(["replay", str(transcript), "--token-budget", "2000", "--summarizer", "stub-v1", "--db", db]) == 0
    line = capsys.readouterr().out
    assert line.rstrip().endswith("compaction), lossless-claw 0.15.3")
    assert main(["replay", str(transcript), "--token-budget", "2000", "--summarizer", "stub-v1", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["engine"] == "0.15.3"


def test_export_of_a_saved_1_0_run_names_its_schema(run_0153: Replay, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "lab.duckdb"
    with LabStore(db) as store:
        run_id = save_replay(store, dataclasses.replace(run_0153, engine="1.0"))
    assert main(["export", run_id, "-o", str(tmp_path / "out.db"), "--db", str(db)]) == 0
    assert "(lossless-claw 1.0 schema)" in capsys.readouterr().out
    assert main(["export", run_id, "-o", str(tmp_path / "out2.db"), "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["schema"] == "1.0"
