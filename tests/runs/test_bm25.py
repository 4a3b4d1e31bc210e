"""A BM25 run of the test set's corpus: scores worked out by hand, the CLI, the page."""

from __future__ import annotations

import json
import math

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services import runs as run_service
from tests.factory import build_test_set

# Words the English stemmer maps to one stem per word and no stop word: "apple" -> "appl".
CORPUS = {"d1": "apple banana", "d2": "apple apple cherry", "d3": "cherry date"}
QUERIES = {"q1": "apple", "q2": "date", "q3": "zebra"}


def _lucene_bm25(tf: int, dl: int, df: int, n: int, avgdl: float, k1: float, b: float) -> float:
    """Lucene's BM25 of one term, written out: idf = ln(1 + (N - df + .5) / (df + .5)), and
    since Lucene 8 no (k1 + 1) factor in the numerator (it changes no ranking)."""
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))


def build_shop(app: Flask) -> int:
    with app.app_context():
        test_set_id = build_test_set("shop", QUERIES, corpus=CORPUS).id
        db.session.remove()
    return test_set_id


def _lists(run: Run) -> dict[str, list[tuple[str, float]]]:
    return run_service.ranked_lists(run)


def test_scores_and_ranks_are_lucene_bm25_worked_by_hand(app: Flask) -> None:
    test_set_id = build_shop(app)
    with app.app_context():
        test_set = db.session.get_one(TestSet, test_set_id)
        run = run_service.create_bm25_run(test_set, "BM25", None)
        lists = _lists(run)
        avgdl = (2 + 3 + 2) / 3  # tokens per chunk after stop words: 2, 3, 2
        d2 = _lucene_bm25(tf=2, dl=3, df=2, n=3, avgdl=avgdl, k1=0.9, b=0.4)
        d1 = _lucene_bm25(tf=1, dl=2, df=2, n=3, avgdl=avgdl, k1=0.9, b=0.4)
        d3 = _lucene_bm25(tf=1, dl=2, df=1, n=3, avgdl=avgdl, k1=0.9, b=0.4)
        assert [doc for doc, _ in lists["q1"]] == ["d2", "d1"]  # d3 shares no word: left out
        assert [score for _, score in lists["q1"]] == pytest.approx([d2, d1], abs=1e-6)
        assert lists["q2"] == [("d3", pytest.approx(d3, abs=1e-6))]
        assert "q3" not in lists  # no word in common with the corpus: no ranking
        assert run.depth == 100 and run.filename == "bm25.trec"
        assert "k1=0.9, b=0.4, depth 100" in run.notes and "3 chunks" in run.notes


def test_depth_k1_and_b_are_used(app: Flask) -> None:
    test_set_id = build_shop(app)
    with app.app_context():
        test_set = db.session.get_one(TestSet, test_set_id)
        settings = run_service.Bm25Settings(depth=1, k1=1.2, b=0.75)
        run = run_service.create_bm25_run(test_set, "narrow", None, settings)
        avgdl = 7 / 3
        d2 = _lucene_bm25(tf=2, dl=3, df=2, n=3, avgdl=avgdl, k1=1.2, b=0.75)
        assert _lists(run)["q1"] == [("d2", pytest.approx(d2, abs=1e-6))]
        assert "k1=1.2, b=0.75, depth 1" in run.notes


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (run_service.Bm25Settings(k1=0), "k1 must be above 0"),
        (run_service.Bm25Settings(b=1.5), "b must be from 0 to 1"),
        (run_service.Bm25Settings(depth=0), "depth must be a whole number"),
    ],
)
def test_bad_settings_are_refused(app: Flask, settings, message: str) -> None:
    test_set_id = build_shop(app)
    with app.app_context():
        test_set = db.session.get_one(TestSet, test_set_id)
        with pytest.raises(ServiceError, match=message):
            run_service.create_bm25_run(test_set, "BM25", None, settings)
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Run)) == 0


def test_a_set_without_corpus_or_with_the_name_taken_is_refused(app: Flask) -> None:
    with app.app_context():
        bare = build_test_set("bare", QUERIES)
        with pytest.raises(ServiceError, match="no corpus"):
            run_service.create_bm25_run(bare, "BM25", None)
        full = build_test_set("full", QUERIES, corpus=CORPUS)
        run_service.create_bm25_run(full, "BM25", None)
        with pytest.raises(ServiceError, match="already has a run named 'BM25'"):
            run_service.create_bm25_run(full, "BM25", None)


def test_the_cli_creates_it_and_prints_json(app: Flask, runner: FlaskCliRunner) -> None:
    build_shop(app)
    result = runner.invoke(args=["run", "bm25", "shop", "--depth", "5", "--k1", "1.2", "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert {k: printed[k] for k in ("name", "queries", "entries", "depth", "k1", "b")} == {
        "name": "BM25", "queries": 2, "entries": 3, "depth": 5, "k1": 1.2, "b": 0.4,
    }  # fmt: skip
    again = runner.invoke(args=["run", "bm25", "shop"])
    assert again.exit_code == 1 and "already has a run named 'BM25'" in again.output
    listed = runner.invoke(args=["run", "list", "shop"])
    assert "BM25" in listed.output


def test_the_runs_page_creates_it_for_admins_only(
    app: Flask, client: FlaskClient, admin_id: int, auth
) -> None:
    test_set_id = build_shop(app)
    auth.login("admin")
    page = client.get(f"/test-sets/{test_set_id}/runs/").get_data(as_text=True)
    assert "Create a BM25 run of the corpus" in page
    form = {"name": "BM25", "depth": "10", "k1": "0.9", "b": "0.4"}
    done = client.post(f"/test-sets/{test_set_id}/runs/bm25", data=form)
    assert done.status_code == 302 and "/runs/" in done.headers["Location"]
    shown = client.get(done.headers["Location"]).get_data(as_text=True)
    assert "k1=0.9, b=0.4, depth 10" in shown
    refused = client.post(f"/test-sets/{test_set_id}/runs/bm25", data={**form, "k1": "x"},
                          follow_redirects=True)  # fmt: skip
    assert "k1 must be a number" in refused.get_data(as_text=True)


def test_an_annotator_cannot_create_it(
    app: Flask, client: FlaskClient, annotator_id: int, auth
) -> None:
    test_set_id = build_shop(app)
    auth.login("ann")
    response = client.post(f"/test-sets/{test_set_id}/runs/bm25", data={"name": "BM25"})
    assert response.status_code in (403, 404)
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Run)) == 0
