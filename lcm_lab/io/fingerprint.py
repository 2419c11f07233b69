"""A file's identity for idempotent loading: sha256 of its bytes, with size and mtime."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FileFingerprint:
    path: str
    sha256: str
    size_bytes: int
    mtime: float


def fingerprint(path: str | os.PathLike[str], chunk: int = 1 << 20) -> FileFingerprint:
    """sha256, size and mtime of a file, read in chunks (never the whole file in memory).

    Of a file still being written, the bytes it holds when this starts (the load then reads up
    to that size too: :mod:`lcm_lab.io.growing`)."""
    digest = hashlib.sha256()
    target = Path(path)
    with open(target, "rb") as handle:
        st = os.fstat(handle.fileno())
        left = st.st_size
        while left > 0 and (block := handle.read(min(chunk, left))):
            digest.update(block)
            left -= len(block)
    return FileFingerprint(str(target.resolve()), digest.hexdigest(), st.st_size - left, st.st_mtime)


def unchanged_since(fp: FileFingerprint, path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` still has the size and mtime it had when ``fp`` was taken."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (st.st_size, st.st_mtime) == (fp.size_bytes, fp.mtime)
