"""One mean, explained: our mean over defined queries beside trec_eval's `all`, everywhere.

The scenario is issue 33's: a judged query without a relevant chunk is undefined for us (left
out of the mean) and 0 for trec_eval (in its `all`). Expected numbers come from hand
computation and from pytrec_eval, never from our own output.
"""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
import pytrec_eval
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import runs as run_service
from tests.factory import build_test_set

L3 = math.log2(3)
QUERIES = {"q1": "leave", "q2": "expenses", "q3": "dress code", "q5": "parking"}
# q3 is judged, but nothing in it is relevant (IDCG 0); q5 has no judgment at all.
QRELS = [("q1", "a", 3), ("q1", "b", 1), ("q2", "c", 2), ("q3", "d", 0), ("q3", "e", 0)]
RANKINGS = {"q1": ["b", "a"], "q2": ["x", "c"], "q3": ["d", "e"], "q5": ["a"]}
# By hand: q1 ranks b (1), a (3) against the ideal 3, 1; q2 ranks x (unjudged), c (2).
Q1 = (1 + 3 / L3) / (3 + 1 / L3)
Q2 = (2 / L3) / 2
DEFINED_MEAN = (Q1 + Q2) / 2  # q3 and q5 left out
TREC_ALL = (Q1 + Q2 + 0.0) / 3  # q3 counts 0; q5 is not in the qrels


def _run_text() -> str:
    return "".join(
        f"{qid} Q0 {docid} {rank} {10 - rank} s\n"
        for qid, docids in RANKINGS.items()
        for rank, docid in enumerate(docids, start=1)
    )


@pytest.fixture
def two_means(app: Flask, admin_id: int) -> tuple[int, int]:
    """(test set id, run id) of the scenario."""
    with app.app_context():
        test_set = build_test_set("means", QUERIES, QRELS)
        admin = db.session.get(User, admin_id)
        run = run_service.upload_run(
            test_set, io.BytesIO(_run_text().encode()), "bm25.trec", "bm25", admin
        )
        ids = (test_set.id, run.id)
        db.session.remove()
    return ids


def _pytrec_all() -> tuple[float, int]:
    """pytrec_eval's ndcg_cut_10 averaged as trec_eval's `all` (mean over its queries)."""
    qrels: dict[str, dict[str, int]] = {}
    for qid, docid, grade in QRELS:
        qrels.setdefault(qid, {})[docid] = grade
    run = {
        qid: {docid: float(10 - rank) for rank, docid in enumerate(docids, start=1)}
        for qid, docids in RANKINGS.items()
    }
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    values = [found["ndcg_cut_10"] for found in per_query.values()]
    return sum(values) / len(values), len(values)


def test_the_hand_figures_are_pytrec_evals() -> None:
    mean, count = _pytrec_all()
    assert count == 3
    assert mean == pytest.approx(TREC_ALL, abs=1e-12)


