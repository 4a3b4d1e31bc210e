"""The demo's maternity query scores as the reference tutorial computes it by hand."""

from __future__ import annotations

import math

import pytest
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.services import demo
from ndcg_labeler.services.demo import load_demo_runs
from ndcg_labeler.services.live import ScoreOptions, score_run


def test_demo_maternity_ndcg_at_5(app: Flask) -> None:
    with app.app_context():
        test_set, _ = demo.load_demo()
        runs = {run.name: run for run in load_demo_runs(test_set)}
        a = score_run(runs["Retriever A (BM25)"], ScoreOptions(k=5))
        b = score_run(runs["Retriever B (Embeddings)"], ScoreOptions(k=5))
        i = a.qids.index("q1")
        # Labels 3,1,1,0,0 → IDCG@5 = 3 + 1/log2 3 + 1/2 = 4.1309.
        # A: 3,0,1,1,0 → DCG = 3 + 1/2 + 1/log2 5 = 3.9307, NDCG = 0.952 (the tutorial's value).
        assert a.idcg[i] == pytest.approx(3 + 1 / math.log2(3) + 0.5)
        assert a.dcg[i] == pytest.approx(3 + 0.5 + 1 / math.log2(5))
        assert round(a.ndcg[i], 3) == 0.952
        # B: 1,3,1,0,0 → DCG = 1 + 3/log2 3 + 1/2 = 3.3928, NDCG = 0.8213. The tutorial prints
        # 0.823 because it divides the rounded 3.40 by 4.13; the exact value rounds to 0.821.
        assert b.dcg[i] == pytest.approx(1 + 3 / math.log2(3) + 0.5)
        assert round(b.ndcg[i], 3) == 0.821
        assert round(3.40 / 4.13, 3) == 0.823
        # Only q1 carries labels: the other four queries are undefined (IDCG 0).
        assert a.queries_in_mean == 1
        assert a.num_undefined == 4
        db.session.remove()
