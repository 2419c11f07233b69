"""Shared fixtures: repository paths, the shared-data folder, and an in-memory lab store."""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
DATASETS = REPO / "datasets"
SHARED = REPO.parent / "shared"


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


def shared_path(*parts: str) -> Path:
    """A path in the shared folder next to the repository, or skip the test if it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available at {path} (tests that need it are skipped)")
    return path