def test_score_json_names_both_means(two_means: tuple[int, int], runner: FlaskCliRunner) -> None:
    result = runner.invoke(args=["run", "score", "means", "bm25", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["mean_ndcg"] == pytest.approx(DEFINED_MEAN)
    assert (data["queries_in_mean"], data["queries_undefined"], data["queries_missing"]) == (
        2,
        2,
        0,
    )
    assert data["mean_trec_all"] == pytest.approx(_pytrec_all()[0], abs=1e-12)
    assert data["queries_trec_all"] == 3
    assert data["labels"] == "human"


def test_the_trec_export_all_line_stays_trec_evals(
    two_means: tuple[int, int], as_admin: FlaskClient
) -> None:
    test_set_id, run_id = two_means
    body = as_admin.get(
        f"/test-sets/{test_set_id}/dashboard/export/runs/{run_id}/trec_eval.txt"
    ).get_data(as_text=True)
    lines = {tuple(line.split("\t")[:2]): line.split("\t")[2] for line in body.splitlines()}
    mean, count = _pytrec_all()
    assert lines[("ndcg_cut_10".ljust(22), "all")] == f"{mean:.4f}"
    assert lines[("num_q".ljust(22), "all")] == str(count)
    assert lines[("ndcg_cut_10".ljust(22), "q3")] == "0.0000"
    assert ("ndcg_cut_10".ljust(22), "q5") not in lines
    scores = as_admin.get(f"/test-sets/{test_set_id}/dashboard/export/overview.json").json
    (row,) = scores["runs"]
    assert f"{row['mean_trec_all']:.4f}" == lines[("ndcg_cut_10".ljust(22), "all")]


def test_overview_exports_carry_both_means(
    two_means: tuple[int, int], as_admin: FlaskClient
) -> None:
    test_set_id, _ = two_means
    data = as_admin.get(f"/test-sets/{test_set_id}/dashboard/export/overview.json").json
    (row,) = data["runs"]
    assert row["mean_ndcg"] == pytest.approx(DEFINED_MEAN)
    assert row["mean_trec_all"] == pytest.approx(TREC_ALL)
    assert (row["queries_in_mean"], row["queries_trec_all"], row["queries_undefined"]) == (2, 3, 2)
    body = as_admin.get(f"/test-sets/{test_set_id}/dashboard/export/overview.csv").data
    (csv_row,) = list(csv.DictReader(io.StringIO(body.decode())))
    assert float(csv_row["mean_trec_all"]) == pytest.approx(TREC_ALL)
    assert csv_row["queries_trec_all"] == "3"


@pytest.mark.parametrize("page", ["run_table", "overview", "runs", "run"])
def test_pages_show_both_means_with_names(
    two_means: tuple[int, int], as_admin: FlaskClient, page: str
) -> None:
    test_set_id, run_id = two_means
    url = {
        "run_table": f"/test-sets/{test_set_id}/dashboard/runs/{run_id}",
        "overview": f"/test-sets/{test_set_id}/dashboard/",
        "runs": f"/test-sets/{test_set_id}/runs",
        "run": f"/test-sets/{test_set_id}/runs/{run_id}",
    }[page]
    html = as_admin.get(url, follow_redirects=True).get_data(as_text=True)
    assert f"mean over 2 defined queries: {DEFINED_MEAN:.4f}" in html
    assert f"trec_eval all over 3 queries: {TREC_ALL:.4f}" in html
    assert 'class="hint mean-explained"' in html
    assert 'href="http://127.0.0.1:8000/reference/scoring/#one-mean-two-figures"' in html


def test_one_figure_where_the_means_agree(app: Flask, admin_id: int, as_admin: FlaskClient):
    with app.app_context():
        test_set = build_test_set("agree", {"q1": "leave", "q2": "expenses"}, QRELS[:3])
        run = run_service.upload_run(
            test_set,
            io.BytesIO(b"q1 Q0 b 1 2 s\nq1 Q0 a 2 1 s\nq2 Q0 c 1 1 s\n"),
            "r.trec",
            "r",
            db.session.get(User, admin_id),
        )
        url = f"/test-sets/{test_set.id}/dashboard/runs/{run.id}"
        db.session.remove()
    html = as_admin.get(url).get_data(as_text=True)
    assert "mean over 2 defined queries (as trec_eval's all)" in html
    assert "trec_eval all over" not in html
    assert "mean-explained" not in html


def test_the_manual_address_is_a_setting(
    two_means: tuple[int, int], app: Flask, as_admin: FlaskClient
) -> None:
    app.config["NDCG_MANUAL_URL"] = "https://docs.example.org/ndcg/"
    test_set_id, run_id = two_means
    html = as_admin.get(f"/test-sets/{test_set_id}/dashboard/runs/{run_id}").get_data(as_text=True)
    assert 'href="https://docs.example.org/ndcg/reference/scoring/#one-mean-two-figures"' in html
