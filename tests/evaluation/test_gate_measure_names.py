"""`flask gate --measure` with ir_measures names and the new measures, on the hand-built scenario
of tests/evaluation/scenario.py (one relevant chunk per query, three judged non-relevant)."""

from __future__ import annotations

import json

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services.accounts import create_token
from tests.evaluation.scenario import BASE_VALUES, CAND, build_gate_set


@pytest.fixture
def gate_set(app: Flask) -> int:
    return build_gate_set(app)


def gate_json(runner: FlaskCliRunner, *measures: str) -> dict:
    args = ["gate", "gate", "--baseline", "base", "--candidate", "cand", "--json"]
    for measure in measures:
        args += ["--measure", measure]
    result = runner.invoke(args=args)
    assert result.exit_code in (0, 1, 3), result.output
    return json.loads(result.output)


def test_ir_measures_names_are_echoed_and_equal_trec_evals(
    runner: FlaskCliRunner, gate_set: int
) -> None:
    out = gate_json(runner, "P@1", "RR@2", "bpref", "Success@1", "nDCG@3", "P_1")
    found = {m["measure"]: m for m in out["measures"]}
    assert list(found) == ["P@1", "RR@2", "bpref", "Success@1", "nDCG@3", "P_1"]
    # By hand, candidate: r at ranks 1, 2, 2, 3, 1, 4; the baseline has it first everywhere.
    # RR@2 = 1, 1/2, 1/2, 0, 1, 0. bpref (R = 1, N = 3): 1 - min(n, 1)/min(3, 1) with n the
    # non-relevant above r, so 1 only where r is first: as P@1 and Success@1.
    assert found["RR@2"]["candidate"] == pytest.approx(3 / 6)
    for name in ("P@1", "bpref", "Success@1", "P_1"):
        assert found[name]["candidate"] == pytest.approx(2 / 6)
        assert found[name]["baseline"] == pytest.approx(1.0)
    assert found["nDCG@3"]["candidate"] == pytest.approx(sum(CAND["ndcg_cut_3"]) / 6)
    rr2 = [1, 1 / 2, 1 / 2, 0, 1, 0]
    assert found["RR@2"]["p_value"] == pytest.approx(stats.ttest_rel(rr2, BASE_VALUES).pvalue)
    assert found["P@1"]["p_value"] == found["P_1"]["p_value"]


def test_an_unknown_name_lists_what_is_accepted(runner: FlaskCliRunner, gate_set: int) -> None:
    result = runner.invoke(
        args=["gate", "gate", "--baseline", "base", "--candidate", "cand", "--measure", "P@x"]
    )
    assert result.exit_code == 2
    assert "unknown measure 'P@x'" in result.output
    assert "P(rel=2)@5" in result.output and "ndcg_cut_K" in result.output


def test_compare_adds_each_measure_named(runner: FlaskCliRunner, gate_set: int) -> None:
    args = ["run", "compare", "gate", "base", "cand", "--measure", "RR@2,P_1", "--json"]
    result = runner.invoke(args=args)
    assert result.exit_code == 0, result.output
    found = {m["measure"]: m for m in json.loads(result.output)["measures"]}
    rr2 = [1, 1 / 2, 1 / 2, 0, 1, 0]  # by hand, as above; the baseline is 1 everywhere
    assert found["RR@2"]["canonical"] == "RR@2" and found["RR@2"]["trec_eval"] is None
    assert [r["mean"] for r in found["RR@2"]["runs"]] == [1.0, pytest.approx(0.5)]
    pair = found["RR@2"]["pairs"][0]
    assert (pair["a"], pair["b"], pair["wins"], pair["ties"], pair["losses"]) == (
        "base",
        "cand",
        0,
        2,
        4,
    )
    assert pair["delta"] == pytest.approx(-0.5)
    assert pair["t_test_p"] == pytest.approx(stats.ttest_rel(BASE_VALUES, rr2).pvalue)
    assert found["P_1"]["trec_eval"] == "P_1" and found["P_1"]["canonical"] == "P@1"
    text = runner.invoke(args=args[:-1]).output
    assert "RR@2: A 1.0000, B 0.5000, B − A -0.5000 over 6 queries" in text


