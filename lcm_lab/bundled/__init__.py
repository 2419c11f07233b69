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
    ``relative`` inside it; an :class:`~lcm_lab.errors.OptionError` names a file that is not there."""
    root = _HERE / "datasets"
    if relative is None:
        return root
    path = root / relative
    if not path.is_file():
        known = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.name.startswith(("README", "LICENSE")))
        raise OptionError(f"no bundled dataset {relative!r}; the bundled ones are: {', '.join(known)}")
    return path


def notebooks_path() -> Path:
    """The directory of the bundled notebooks (copy them somewhere writable to run them:
    ``lcm-lab notebooks DIR``)."""
    return _HERE / "notebooks"
