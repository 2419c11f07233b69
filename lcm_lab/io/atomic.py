"""Writing a file so that readers see the old file or the whole new one, never a part."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_text_atomic(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to a temporary file beside ``path``, flush it to disk, then rename it over
    ``path``. A full disk or a crash leaves ``path`` as it was (and no temporary file behind).

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "page.html"
    >>> write_text_atomic(target, "<p>hi</p>").read_text()
    '<p>hi</p>'
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding=encoding) as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(name, target)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return target
