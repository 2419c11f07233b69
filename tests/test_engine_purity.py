"""The engine is pure: importing any engine module pulls in no I/O, database or network library."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import lcm_lab.engine

FORBIDDEN = ("duckdb", "sqlite3", "litellm", "httpx", "requests", "urllib.request", "socket", "aiohttp")


def test_engine_modules_import_no_io_libraries() -> None:
    modules = [m.name for m in pkgutil.walk_packages(lcm_lab.engine.__path__, "lcm_lab.engine.")]
    assert len(modules) >= 10
    code = (
        "import sys\n"
        f"for name in {modules!r}:\n"
        "    __import__(name)\n"
        f"bad = sorted(m for m in {FORBIDDEN!r} if m in sys.modules)\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"engine imports I/O modules: {out.stdout.strip()}"


def test_engine_sources_do_not_open_files_or_read_the_clock() -> None:
    import inspect

    for info in pkgutil.walk_packages(lcm_lab.engine.__path__, "lcm_lab.engine."):
        module = __import__(info.name, fromlist=["_"])
        source = inspect.getsource(module)
        for needle in ("open(", "time.time(", "datetime.now(", "os.environ", "Path("):
            assert needle not in source.replace("doctest", ""), f"{info.name} uses {needle}"
