"""An upload over NDCG_MAX_UPLOAD_MB is refused (413) with the limit and the ways round it."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services.accounts import create_token
from tests.factory import make_test_set

# 2 MB against a 1 MB limit, sent as raw bytes: the test client would spool a multipart body
# of files to a temporary file that a refused request never reads, nor closes.
BIG = b"q1 Q0 a 1 1.0 s\n" * (2 * 1024 * 1024 // 16)
MULTIPART = "multipart/form-data; boundary=x"


def test_a_page_and_the_api_say_the_limit_and_the_way_round_it(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    app.config["MAX_CONTENT_LENGTH"] = 1024 * 1024
    test_set_id = make_test_set(app, "big")
    with app.app_context():
        token = create_token(db.session.get(User, admin_id))
        db.session.remove()
    page = as_admin.post(f"/test-sets/{test_set_id}/runs/upload", data=BIG, content_type=MULTIPART)
    html = page.get_data(as_text=True)
    assert page.status_code == 413
    assert "(1 MB, the setting NDCG_MAX_UPLOAD_MB)" in html
    assert "Compress it with gzip" in html and "flask run" in html
    api = as_admin.post(
        f"/api/testsets/{test_set_id}/runs",
        data=BIG,
        content_type=MULTIPART,
        headers={"Authorization": f"Bearer {token}"},
    )
    assert api.status_code == 413
    assert "(1 MB, the setting NDCG_MAX_UPLOAD_MB)" in api.get_json()["detail"]
