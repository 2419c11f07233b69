"""Regenerate ``lcm_lab/cost/evidence.json``: what the bundled real sessions say about the cache
misses the rules cannot predict (every exposed call's idle gap and whether it read nothing) and
about size drift (per window of held-out calls). The miss model's prior is read from that file
(:func:`lcm_lab.cost.misses.bundled_evidence`); ``tests/test_cost_validation.py`` fails when it
no longer matches the sessions.

    python -m lcm_lab.cost.evidence [--out PATH]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from lcm_lab.cost.misses import EVIDENCE_PATH, SessionEvidence
from lcm_lab.cost.validate import BUNDLED_SESSIONS, session_evidence, session_model

DATASETS = Path(__file__).resolve().parents[2] / "datasets"


def bundled_session_evidence(root: Path = DATASETS) -> list[SessionEvidence]:
    """The evidence of each bundled session, computed from its transcript."""
    from lcm_lab.cost.litellm_prices import load_prices
    from lcm_lab.host.recorded import recorded_session_calls
    from lcm_lab.io.transcripts import read_transcript

    out = []
    for relative in BUNDLED_SESSIONS:
        path = root / relative
        calls = recorded_session_calls(read_transcript(path).conversations)
        out.append(session_evidence(calls, load_prices(session_model(calls)), session=path.name))
    return out


def evidence_document(evidence: list[SessionEvidence]) -> dict[str, Any]:
    return {"about": "lcm_lab.cost.misses: per bundled session, exposed calls (idle gap s, missed) and size drift; "
                     "regenerate with python -m lcm_lab.cost.evidence",
            "sessions": [e.as_json() for e in evidence]}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=EVIDENCE_PATH)
    args = parser.parse_args(argv)
    doc = evidence_document(bundled_session_evidence())
    sessions = ",\n".join(json.dumps(s) for s in doc["sessions"])  # one session a line
    args.out.write_text(f'{{"about": {json.dumps(doc["about"])},\n"sessions": [\n{sessions}\n]}}\n', encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
