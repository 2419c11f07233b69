"""The Makefile's editable install is one type checkers follow: ``mypy --strict`` on a user's
script outside the repository sees lcm_lab's types (an import-hook editable install leaves every
``lab.*`` as ``Any``). Built offline with the setuptools the test extra installs."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

GOOD = '''import lcm_lab as lab


def tail_of(config: lab.LcmConfig) -> int:
    return config.fresh_tail_count


def sweeps() -> object:
    return lab.list_sweeps()  # --strict refuses an unannotated function here


print(tail_of(lab.LcmConfig(fresh_tail_count=8)), sweeps)
'''
# a str where LcmConfig declares an int: caught only when mypy sees the real signature
BAD = GOOD.replace("fresh_tail_count=8", 'fresh_tail_count="8"')


def test_the_makefile_installs_in_compat_editable_mode() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^EDITABLE := --config-settings editable_mode=compat$", makefile, re.M)
    assert all("$(EDITABLE)" in line for line in makefile.splitlines() if "pip install" in line and " -e " in line)


@pytest.mark.slow
def test_mypy_strict_sees_the_package_through_the_editable_install(tmp_path: Path) -> None:
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip("needs setuptools>=77 (the test extra) to build the editable install offline")
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent))
    if mypy is None:
        pytest.skip("mypy is not installed (the test extra)")
    source = tmp_path / "checkout"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "lcm_lab", source / "lcm_lab", symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    # what `pip install -e . --config-settings editable_mode=compat` does, without an index
    build = ("import sys; from setuptools import build_meta as b; "
             "print(b.build_editable(sys.argv[1], {'editable_mode': 'compat'}))")
    wheel = subprocess.run([sys.executable, "-c", build, str(tmp_path)], cwd=source, capture_output=True, text=True,
                           check=True).stdout.split()[-1]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-deps",
                    "--no-index", str(tmp_path / wheel)], check=True, capture_output=True)
    user = tmp_path / "user"
    user.mkdir()
    (user / "good.py").write_text(GOOD)
    (user / "bad.py").write_text(BAD)

    def check(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([mypy, "--strict", "--python-executable", str(venv / "bin" / "python"), "--cache-dir",
                               str(tmp_path / "cache"), "--no-error-summary", script], cwd=user, capture_output=True, text=True)

    good = check("good.py")
    assert good.returncode == 0, good.stdout + good.stderr
    bad = check("bad.py")
    assert bad.returncode == 1 and 'Argument "fresh_tail_count" to "LcmConfig" has incompatible type "str"' in bad.stdout, bad.stdout
