"""The labels-remaining figure rests on the same flip test as the comparison's robust verdict.

One query, k = 2, scale 0-3; judged: a = 3, b = 1 (L3 = log2(3)). A ranks a b, B ranks u1 u2,
C ranks b u1. Against A, B flips with u1 and u2 at the top grade, C does not (the comparison's
own tests compute these by hand). What to label next for A and B, depth 2: u1 (B rank 1 only):
3 × |0 − 1/log2(2)| = 3, then u2 (B rank 2 only): 3 × 1/log2(3). Once u1 is labeled 0, only u2
is at 3: A = (3 + 1/L3) / (3 + 3/L3) = 0.742 > B = (3/L3) / (3 + 3/L3) = 0.387, A wins as
today: 1 label remaining.
"""

from __future__ import annotations

import io
import math

import pytest
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import comparison, pooling
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.live import ScoreOptions
from tests.factory import build_test_set

L3 = math.log2(3)
RUNS = {
    "A": "q1 Q0 a 1 2.0 s\nq1 Q0 b 2 1.0 s\n",
    "B": "q1 Q0 u1 1 2.0 s\nq1 Q0 u2 2 1.0 s\n",
    "C": "q1 Q0 b 1 2.0 s\nq1 Q0 u1 2 1.0 s\n",
}


def test_labels_remaining_agrees_with_the_comparisons_flip_test(ctx: Flask) -> None:
    test_set = build_test_set("agree", {"q1": "leave"}, [("q1", "a", 3), ("q1", "b", 1)])
    runs = {
        name: run_service.upload_run(test_set, io.BytesIO(text.encode()), name, name, None)
        for name, text in RUNS.items()
    }
    test_set = db.session.get_one(TestSet, test_set.id)
    k2 = ScoreOptions(k=2)
    for other, robust in (("B", False), ("C", True)):
        a, b = db.session.get_one(Run, runs["A"].id), db.session.get_one(Run, runs[other].id)
        theirs = comparison.compare_runs([a, b], k2).first_pair.robustness
        mine = pooling.plan_for_compare(test_set, a, b, 2, k2).robustness
        assert theirs is not None and mine is not None
        assert theirs.robust is mine.robust is robust, other
        assert mine.mean_delta == pytest.approx(theirs.delta)
        assert mine.mean_delta_if_top == pytest.approx(theirs.delta_if_top)
        assert mine.labels_remaining == (1 if other == "B" else 0)
    plan = pooling.plan_for_compare(
        test_set, db.session.get_one(Run, runs["A"].id), db.session.get_one(Run, runs["B"].id), 2
    )
    assert [(p.docid, p.weight) for p in plan.pairs] == [
        ("u1", 3.0),
        ("u2", pytest.approx(3 / L3)),
    ]
    assert (3 + 1 / L3) / (3 + 3 / L3) > (3 / L3) / (3 + 3 / L3)
