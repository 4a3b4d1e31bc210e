"""Where the tests find trec_eval's conformance suite: ../shared beside the repository."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# NDCG_CONFORMANCE_DIR overrides it for checkouts laid out differently.
CONFORMANCE = Path(
    os.environ.get("NDCG_CONFORMANCE_DIR", REPO.parent / "shared" / "conformance" / "trec_eval")
)
