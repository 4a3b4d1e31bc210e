"""Run pages: access for anonymous, annotators and admins; upload (form and XHR), errors, delete."""

from __future__ import annotations

import io
import math

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run
from ndcg_labeler.services import runs as run_service
from tests.factory import build_test_set, grant

SET_NAME = "web"  # the `test_set_id` fixture (tests/runs/conftest.py) builds it
QUERIES = {"q1": "<script>alert(1)</script> leave", "q2": "expenses"}
QRELS = [("q1", "a", 3), ("q1", "b", 1), ("q2", "x", 2)]
RUN = b"q1 Q0 b 1 2.0 s\nq1 Q0 a 2 1.0 s\nq2 Q0 x 1 1.0 s\nzz Q0 x 1 1.0 s\n"
# q1: grades 1, 3 → DCG 1 + 3/log2 3; IDCG 3 + 1/log2 3. q2: perfect, 1.
Q1 = (1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3))
MEAN = (Q1 + 1.0) / 2


@pytest.fixture
def run_id(app: Flask, test_set_id: int) -> int:
    with app.app_context():
        from ndcg_labeler.models import TestSet

        test_set = db.session.get(TestSet, test_set_id)
        run_id = run_service.upload_run(test_set, io.BytesIO(RUN), "bm25.trec", "bm25", None).id
        db.session.remove()
        return run_id


def post_run(client: FlaskClient, test_set_id: int, content: bytes, name: str, **extra):
    data = {"file": (io.BytesIO(content), "upload.trec"), "name": name, **extra}
    return client.post(
        f"/test-sets/{test_set_id}/runs/upload", data=data, content_type="multipart/form-data"
    )


def run_count(app: Flask) -> int:
    with app.app_context():
        return db.session.scalar(sa.select(sa.func.count()).select_from(Run))


def test_anonymous_is_sent_to_login(client: FlaskClient, test_set_id: int, run_id: int) -> None:
    for path in ("", "/upload", f"/{run_id}"):
        response = client.get(f"/test-sets/{test_set_id}/runs{path}")
        assert response.status_code == 302
        assert "/login" in response.headers["Location"]


def test_annotator_outside_the_test_set_gets_404(
    as_annotator: FlaskClient, test_set_id: int, run_id: int
) -> None:
    assert as_annotator.get(f"/test-sets/{test_set_id}/runs/").status_code == 404
    assert as_annotator.get(f"/test-sets/{test_set_id}/runs/{run_id}").status_code == 404


def test_member_annotator_views_but_may_not_upload_or_delete(
    app: Flask, as_annotator: FlaskClient, annotator_id: int, test_set_id: int, run_id: int
) -> None:
    grant(app, test_set_id, annotator_id)
    listing = as_annotator.get(f"/test-sets/{test_set_id}/runs/")
    assert listing.status_code == 200
    assert b"bm25" in listing.data
    assert b"Upload a run" not in listing.data
    assert as_annotator.get(f"/test-sets/{test_set_id}/runs/{run_id}").status_code == 200
    assert as_annotator.get(f"/test-sets/{test_set_id}/runs/upload").status_code == 403
    assert post_run(as_annotator, test_set_id, RUN, "mine").status_code == 403
    delete = as_annotator.post(f"/test-sets/{test_set_id}/runs/{run_id}/delete")
    assert delete.status_code == 403
    assert run_count(app) == 1


def test_list_shows_mean_ndcg_at_10(as_admin: FlaskClient, test_set_id: int, run_id: int):
    page = as_admin.get(f"/test-sets/{test_set_id}/runs/").get_data(as_text=True)
    assert f"{MEAN:.4f}" in page
    assert "2 of 2" in page  # queries in the mean
    low, high = stats.t.interval(0.95, 1, loc=MEAN, scale=stats.sem([Q1, 1.0]))
    assert f"[{low:.4f}, {high:.4f}] n=2" in page
    assert f"95% t interval {low:.4f} to {high:.4f} over 2 queries" in page  # screen readers
    assert "Badges and intervals" in page
    shown = as_admin.get(f"/test-sets/{test_set_id}/runs/{run_id}").get_data(as_text=True)
    assert f"[{low:.4f}, {high:.4f}] n=2" in shown


def test_a_mean_over_one_query_has_no_interval(app: Flask, as_admin: FlaskClient) -> None:
    with app.app_context():
        test_set = build_test_set("one", {"q1": "leave"}, [("q1", "a", 1)])
        run_service.upload_run(test_set, io.BytesIO(b"q1 Q0 a 1 1.0 s\n"), "r", "r", None)
        test_set_id = test_set.id
        db.session.remove()
    page = as_admin.get(f"/test-sets/{test_set_id}/runs/").get_data(as_text=True)
    assert "no interval: one query: an interval needs at least 2" in page


def test_admin_uploads_and_sees_the_report(app: Flask, as_admin: FlaskClient, test_set_id: int):
    assert as_admin.get(f"/test-sets/{test_set_id}/runs/upload").status_code == 200
    response = post_run(as_admin, test_set_id, RUN, "bm25", depth="1", notes="first try")
    assert response.status_code == 302
    page = as_admin.get(response.headers["Location"]).get_data(as_text=True)
    assert "Run bm25 uploaded." in page
    assert "1 query of the file is not in this test set and was left out, e.g. zz." in page
    # Escaped untrusted query text, never markup.
    assert "&lt;script&gt;alert(1)&lt;/script&gt; leave" in page
    assert "<script>alert(1)" not in page
    with app.app_context():
        run = db.session.scalar(sa.select(Run))
        assert (run.name, run.depth, run.num_entries, run.notes) == ("bm25", 1, 2, "first try")
        assert run.uploaded_by_id is not None


