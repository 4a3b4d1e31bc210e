"""trec_eval's layout under ideal=retrieved: trec_eval's ndcg names keep the judged ideal.

trec_eval's ndcg and ndcg_cut divide by the ideal from every judged grade of the query. Under
ideal=retrieved (the ideal from the retrieved chunks only) the layout still writes trec_eval's
figures under those names and adds the retrieved-ideal ones as ndcg_retrieved and
ndcg_cut_retrieved_K (ndcg_exp_retrieved, ndcg_cut_exp_retrieved_K under gain=exp). Expected
numbers are computed by hand here.
"""

from __future__ import annotations

import io
import math

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import runs as run_service
from tests.factory import build_test_set

L3 = math.log2(3)
# q1 ranks b (grade 1), a (grade 3); c (grade 2) is judged but not retrieved.
# q2 ranks x (unjudged), e (grade 2); d (grade 1) is judged but not retrieved.
# q3 has only a grade 0: its NDCG is undefined, so trec_eval's `all` (0 for it, over 3
# queries) differs from the mean over the 2 defined queries.
QRELS = [
    *[("q1", "a", 3), ("q1", "b", 1), ("q1", "c", 2)],
    *[("q2", "e", 2), ("q2", "d", 1), ("q3", "f", 0)],
]
RUN = "q1 Q0 b 1 9 s\nq1 Q0 a 2 8 s\nq2 Q0 x 1 9 s\nq2 Q0 e 2 8 s\nq3 Q0 f 1 9 s\n"
# Judged ideal (trec_eval's): every judged grade, best first. Retrieved ideal: the run's own.
JUDGED = {"q1": (1 + 3 / L3) / (3 + 2 / L3 + 1 / 2), "q2": (2 / L3) / (2 + 1 / L3)}
RETRIEVED = {"q1": (1 + 3 / L3) / (3 + 1 / L3), "q2": (2 / L3) / 2}
# Exp gain (2^grade - 1: 3 -> 7, 2 -> 3, 1 -> 1) with the retrieved ideal.
EXP_RETRIEVED = {"q1": (1 + 7 / L3) / (7 + 1 / L3), "q2": (3 / L3) / 3}


@pytest.fixture
def ideals(app: Flask, admin_id: int) -> tuple[int, int]:
    """(test set id, run id) of the scenario."""
    with app.app_context():
        test_set = build_test_set(
            "ideals", {"q1": "leave", "q2": "expenses", "q3": "parking"}, QRELS
        )
        admin = db.session.get(User, admin_id)
        run = run_service.upload_run(test_set, io.BytesIO(RUN.encode()), "r.trec", "bm25", admin)
        ids = (test_set.id, run.id)
        db.session.remove()
    return ids


def _values(text: str) -> dict[tuple[str, str], str]:
    return {
        (parts[0].strip(), parts[1]): parts[2]
        for parts in (line.split("\t") for line in text.splitlines())
    }


def test_hand_figures_differ_between_ideals() -> None:
    assert f"{JUDGED['q1']:.4f}" == "0.6075" and f"{RETRIEVED['q1']:.4f}" == "0.7967"


def test_retrieved_ideal_keeps_trec_evals_ndcg_and_names_its_own(
    ideals: tuple[int, int], runner: FlaskCliRunner, as_admin: FlaskClient
) -> None:
    test_set_id, run_id = ideals
    result = runner.invoke(
        args=["run", "score", "ideals", "bm25", "--trec", "--ideal", "retrieved"]
    )
    assert result.exit_code == 0, result.output
    url = f"/test-sets/{test_set_id}/dashboard/export/runs/{run_id}/trec_eval.txt?ideal=retrieved"
    assert as_admin.get(url).get_data(as_text=True) == result.output
    lines = _values(result.output)
    for qid in ("q1", "q2"):
        for name in ("ndcg", "ndcg_cut_10"):
            assert lines[(name, qid)] == f"{JUDGED[qid]:.4f}", (name, qid)
        for name in ("ndcg_retrieved", "ndcg_cut_retrieved_10"):
            assert lines[(name, qid)] == f"{RETRIEVED[qid]:.4f}", (name, qid)
    assert lines[("ndcg_cut_10", "all")] == f"{(JUDGED['q1'] + JUDGED['q2']) / 3:.4f}"
    assert lines[("ndcg_cut_retrieved_10", "all")] == (
        f"{(RETRIEVED['q1'] + RETRIEVED['q2']) / 3:.4f}"
    )
    assert not any("exp" in name for name, _qid in lines)


def test_exp_gain_and_retrieved_ideal_name_both(ideals: tuple[int, int], runner: FlaskCliRunner):
    args = ["run", "score", "ideals", "bm25", "--trec", "--gain", "exp", "--ideal", "retrieved"]
    result = runner.invoke(args=args)
    assert result.exit_code == 0, result.output
    lines = _values(result.output)
    for qid in ("q1", "q2"):
        assert lines[("ndcg_cut_10", qid)] == f"{JUDGED[qid]:.4f}"
        assert lines[("ndcg_cut_exp_retrieved_10", qid)] == f"{EXP_RETRIEVED[qid]:.4f}"
        assert lines[("ndcg_exp_retrieved", qid)] == f"{EXP_RETRIEVED[qid]:.4f}"
    # ndcg_exp means exp gain over the judged ideal; this view has no such figure.
    assert ("ndcg_cut_exp_10", "q1") not in lines


def test_score_header_names_the_trec_all_line_it_quotes(ideals: tuple[int, int], runner):
    result = runner.invoke(args=["run", "score", "ideals", "bm25", "--ideal", "retrieved"])
    assert result.exit_code == 0, result.output
    expected = f"{(RETRIEVED['q1'] + RETRIEVED['q2']) / 3:.4f}"
    assert f"trec_eval all ndcg_cut_retrieved_10 = {expected} over 3 queries" in result.output
