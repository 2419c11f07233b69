"""HTML report: self-contained, escaped, one run or a comparison; the ``lcm-lab report`` command."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from report_data import PLANTED, PLANTED_IMG, planted_replay

from lcm_lab.cli import main
from lcm_lab.report import report, write_report


@pytest.fixture(scope="module")
def page() -> str:
    return report(planted_replay())


def test_replay_has_summaries_and_planted_text_in_context() -> None:
    r = planted_replay()
    assert r.summaries and max(s.depth for s in r.summaries) >= 1
    assert any(PLANTED in m.content for m in r.messages)


def test_page_is_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]+src=", page), "no external scripts"
    assert not re.search(r"<link[^>]+href=", page), "no external stylesheets"
    # outside the inline plotly.js bundle (whose defaults mention URLs it never loads here) nothing points out
    body = page.split("</head>", 1)[1]
    assert "://" not in body.replace("http://www.w3.org/", "")
    assert page.count('class="lcm-figure-data"') == 3  # budget, DAG, context
    assert 'id="plotly-js-gzip"' in page  # plotly.js once, compressed


def test_all_transcript_text_is_escaped(page: str) -> None:
    # Only our own script tags: the compressed plotly bundle, the loader and one (JSON data) per figure.
    assert PLANTED not in page and PLANTED_IMG not in page
    assert "&lt;script&gt;window.__planted = 1;" in page
    assert "planted &lt;b&gt;title&lt;/b&gt;" in page
    assert len(re.findall(r"<script\b", page)) == 2 + 3
    assert "<img" not in page


def test_comparison_of_runs_and_scores(tmp_path: Path) -> None:
    a = planted_replay()
    b = planted_replay("planted-run-2")
    scores = pd.DataFrame({"run_id": ["planted-run", "planted-run-2"], "scope": ["run", "run"], "scope_id": ["", ""],
                           "metric": ["fact_recall", "fact_recall"], "value": [0.5, 0.75]})
    out = write_report([a, b], tmp_path / "sub" / "cmp.html", labels=["first <x>", "second"], scores=scores)
    text = out.read_text(encoding="utf-8")
    assert out.exists() and "2 runs compared" in text
    assert 'id="comparison"' in text and 'id="scores"' in text and "first &lt;x&gt;" in text
    assert text.count('class="lcm-figure-data"') == 3 * 2 + 2
    with pytest.raises(ValueError, match="at least one replay"):
        report([])
    with pytest.raises(ValueError, match="2 labels for 1 replays"):
        report(a, labels=["x", "y"])


def test_report_command_uses_the_latest_replay_in_the_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lcm_lab.store.core import open_store
    from lcm_lab.store.replays import save_replay

    db = tmp_path / "lab.duckdb"
    assert main(["report", "--db", str(db), "-o", str(tmp_path / "none.html")]) == 2
    assert "no lab store at" in capsys.readouterr().err and not db.exists()  # a report never creates a store
    open_store(db).close()
    assert main(["report", "--db", str(db), "-o", str(tmp_path / "none.html")]) == 2
    assert "no replays yet" in capsys.readouterr().err
    with open_store(db) as store:
        run_id = save_replay(store, planted_replay())
    out = tmp_path / "r.html"
    assert main(["report", "--db", str(db), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert run_id in out.read_text(encoding="utf-8") and 'id="scores"' not in out.read_text(encoding="utf-8")
    from lcm_lab.metrics.base import Score
    from lcm_lab.store.scores import write_scores

    with open_store(db) as store:
        write_scores(store, [Score(run_id, "run", "", "fact_retention", 0.625)])
    assert main(["report", "--db", str(db), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert 'id="scores"' in text and "fact_retention" in text and "0.625" in text
    assert main(["report", "--db", str(db), "--run", "run_missing", "-o", str(out)]) == 2
    assert "no replay 'run_missing'" in capsys.readouterr().err
    # write_report resolves run ids through a given store
    with open_store(db) as store:
        path = write_report([run_id], tmp_path / "by-id.html", store=store)
    assert "planted-session" in path.read_text(encoding="utf-8") or run_id in path.read_text(encoding="utf-8")


def test_headlines_show_interval_and_chance(tmp_path: Path) -> None:
    import json

    from lcm_lab.metrics.headline import headline

    head = headline("planted-run", "qa_retention", raw=0.3, ceiling=0.5, floor=0.1, chance=0.01, n=40, unit="qa_item",
                    ci=(0.25, 0.7), extra={"proxy": True})
    scores = pd.DataFrame({"run_id": ["planted-run"], "scope": ["run"], "scope_id": [""], "metric": ["qa_retention"],
                           "value": [head.value], "details": [json.dumps(dict(head.details))]})
    text = write_report(planted_replay(), tmp_path / "h.html", scores=scores).read_text(encoding="utf-8")
    assert '<section id="headlines">' in text and "[0.250, 0.700]" in text and "offline proxy" in text and "qa_item" in text
    # an interval beyond the scale is clipped to it (raw share 0..1 -> normalised -0.25..2.25), none around a withheld value
    wide = headline("planted-run", "qa_retention", raw=0.3, ceiling=0.5, floor=0.1, chance=0.01, n=40, unit="qa_item", ci=(-1.0, 3.0))
    gone = headline("planted-run-2", "qa_retention", raw=0.3, ceiling=0.31, floor=0.3, chance=0.01, n=40, unit="qa_item", ci=(-1.0, 3.0))
    scores = pd.DataFrame({"run_id": ["planted-run", "planted-run-2"], "scope": ["run", "run"], "scope_id": ["", ""],
                           "metric": ["qa_retention"] * 2, "value": [wide.value, gone.value],
                           "details": [json.dumps(dict(wide.details)), json.dumps(dict(gone.details))]})
    text = write_report(planted_replay(), tmp_path / "w.html", scores=scores).read_text(encoding="utf-8")
    assert "[-0.250, 2.250]" in text and "[-1.000, 3.000]" not in text and "the scale is undefined" in text


def test_headlines_name_the_chance_donor(tmp_path: Path) -> None:
    import json

    from lcm_lab.metrics.headline import headline

    head = headline("planted-run", "fact_retention", raw=0.6, ceiling=1.0, floor=0.4, chance=0.05, n=30, unit="fact",
                    ci=(0.1, 0.5), extra={"chance_donor": "pi-mono/large-session.jsonl#0"})
    scores = pd.DataFrame({"run_id": ["planted-run"], "scope": ["run"], "scope_id": [""], "metric": ["fact_retention"],
                           "value": [head.value], "details": [json.dumps(dict(head.details))]})
    text = write_report(planted_replay(), tmp_path / "d.html", scores=scores).read_text(encoding="utf-8")
    assert "chance donor: pi-mono/large-session.jsonl#0" in text


def test_counts_held_as_floats_read_as_integers() -> None:
    scores = pd.DataFrame({"run_id": ["planted-run"] * 3, "scope": ["run"] * 3, "scope_id": [""] * 3,
                           "metric": ["compacting_turns", "fact_recall", "peak_context_tokens"], "value": [3.0, 0.5, 12345.0]})
    flat = re.sub(r"\s+", " ", report(planted_replay(), scores=scores))
    assert '<th>compacting_turns</th><td class="num">3</td>' in flat and ">3.000<" not in flat
    assert '<th>fact_recall</th><td class="num">0.500</td>' in flat
    assert '<th>peak_context_tokens</th><td class="num">12,345</td>' in flat
