"""trec_eval's layout keeps trec_eval's names honest: ndcg_cut_K is its linear-gain figure.

trec_eval's ndcg and ndcg_cut take the qrels grade itself as the gain, so under gain=exp the
layout still writes those figures under those names and adds the exp-gain ones under names
of their own (ndcg_exp, ndcg_cut_exp_K). Expected numbers are computed by hand here.
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
# q1 ranks b (grade 1), a (grade 3); q2 ranks x (unjudged), c (grade 2).
QRELS = [("q1", "a", 3), ("q1", "b", 1), ("q2", "c", 2)]
RUN = "q1 Q0 b 1 9 s\nq1 Q0 a 2 8 s\nq2 Q0 x 1 9 s\nq2 Q0 c 2 8 s\n"
# Linear gain (trec_eval's): the grade. Exp gain: 2^grade - 1 (3 -> 7, 2 -> 3, 1 -> 1).
LINEAR = {"q1": (1 + 3 / L3) / (3 + 1 / L3), "q2": (2 / L3) / 2}
EXP = {"q1": (1 + 7 / L3) / (7 + 1 / L3), "q2": (3 / L3) / 3}


@pytest.fixture
def gains(app: Flask, admin_id: int) -> tuple[int, int]:
    """(test set id, run id) of the scenario."""
    with app.app_context():
        test_set = build_test_set("gains", {"q1": "leave", "q2": "expenses"}, QRELS)
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


def test_hand_figures_differ_between_gains() -> None:
    assert f"{LINEAR['q1']:.4f}" == "0.7967" and f"{EXP['q1']:.4f}" == "0.7098"


def test_exp_gain_keeps_trec_evals_ndcg_cut_and_names_its_own(
    gains: tuple[int, int], runner: FlaskCliRunner, as_admin: FlaskClient
) -> None:
    test_set_id, run_id = gains
    result = runner.invoke(args=["run", "score", "gains", "bm25", "--trec", "--gain", "exp"])
    assert result.exit_code == 0, result.output
    url = f"/test-sets/{test_set_id}/dashboard/export/runs/{run_id}/trec_eval.txt?gain=exp"
    assert as_admin.get(url).get_data(as_text=True) == result.output
    lines = _values(result.output)
    for qid in ("q1", "q2"):
        for name in ("ndcg", "ndcg_cut_10"):
            assert lines[(name, qid)] == f"{LINEAR[qid]:.4f}", (name, qid)
        for name in ("ndcg_exp", "ndcg_cut_exp_10"):
            assert lines[(name, qid)] == f"{EXP[qid]:.4f}", (name, qid)
    assert lines[("ndcg_cut_10", "all")] == f"{(LINEAR['q1'] + LINEAR['q2']) / 2:.4f}"
    assert lines[("ndcg_cut_exp_10", "all")] == f"{(EXP['q1'] + EXP['q2']) / 2:.4f}"


def test_linear_gain_layout_has_no_extra_names(gains: tuple[int, int], runner: FlaskCliRunner):
    result = runner.invoke(args=["run", "score", "gains", "bm25", "--trec"])
    assert result.exit_code == 0, result.output
    names = {key[0] for key in _values(result.output)}
    assert not any("exp" in name for name in names)
    assert _values(result.output)[("ndcg_cut_10", "q1")] == f"{LINEAR['q1']:.4f}"
