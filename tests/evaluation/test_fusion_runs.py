"""Fused runs through the CLI, the compare page and the store, against hand-computed scores;
and the gate through the API."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, TestSet, User
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.accounts import create_token
from tests.evaluation.scenario import build_gate_set

# Query q4: base ranks r n1 n2 n3, cand ranks n1 n2 r n3 (trec() scores 99, 98, 97, 96).
Q4_RRF = [
    ("n1", 1 / 61 + 1 / 62),
    ("r", 1 / 61 + 1 / 63),
    ("n2", 1 / 63 + 1 / 62),
    ("n3", 1 / 64 + 1 / 64),
]
# Min-max: base r 1, n1 2/3, n2 1/3, n3 0; cand n1 1, n2 2/3, r 1/3, n3 0.
Q4_COMBSUM = [("n1", 5 / 3), ("r", 4 / 3), ("n2", 1.0), ("n3", 0.0)]


def fused_q4(app: Flask, name: str) -> list[tuple[str, float]]:
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet).where(TestSet.name == "gate"))
        run = run_service.get_run(test_set, name)
        lists = run_service.ranked_lists(run)
        db.session.remove()
        return lists["q4"]


def check(found: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    assert [d for d, _ in found] == [d for d, _ in expected]
    assert [s for _, s in found] == pytest.approx([s for _, s in expected])


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("rrf", Q4_RRF),
        ("combsum", Q4_COMBSUM),
        ("combmnz", [(d, 2 * s) for d, s in Q4_COMBSUM]),
    ],
)
def test_the_cli_fuses_runs_into_a_stored_run(
    app: Flask, runner: FlaskCliRunner, method: str, expected: list[tuple[str, float]]
) -> None:
    build_gate_set(app)
    result = runner.invoke(
        args=["run", "fuse", "gate", "base", "cand", "--method", method, "--name", "hybrid"]
    )
    assert result.exit_code == 0, result.output
    assert (
        "Created run 'hybrid'" in result.output and "6 queries, 24 ranked entries" in result.output
    )
    check(fused_q4(app, "hybrid"), expected)
    # The fused run scores like any other: q4's NDCG@3 with r at rank 2 is 1 / log2(3).
    score = runner.invoke(args=["run", "score", "gate", "hybrid", "--k", "3", "--json"])
    assert '"run": "hybrid"' in score.output


def test_the_cli_refuses_bad_fusions(app: Flask, runner: FlaskCliRunner) -> None:
    build_gate_set(app)
    one = runner.invoke(args=["run", "fuse", "gate", "base", "--name", "x"])
    assert one.exit_code == 1 and "at least two runs" in one.output
    bad = runner.invoke(
        args=["run", "fuse", "gate", "base", "cand", "--method", "x", "--name", "y"]
    )
    assert bad.exit_code == 1 and "rrf, combsum, combmnz" in bad.output
    taken = runner.invoke(args=["run", "fuse", "gate", "base", "cand", "--name", "base"])
    assert taken.exit_code == 1 and "already has a run named 'base'" in taken.output
    negative = runner.invoke(
        args=["run", "fuse", "gate", "base", "cand", "--name", "z", "--k", "-5"]
    )
    assert negative.exit_code == 1
    assert "--k must be a whole number of 0 or more, not '-5'" in negative.output


def test_the_compare_page_fuses_the_compared_runs(app: Flask, as_admin: FlaskClient) -> None:
    test_set_id = build_gate_set(app)
    with app.app_context():
        ids = [r.id for r in db.session.scalars(sa.select(Run).order_by(Run.id))]
    page = as_admin.get(f"/test-sets/{test_set_id}/dashboard/compare/?run={ids[0]}&run={ids[1]}")
    assert b"Fuse these runs" in page.data
    response = as_admin.post(
        f"/test-sets/{test_set_id}/dashboard/compare/fuse",
        data={"run": [str(i) for i in ids], "name": "rrf hybrid", "method": "rrf", "k": "60"},
    )
    assert response.status_code == 302
    check(fused_q4(app, "rrf hybrid"), Q4_RRF)


def test_annotators_may_not_fuse(app: Flask, as_annotator: FlaskClient) -> None:
    test_set_id = build_gate_set(app)
    response = as_annotator.post(
        f"/test-sets/{test_set_id}/dashboard/compare/fuse", data={"run": ["1", "2"], "name": "x"}
    )
    assert response.status_code == 403


def test_the_gate_api_answers_like_the_cli(app: Flask, client: FlaskClient, admin_id: int) -> None:
    build_gate_set(app)
    with app.app_context():
        token = create_token(db.session.get(User, admin_id))
        db.session.remove()
    headers = {"Authorization": f"Bearer {token}"}
    body = {"baseline": "base", "candidate": "cand", "measure": "P_1"}
    response = client.post("/api/testsets/gate/gate", json=body, headers=headers)
    assert response.status_code == 200
    out = response.get_json()
    assert out["passed"] is False and out["measures"][0]["regressed"] is True
    assert out["outcome"] == "fail" and out["max_drop"] == 0.01  # the default, as in the CLI
    assert out["measures"][0]["delta"] == pytest.approx(-2 / 3)
    junit = client.post("/api/testsets/gate/gate?format=junit", json=body, headers=headers)
    assert junit.mimetype == "application/xml" and b'failures="1"' in junit.data
    # Within a tolerated drop of 0.7 the six queries cannot tell: inconclusive, still HTTP 200.
    wide = client.post("/api/testsets/gate/gate", json={**body, "max_drop": 0.7}, headers=headers)
    assert wide.status_code == 200 and wide.get_json()["outcome"] == "inconclusive"
    assert wide.get_json()["measures"][0]["queries_needed"] > 6
    text = client.post(
        "/api/testsets/gate/gate?format=markdown", json={**body, "max_drop": 0.7}, headers=headers
    )
    assert text.mimetype == "text/markdown" and "❔ inconclusive" in text.get_data(as_text=True)
    missing = client.post(
        "/api/testsets/gate/gate", json={**body, "candidate": "zz"}, headers=headers
    )
    assert missing.status_code == 404 and "no run 'zz'" in missing.get_json()["detail"]
    bad = client.post("/api/testsets/gate/gate", json={**body, "measure": "nope"}, headers=headers)
    assert bad.status_code == 400 and "unknown measure" in bad.get_json()["detail"]
    machine = client.post(
        "/api/testsets/gate/gate", json={**body, "labels": "fill:x"}, headers=headers
    )
    assert machine.status_code == 400 and "unknown judge 'x'" in machine.get_json()["detail"]
    assert client.post("/api/testsets/nope/gate", json=body, headers=headers).status_code == 404
    assert client.post("/api/testsets/gate/gate", json=body).status_code == 401
