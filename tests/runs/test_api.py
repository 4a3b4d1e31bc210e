"""The JSON API: bearer tokens (created on the account page, stored hashed), upload and scores."""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.factory import create_app
from ndcg_labeler.models import Run, TestSetMember, User
from ndcg_labeler.services.accounts import create_token
from tests.factory import build_test_set

SET_NAME = "api"  # the `test_set_id` fixture (tests/runs/conftest.py) builds it
QUERIES = {"q1": "leave", "q2": "expenses", "q3": "dress code"}
QRELS = [("q1", "a", 3), ("q1", "b", 1), ("q2", "x", 2)]
RUN = b"q1 Q0 b 1 2.0 s\nq1 Q0 a 2 1.0 s\nq2 Q0 x 1 1.0 s\n"


def token_for(app: Flask, user_id: int) -> str:
    with app.app_context():
        token = create_token(db.session.get(User, user_id))
        db.session.remove()
        return token


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def upload(client: FlaskClient, test_set_id: int, token: str, content: bytes = RUN, **form):
    data = {"file": (io.BytesIO(content), "bm25.trec"), "name": "bm25", **form}
    return client.post(f"/api/testsets/{test_set_id}/runs", data=data, headers=bearer(token))


def test_the_account_page_creates_a_token_shown_once(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    assert b"Create an API token" in as_admin.get("/account").data
    response = as_admin.post("/account/api-token/")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    token = re.search(r'value="(ndcg_[^"]+)"', response.get_data(as_text=True)).group(1)
    with app.app_context():
        stored = db.session.get(User, admin_id).api_token_hash
    # Only the hash is kept.
    assert stored == hashlib.sha256(token.encode()).hexdigest()
    assert token not in as_admin.get("/account").get_data(as_text=True)
    assert as_admin.get("/api/testsets/999/runs", headers=bearer(token)).status_code == 404
    # Replacing it makes the old one useless; removing it too.
    as_admin.post("/account/api-token/")
    assert as_admin.get("/api/testsets/999/runs", headers=bearer(token)).status_code == 401
    as_admin.post("/account/api-token/revoke")
    with app.app_context():
        assert db.session.get(User, admin_id).api_token_hash is None


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer ndcg_wrong"}, {"Authorization": "Basic YWRtaW46eA=="}],
)
def test_401_without_a_valid_token(client: FlaskClient, test_set_id: int, headers) -> None:
    for method, path in [
        ("get", f"/api/testsets/{test_set_id}/runs"),
        ("post", f"/api/testsets/{test_set_id}/runs"),
        ("get", f"/api/testsets/{test_set_id}/runs/1/scores"),
    ]:
        response = getattr(client, method)(path, headers=headers)
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert response.json["error"] == "Unauthorized"


def test_inactive_users_token_is_refused(app: Flask, client: FlaskClient, admin_id: int) -> None:
    token = token_for(app, admin_id)
    with app.app_context():
        db.session.get(User, admin_id).active = False
        db.session.commit()
    assert client.get("/api/testsets/1/runs", headers=bearer(token)).status_code == 401


