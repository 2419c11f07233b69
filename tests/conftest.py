"""Shared fixtures: repository paths, bundled fixture archives, and an in-memory lab store.

Everything the suite reads is inside the repository (``tests/fixtures``, ``datasets``), so a
fresh clone runs it with nothing beside it; only live-provider tests skip (no API key).
"""

from __future__ import annotations

import atexit
import functools
import gzip
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
DATASETS = REPO / "datasets"


@pytest.fixture
def store() -> Iterator[object]:
    """A fresh in-memory :class:`lcm_lab.store.LabStore`."""
    from lcm_lab.store import LabStore

    lab = LabStore(":memory:")
    yield lab
    lab.close()


def gunzip_to(source: Path, directory: Path) -> Path:
    """Decompress ``source`` (``x.gz``) into ``directory/x`` and return the new path."""
    target = directory / source.name.removesuffix(".gz")
    with gzip.open(source, "rb") as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return target


@functools.cache
def sqlite_counts(path: Path) -> dict[str, int]:
    """``count(*)`` of every lossless-claw table of an lcm.db, as stdlib sqlite3 reports it (read-only)."""
    import sqlite3

    from lcm_lab.io.lcmdb import count_rows

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return count_rows(conn)
    finally:
        conn.close()


def unpacked(archive: str) -> Path:
    """Extract ``tests/fixtures/<archive>.tar.xz`` once per test process; return the directory.

    Archives hold many similar files (the reference runs' lcm.db files, the held-out inputs);
    one solid xz stream keeps them ~30x smaller in git than gzipping each file.
    """
    target = Path(tempfile.mkdtemp(prefix="lcm_lab_fixture_"))
    atexit.register(shutil.rmtree, target, True)
    with tarfile.open(FIXTURES / f"{archive}.tar.xz") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(target, filter="data")
        else:  # Python 3.11.0-3.11.3 (Debian 12 has 3.11.2): no extraction filters, so check by hand
            members = tar.getmembers()
            unsafe = [m.name for m in members if not (m.isfile() or m.isdir()) or Path(m.name).is_absolute()
                      or ".." in Path(m.name).parts]
            assert unsafe == [], f"{archive}.tar.xz: unsafe members {unsafe}"
            tar.extractall(target, members)
    return target


def archive_members(archive: str, suffix: str) -> list[str]:
    """Names in ``tests/fixtures/<archive>.tar.xz`` ending with ``suffix`` (for parametrizing)."""
    with tarfile.open(FIXTURES / f"{archive}.tar.xz") as tar:
        return sorted(Path(name).name for name in tar.getnames() if name.endswith(suffix))


def reference_db(run_id: str) -> Path:
    """The lcm.db the real lossless-claw wrote for reference run ``run_id`` (extracted, read-only use)."""
    return unpacked("reference-runs/lcm-dbs") / f"{run_id}.db"


def same_json_value(a: object, b: object) -> bool:
    """Equal node for node, with the same Python types and the same key order (NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(same_json_value(a[k], b[k]) for k in a)
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(same_json_value(x, y) for x, y in zip(a, b, strict=True))
    return a == b or (a != a and b != b)
