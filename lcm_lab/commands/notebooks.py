"""``lcm-lab notebooks DIR``: copy the bundled notebooks into DIR to run them (never overwrites).

The notebooks ship with the package (:func:`lcm_lab.bundled.notebooks_path`) and read the
bundled data wherever lcm_lab is installed. Open them with ``jupyter lab DIR`` (JupyterLab and the
widgets come with ``pip install 'lcm_lab[notebooks]'``).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from lcm_lab.cli import add_json_argument, path_argument, print_json_lines


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("notebooks", help="copy the bundled notebooks into a directory to run them",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", type=path_argument, metavar="DIR", help="where to put them (created if missing)")
    add_json_argument(parser, "one object per notebook (JSON Lines): path, copied")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lcm_lab.bundled import notebooks_path

    target = Path(args.directory)
    target.mkdir(parents=True, exist_ok=True)
    rows = []
    for notebook in sorted(notebooks_path().glob("*.ipynb")):
        destination = target / notebook.name
        try:  # "x": an existing entry, a link (dangling or not) included, is left as it is, never written through
            with notebook.open("rb") as source, destination.open("xb") as out:
                shutil.copyfileobj(source, out)
            copied = True
        except FileExistsError:
            copied = False
        rows.append({"path": str(destination), "copied": copied})
    if args.json:
        print_json_lines(rows)
        return 0
    for row in rows:
        print(f"{row['path']}{'' if row['copied'] else '  (exists, left as it is)'}")
    print(f"open them with: jupyter lab {target}")
    return 0
