"""The gate and fusion scenario: six queries, one relevant chunk each, two runs.

Every query qN has one relevant chunk `r` (grade 1) and three judged non-relevant ones. The
baseline ranks `r` first everywhere; the candidate puts it at rank 1, 2, 2, 3, 1, 4. By hand:

    query            q1  q2    q3    q4    q5  q6
    recip_rank base  1   1     1     1     1   1
    recip_rank cand  1   1/2   1/2   1/3   1   1/4
    P_1 cand         1   0     0     0     1   0
    ndcg_cut_3 cand  1   1/L3  1/L3  1/2   1   0      (L3 = log2 3; IDCG@3 = 1)
"""

from __future__ import annotations

import io
import math

from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.services import runs as run_service
from tests.factory import build_test_set, trec

QIDS = ["q1", "q2", "q3", "q4", "q5", "q6"]
QUERIES = {q: f"question {q}" for q in QIDS}
QRELS = [(q, d, 1 if d == "r" else 0) for q in QIDS for d in ("r", "n1", "n2", "n3")]
BASELINE = {q: ["r", "n1", "n2", "n3"] for q in QIDS}
CANDIDATE = {
    "q1": ["r", "n1", "n2", "n3"],
    "q2": ["n1", "r", "n2", "n3"],
    "q3": ["n2", "r", "n1", "n3"],
    "q4": ["n1", "n2", "r", "n3"],
    "q5": ["r", "n1", "n2", "n3"],
    "q6": ["n1", "n2", "n3", "r"],
}
L3 = math.log2(3)
BASE_VALUES = [1.0] * 6
CAND = {
    "recip_rank": [1, 1 / 2, 1 / 2, 1 / 3, 1, 1 / 4],
    "P_1": [1, 0, 0, 0, 1, 0],
    "ndcg_cut_3": [1, 1 / L3, 1 / L3, 1 / 2, 1, 0],
}


def build_gate_set(app: Flask, name: str = "gate") -> int:
    """The test set with runs 'base' and 'cand' (through the upload service); its id."""
    with app.app_context():
        test_set = build_test_set(name, QUERIES, QRELS)
        run_service.upload_run(test_set, io.BytesIO(trec(BASELINE)), "b.trec", "base", None)
        run_service.upload_run(test_set, io.BytesIO(trec(CANDIDATE)), "c.trec", "cand", None)
        test_set_id = test_set.id
        db.session.remove()
        return test_set_id
