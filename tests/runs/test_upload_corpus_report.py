"""The upload report says which ranked docids the test set's corpus lacks (CLI, page, API)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run
from ndcg_labeler.services import runs as run_service
from tests.factory import build_test_set

QUERIES = {"q1": "leave", "q2": "expenses"}
CORPUS = {"a": "Leave policy.", "b": "Expense rules."}
QRELS = [("q1", "a", 2), ("q1", "g", 1)]  # g is judged from qrels but has no text
# Ranked (score descending): q1 z, a, g; q2 b, z, y, x. With depth 2: q1 z, a; q2 b, z.
RUN = (
    "q1 Q0 a 1 2.0 s\nq1 Q0 z 2 3.0 s\nq1 Q0 g 3 1.0 s\n"
    "q2 Q0 b 1 9.0 s\nq2 Q0 z 2 8.0 s\nq2 Q0 y 3 7.0 s\nq2 Q0 x 4 6.0 s\n"
)


def _upload(app: Flask, corpus: dict[str, str] | None, depth: int | None = None) -> dict:
    with app.app_context():
        test_set = build_test_set("corpus", QUERIES, QRELS, corpus)
        run = run_service.upload_run(
            test_set, io.BytesIO(RUN.encode()), "r.trec", "r", None, depth=depth
        )
        report = dict(run.report)
        db.session.remove()
    return report


def test_the_report_counts_docids_and_entries_the_corpus_lacks(app: Flask) -> None:
    lacking = _upload(app, CORPUS)["docids_not_in_corpus"]
    # z (twice), g (qrels only, no text), y, x: 4 docids in 5 ranked entries; in first-seen
    # order of the stored run (q1 z a g, then q2 b z y x).
    assert lacking == {"count": 4, "entries": 5, "examples": ["z", "g", "y", "x"], "corpus": 2}


def test_only_the_stored_top_depth_counts(app: Flask) -> None:
    lacking = _upload(app, CORPUS, depth=2)["docids_not_in_corpus"]
    assert lacking == {"count": 1, "entries": 2, "examples": ["z"], "corpus": 2}


def test_without_a_corpus_every_docid_is_lacking(app: Flask) -> None:
    lacking = _upload(app, None)["docids_not_in_corpus"]
    assert (lacking["count"], lacking["entries"], lacking["corpus"]) == (6, 7, 0)


def test_cli_and_page_say_so(
    app: Flask, runner: FlaskCliRunner, as_admin: FlaskClient, tmp_path: Path
) -> None:
    with app.app_context():
        test_set_id = build_test_set("corpus", QUERIES, QRELS, CORPUS).id
        db.session.remove()
    path = tmp_path / "r.trec"
    path.write_text(RUN)
    result = runner.invoke(args=["run", "upload", "corpus", str(path), "--name", "r"])
    assert result.exit_code == 0, result.output
    assert (
        "4 docids (5 ranked entries) are not in the test set's corpus; they stay in the run,"
        " unjudged (e.g. z, g, y, x)." in result.output
    )
    with app.app_context():
        run_id = db.session.scalar(sa.select(Run.id).where(Run.test_set_id == test_set_id))
    html = as_admin.get(f"/test-sets/{test_set_id}/runs/{run_id}").get_data(as_text=True)
    assert "4 docids of the run (5 ranked entries) are not in this test set's corpus" in html
    assert "e.g. z, g, y, x" in html


@pytest.mark.parametrize("corpus", [CORPUS])
def test_a_run_within_the_corpus_reports_none(app: Flask, corpus: dict[str, str]) -> None:
    with app.app_context():
        test_set = build_test_set("inside", QUERIES, [], {**corpus, "z": "Z."})
        run = run_service.upload_run(
            test_set, io.BytesIO(b"q1 Q0 a 1 1 s\nq2 Q0 z 1 1 s\n"), "r.trec", "r", None
        )
        assert run.report["docids_not_in_corpus"] == {
            "count": 0,
            "entries": 0,
            "examples": [],
            "corpus": 3,
        }
        db.session.remove()
