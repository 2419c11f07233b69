"""Paths found inside data are data: the one resolver that decides which of them the lab reads.

An lcm.db names its large-file payloads in ``large_files.storage_uri``; a crafted or damaged one
can name ``/etc/passwd``, ``../../.ssh/id_rsa`` or a link that leaves the payload directory. The
plugin reads a payload only when the real path (symlinks resolved) of ``storage_uri`` lies
inside the real path of its ``largeFilesDir`` (lossless-claw 0.15.3 ``src/retrieval.ts``,
``describe`` with ``expandFile``), which by default is ``lcm-files`` in the state directory, beside
``lcm.db`` (``src/db/config.ts``). The lab applies the same rule to the ``lcm-files`` directory
beside the lcm.db it loaded:

* an absolute ``storage_uri`` is taken as recorded;
* a relative one is taken relative to the lcm.db's directory;
* a copied state directory keeps the plugin's layout (``lcm-files/<conversation>/<file>``) but
  not its absolute paths, so a recorded path with an ``lcm-files`` component is also looked up
  under the local payload directory by the part after it.

Whatever the spelling, the candidate's real path must be a regular file inside the payload
directory's real path; anything else is refused (:attr:`Resolved.problem` says why) and never
opened. Unlike the plugin, the lab also refuses every payload when the payload directory itself
is a symbolic link: the plugin trusts its own state directory, but a state directory the lab is
given may come from anywhere, and ``lcm-files -> /`` would put every file inside it.

>>> root = Path("/state/lcm-files")
>>> resolve_data_path("/etc/passwd", root).problem
'outside the payload directory /state/lcm-files'
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

PAYLOAD_DIR = "lcm-files"
NOT_ON_DISK = "not on disk"


class Resolved(NamedTuple):
    """The file to read (``path``), or why a recorded path is not read (``problem``)."""

    path: Path | None
    problem: str | None


def payload_dir(lcm_db: str | os.PathLike[str]) -> Path:
    """The payload directory the plugin writes beside ``lcm_db`` (``<state dir>/lcm-files``)."""
    return Path(lcm_db).absolute().parent / PAYLOAD_DIR


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def within(path: Path, root: Path) -> bool:
    """Whether ``path``, links resolved, lies inside ``root`` (links resolved): a file found by
    listing a directory the lab was given, which a link may lead out of."""
    return _inside(Path(os.path.realpath(path)), Path(os.path.realpath(root)))


def resolve_data_path(recorded: str, root: Path) -> Resolved:
    """Resolve ``recorded`` (a path read from data) against the payload directory ``root``."""
    if "\x00" in recorded:  # no file system takes one; realpath would raise
        return Resolved(None, "not a path (it holds a NUL byte)")
    if not recorded:
        return Resolved(None, "not a path (it is empty)")
    if root.is_symlink():
        return Resolved(None, f"the payload directory {root} is a symbolic link (the lab reads payloads only "
                              "from a real directory beside the lcm.db: copy them there)")  # fmt: skip
    real_root = Path(os.path.realpath(root))
    given = Path(recorded)
    candidates = [given if given.is_absolute() else root.parent / given]
    parts = given.parts
    if PAYLOAD_DIR in parts:
        tail = parts[len(parts) - 1 - parts[::-1].index(PAYLOAD_DIR) + 1 :]
        if tail:
            candidates.append(root.joinpath(*tail))
    outside = False
    for candidate in candidates:
        try:
            real = Path(os.path.realpath(candidate))
            if not _inside(real, real_root):
                outside = outside or real.exists()
                continue
            if real.is_file():
                return Resolved(real, None)
        except OSError as error:  # a name too long for the file system, a loop of links
            return Resolved(None, f"not a path this system can read ({os.strerror(error.errno or 0).lower()})")
    if outside:
        return Resolved(None, f"outside the payload directory {root}")
    return Resolved(None, NOT_ON_DISK)
