"""The jobs list follows its unfinished jobs without a reload: htmx re-reads the list while one
is queued or running, and without JavaScript the page reloads itself; once all ended, neither."""

from __future__ import annotations

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job
from ndcg_labeler.services.jobs.records import create_job
from tests.factory import make_test_set


def test_the_list_updates_while_a_job_is_unfinished(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    test_set_id = make_test_set(app)
    with app.app_context():
        job_id = create_job("pool", test_set_id, admin_id, {"runs": [], "depth": 10}).id
    page = as_admin.get("/jobs/?page=1").get_data(as_text=True)
    assert 'id="jobs-list"' in page
    assert 'hx-get="/jobs/?page=1"' in page and 'hx-select="#jobs-list"' in page
    assert "every 5s" in page
    assert '<noscript><meta http-equiv="refresh"' in page
    with app.app_context():
        db.session.execute(sa.update(Job).where(Job.id == job_id).values(state="done"))
        db.session.commit()
    ended = as_admin.get("/jobs/").get_data(as_text=True)
    assert 'id="jobs-list"' in ended
    assert "hx-get" not in ended.split('id="jobs-list"', 1)[1][:200]
    assert "http-equiv" not in ended
