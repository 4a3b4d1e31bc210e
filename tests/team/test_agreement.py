"""Agreement of the 3-annotator fixture (tests/factory.build_team), every figure by hand.

Percent agreement (share of agreeing rater pairs per pair graded 2+, averaged):
    q1/d1 3,3,3 -> 3/3;  q1/d2 2,1,2 -> 1/3;  q1/d3 0,0 -> 1;  q2/d4 1,3 -> 0;  q2/d5 2,2 -> 1
    (1 + 1/3 + 1 + 0 + 1) / 5 = 2/3
Fleiss' kappa (Gwet's form for varying raters, as scoring.agreement documents):
    per-pair grade shares: d1 [0,0,0,1] d2 [0,1/3,2/3,0] d3 [1,0,0,0] d4 [0,1/2,0,1/2] d5 [0,0,1,0]
    pi = [1/5, 1/6, 1/3, 3/10];  P_e = 242/900 = 121/450;  P = 2/3 = 300/450
    kappa = (300 - 121) / (450 - 121) = 179/329
Krippendorff's alpha, ordinal: coincidences o00=2, o12=o21=1, o22=3, o13=o31=1, o33=3;
    n = (2, 2, 4, 4), N = 12; delta^2: 01=4 02=25 03=81 12=9 13=49 23=16
    sum o*delta = 2*9 + 2*49 = 116;  sum n_c n_k delta (c != k) = 2*1584 = 3168
    alpha = 1 - 11 * 116 / 3168 = 43/72
Cohen, weights over the whole scale 0..3 (kappa = 1 - sum w*O / sum w*E, E = row x col / n):
    alice/bob  (3,3) (2,1) (0,0): quadratic 1 - 1/(29/3) = 26/29; linear 1 - 1/(13/3) = 10/13
    alice/carol (3,3) (2,2) (1,3): quadratic 1 - 4/4 = 0;         linear 1 - 2/(8/3) = 1/4
    bob/carol  (3,3) (1,2) (2,2): quadratic 1 - 1/3 = 2/3;         linear 1 - 1/(7/3) = 4/7
"""

from __future__ import annotations

import json

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import accounts
from ndcg_labeler.services import team as team_service
from ndcg_labeler.services.team.agreement import AgreementReport, agreement_report
from tests.factory import build_team, judge

COHEN = [
    {"a": "alice", "b": "bob", "n": 3, "kappa_quadratic": 26 / 29, "kappa_linear": 10 / 13},
    {"a": "alice", "b": "carol", "n": 3, "kappa_quadratic": 0.0, "kappa_linear": 1 / 4},
    {"a": "bob", "b": "carol", "n": 3, "kappa_quadratic": 2 / 3, "kappa_linear": 4 / 7},
]


def _report(app: Flask, test_set_id: int, **kwargs) -> AgreementReport:
    with app.app_context():
        return agreement_report(db.session.get_one(TestSet, test_set_id), **kwargs)


def test_whole_test_set_figures_match_hand_computation(app: Flask):
    team = build_team(app)
    found = _report(app, team.id)
    s = found.summary
    assert s.pairs_with_2plus == 5
    assert s.percent_agreement == pytest.approx(2 / 3)
    assert s.fleiss_kappa == pytest.approx(179 / 329)
    assert s.krippendorff_alpha_ordinal == pytest.approx(43 / 72)
    assert found.raters == ["alice", "bob", "carol"]
    assert found.ratings == 13  # 15 judgments minus one can't-tell and one skip


def test_each_two_annotators(app: Flask):
    team = build_team(app)
    pairs = _report(app, team.id).annotator_pairs
    assert [(p.a, p.b, p.n) for p in pairs] == [(c["a"], c["b"], c["n"]) for c in COHEN]
    for got, want in zip(pairs, COHEN, strict=True):
        assert got.kappa_quadratic == pytest.approx(want["kappa_quadratic"], abs=1e-12)
        assert got.kappa_linear == pytest.approx(want["kappa_linear"], abs=1e-12)
        assert got.percent == pytest.approx(2 / 3)  # each pair agrees on 2 of its 3 pairs


def test_each_query(app: Flask):
    """q1: d1 d2 d3 -> percent (1 + 1/3 + 1)/3 = 7/9; pi = [1/3, 1/9, 2/9, 1/3], P_e = 23/81,
    Fleiss (63 - 23)/(81 - 23) = 20/29; alpha: o00=2 o12=o21=1 o22=1 o33=3, n=(2,1,2,3), N=8,
    sum o*delta = 2 * 2.25, sum n n delta = 624 -> 1 - 7 * 4.5 / 624 = 395/416.
    q2: d4 d5 (d6 has one grade) -> percent 1/2; pi = [0, 1/4, 1/2, 1/4], P_e = 3/8, Fleiss 1/5;
    alpha: o13=o31=1 o22=2, n=(0,1,2,1), delta13 = 9, 12 = 23 = 2.25 -> 1 - 3 * 18/36 = -1/2."""
    team = build_team(app)
    found = _report(app, team.id)
    by_qid = {q.qid: q for q in found.queries}
    assert set(by_qid) == {"q1", "q2"}
    q1, q2 = by_qid["q1"], by_qid["q2"]
    assert (q1.raters, q1.pairs_with_2plus) == (3, 3)
    assert (q2.raters, q2.pairs_with_2plus) == (3, 2)
    assert q1.percent == pytest.approx(7 / 9)
    assert q1.fleiss == pytest.approx(20 / 29)
    assert q1.alpha == pytest.approx(395 / 416)
    assert q2.percent == pytest.approx(1 / 2)
    assert q2.fleiss == pytest.approx(1 / 5)
    assert q2.alpha == pytest.approx(-1 / 2)
    assert found.queries_without_overlap == 0
    ordered = team_service.sort_queries(found.queries, "alpha")
    assert [q.qid for q in ordered] == ["q2", "q1"]  # least agreement first


