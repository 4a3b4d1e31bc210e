"""The test set's checklist: its state and the one next action, on the test-set page, the
dashboard, the labeling page and `flask testset status`."""

from __future__ import annotations

import io
import json
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services import testsets
from tests.factory import AuthActions, build_test_set, grant, make_user, trec

CORPUS = {d: f"text of {d}" for d in ("d1", "d2", "d3", "d4", "d5", "d6")}
RUN_A = {"q1": ["d1", "d2", "d3"], "q2": ["d5"]}
RUN_B = {"q1": ["d2", "d4"], "q2": ["d6"]}
# Pooling the top 10 of A and B: q1 {d1, d2, d3, d4}, q2 {d5, d6}.
TO_POOL = 6


@pytest.fixture
def two_runs(app: Flask) -> int:
    """A test set with queries, a corpus and two runs, but no pool (the finding's state)."""
    with app.app_context():
        test_set = build_test_set("first", {"q1": "a", "q2": "b"}, corpus=CORPUS)
        for name, ranking in (("A", RUN_A), ("B", RUN_B)):
            run_service.upload_run(test_set, io.BytesIO(trec(ranking)), "r.trec", name, None)
        return test_set.id


def _text(client: FlaskClient, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return re.sub(r"\s+", " ", response.get_data(as_text=True))


def test_an_admin_is_offered_the_pool_then_labeling(
    app: Flask, as_admin: FlaskClient, two_runs: int
) -> None:
    page = _text(as_admin, f"/test-sets/{two_runs}")
    assert f"Pool the top 10 of your 2 runs: {TO_POOL} pairs</button>" in page
    assert "<strong>Runs</strong>: 2 runs" in page and "<strong>Pool</strong>: 0 pairs" in page
    assert "No pairs to judge yet" not in page
    # The same checklist heads the dashboard, and Pooling is in the test set's menu.
    dashboard = _text(as_admin, f"/test-sets/{two_runs}/dashboard/")
    assert f"Pool the top 10 of your 2 runs: {TO_POOL} pairs" in dashboard
    assert f'href="/test-sets/{two_runs}/dashboard/pool/">Pooling</a>' in dashboard
    pooled = as_admin.post(
        f"/test-sets/{two_runs}/dashboard/pool/",
        data={"depth": "10", "run": re.findall(r'name="run" value="(\d+)"', page)},
    )
    assert pooled.status_code == 302
    after = _text(as_admin, f"/test-sets/{two_runs}")
    assert f"Start labeling: {TO_POOL} of {TO_POOL} pairs have no grade" in after
    assert "<strong>Pool</strong>: 6 pairs to judge" in after


def test_an_annotator_is_told_what_is_missing_and_who_can_fix_it(
    app: Flask, client: FlaskClient, auth: AuthActions, admin_id: int, two_runs: int
) -> None:
    grant(app, two_runs, make_user(app, "ann"))
    auth.login("ann")
    missing = (
        "Nothing to label yet: 2 runs are stored, but their top chunks have not been pooled "
        "for labeling yet. An admin can fix it: admin."
    )
    page = _text(client, f"/test-sets/{two_runs}")
    assert missing in page and "Start labeling" not in page
    assert missing in _text(client, f"/test-sets/{two_runs}/label")
    assert "Pooling</a>" not in page  # the pooling page is for admins


def test_the_command_line_prints_the_checklist(
    app: Flask, runner: FlaskCliRunner, two_runs: int
) -> None:
    make_user(app, "ann")
    result = runner.invoke(args=["testset", "status", "first", "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert [(s["key"], s["done"]) for s in found["steps"]] == [
        ("queries", True),
        ("corpus", True),
        ("runs", True),
        ("pool", False),
        ("labels", False),
        ("judges", False),
    ]
    assert found["next_action"] == {
        "key": "pool",
        "text": f"Pool the top 10 of your 2 runs: {TO_POOL} pairs",
    }
    annotator = json.loads(
        runner.invoke(args=["testset", "status", "first", "--as", "ann", "--json"]).output
    )
    assert annotator["next_action"] is None and annotator["blocked"].startswith(
        "Nothing to label yet: 2 runs are stored"
    )
    text = runner.invoke(args=["testset", "status", "first"]).output
    assert "[x] Queries: 2 queries" in text and "[ ] Pool: 0 pairs to judge" in text


def test_admins_lists_the_active_admins_in_every_view(
    app: Flask, runner: FlaskCliRunner, two_runs: int
) -> None:
    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import User

    make_user(app, "boss", "admin")
    gone = make_user(app, "gone", "admin")
    make_user(app, "ann")
    with app.app_context():
        db.session.get_one(User, gone).active = False  # cannot fix anything: not listed
        db.session.commit()
    for extra in ([], ["--as", "boss"], ["--as", "ann"]):
        result = runner.invoke(args=["testset", "status", "first", "--json", *extra])
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["admins"] == ["boss"], extra


def test_each_missing_step_is_the_next_action(app: Flask, as_admin: FlaskClient) -> None:
    with app.app_context():
        empty = testsets.create_test_set("empty", 3).id
        no_text = build_test_set("no-text", {"q1": "a"}).id
        no_runs = build_test_set("no-runs", {"q1": "a"}, corpus={"d1": "x"}).id
    assert "Import the queries and the corpus</a>" in _text(as_admin, f"/test-sets/{empty}")
    corpus = _text(as_admin, f"/test-sets/{no_text}")
    assert "Import the corpus (the text of the chunks)</a>" in corpus
    page = _text(as_admin, f"/test-sets/{no_runs}")
    assert f'href="/test-sets/{no_runs}/runs/upload"' in page
    assert "Upload a run (or import a pool or qrels)</a>" in page


def test_the_api_gives_each_person_their_checklist(
    app: Flask, client: FlaskClient, admin_id: int, two_runs: int
) -> None:
    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import User
    from ndcg_labeler.services.accounts import create_token

    ann = make_user(app, "ann")
    grant(app, two_runs, ann)
    with app.app_context():
        tokens = {
            u: create_token(db.session.get(User, i)) for u, i in (("admin", admin_id), ("ann", ann))
        }
    url = f"/api/testsets/{two_runs}/status"
    admin = client.get(url, headers={"Authorization": f"Bearer {tokens['admin']}"})
    assert admin.status_code == 200 and admin.json["admins"] == ["admin"]
    assert admin.json["next_action"] == {
        "key": "pool",
        "text": f"Pool the top 10 of your 2 runs: {TO_POOL} pairs",
    }
    annotator = client.get(url, headers={"Authorization": f"Bearer {tokens['ann']}"}).json
    assert annotator["next_action"] is None and annotator["admins"] == ["admin"]
    assert client.get(url).status_code == 401
