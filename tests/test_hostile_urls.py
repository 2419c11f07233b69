"""URL credentials and api_base checks, run for real in a subprocess: a password in ``--api-base``
is never echoed in its usage error; a sweep spec's ``api_base`` gets the same check (one home:
``lcm_lab.summarizers.provider.api_base_problem``) and is stored without its password."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fakeserver import FakeOpenAIServer
from test_hostile_model_calls import session
from test_hostile_output import lab
from test_sweep import small_spec

PASSWORD = "zqPASSWORDinurl"


@pytest.mark.parametrize("base", [f"ftp://u:{PASSWORD}@127.0.0.1:9/v1", f"http://u:{PASSWORD}@/v1",
                                  f"http://u:{PASSWORD}@h:notaport/", f"http://u:{PASSWORD}@[::1/v1"])  # fmt: skip
def test_a_bad_api_base_is_refused_without_its_password(tmp_path: Path, base: str) -> None:
    session(tmp_path / "s.jsonl", turns=2)
    result = lab("replay", "--db", "a.duckdb", "--no-save", "--summarizer", "litellm", "--model", "openai/zq",
                 "--api-base", base, "s.jsonl", cwd=tmp_path)  # fmt: skip
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "not an http(s) URL" in lines[0], result.stderr
    assert PASSWORD.encode() not in result.stderr + result.stdout and "[redacted]@" in lines[0]


def _spec(tmp_path: Path, api_base: str) -> str:
    spec = small_spec(summarizer={"name": "litellm", "model": "openai/fake-model", "api_base": api_base, "max_retries": 0})
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(spec))
    return "sweep.yaml"


@pytest.mark.parametrize("base", [f"ftp://u:{PASSWORD}@127.0.0.1:9/v1", f"http://u:{PASSWORD}@[::1/", "http://[::1/"])
def test_a_sweep_spec_api_base_gets_the_same_check(tmp_path: Path, base: str) -> None:
    result = lab("sweep", "--db", "sw.duckdb", "--no-progress", _spec(tmp_path, base), cwd=tmp_path)
    err = result.stderr.decode()
    assert result.returncode == 2 and "Traceback" not in err and "summarizer.api_base: " in err, err
    assert "not an http(s) URL" in err and PASSWORD not in err
    assert not (tmp_path / "sw.duckdb").exists() or PASSWORD.encode() not in (tmp_path / "sw.duckdb").read_bytes()


def test_a_sweep_stores_its_api_base_without_the_password(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:  # (litellm sends the URL's user info as the credentials: the server refuses)
        shown = server.base_url.replace("http://", "http://[redacted]@")
        base = server.base_url.replace("http://", f"http://u:{PASSWORD}@")
        result = lab("sweep", "--db", "sw.duckdb", "--no-progress", _spec(tmp_path, base), cwd=tmp_path)
    assert "Traceback" not in result.stderr.decode(), result.stderr.decode()[-3000:]
    assert PASSWORD.encode() not in result.stdout + result.stderr
    assert PASSWORD.encode() not in (tmp_path / "sw.duckdb").read_bytes()
    from lcm_lab.store import open_store

    store = open_store(str(tmp_path / "sw.duckdb"))
    try:
        (spec,) = store.fetch_all("SELECT spec FROM sweeps")[0]
    finally:
        store.close()
    assert shown in spec and PASSWORD not in spec


@pytest.mark.parametrize("dataset", ["../../../../../../etc/passwd", "/etc/passwd", "locomo/../../../../../../../etc/passwd"])
def test_a_sweep_dataset_is_a_bundled_name_never_a_path_out(tmp_path: Path, dataset: str) -> None:
    spec = small_spec(conversations=[{"dataset": dataset}])
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(spec))
    result = lab("sweep", "--db", "sw.duckdb", "--no-progress", "sweep.yaml", cwd=tmp_path)
    err = result.stderr.decode()
    assert result.returncode == 2 and "Traceback" not in err and f"no bundled dataset {dataset!r}" in err, err
    assert "root:" not in err and b"root:" not in result.stdout