def test_admin_uploads_and_scores(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, admin_id: int, test_set_id: int
) -> None:
    token = token_for(app, admin_id)
    response = upload(client, test_set_id, token, depth="10", notes="from CI")
    assert response.status_code == 201, response.json
    body = response.json
    assert (body["name"], body["num_queries"], body["num_entries"], body["depth"]) == (
        "bm25",
        2,
        3,
        10,
    )
    assert body["sha256"] == hashlib.sha256(RUN).hexdigest()
    assert body["report"]["missing_queries"] == {"count": 1, "examples": ["q3"]}
    with app.app_context():
        run = db.session.scalar(sa.select(Run))
        assert (run.uploaded_by_id, run.notes) == (admin_id, "from CI")
    listed = client.get(f"/api/testsets/{test_set_id}/runs", headers=bearer(token)).json
    assert [r["name"] for r in listed["runs"]] == ["bm25"]
    # The same time on both databases, with its offset (SQLite hands back naive times).
    uploaded = datetime.fromisoformat(listed["runs"][0]["uploaded_at"])
    assert uploaded.utcoffset() == timedelta(0)
    assert abs(datetime.now(UTC) - uploaded) < timedelta(minutes=5)
    # q1: b (1), a (3) against 3, 1; q2 perfect; q3 has no grade (left out of the mean).
    per_query = [(1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)), 1.0]
    low, high = stats.t.interval(0.95, 1, loc=sum(per_query) / 2, scale=stats.sem(per_query))
    mean = listed["runs"][0]
    assert (mean["k"], mean["n"], mean["queries_in_mean"], mean["ci_method"]) == (10, 2, 2, "t")
    assert mean["mean_ndcg"] == pytest.approx(sum(per_query) / 2)
    assert (mean["ci_low"], mean["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert mean["ci_reason"] is None
    scores = client.get(body["scores_url"] + "?k=5&gain=exp", headers=bearer(token))
    assert scores.status_code == 200
    cli = runner.invoke(args=["run", "score", "api", "bm25", "--k", "5", "--gain", "exp", "--json"])
    assert scores.json == json.loads(cli.output)
    assert scores.json["k"] == 5
    assert {"n", "ci_low", "ci_high", "ci_method", "ci_reason"} <= set(scores.json)


def test_upload_errors(app: Flask, client: FlaskClient, admin_id: int, test_set_id: int) -> None:
    token = token_for(app, admin_id)
    bad = upload(client, test_set_id, token, b"q1 Q0 a 1 1.0 s\nq1 Q0 a 2 2.0 s\n")
    assert bad.status_code == 400
    assert bad.json["line"] == 2
    assert bad.json["detail"].startswith("bm25.trec:2: docid 'a' appears twice")
    assert upload(client, test_set_id, token).status_code == 201
    assert upload(client, test_set_id, token).status_code == 409
    no_file = client.post(
        f"/api/testsets/{test_set_id}/runs", data={"name": "x"}, headers=bearer(token)
    )
    assert no_file.status_code == 400
    assert upload(client, test_set_id, token, name="y", depth="many").status_code == 400
    # A blank name means the file's name, here bm25 again: taken.
    blank = upload(client, test_set_id, token, name=" ")
    assert blank.status_code == 409 and "named 'bm25'" in blank.json["detail"]
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Run)) == 1
    unnamed = client.post(
        f"/api/testsets/{test_set_id}/runs",
        data={"file": (io.BytesIO(RUN), "dense-e5.trec")},
        headers=bearer(token),
    )
    assert unnamed.status_code == 201 and unnamed.json["name"] == "dense-e5"


def test_annotators_see_only_their_test_sets_and_never_upload(
    app: Flask, client: FlaskClient, admin_id: int, annotator_id: int, test_set_id: int
) -> None:
    admin_token = token_for(app, admin_id)
    run_id = upload(client, test_set_id, admin_token).json["id"]
    token = token_for(app, annotator_id)
    scores_path = f"/api/testsets/{test_set_id}/runs/{run_id}/scores"
    assert client.get(scores_path, headers=bearer(token)).status_code == 404
    assert upload(client, test_set_id, token, name="mine").status_code == 404
    with app.app_context():
        db.session.add(TestSetMember(test_set_id=test_set_id, user_id=annotator_id))
        db.session.commit()
    assert client.get(scores_path, headers=bearer(token)).status_code == 200
    assert upload(client, test_set_id, token, name="mine").status_code == 403


def test_scores_errors(app: Flask, client: FlaskClient, admin_id: int, test_set_id: int) -> None:
    token = token_for(app, admin_id)
    run_id = upload(client, test_set_id, token).json["id"]
    base = f"/api/testsets/{test_set_id}/runs"
    assert client.get(f"{base}/{run_id}/scores?k=ten", headers=bearer(token)).status_code == 400
    assert client.get(f"{base}/{run_id}/scores?k=0", headers=bearer(token)).status_code == 400
    assert client.get(f"{base}/{run_id}/scores?gain=x", headers=bearer(token)).status_code == 400
    assert client.get(f"{base}/{run_id + 1}/scores", headers=bearer(token)).status_code == 404


def test_scores_say_which_labels_and_options_they_used(
    app: Flask, client: FlaskClient, admin_id: int, test_set_id: int
) -> None:
    token = token_for(app, admin_id)
    run_id = upload(client, test_set_id, token).json["id"]
    url = f"/api/testsets/{test_set_id}/runs/{run_id}/scores"
    plain = client.get(url, headers=bearer(token)).json
    assert (plain["labels"], plain["aggregation"], plain["judged_only"]) == (
        "human",
        "median",
        False,
    )
    chosen = client.get(f"{url}?aggregation=max&judged_only=true", headers=bearer(token)).json
    assert (chosen["aggregation"], chosen["judged_only"]) == ("max", True)
    # A label source that names no judge is refused, so `labels=` is read, not ignored.
    refused = client.get(f"{url}?labels=machine:", headers=bearer(token))
    assert refused.status_code == 400 and "labels must be" in refused.json["detail"]


