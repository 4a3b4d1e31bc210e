"""The demo test set: loaded by bootstrap, once, with the tutorial's maternity example."""

from __future__ import annotations

import math

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, Query, TestSet, User
from ndcg_labeler.scoring import dcg
from ndcg_labeler.services.demo.testset import (
    DEMO_NAME,
    DEMO_POOL,
    DEMO_QUERIES,
    DEMO_RUNS,
    REFERENCE_LABELS,
)
from tests.testsets.helpers import counts


def _bootstrap(app: Flask, runner: FlaskCliRunner, enabled: bool = True):
    app.config["NDCG_DEMO"] = enabled
    app.config["NDCG_ADMIN_PASSWORD"] = "a-long-admin-password"
    result = runner.invoke(args=["bootstrap"])
    assert result.exit_code == 0, result.output
    return result


def _maternity_grades() -> dict[str, int]:
    rows = db.session.execute(
        sa.select(Chunk.docid, Judgment.grade)
        .join(Chunk, Chunk.id == Judgment.chunk_id)
        .join(Query, Query.id == Judgment.query_id)
        .join(User, User.id == Judgment.annotator_id)
        .where(Query.qid == "q1", User.username == "import:reference example")
    )
    return dict(rows.all())


def test_bootstrap_loads_the_demo_once(app: Flask, runner: FlaskCliRunner) -> None:
    first = _bootstrap(app, runner)
    assert f"Loaded the demo test set '{DEMO_NAME}'" in first.stdout
    second = _bootstrap(app, runner)
    assert "demo" not in second.stdout
    with app.app_context():
        test_sets = db.session.scalars(sa.select(TestSet)).all()
        assert [(t.name, t.is_demo, t.scale_max) for t in test_sets] == [
            ("Demo: HR policies (example data)", True, 3)
        ]
        # 5 queries; 19 chunks; pool 5 + 4 + 5 + 5 + 4 pairs; the tutorial's 5 labels.
        assert counts(test_sets[0].id) == {
            "queries": 5,
            "chunks": 19,
            "pairs": 23,
            "judgments": 5,
            "events": 5,
            "labels_version": 1,
        }
        assert "This is a demo" in test_sets[0].guidelines


def test_no_demo_when_disabled(app: Flask, runner: FlaskCliRunner) -> None:
    result = _bootstrap(app, runner, enabled=False)
    assert "demo" not in result.stdout
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(TestSet)) == 0


def test_maternity_example_matches_the_reference(app: Flask, runner: FlaskCliRunner) -> None:
    _bootstrap(app, runner)
    with app.app_context():
        query = db.session.scalar(sa.select(Query).where(Query.qid == "q1"))
        assert query.text == "What is the maternity leave policy?"
        texts = dict(db.session.execute(sa.select(Chunk.docid, Chunk.text)).all())
        assert texts["chunk_17"].startswith("Maternity leave is 26 weeks paid")
        assert texts["chunk_42"].startswith("Paternity leave is 2 weeks")
        assert texts["chunk_08"].startswith("Leave requests must be submitted")
        assert texts["chunk_91"].startswith("Annual leave balance can be")
        assert texts["chunk_33"].startswith("Office timings are 9am to 6pm")
        grades = _maternity_grades()
        assert grades == {"chunk_17": 3, "chunk_42": 1, "chunk_08": 1, "chunk_91": 0, "chunk_33": 0}
        # The reference's IDCG@5 = 4.13: 3/1 + 1/log2(3) + 1/log2(4) = 3 + 0.63093 + 0.5.
        ideal = dcg(sorted(grades.values(), reverse=True)[:5])
        assert ideal == pytest.approx(4.1309, abs=1e-4)
        assert round(ideal, 2) == 4.13


def test_other_hr_queries_are_there(app: Flask, runner: FlaskCliRunner) -> None:
    _bootstrap(app, runner)
    with app.app_context():
        texts = db.session.scalars(sa.select(Query.text).order_by(Query.qid)).all()
        assert [t.split()[-1] for t in texts] == [
            "policy?",
            "reports?",
            "policy?",
            "get?",
            "code?",
        ]
        assert db.session.scalar(sa.select(sa.func.count()).where(Chunk.text.is_(None))) == 0


def test_demo_runs_rank_the_demo_pool() -> None:
    runs = DEMO_RUNS
    assert list(runs) == ["Retriever A (BM25)", "Retriever B (Embeddings)"]
    assert dict(runs["Retriever A (BM25)"])["q1"] == [
        "chunk_17",
        "chunk_91",
        "chunk_42",
        "chunk_08",
        "chunk_33",
    ]
    assert dict(runs["Retriever B (Embeddings)"])["q1"] == [
        "chunk_42",
        "chunk_17",
        "chunk_08",
        "chunk_91",
        "chunk_33",
    ]
    for ranking in runs.values():
        assert [qid for qid, _ in ranking] == list(DEMO_QUERIES)
        for qid, docids in ranking:
            assert len(set(docids)) == len(docids)
            assert set(docids) <= set(DEMO_POOL[qid])
    # The reference's DCG@5 of A: 3/1 + 0 + 1/log2(4) + 1/log2(5) + 0 = 3.9307 (it prints 3.93).
    labels = REFERENCE_LABELS["q1"]
    a = [labels[d] for d in dict(runs["Retriever A (BM25)"])["q1"]]
    assert dcg(a) == pytest.approx(3 + 0.5 + 1 / math.log2(5))
    assert round(dcg(a), 2) == 3.93
