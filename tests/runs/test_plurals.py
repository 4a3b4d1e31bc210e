"""Counts of one are said in the singular: "1 of 1 query", not "1 of 1 queries"."""

from __future__ import annotations

import io
import re
from pathlib import Path

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import endpoints, gate
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.endpoints.fetch import FetchReport
from tests.factory import build_test_set, trec

# One query, q1, whose one relevant chunk a the run ranks first: NDCG@10 = 1.
ONE_RUN = "q1 Q0 a 1 1.0 s\nq9 Q0 z 1 1.0 s\n"  # q9: not a query of the set


def _one(app: Flask) -> int:
    with app.app_context():
        test_set = build_test_set("one", {"q1": "one"}, [("q1", "a", 1), ("q1", "b", 0)])
        test_set_id = test_set.id
        db.session.remove()
        return test_set_id


def test_the_cli_says_one_query_and_one_entry(
    app: Flask, runner: FlaskCliRunner, tmp_path: Path
) -> None:
    _one(app)
    path = tmp_path / "r.trec"
    path.write_text(ONE_RUN)
    uploaded = runner.invoke(args=["run", "upload", "one", str(path), "--name", "r"])
    assert uploaded.exit_code == 0, uploaded.output
    assert "to test set 'one': 1 query, 1 ranked entry (format trec" in uploaded.output
    assert "Left out 1 query the test set does not have (e.g. q9)." in uploaded.output
    scored = runner.invoke(args=["run", "score", "one", "r"])
    assert "mean NDCG@10 = 1.0000 over 1 of 1 query (0 undefined" in scored.output
    measured = runner.invoke(args=["run", "score", "one", "r", "--measure", "P_1"])
    assert "mean P_1 = 1.0000 over 1 of 1 query" in measured.output
    listed = runner.invoke(args=["run", "list", "one"])
    assert listed.stdout.startswith("r\t1 query\t1 entry\tNDCG@10 1.0000 over 1 defined query\t")


def test_a_run_missing_one_query_says_it_in_the_singular(
    app: Flask, runner: FlaskCliRunner, tmp_path: Path
) -> None:
    with app.app_context():
        build_test_set("two", {"q1": "one", "q2": "two"}, [("q1", "a", 1)])
        db.session.remove()
    path = tmp_path / "r.trec"
    path.write_text("q1 Q0 a 1 1.0 s\n")
    uploaded = runner.invoke(args=["run", "upload", "two", str(path), "--name", "r"])
    assert "The run has no ranking for 1 test-set query; it scores 0 (e.g. q2)." in (
        uploaded.output
    )


def test_the_run_page_and_the_gate_say_one_query(app: Flask, as_admin: FlaskClient) -> None:
    test_set_id = _one(app)
    with app.app_context():
        test_set = db.session.get_one(TestSet, test_set_id)
        for name in ("base", "cand"):
            run_service.upload_run(test_set, io.BytesIO(trec({"q1": ["a"]})), "r.trec", name, None)
        base, cand = (
            db.session.scalar(db.select(Run).where(Run.name == n)) for n in ("base", "cand")
        )
        result = gate.run_gate(test_set, base, cand, ["ndcg_cut_10"])
        assert "delta +0.0000 over 1 query;" in gate.junit_xml(result)
        base_id = base.id
    page = as_admin.get(f"/test-sets/{test_set_id}/runs/{base_id}").get_data(as_text=True)
    assert re.search(r"Over <strong>1</strong> of 1 query\b", page)
    assert "<caption>The 1 query with the largest gap" in page


def test_a_fetch_with_one_query_failed_says_query() -> None:
    report = FetchReport(run="r", queries=1, failed=[{"qid": "q1", "error": "timed out"}])
    assert str(endpoints.FetchFailed(report)).startswith("1 of 1 query failed, so nothing")