def test_api_needs_no_csrf_token(tmp_path: Path, sqlite_template: Path) -> None:
    """With CSRF on (as outside tests), a bearer-token POST still works; forms still need it."""
    db_path = tmp_path / "csrf.sqlite3"
    shutil.copy(sqlite_template, db_path)
    app = create_app(
        {
            "TESTING": True,
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{db_path}",
            "INSTANCE_PATH": str(tmp_path),
            "NDCG_DEMO": False,
        }
    )
    with app.app_context():
        admin = User(username="root", role="admin", active=True)
        db.session.add(admin)
        db.session.commit()
        test_set_id = build_test_set("csrf", QUERIES, QRELS).id
        token = create_token(admin)
    client = app.test_client()
    assert upload(client, test_set_id, token).status_code == 201
    with app.app_context():
        db.engine.dispose()


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("get", "/api/testsets/1/import", 405),  # POST only
        ("delete", "/api/testsets", 405),
        ("get", "/api/no-such-thing", 404),
        ("post", "/api/testsets/1/runs/1/scores", 405),
    ],
)
def test_an_api_address_or_method_that_does_not_exist_answers_json(
    app: Flask, client: FlaskClient, admin_id: int, method: str, path: str, status: int
) -> None:
    # A script with a valid token (or none) must get the API's JSON, not the sign-in page.
    for headers in (bearer(token_for(app, admin_id)), {}):
        response = getattr(client, method)(path, headers=headers)
        assert response.status_code == status, (path, headers)
        assert response.is_json and response.json["error"] in ("Not Found", "Method Not Allowed")


def test_a_test_set_and_a_run_named_with_a_slash_are_found_by_name(
    app: Flask, client: FlaskClient, admin_id: int
) -> None:
    # Names may hold "/" (a series "bm25/2026-03"); clients escape it, and servers decode the
    # %2F before routing, so the address has the slash itself.
    with app.app_context():
        build_test_set("team/help", QUERIES, QRELS)
    token = token_for(app, admin_id)
    data = {"file": (io.BytesIO(RUN), "r.trec"), "name": "bm25/2026-03"}
    for escaped in ("team/help", "team%2Fhelp"):
        created = client.post(f"/api/testsets/{escaped}/runs", data=data, headers=bearer(token))
        assert created.status_code in (201, 409), created.get_data(as_text=True)
        data = {"file": (io.BytesIO(RUN), "r.trec"), "name": "bm25/2026-03"}
    for run in ("bm25/2026-03", "bm25%2F2026-03"):
        scores = client.get(f"/api/testsets/team/help/runs/{run}/scores", headers=bearer(token))
        assert scores.status_code == 200, scores.get_data(as_text=True)
        # q1, linear gains: b (grade 1) then a (3): DCG 1 + 3/log2(3); ideal 3 + 1/log2(3)
        by_qid = {row["qid"]: row["ndcg"] for row in scores.json["queries"]}
        assert by_qid["q1"] == pytest.approx((1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)))
        snapshot = client.get(f"/api/testsets/team/help/runs/{run}/export", headers=bearer(token))
        assert snapshot.status_code == 200 and snapshot.mimetype == "text/csv"
        assert snapshot.get_data(as_text=True).startswith("Snapshot Name,")
    export = client.get("/api/testsets/team/help/export?format=quepid", headers=bearer(token))
    assert export.status_code == 200 and export.get_data(as_text=True).startswith("query,")
    listed = client.get("/api/testsets/team%2Fhelp/runs", headers=bearer(token))
    assert [run["name"] for run in listed.json["runs"]] == ["bm25/2026-03"]


@pytest.mark.parametrize("depth", ["abc", "-1", "0", "100001"])
def test_a_bad_upload_depth_is_refused_with_the_range_it_takes(
    app: Flask, client: FlaskClient, admin_id: int, test_set_id: int, depth: str
) -> None:
    # Not "of 0 or more" for text, then "from 1" for 0: one range, whatever was sent.
    response = upload(client, test_set_id, token_for(app, admin_id), depth=depth)
    assert response.status_code == 400
    assert (
        response.json["detail"] == f"depth must be a whole number from 1 to 100000, not '{depth}'"
    )


@pytest.mark.parametrize("depth", ["abc", "0"])
def test_a_bad_cli_upload_depth_is_refused_with_the_range_it_takes(
    runner: FlaskCliRunner, test_set_id: int, tmp_path: Path, depth: str
) -> None:
    path = tmp_path / "bm25.trec"
    path.write_bytes(RUN)
    result = runner.invoke(args=["run", "upload", SET_NAME, str(path), "--depth", depth])
    assert result.exit_code != 0
    assert f"--depth must be a whole number from 1 to 100000, not '{depth}'" in result.output
