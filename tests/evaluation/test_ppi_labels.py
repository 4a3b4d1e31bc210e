"""labels=ppi:JUDGE in `flask run score|compare --json` and the API, against the hand-worked
scenario of tests/evaluation/ppi_scenario.py; and the audit status beside machine means."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, User
from ndcg_labeler.services import ppi
from ndcg_labeler.services.accounts import create_token
from tests.evaluation.ppi_scenario import build_ppi_set, expected

PPI_KEYS = {"estimate", "ci_low", "ci_high", "n_audited", "n_unaudited", "lambda", "reason"}


def _score(runner: FlaskCliRunner, *args: str) -> dict:
    result = runner.invoke(args=["run", "score", "ppi", *args, "--k", "1", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_run_score_json_carries_the_ppi_estimate(app: Flask, runner: FlaskCliRunner) -> None:
    build_ppi_set(app, "ppi")
    want = expected(1)
    out = _score(runner, "A", "--labels", "ppi:gpt")
    ppi = out["ppi"]
    assert set(ppi) == PPI_KEYS
    assert ppi["lambda"] == pytest.approx(19 / 216, abs=1e-12)
    assert ppi["estimate"] == pytest.approx(want["theta"], abs=1e-12)
    assert ppi["ci_low"] == pytest.approx(want["theta"] - want["half"], abs=1e-12)
    assert ppi["ci_high"] == pytest.approx(want["theta"] + want["half"], abs=1e-12)
    assert (ppi["n_audited"], ppi["n_unaudited"], ppi["reason"]) == (12, 8, None)
    basis = out["ppi_basis"]
    assert basis["machine_mean"] == pytest.approx(3 / 5, abs=1e-12)
    assert basis["human_audited_mean"] == pytest.approx(2 / 3, abs=1e-12)
    assert basis["se"] == pytest.approx(want["se"], abs=1e-12)
    assert out["audit"]["status"] == "12 of 20 queries audited"
    assert out["labels"] == "ppi:gpt"
    # The per-query figures are the judge's: A's machine NDCG@1 is 1 on 12 of 20 queries.
    assert out["mean_ndcg"] == pytest.approx(12 / 20)
    # The readable table says the same in words.
    text = runner.invoke(args=["run", "score", "ppi", "A", "--k", "1", "--labels", "ppi:gpt"])
    assert "12 of 20 queries audited" in text.output
    assert f"{want['theta']:.4f}" in text.output


def test_run_compare_json_estimates_b_minus_a(app: Flask, runner: FlaskCliRunner) -> None:
    build_ppi_set(app, "ppi")
    want = expected(1)
    result = runner.invoke(
        args=["run", "compare", "ppi", "A", "B", "--k", "1", "--labels", "ppi:gpt", "--json"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    ppi = out["ppi"]
    assert set(ppi) == PPI_KEYS
    assert ppi["estimate"] == pytest.approx(want["d_theta"], abs=1e-12)
    assert ppi["ci_low"] == pytest.approx(want["d_theta"] - want["d_half"], abs=1e-12)
    assert ppi["ci_high"] == pytest.approx(want["d_theta"] + want["d_half"], abs=1e-12)
    assert ppi["lambda"] == pytest.approx(19 / 216, abs=1e-12)
    assert out["ppi_basis"]["machine_mean"] == pytest.approx(1 - 2 * 3 / 5, abs=1e-12)
    assert out["ppi_basis"]["human_audited_mean"] == pytest.approx(1 - 2 * 2 / 3, abs=1e-12)
    assert out["audit"]["status"] == "12 of 20 queries audited"


def test_fewer_than_ten_audited_queries_withhold_the_interval(
    app: Flask, runner: FlaskCliRunner
) -> None:
    # Six audited queries, all Y = Ŷ = 1: cov 0, so λ̂ = 0 and the estimate is their mean, 1.
    build_ppi_set(app, "ppi", audited_limit=6)
    ppi = _score(runner, "A", "--labels", "ppi:gpt")["ppi"]
    assert (ppi["ci_low"], ppi["ci_high"]) == (None, None)
    assert ppi["reason"].startswith("audit more queries: 6 of 20 queries audited")
    assert (ppi["estimate"], ppi["lambda"], ppi["n_audited"]) == (1.0, 0.0, 6)


def test_machine_means_come_with_their_audit_status(app: Flask, runner: FlaskCliRunner) -> None:
    build_ppi_set(app, "ppi")
    for labels in ("machine:gpt", "fill:gpt"):
        out = _score(runner, "A", "--labels", labels)
        assert out["audit"] == {
            "judge": "gpt",
            "audited": 12,
            "queries": 20,
            "sampled": 20,
            "status": "12 of 20 queries audited",
            "judge_failed": 0,
            "judge_answers": 40,
            "judge_failed_note": None,
        }
        assert "ppi" not in out
    assert "audit" not in _score(runner, "A")


def test_the_api_scores_and_compares_under_ppi(
    app: Flask, client: FlaskClient, admin_id: int
) -> None:
    build_ppi_set(app, "ppi")
    want = expected(1)
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
        db.session.remove()
    headers = {"Authorization": f"Bearer {token}"}
    scores = client.get("/api/testsets/ppi/runs/A/scores?k=1&labels=ppi:gpt", headers=headers)
    assert scores.status_code == 200
    assert scores.get_json()["ppi"]["estimate"] == pytest.approx(want["theta"], abs=1e-12)
    compare = client.get("/api/testsets/ppi/compare?a=A&b=B&k=1&labels=ppi:gpt", headers=headers)
    assert compare.status_code == 200
    assert compare.get_json()["ppi"]["estimate"] == pytest.approx(want["d_theta"], abs=1e-12)
    bad = client.get("/api/testsets/ppi/compare?a=A&b=B&labels=ppi:nobody", headers=headers)
    assert bad.status_code == 400 and "unknown judge 'nobody'" in bad.get_json()["detail"]
    half = client.get("/api/testsets/ppi/compare?a=A", headers=headers)
    assert half.status_code == 400 and "name both runs" in half.get_json()["detail"]
    # Without a and b: the two oldest runs, A then B, as the compare page's first visit.
    oldest = client.get("/api/testsets/ppi/compare?k=1&labels=ppi:gpt", headers=headers)
    assert oldest.get_json()["ppi"] == compare.get_json()["ppi"]


# Ten audited queries where people and the judge both give A NDCG@1 = 1, and ten others the
# judge splits 1 (five) and 0 (five).
FLAT_AUDIT = [(True, 1, 1)] * 10 + [(False, None, 1)] * 5 + [(False, None, 0)] * 5


def test_an_audit_without_spread_withholds_the_interval(app: Flask, runner: FlaskCliRunner) -> None:
    """By hand: cov(Y, Ŷ) over the audited queries is 0, so λ̂ = 0 and θ̂ = mean Y = 1, with
    s_Y = 0. A t interval of no width would say the set's human mean is exactly 1, yet the
    judge scores five of the ten unaudited queries 0: the human mean could be anywhere from
    1/2 (those five at 0) to 1. The interval is withheld, with what to do next."""
    build_ppi_set(app, "ppi", pattern=FLAT_AUDIT)
    out = _score(runner, "A", "--labels", "ppi:gpt")
    ppi = out["ppi"]
    assert (ppi["estimate"], ppi["lambda"], ppi["n_audited"]) == (1.0, 0.0, 10)
    assert (ppi["ci_low"], ppi["ci_high"]) == (None, None)
    assert ppi["reason"].startswith("audit more queries: ")
    assert "no spread" in ppi["reason"]
    assert out["ppi_basis"]["machine_mean"] == pytest.approx(15 / 20, abs=1e-12)
    text = runner.invoke(args=["run", "score", "ppi", "A", "--k", "1", "--labels", "ppi:gpt"])
    assert "[1.0000, 1.0000]" not in text.output
    assert "no spread" in text.output


def test_no_spread_anywhere_keeps_its_zero_width_interval() -> None:
    """Two identical runs: d = 0 on every query under both sources, the judge's included, so
    nothing the audit left out can move the mean and the interval of B − A is [0, 0]."""
    zeros = np.zeros(20)
    mask = np.arange(20) < 10
    found = ppi.estimate_from(zeros, zeros, mask, ppi.AuditStatus("gpt", 10, 20, 20), True)
    assert found.has_interval and found.found is not None
    assert (found.found.estimate, found.found.ci_low, found.found.ci_high) == (0.0, 0.0, 0.0)


def test_the_run_pages_json_export_is_run_score_json(
    app: Flask, runner: FlaskCliRunner, as_admin: FlaskClient
) -> None:
    """Its docstring and the manual promise exactly `flask run score --json`: under judge
    labels that includes the audit status (and under ppi: the estimate)."""
    build_ppi_set(app, "ppi")
    with app.app_context():
        run = db.session.scalar(sa.select(Run).where(Run.name == "A"))
        assert run is not None
        ts, a = run.test_set_id, run.id
        db.session.remove()
    for labels in ("ppi:gpt", "machine:gpt", "human"):
        cli = _score(runner, "A", "--labels", labels)
        page = as_admin.get(
            f"/test-sets/{ts}/dashboard/export/runs/{a}/queries.json?k=1&labels={labels}"
        )
        assert page.get_json() == cli, labels
