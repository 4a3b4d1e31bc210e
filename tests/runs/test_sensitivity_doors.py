"""The sensitivity figures at every door: API, `flask run score`/`list`, exports and pages.

q1 ranks z (unjudged), a (3), b (1) against judged 3, 1; q2 ranks x (2), y (unjudged) against
judged 2. k = 10, scale 0-3 (L3 = log2(3)):

    q1  today (3/L3 + 1/2) / (3 + 1/L3)
        top   (3 + 3/L3 + 1/2) / (3 + 3/L3 + 1/2) = 1          z at grade 3 leads the ideal
        condensed a, b: (3 + 1/L3) / (3 + 1/L3) = 1
    q2  today 2 / 2 = 1
        top   (2 + 3/L3) / (3 + 2/L3)                           ideal 3 (y), 2
        condensed x: 1
"""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Query
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services import testsets
from tests.runs.test_api import bearer, token_for

SET_NAME = "sens"
QUERIES = {"q1": "leave", "q2": "expenses"}
QRELS = [("q1", "a", 3), ("q1", "b", 1), ("q2", "x", 2)]
RUN = b"q1 Q0 z 1 3.0 s\nq1 Q0 a 2 2.0 s\nq1 Q0 b 3 1.0 s\nq2 Q0 x 1 2.0 s\nq2 Q0 y 2 1.0 s\n"
L3 = math.log2(3)
Q1 = (3 / L3 + 1 / 2) / (3 + 1 / L3)
Q2_TOP = (2 + 3 / L3) / (3 + 2 / L3)
MEAN = (Q1 + 1) / 2
MEAN_TOP = (1 + Q2_TOP) / 2


@pytest.fixture
def run_id(app: Flask, test_set_id: int) -> int:
    with app.app_context():
        test_set = testsets.require_by_name(SET_NAME)
        found = run_service.upload_run(test_set, io.BytesIO(RUN), "r.trec", "R", None)
        db.session.remove()
        return found.id


def test_api_scores_and_listing(
    app: Flask, client: FlaskClient, admin_id: int, test_set_id, run_id
):
    token = token_for(app, admin_id)
    base = f"/api/testsets/{test_set_id}/runs"
    listed = client.get(base, headers=bearer(token)).json["runs"][0]
    assert listed["mean_ndcg"] == pytest.approx(MEAN, abs=1e-15)
    assert listed["mean_if_unjudged_top"] == pytest.approx(MEAN_TOP, abs=1e-15)
    assert listed["mean_condensed"] == 1.0
    scores = client.get(f"{base}/{run_id}/scores", headers=bearer(token)).json
    assert scores["mean_if_unjudged_top"] == pytest.approx(MEAN_TOP, abs=1e-15)
    assert scores["mean_condensed"] == 1.0 and scores["top_grade"] == 3
    by_qid = {q["qid"]: q for q in scores["queries"]}
    assert by_qid["q1"]["ndcg"] == pytest.approx(Q1, abs=1e-15)
    assert by_qid["q1"]["ndcg_if_unjudged_top"] == 1.0
    assert by_qid["q1"]["ndcg_condensed"] == 1.0
    assert by_qid["q2"]["ndcg_if_unjudged_top"] == pytest.approx(Q2_TOP, abs=1e-15)
    spec = client.get("/api/openapi.json").json["components"]["schemas"]
    assert {"ndcg_if_unjudged_top", "ndcg_condensed"} <= set(spec["QueryScore"]["required"])
    assert {"mean_if_unjudged_top", "mean_condensed"} <= set(spec["Scores"]["required"])


def test_cli_score_json_table_and_list(runner: FlaskCliRunner, run_id: int) -> None:
    out = runner.invoke(args=["run", "score", SET_NAME, "R", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    keys = list(data)
    assert keys.index("mean_ndcg") < keys.index("mean_if_unjudged_top")
    assert data["mean_if_unjudged_top"] == pytest.approx(MEAN_TOP, abs=1e-15)
    assert data["mean_condensed"] == 1.0
    q1 = next(q for q in data["queries"] if q["qid"] == "q1")
    assert list(q1)[:4] == ["qid", "ndcg", "ndcg_if_unjudged_top", "ndcg_condensed"]
    table = runner.invoke(args=["run", "score", SET_NAME, "R"])
    assert table.exit_code == 0, table.output
    assert f"had grade 3: {MEAN_TOP:.4f}; condensed (unjudged removed): 1.0000" in table.output
    assert "if-top" in table.output and "condensed" in table.output
    listed = json.loads(runner.invoke(args=["run", "list", SET_NAME, "--json"]).output)
    assert listed["runs"][0]["mean_if_unjudged_top"] == pytest.approx(MEAN_TOP, abs=1e-15)
    assert "ndcg_if_unjudged_top" in runner.invoke(args=["run", "score", "--help"]).output


def test_exports(as_admin: FlaskClient, test_set_id: int, run_id: int) -> None:
    base = f"/test-sets/{test_set_id}/dashboard/export"
    rows = list(csv.DictReader(io.StringIO(as_admin.get(f"{base}/runs/{run_id}/queries.csv").text)))
    q2 = next(r for r in rows if r["qid"] == "q2")
    assert float(q2["ndcg_if_unjudged_top"]) == pytest.approx(Q2_TOP, abs=1e-12)
    assert float(q2["ndcg_condensed"]) == 1.0
    overview = list(csv.DictReader(io.StringIO(as_admin.get(f"{base}/overview.csv").text)))
    assert float(overview[0]["mean_if_unjudged_top"]) == pytest.approx(MEAN_TOP, abs=1e-12)
    assert float(overview[0]["mean_condensed"]) == 1.0
    assert as_admin.get(f"{base}/overview.json").json["runs"][0]["mean_condensed"] == 1.0


def test_pages_show_the_figures(app: Flask, as_admin: FlaskClient, test_set_id, run_id) -> None:
    with app.app_context():
        q1 = db.session.query(Query).filter_by(test_set_id=test_set_id, qid="q1").one().id
    dash = f"/test-sets/{test_set_id}/dashboard"
    run_page = as_admin.get(f"{dash}/runs/{run_id}").text
    assert f"({MEAN_TOP:.3f} if unjudged were top; condensed 1.000)" in run_page
    assert "Sensitivity to unjudged chunks" in run_page
    overview = as_admin.get(f"{dash}/").text
    assert f"({MEAN_TOP:.3f} if unjudged were top; condensed 1.000)" in overview
    query_page = as_admin.get(f"{dash}/runs/{run_id}/queries/{q1}/").text
    assert "(1.000 if unjudged were top; condensed 1.000)" in query_page
    runs_page = as_admin.get(f"/test-sets/{test_set_id}/runs/").text
    assert f"({MEAN_TOP:.3f} if unjudged were top; condensed 1.000)" in runs_page
    run_show = as_admin.get(f"/test-sets/{test_set_id}/runs/{run_id}").text
    assert f"({MEAN_TOP:.3f} if unjudged were top; condensed 1.000)" in run_show
    assert f"({Q2_TOP:.3f} if unjudged were top; condensed 1.000)" in run_show
    detail = as_admin.get(f"{dash}/export/runs/{run_id}/queries/{q1}.json").json
    assert (detail["ndcg_if_unjudged_top"], detail["ndcg_condensed"]) == (1.0, 1.0)
