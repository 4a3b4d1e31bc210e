"""Where the tests find trec_eval's conformance suite: a copy inside the repository."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Copied from trec_eval's test/ folder; tests/data/trec_eval/README.md says where from and how.
CONFORMANCE = REPO / "tests" / "data" / "trec_eval"
