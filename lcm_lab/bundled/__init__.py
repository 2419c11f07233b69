"""What ships inside the package: the bundled datasets, the notebooks, and the demo that runs on
them (:mod:`lcm_lab.bundled.demo`).

In a checkout, ``lcm_lab/bundled/datasets`` and ``lcm_lab/bundled/notebooks`` are links to the
repository's ``datasets/`` and ``notebooks/``; a built wheel holds copies of both as package data,
so an installed lab needs no checkout and downloads nothing.

>>> datasets_path("locomo/locomo10.json").name
'locomo10.json'
>>> sorted(p.name for p in notebooks_path().glob("0[12]_*.ipynb"))
['01_quickstart.ipynb', '02_tune_parameters.ipynb']
"""

from __future__ import annotations

from pathlib import Path

from lcm_lab.errors import OptionError

_HERE = Path(__file__).resolve().parent


def datasets_path(relative: str | None = None) -> Path:
    """The bundled datasets directory (provenance and licences in its ``README.md``), or the file
    ``relative`` inside it; an :class:`~lcm_lab.errors.OptionError` names a file that is not there.

    ``relative`` is a bundled dataset's name (``locomo/locomo10.json``), never a way out: an
    absolute path, a ``..`` part, a backslash or NUL, or a link that leads outside the directory
    is refused (the name comes from a sweep spec, which may come from anyone), and nothing
    outside is opened or quoted.

    >>> datasets_path("../../../../../../etc/passwd")
    Traceback (most recent call last):
    lcm_lab.errors.OptionError: no bundled dataset '../../../../../../etc/passwd' (a dataset is named by its path inside the bundled datasets directory, e.g. locomo/locomo10.json; no '..' or absolute paths)
    """
    root = _HERE / "datasets"
    if relative is None:
        return root
    parts = relative.split("/")
    if relative.startswith("/") or "\\" in relative or "\0" in relative or any(part in ("", ".", "..") for part in parts):
        raise OptionError(f"no bundled dataset {relative!r} (a dataset is named by its path inside the bundled datasets directory, "
                          "e.g. locomo/locomo10.json; no '..' or absolute paths)")  # fmt: skip
    path = root.joinpath(*parts)
    real_root = root.resolve()
    inside = path.resolve().is_relative_to(real_root)
    if not inside or not path.is_file():
        known = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.name.startswith(("README", "LICENSE")))
        raise OptionError(f"no bundled dataset {relative!r}; the bundled ones are: {', '.join(known)}")
    return path


def notebooks_path() -> Path:
    """The directory of the bundled notebooks (copy them somewhere writable to run them:
    ``lcm-lab notebooks DIR``)."""
    return _HERE / "notebooks"