def test_import_sources_count_only_when_asked(app: Flask):
    """An imported 0 on q1/d1 makes it 3,3,3,0: 3 of 6 rater pairs agree, so percent becomes
    (1/2 + 1/3 + 1 + 0 + 1) / 5 = 17/30; by default the import is not a rater."""
    team = build_team(app)
    with app.app_context():
        accounts.import_source("old.qrels")
        db.session.commit()
    judge(app, team.id, "q1", "d1", "import:old.qrels", grade=0)
    default = _report(app, team.id)
    assert default.summary.percent_agreement == pytest.approx(2 / 3)
    assert default.raters == ["alice", "bob", "carol"]
    counted = _report(app, team.id, include_imports=True)
    assert counted.summary.percent_agreement == pytest.approx(17 / 30)
    assert "import:old.qrels" in counted.raters


def test_undefined_figures_without_overlap(app: Flask):
    team = build_team(app)
    with app.app_context():
        empty = TestSet(name="empty", scale_max=3, grade_labels=[{"name": "x"}] * 4)
        db.session.add(empty)
        db.session.commit()
        found = agreement_report(empty)
    s = found.summary
    assert (s.pairs_with_2plus, s.percent_agreement, s.fleiss_kappa) == (0, None, None)
    assert s.krippendorff_alpha_ordinal is None and s.cohen == []
    assert found.queries == [] and team.id != empty.id


def test_cli_json_has_the_exact_keys_and_values(app: Flask, runner: FlaskCliRunner):
    build_team(app, "Team set")
    result = runner.invoke(args=["agreement", "Team set", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert list(data) == [
        "pairs_with_2plus",
        "percent_agreement",
        "fleiss_kappa",
        "krippendorff_alpha_ordinal",
        "cohen",
    ]
    assert data["pairs_with_2plus"] == 5
    assert data["percent_agreement"] == pytest.approx(2 / 3)
    assert data["fleiss_kappa"] == pytest.approx(179 / 329)
    assert data["krippendorff_alpha_ordinal"] == pytest.approx(43 / 72)
    assert [list(row) for row in data["cohen"]] == [
        ["a", "b", "n", "kappa_quadratic", "kappa_linear"]
    ] * 3
    for got, want in zip(data["cohen"], COHEN, strict=True):
        assert (got["a"], got["b"], got["n"]) == (want["a"], want["b"], want["n"])
        assert got["kappa_quadratic"] == pytest.approx(want["kappa_quadratic"], abs=1e-12)
        assert got["kappa_linear"] == pytest.approx(want["kappa_linear"], abs=1e-12)


def test_cli_readable_summary_and_nulls(app: Flask, runner: FlaskCliRunner):
    build_team(app, "Team set")
    result = runner.invoke(args=["agreement", "Team set"])
    assert result.exit_code == 0, result.output
    assert "pairs graded by 2 or more:    5" in result.output
    assert "percent agreement:            66.7%" in result.output
    assert "Fleiss' kappa:                0.544" in result.output  # 179/329
    assert "Krippendorff's alpha ordinal: 0.597" in result.output  # 43/72
    assert "alice / bob: n=3, quadratic 0.897, linear 0.769" in result.output
    # κ = 0 by hand (above); computed as a hair below zero, it must not print as "-0.000".
    assert "alice / carol: n=3, quadratic 0.000, linear 0.250" in result.output
    with app.app_context():
        db.session.add(TestSet(name="Empty", scale_max=3, grade_labels=[{"name": "x"}] * 4))
        db.session.commit()
    empty = runner.invoke(args=["agreement", "Empty", "--json"])
    assert json.loads(empty.output) == {
        "pairs_with_2plus": 0,
        "percent_agreement": None,
        "fleiss_kappa": None,
        "krippendorff_alpha_ordinal": None,
        "cohen": [],
    }
    readable = runner.invoke(args=["agreement", "Empty"])
    assert "percent agreement:            not enough overlap" in readable.output


def test_cli_unknown_test_set_is_a_one_line_error(app: Flask, runner: FlaskCliRunner):
    result = runner.invoke(args=["agreement", "Nope", "--json"])
    assert result.exit_code == 1
    assert result.stderr == "Error: unknown test set 'Nope'\n"
