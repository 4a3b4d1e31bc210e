"""Live sensitivity to unjudged chunks: hand-computed values, the means, the store, catch-up."""

from __future__ import annotations

import io
import math

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import RunScore
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.live import ScoreOptions, engine, score_run, store
from tests.factory import build_test_set, grade
from tests.runs.helpers import QRELS, QUERIES, RUN

L3, L5 = math.log2(3), math.log2(5)
# q1 ranks b (2), z (unjudged), a (3) against judged grades 3, 3, 2, 0 (k = 10).
Q1 = (2 + 3 / 2) / (3 + 3 / L3 + 2 / 2)
# z at the top grade 3: DCG' = 2 + 3/log2(3) + 3/2; ideal 3 (z), 3, 3, 2, 0.
Q1_TOP = (2 + 3 / L3 + 3 / 2) / (3 + 3 / L3 + 3 / 2 + 2 / L5)
# Condensed b, a: 2 + 3/log2(3) over today's ideal.
Q1_CONDENSED = (2 + 3 / L3) / (3 + 3 / L3 + 2 / 2)
# q2 ranks y (unjudged), x (1): today 1/log2(3); top: (3 + 1/log2(3)) / (3 + 1/log2(3)) = 1;
# condensed x alone: 1. q3 has no grade (undefined: out of every mean), q4 is missing (0).
Q2 = 1 / L3


@pytest.fixture
def setup(ctx):
    test_set = build_test_set("sens", QUERIES, QRELS)
    run = run_service.upload_run(test_set, io.BytesIO(RUN.encode()), "a.trec", "A", None)
    return test_set, run


def test_hand_computed_values_and_means(setup) -> None:
    _, run = setup
    result = score_run(run)
    rows = {r.qid: r for r in result.rows()}
    assert rows["q1"].ndcg == pytest.approx(Q1, abs=1e-15)
    assert rows["q1"].ndcg_if_unjudged_top == pytest.approx(Q1_TOP, abs=1e-15)
    assert rows["q1"].ndcg_condensed == pytest.approx(Q1_CONDENSED, abs=1e-15)
    assert (rows["q2"].ndcg_if_unjudged_top, rows["q2"].ndcg_condensed) == (1.0, 1.0)
    assert (rows["q4"].ndcg, rows["q4"].ndcg_if_unjudged_top, rows["q4"].ndcg_condensed) == (
        0.0,
        0.0,
        0.0,
    )
    # q3: nothing judged, so NDCG is undefined; with its unjudged "a" at the top grade it
    # would be 1, but the means cover the queries of today's mean only (q1, q2, q4).
    assert rows["q3"].ndcg is None and rows["q3"].ndcg_condensed is None
    assert rows["q3"].ndcg_if_unjudged_top == 1.0
    assert result.mean_ndcg == pytest.approx((Q1 + Q2 + 0) / 3, abs=1e-15)
    assert result.mean_if_unjudged_top == pytest.approx((Q1_TOP + 1 + 0) / 3, abs=1e-15)
    assert result.mean_condensed == pytest.approx((Q1_CONDENSED + 1 + 0) / 3, abs=1e-15)

    out = result.to_json()
    assert out["mean_if_unjudged_top"] == result.mean_if_unjudged_top
    assert out["mean_condensed"] == result.mean_condensed
    assert out["top_grade"] == 3
    q1 = next(q for q in out["queries"] if q["qid"] == "q1")
    assert q1["ndcg_if_unjudged_top"] == pytest.approx(Q1_TOP, abs=1e-15)
    assert q1["ndcg_condensed"] == pytest.approx(Q1_CONDENSED, abs=1e-15)


def test_the_condensed_value_is_the_judged_only_score(setup) -> None:
    _, run = setup
    today = score_run(run, ScoreOptions(k=3))
    condensed = score_run(run, ScoreOptions(k=3, judged_only=True))
    assert today.ndcg_condensed.tolist() == pytest.approx(condensed.ndcg.tolist(), nan_ok=True)


def test_the_scale_of_four_gives_unjudged_chunks_grade_four(ctx) -> None:
    test_set = build_test_set("four", QUERIES, QRELS, scale=4)
    run = run_service.upload_run(test_set, io.BytesIO(RUN.encode()), "a.trec", "A", None)
    result = score_run(run)
    q1 = next(r for r in result.rows() if r.qid == "q1")
    # z at grade 4 leads the ideal: 4, 3, 3, 2, 0.
    assert q1.ndcg_if_unjudged_top == pytest.approx(
        (2 + 4 / L3 + 3 / 2) / (4 + 3 / L3 + 3 / 2 + 2 / L5), abs=1e-15
    )
    assert result.to_json()["top_grade"] == 4


def test_catch_up_keeps_the_sensitivity_current(setup, monkeypatch) -> None:
    test_set, run = setup
    monkeypatch.setattr(store, "SAVE_AFTER_QUERIES", 1)  # every catch-up is written
    score_run(run)
    grade(test_set, "q1", "z", 1, "ann1")  # z judged 1: q1 has nothing unjudged left
    caught_up = score_run(run)
    q1 = next(r for r in caught_up.rows() if r.qid == "q1")
    # 2, 1, 3 against judged 3, 3, 2, 1, 0: all three values agree.
    expected = (2 + 1 / L3 + 3 / 2) / (3 + 3 / L3 + 2 / 2 + 1 / L5)
    assert q1.ndcg == pytest.approx(expected, abs=1e-15)
    assert q1.ndcg_if_unjudged_top == q1.ndcg == q1.ndcg_condensed
    # A full scoring from the entries gives the same arrays (the stored row is caught up too).
    engine.forget_run(run.id)
    db.session.execute(sa.delete(RunScore).where(RunScore.run_id == run.id))
    db.session.commit()
    fresh = score_run(run)
    for name in ("ndcg", "ndcg_if_unjudged_top", "ndcg_condensed"):
        assert getattr(fresh, name).tolist() == pytest.approx(
            getattr(caught_up, name).tolist(), abs=0, nan_ok=True
        ), name


def test_the_stored_row_holds_the_sensitivity_under_a_new_format_key(setup) -> None:
    _, run = setup
    score_run(run)
    settings = db.session.scalar(sa.select(RunScore.settings).where(RunScore.run_id == run.id))
    # Rows stored before the format had these arrays have keys without "|v2|": never read.
    assert f"|top3|v{store.STORE_FORMAT}|" in settings and store.STORE_FORMAT == 2
    state = store.load(run.id, settings)
    assert state is not None
    assert {"ndcg_if_unjudged_top_cut_10", "ndcg_condensed_cut_10"} <= set(state.arrays)


def test_grades_by_query_are_kept_and_caught_up(setup, monkeypatch) -> None:
    test_set, _ = setup
    first = engine.grades_by_query(test_set)
    reads = []
    real = engine.read_grades
    monkeypatch.setattr(engine, "read_grades", lambda *a: reads.append(1) or real(*a))
    assert engine.grades_by_query(test_set) is first and reads == []  # nothing moved
    grade(test_set, "q1", "z", 1, "ann1")
    after = engine.grades_by_query(test_set)
    assert reads == []  # caught up from the events, not read again
    q1 = next(q for q, docs in after.items() if "a" in docs and docs.get("z") == 1)
    assert "z" not in first[q1]  # the earlier snapshot is left as it was
    engine.forget_run(-1)
    fresh = engine.grades_of_queries(
        test_set.id, test_set.aggregation, engine._queries(engine.test_set_state(test_set.id))
    )
    assert after == fresh
