"""Grades given in place to chunks outside the pool show beside the pool's progress.

Progress is pool coverage (docs: labeling.md, "Progress"); a grade given on the drill-down or
compare page to a chunk the pool lacks counts in scores but in no pool figure, so every place
that shows progress says "+N graded outside the pool" beside it: pages, CLI and API.
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from flask_migrate import downgrade, upgrade

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Query, User
from ndcg_labeler.services import dashboard as dashboard_service
from ndcg_labeler.services import labeling, tallies, testsets
from ndcg_labeler.services.accounts import create_token
from tests.factory import Demo, build_dashboard, make_user, pair_ids, the_test_set

# The dashboard scenario's pool is its 10 qrels pairs, every one graded (grade 0 included);
# chunk y is in the corpus but in no pool pair (run A retrieves it for q1 at rank 4).
POOL = 10


def _grade(client: FlaskClient, demo: Demo, app: Flask, qid: str, docid: str, grade: int) -> None:
    query_id, chunk_id = pair_ids(app, demo.test_set_id, qid, docid)
    url = f"{demo.url()}/runs/{demo.run_a}/queries/{query_id}/grade"
    response = client.post(url, data={"chunk_id": chunk_id, "grade": grade})
    assert response.status_code == 302, response.get_data(as_text=True)


def test_grades_outside_the_pool_are_counted_once_per_pair(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    dash = build_dashboard(app)
    _grade(as_admin, dash, app, "q1", "y", 2)
    _grade(as_admin, dash, app, "q1", "y", 3)  # a change of grade: still one pair
    _grade(as_admin, dash, app, "q2", "y", 0)  # grade 0 is a grade
    with app.app_context():
        test_set = the_test_set(dash)
        other = db.session.get(User, make_user(app, "ann9", "annotator"))
        q1 = db.session.scalar(
            sa.select(Query).where(Query.test_set_id == test_set.id, Query.qid == "q1")
        )
        _, y = pair_ids(app, dash.test_set_id, "q1", "y")
        dashboard_service.grade_chunk(test_set, q1, y, 1, other)  # a second person: same pair
        db.session.commit()
        admin = db.session.get_one(User, admin_id)
        progress = labeling.progress(test_set, admin)
        assert (progress.graded, progress.pairs, progress.graded_outside) == (POOL, POOL, 2)
        assert testsets.summary(test_set).graded_outside_pool == 2
        tallies.recount_pool(test_set.id)  # a bulk writer's rebuild agrees with the increments
        db.session.commit()
        assert labeling.progress(test_set, admin).graded_outside == 2


def test_page_cli_and_api_say_it(
    app: Flask, as_admin: FlaskClient, admin_id: int, runner: FlaskCliRunner
) -> None:
    dash = build_dashboard(app)
    _grade(as_admin, dash, app, "q1", "y", 2)
    page = as_admin.get(dash.url("/")).get_data(as_text=True)
    assert "+1 pair graded outside the pool" in page
    listed = runner.invoke(args=["testset", "list"])
    assert "10/10 pairs judged (+1 graded outside the pool)" in listed.output
    status = json.loads(runner.invoke(args=["testset", "status", "dash", "--json"]).output)
    (labels,) = [s for s in status["steps"] if s["key"] == "labels"]
    assert labels["state"] == "10 of 10 graded; +1 graded outside the pool"
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
    found = app.test_client().get("/api/testsets", headers={"Authorization": f"Bearer {token}"})
    (row,) = found.json["test_sets"]
    assert (row["judged_pairs"], row["pairs"], row["graded_outside_pool"]) == (10, 10, 1)


def test_the_migration_fills_the_counter_from_stored_grades(
    app: Flask, as_admin: FlaskClient
) -> None:
    """0027 counts the pairs graded outside the pool before the counter existed."""
    dash = build_dashboard(app)
    _grade(as_admin, dash, app, "q1", "y", 2)
    _grade(as_admin, dash, app, "q2", "y", 1)
    with app.app_context():
        db.session.commit()  # migrations wait for every open transaction on PostgreSQL
        downgrade(revision="0026_check_endpoint")
        upgrade()
        assert tallies.pool_counts(dash.test_set_id).graded_outside == 2
        db.session.commit()
