"""``lcm-lab doctor`` on lcm.db files of lossless-claw 1.0: no false alarms on what 1.0 does by design,
and each 1.0 check found on a database broken in exactly that way (and only that check)."""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from conftest import FIXTURES, gunzip_to

from lcm_lab.cli import main
from lcm_lab.io.lcmdb_rows import read_lcmdb_rows
from lcm_lab.metrics.doctor import CHECKS, diagnose

V1_DBS = sorted((FIXTURES / "lcm-db-v1").glob("*.db.gz"))
SYNTH = FIXTURES / "lcm-db-v1" / "synth-1__C2-tight.db.gz"
V1_CHECKS = ("pending-node-without-batch", "published-batch-missing-summary", "broken-pending-link",
             "ready-node-without-content", "receipt-without-messages")  # fmt: skip


def checks_of(path: Path) -> Counter[str]:
    return Counter(f.check for f in diagnose(read_lcmdb_rows(path)))


def broken(tmp_path: Path, *statements: str) -> Path:
    """A copy of the synth-1 1.0 file with ``statements`` applied (foreign keys off, as a crash or a bug would leave it)."""
    db = gunzip_to(SYNTH, tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA foreign_keys = OFF")
    for sql in statements:
        assert conn.execute(sql).rowcount > 0, sql  # each edit really changes the file
    conn.commit()
    conn.close()
    return db


def test_the_1_0_checks_are_registered() -> None:
    assert set(V1_CHECKS) <= set(CHECKS)


@pytest.mark.parametrize("gz", V1_DBS, ids=lambda p: p.name.removesuffix(".db.gz"))
def test_reference_files_are_clean_and_unchanged(gz: Path, tmp_path: Path) -> None:
    db = gunzip_to(gz, tmp_path)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    rows = read_lcmdb_rows(db)
    # by design: promoted nodes have no content, and (locomo) finished batches older than 7 days are gone
    assert any(n.status == "promoted" and n.content is None for n in rows.pending_nodes)
    assert len(rows.receipts) > 0
    assert diagnose(rows) == []
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [db.name]


def test_expired_batches_are_no_finding(tmp_path: Path) -> None:
    """deleteFinishedBatches removes published batches and (cascade) their nodes: the summaries stay, unexplained."""
    db = gunzip_to(SYNTH, tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA foreign_keys = ON")
    assert conn.execute("DELETE FROM pending_compaction_batches WHERE status = 'published'").rowcount == 17
    conn.commit()
    conn.close()
    rows = read_lcmdb_rows(db)
    assert len(rows.pending_nodes) == 1 and len(rows.summaries) == 23
    assert diagnose(rows) == []


PLANNING_BATCH = "(SELECT batch_id FROM pending_compaction_batches WHERE status = 'planning')"
A_PROMOTED_NODE = "(SELECT min(node_id) FROM pending_summary_nodes WHERE status = 'promoted')"
BROKEN = {
    "pending-node-without-batch": [f"DELETE FROM pending_compaction_batches WHERE batch_id = {PLANNING_BATCH}"],
    "published-batch-missing-summary": [
        f"UPDATE pending_summary_nodes SET canonical_summary_id = 'sum_0000000000000000' WHERE node_id = {A_PROMOTED_NODE}"
    ],
    "broken-pending-link": [
        "UPDATE pending_summary_node_messages SET message_id = 99999 WHERE rowid = (SELECT min(rowid) FROM pending_summary_node_messages)"
    ],
    "ready-node-without-content": ["UPDATE pending_summary_nodes SET content = '  ' WHERE status = 'ready'"],
    "receipt-without-messages": [
        "UPDATE turn_advancements SET message_count = message_count + 2 WHERE advancement_key = 'lcref-turn-0'"
    ],
}


@pytest.mark.parametrize("check", V1_CHECKS)
def test_each_check_finds_its_broken_database_and_nothing_else(check: str, tmp_path: Path) -> None:
    findings = diagnose(read_lcmdb_rows(broken(tmp_path, *BROKEN[check])))
    assert [f.check for f in findings] == [check]
    (finding,) = findings
    assert finding.severity == CHECKS[check] and finding.summary_id is None  # a pending row is not a summary
    assert finding.session_id == "81124546-33ed-520f-ae5e-ecc95a2c5a7c"


def test_more_ways_to_break_the_pending_tables(tmp_path: Path) -> None:
    published_nodes_demoted = broken(
        tmp_path,
        "UPDATE pending_summary_nodes SET status = 'stale' WHERE batch_id = "
        f"(SELECT batch_id FROM pending_summary_nodes WHERE node_id = {A_PROMOTED_NODE})",
    )
    findings = diagnose(read_lcmdb_rows(published_nodes_demoted))
    assert [f.check for f in findings] == ["published-batch-missing-summary"]
    assert "none of its nodes was promoted" in findings[0].evidence
    published_nodes_demoted.unlink()

    child_gone = broken(
        tmp_path,
        "UPDATE pending_summary_node_children SET child_summary_id = 'sum_0000000000000000'"
        " WHERE rowid = (SELECT min(rowid) FROM pending_summary_node_children WHERE child_summary_id IS NOT NULL)",
    )
    assert checks_of(child_gone) == Counter({"broken-pending-link": 1})
    child_gone.unlink()

    foreign_session = broken(tmp_path, "UPDATE turn_advancements SET session_id = 'elsewhere' WHERE advancement_key = 'lcref-turn-3'")
    (finding,) = diagnose(read_lcmdb_rows(foreign_session))
    assert finding.check == "receipt-without-messages" and finding.session_id == "elsewhere"
    assert "no conversation of that session exists" in finding.evidence


def test_a_cycle_among_pending_node_children_is_an_error(tmp_path: Path) -> None:
    """A pending node among its own children (two nodes each the other's child, one its own) was "no findings"."""
    two = "(SELECT node_id FROM pending_summary_nodes ORDER BY node_id LIMIT 2)"
    db = broken(
        tmp_path,
        "INSERT INTO pending_summary_node_children (node_id, ordinal, child_node_id)"
        f" SELECT a.node_id, 100, b.node_id FROM {two} a, {two} b WHERE a.node_id <> b.node_id",
        "INSERT INTO pending_summary_node_children (node_id, ordinal, child_node_id) SELECT max(node_id), 100, max(node_id)"
        " FROM pending_summary_nodes",
    )
    conn = sqlite3.connect(db)
    first, second, last = (row[0] for row in conn.execute(
        "SELECT node_id FROM pending_summary_node_children WHERE ordinal = 100 ORDER BY node_id"))  # fmt: skip
    conn.close()
    findings = diagnose(read_lcmdb_rows(db))
    assert [(f.check, f.severity, f.evidence) for f in findings] == [
        ("cyclic-pending-dag", "error", f"pending nodes {first} -> {second} -> {first}"),
        ("cyclic-pending-dag", "error", f"pending nodes {last} -> {last}"),
    ]
    assert main(["doctor", str(db), "--fail-on", "error"]) == 1


def test_cli_exit_codes_on_1_0_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", str(SYNTH)]) == 0
    assert "19 pending summary nodes (1 not published), 34 turn receipts" in capsys.readouterr().err
    bad = broken(tmp_path, *BROKEN["pending-node-without-batch"])
    assert main(["doctor", str(bad)]) == 1
    row = capsys.readouterr().out.splitlines()[2]  # the table's first row, under the header and its rule
    assert "pending-node-without-batch" in row and " error " in row and "pending node psn_" in row
    assert main(["doctor", str(bad), "--fail-on", "warning"]) == 1