def test_a_run_left_unnamed_is_named_after_its_file(
    app: Flask, as_admin: FlaskClient, test_set_id: int
) -> None:
    data = {"file": (io.BytesIO(RUN), "splade-v3.trec"), "name": ""}
    response = as_admin.post(f"/test-sets/{test_set_id}/runs/upload", data=data)
    assert response.status_code == 302
    with app.app_context():
        assert db.session.scalar(sa.select(Run.name)) == "splade-v3"


def test_bad_file_shows_the_line_and_stores_nothing(
    app: Flask, as_admin: FlaskClient, test_set_id: int
) -> None:
    response = post_run(as_admin, test_set_id, b"q1 Q0 a 1 1.0 s\nq1 Q0 a 2 0.5 s\n", "dup")
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert "upload.trec:2: docid &#39;a&#39; appears twice for query q1" in page
    assert "nothing was stored" in page
    assert run_count(app) == 0


def test_duplicate_name_is_an_error_on_the_name(
    app: Flask, as_admin: FlaskClient, test_set_id: int, run_id: int
) -> None:
    response = post_run(as_admin, test_set_id, RUN, "bm25")
    assert response.status_code == 422
    assert "already has a run named &#39;bm25&#39;" in response.get_data(as_text=True)
    assert run_count(app) == 1


def test_xhr_upload_answers_json(app: Flask, as_admin: FlaskClient, test_set_id: int) -> None:
    headers = {"X-Requested-With": "XMLHttpRequest"}
    data = {"file": (io.BytesIO(RUN), "a.trec"), "name": "xhr"}
    ok = as_admin.post(f"/test-sets/{test_set_id}/runs/upload", data=data, headers=headers)
    assert ok.status_code == 200
    assert ok.json["ok"] is True
    assert ok.json["redirect"].startswith(f"/test-sets/{test_set_id}/runs/")
    bad = {"file": (io.BytesIO(b"q1 Q0 a 1 x s\n"), "b.trec"), "name": "bad"}
    failed = as_admin.post(f"/test-sets/{test_set_id}/runs/upload", data=bad, headers=headers)
    assert failed.status_code == 422
    assert failed.json["ok"] is False
    assert failed.json["errors"][0]["field"] == "file"
    assert failed.json["errors"][0]["errors"][0].startswith("b.trec:1: score 'x' is not a number")
    assert run_count(app) == 1


def test_show_page_options(as_admin: FlaskClient, test_set_id: int, run_id: int) -> None:
    page = as_admin.get(f"/test-sets/{test_set_id}/runs/{run_id}?k=1&gain=exp")
    text = page.get_data(as_text=True)
    assert page.status_code == 200
    # q1 at k=1: top is b (grade 1, gain 1) against the ideal a (grade 3, gain 7).
    assert f"{1 / 7:.4f}" in text
    assert as_admin.get(f"/test-sets/{test_set_id}/runs/{run_id}?k=0").status_code == 400
    assert as_admin.get(f"/test-sets/{test_set_id}/runs/{run_id}?ideal=x").status_code == 400


def test_run_of_another_test_set_is_404(
    app: Flask, as_admin: FlaskClient, test_set_id: int, run_id: int
) -> None:
    with app.app_context():
        other = build_test_set("other", {"q1": "x"}).id
        db.session.remove()
    assert as_admin.get(f"/test-sets/{other}/runs/{run_id}").status_code == 404
    assert as_admin.post(f"/test-sets/{other}/runs/{run_id}/delete").status_code == 404


def test_admin_deletes(app: Flask, as_admin: FlaskClient, test_set_id: int, run_id: int):
    response = as_admin.post(f"/test-sets/{test_set_id}/runs/{run_id}/delete")
    assert response.status_code == 302
    assert run_count(app) == 0
    assert "Run bm25 deleted." in as_admin.get(response.headers["Location"]).get_data(as_text=True)


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
BINARY_MESSAGE = "this is a PNG image, not a text file; upload UTF-8 text (gzip is fine)"


def test_the_same_binary_file_gets_the_same_message_on_every_upload_page(
    app: Flask, as_admin: FlaskClient, test_set_id: int
) -> None:
    pages = {
        "run upload": (f"/test-sets/{test_set_id}/runs/upload", "file", {"name": "x"}),
        **{
            f"import {kind}": (f"/test-sets/{test_set_id}/import", kind, {})
            for kind in ("queries", "corpus", "pool", "qrels")
        },
    }
    for what, (url, field, extra) in pages.items():
        data = {field: (io.BytesIO(PNG), "picture.png"), **extra}
        response = as_admin.post(url, data=data, content_type="multipart/form-data")
        assert response.status_code == 422, what
        page = response.get_data(as_text=True)
        assert f"picture.png: {BINARY_MESSAGE}" in page, what
    assert run_count(app) == 0


def test_qrels_uploaded_as_a_run_are_recognised(
    app: Flask, as_admin: FlaskClient, test_set_id: int
) -> None:
    response = post_run(as_admin, test_set_id, b"q1 0 a 2\nq1 0 b 0\n", "labels")
    assert response.status_code == 422
    assert "this looks like a qrels file (qid 0 docid grade), not a run" in (
        response.get_data(as_text=True)
    )
    assert run_count(app) == 0
