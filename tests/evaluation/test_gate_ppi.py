"""The gate under labels=ppi:JUDGE: the three outcomes on the PPI++ estimate of mean d, with
z-tests (scipy.stats.norm) in place of t, on the hand-worked scenario of ppi_scenario.py."""

from __future__ import annotations

import json

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services.accounts import create_token
from tests.evaluation.ppi_scenario import build_ppi_set, expected


def gate(runner: FlaskCliRunner, baseline: str, candidate: str, *args: str):
    return runner.invoke(
        args=[
            "gate",
            "ppi",
            "--baseline",
            baseline,
            "--candidate",
            candidate,
            "--measure",
            "ndcg_cut_1",
            "--labels",
            "ppi:gpt",
            *args,
        ]
    )


def test_a_significant_estimated_drop_fails(app: Flask, runner: FlaskCliRunner) -> None:
    # Five replicates: B − A = 1 − 2θ̂_A ≈ −0.303 with se ≈ 0.120: z ≈ −2.52.
    build_ppi_set(app, "ppi", r=5)
    want = expected(5)
    result = gate(runner, "A", "B", "--json")
    assert result.exit_code == 1, result.output
    out = json.loads(result.output)
    assert out["labels"] == "ppi:gpt" and out["machine_labels"] is True
    m = out["measures"][0]
    assert m["outcome"] == "fail" and m["queries"] == 100
    assert m["delta"] == pytest.approx(want["d_theta"], abs=1e-12)
    p = 2 * stats.norm.sf(abs(want["d_theta"]) / want["d_se"])
    assert m["p_value"] == pytest.approx(p, abs=1e-12)
    assert m["p_adjusted"] == pytest.approx(p, abs=1e-12)  # one measure: Holm leaves it
    assert m["p_noninferiority"] == pytest.approx(
        stats.norm.sf((want["d_theta"] + 0.01) / want["d_se"]), abs=1e-12
    )
    assert m["ppi"]["ci_low"] == pytest.approx(want["d_theta"] - want["d_half"], abs=1e-12)
    assert m["ppi"]["n_audited"] == 60 and m["ppi"]["n_unaudited"] == 40
    # Each run's own mean is estimated too: A's θ̂ and B's 1 − θ̂_A (B = 1 − A per query).
    assert m["baseline"] == pytest.approx(want["theta"], abs=1e-12)
    assert m["candidate"] == pytest.approx(1 - want["theta"], abs=1e-12)


def test_a_significant_estimated_gain_passes(app: Flask, runner: FlaskCliRunner) -> None:
    build_ppi_set(app, "ppi", r=5)
    want = expected(5)
    result = gate(runner, "B", "A", "--json")
    assert result.exit_code == 0, result.output
    m = json.loads(result.output)["measures"][0]
    assert m["outcome"] == "pass"
    assert m["delta"] == pytest.approx(-want["d_theta"], abs=1e-12)
    assert m["p_noninferiority"] == pytest.approx(
        stats.norm.sf((-want["d_theta"] + 0.01) / want["d_se"]), abs=1e-12
    )
    assert "non-inferiority z-test" in m["note"]


def test_a_wide_interval_is_inconclusive_and_says_audit_more(
    app: Flask, runner: FlaskCliRunner
) -> None:
    # One replicate: z ≈ −1.13, p ≈ 0.26; non-inferiority p ≈ 0.86.
    build_ppi_set(app, "ppi", r=1)
    want = expected(1)
    result = gate(runner, "A", "B", "--json")
    assert result.exit_code == 3, result.output
    m = json.loads(result.output)["measures"][0]
    assert m["outcome"] == "inconclusive"
    assert m["p_value"] == pytest.approx(
        2 * stats.norm.sf(abs(want["d_theta"]) / want["d_se"]), abs=1e-12
    )
    assert "audit more queries (12 of 20 queries audited)" in m["note"]
    report = gate(runner, "A", "B").output
    assert "PPI++" in report and "z-test" in report


def test_fewer_than_ten_audited_queries_never_decide(app: Flask, runner: FlaskCliRunner) -> None:
    build_ppi_set(app, "ppi", r=5, audited_limit=6)
    result = gate(runner, "A", "B", "--json")
    assert result.exit_code == 3, result.output
    m = json.loads(result.output)["measures"][0]
    assert m["outcome"] == "inconclusive" and m["p_value"] is None
    assert m["ppi"]["ci_low"] is None and m["note"].startswith("audit more queries")


def test_the_api_gates_on_ppi_labels(app: Flask, client: FlaskClient, admin_id: int) -> None:
    build_ppi_set(app, "ppi", r=5)
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
        db.session.remove()
    headers = {"Authorization": f"Bearer {token}"}
    body = {"baseline": "A", "candidate": "B", "measure": "ndcg_cut_1", "labels": "ppi:gpt"}
    response = client.post("/api/testsets/ppi/gate", json=body, headers=headers)
    assert response.status_code == 200
    out = response.get_json()
    assert out["outcome"] == "fail" and out["labels"] == "ppi:gpt"
    assert out["measures"][0]["delta"] == pytest.approx(expected(5)["d_theta"], abs=1e-12)
    markdown = client.post("/api/testsets/ppi/gate?format=markdown", json=body, headers=headers)
    assert "PPI++" in markdown.get_data(as_text=True)


def test_an_audit_without_spread_does_not_decide(app: Flask, runner: FlaskCliRunner) -> None:
    """Ten audited queries on which B − A is −1 under people and the judge alike (se 0), and
    ten others the judge splits −1 and +1: the set's human mean of d could be anywhere from
    −1 to 0 (by hand), so no zero-width test may fail the candidate: inconclusive, with the
    reason and what to do."""
    flat = [(True, 1, 1)] * 10 + [(False, None, 1)] * 5 + [(False, None, 0)] * 5
    build_ppi_set(app, "ppi", pattern=flat)
    result = gate(runner, "A", "B", "--json")
    assert result.exit_code == 3, result.output
    m = json.loads(result.output)["measures"][0]
    assert m["outcome"] == "inconclusive"
    assert m["delta"] == -1.0
    assert (m["p_value"], m["ppi"]["ci_low"]) == (None, None)
    assert "no spread" in m["note"] and "audit more queries" in m["note"]