def test_two_names_of_one_measure_are_one_hypothesis_for_holm(
    runner: FlaskCliRunner, gate_set: int
) -> None:
    # P_1 and P@1 are the same measure: one test, so Holm's m is 1 and nothing is adjusted.
    # Alone, P_1's paired t-test has p ≈ 0.025 < 0.05 on a mean drop of 2/3: it fails.
    p = float(stats.ttest_rel(CAND["P_1"], BASE_VALUES).pvalue)
    out = gate_json(runner, "P_1", "P@1")
    assert [m["measure"] for m in out["measures"]] == ["P_1", "P@1"]  # both names echoed
    for measure in out["measures"]:
        assert measure["p_adjusted"] == pytest.approx(p)
        assert measure["outcome"] == "fail"
    assert out["outcome"] == "fail"
    # With a distinct second measure the family has two hypotheses: (2p, p_rr) step-down.
    p_rr = float(stats.ttest_rel(CAND["recip_rank"], BASE_VALUES).pvalue)
    out = gate_json(runner, "P_1", "P@1", "recip_rank")
    low, high = sorted([p, p_rr])
    expected = {p: 2 * low if p == low else max(2 * low, high)}
    expected[p_rr] = 2 * low if p_rr == low else max(2 * low, high)
    assert out["measures"][0]["p_adjusted"] == pytest.approx(expected[p])
    assert out["measures"][1]["p_adjusted"] == pytest.approx(expected[p])
    assert out["measures"][2]["p_adjusted"] == pytest.approx(expected[p_rr])


def test_a_gate_that_allows_no_drop_writes_its_bound_as_0_not_minus_0() -> None:
    """delta -0.05 with no drop allowed and no significance: more queries cannot make it pass."""
    from ndcg_labeler.services.gate.check import MeasureCheck, SampleSize, decide

    check = MeasureCheck(
        measure="ndcg_cut_10",
        baseline=0.5,
        candidate=0.45,
        delta=-0.05,
        delta_sd=0.3,
        queries=20,
        p_value=0.47,
        p_adjusted=0.47,
        p_noninferiority=0.77,
        outcome="inconclusive",
        queries_needed=None,
        note="",
        sample_size=SampleSize(None, None),
        worst=(),
    )
    decided = decide(check, 0.47, 0.0, 0.05)
    assert decided.outcome == "inconclusive"
    assert "mean d ≤ 0 (they may make it fail)" in decided.note and "−0" not in decided.note


@pytest.mark.parametrize("value", ["-0.5", "inf"])
def test_a_bad_max_drop_is_named_as_the_cli_spells_it(
    runner: FlaskCliRunner, gate_set: int, value: str
) -> None:
    result = runner.invoke(
        args=["gate", "gate", "--baseline", "base", "--candidate", "cand", "--max-drop", value]
    )
    assert result.exit_code == 2
    assert result.output.startswith("Error: --max-drop must be a number from 0 to")


@pytest.mark.parametrize("value", [-0.5, "inf"])
def test_a_bad_max_drop_is_named_as_the_api_spells_it(
    app: Flask, client: FlaskClient, admin_id: int, gate_set: int, value: object
) -> None:
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
        db.session.remove()
    body = {"baseline": "base", "candidate": "cand", "max_drop": value}
    response = client.post(
        "/api/testsets/gate/gate", json=body, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 400
    detail = response.get_json()["detail"]
    assert detail.startswith("'max_drop' must be a number from 0 to") and "max-drop" not in detail


@pytest.mark.parametrize("value", ["7", "-0.1"])
def test_a_bad_alpha_is_named_as_the_cli_spells_it(
    runner: FlaskCliRunner, gate_set: int, value: str
) -> None:
    result = runner.invoke(
        args=["gate", "gate", "--baseline", "base", "--candidate", "cand", "--alpha", value]
    )
    assert result.exit_code == 2
    assert result.output.startswith("Error: --alpha must be a number from 0 to 1")
    assert result.output.rstrip().endswith(f"not {value}"), result.output  # as typed: 7, not 7.0


@pytest.mark.parametrize("value", [7, -0.1])
def test_a_bad_alpha_is_named_as_the_api_spells_it(
    app: Flask, client: FlaskClient, admin_id: int, gate_set: int, value: object
) -> None:
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
        db.session.remove()
    body = {"baseline": "base", "candidate": "cand", "alpha": value}
    response = client.post(
        "/api/testsets/gate/gate", json=body, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 400
    assert response.get_json()["detail"].startswith("'alpha' must be a number from 0 to 1")
