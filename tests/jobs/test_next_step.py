"""A job that failed or was cancelled says what to do next and links to where it starts again;
one that is still running says it may be left, and one that ended no longer does."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, TestSet, User
from ndcg_labeler.services import jobs as job_service
from ndcg_labeler.services.jobs.records import create_job
from ndcg_labeler.services.jobs.runner import run_job
from tests.factory import make_test_set


def _text(page: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def _failed_import(app: Flask, test_set_id: int) -> int:
    """An import job whose qrels file has a grade that is no number: it fails as it runs."""
    with app.app_context():
        test_set = db.session.get_one(TestSet, test_set_id)
        admin = db.session.scalar(sa.select(User).where(User.username == "admin"))
        bad = io.BytesIO(b"q1 0 a 2\nq1 0 b seven\n")
        job_id = job_service.enqueue_import(test_set, {"qrels": ("bad.qrels", bad)}, None, admin).id
        run_job(job_id)
        db.session.remove()
        return job_id


def test_a_failed_import_links_to_the_import_form(app: Flask, as_admin: FlaskClient) -> None:
    test_set_id = make_test_set(app)
    job_id = _failed_import(app, test_set_id)
    page = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "nothing was imported." in page  # the failure, as the runner words it
    assert "you may leave this page" not in page  # it has ended: nothing runs any more
    next_step = re.search(r'<p class="job-next"[^>]*>(.*?)</p>', page, re.S)
    assert next_step is not None, page
    assert f'href="/test-sets/{test_set_id}/import"' in next_step.group(1)
    assert "Correct what the message says and import the files again" in _text(next_step.group(1))


def test_an_interrupted_upload_and_a_cancelled_pool_link_to_their_forms(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    test_set_id = make_test_set(app)
    with app.app_context():
        upload = create_job("run_upload", test_set_id, admin_id, {"name": "r"})
        pool = create_job("pool", test_set_id, admin_id, {"runs": [], "depth": 10})
        db.session.execute(
            sa.update(Job)
            .where(Job.id == upload.id)
            .values(state="failed", error="interrupted: the worker stopped (restart or crash)")
        )
        db.session.execute(
            sa.update(Job)
            .where(Job.id == pool.id)
            .values(state="cancelled", message="cancelled — nothing was written")
        )
        db.session.commit()
        ids = upload.id, pool.id
    upload_page = as_admin.get(f"/jobs/{ids[0]}").get_data(as_text=True)
    assert f'href="/test-sets/{test_set_id}/runs/upload"' in upload_page
    assert "upload the run again" in _text(upload_page)
    pool_page = as_admin.get(f"/jobs/{ids[1]}").get_data(as_text=True)
    assert f'href="/test-sets/{test_set_id}/dashboard/pool/"' in pool_page
    assert "pool again" in _text(pool_page)


def test_a_running_job_says_it_may_be_left(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    test_set_id = make_test_set(app)
    with app.app_context():
        job_id = create_job("pool", test_set_id, admin_id, {"runs": [], "depth": 10}).id
    page = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "you may leave this page and come back" in page
    assert 'class="job-next"' not in page


def test_a_running_job_page_refreshes_itself_without_javascript(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    # htmx polls the status every second; without JavaScript only a refresh keeps the page
    # current, and only while the job has not ended.
    test_set_id = make_test_set(app)
    with app.app_context():
        job_id = create_job("pool", test_set_id, admin_id, {"runs": [], "depth": 10}).id
    page = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert re.search(r'<noscript><meta http-equiv="refresh" content="\d+"></noscript>', page)
    # Cancelling throws away the work done so far: the button asks first.
    form = re.search(r'<form method="post" action="/jobs/\d+/cancel"[^>]*>', page)
    assert form is not None and "data-confirm=" in form.group(0), page
    assert "js/confirm.js" in page
    with app.app_context():
        db.session.execute(sa.update(Job).where(Job.id == job_id).values(state="done"))
        db.session.commit()
    assert "http-equiv" not in as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)


def test_cancelling_a_running_judge_does_not_claim_its_answers_are_rolled_back(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    # A judge commits its answers as they come (kinds.JUDGE: "the answers received so far are
    # kept"): the notice on Cancel must not say its work is rolled back.
    test_set_id = make_test_set(app)
    with app.app_context():
        job_id = create_job("judge", test_set_id, admin_id, {"judge_id": 1}).id
        db.session.execute(sa.update(Job).where(Job.id == job_id).values(state="running"))
        db.session.commit()
    page = as_admin.post(f"/jobs/{job_id}/cancel", follow_redirects=True).get_data(as_text=True)
    notice = _text(page)
    assert "Cancelling:" in notice
    assert "rolled back" not in notice
    assert "this page then says what it kept" in notice


def test_a_job_queued_for_long_asks_whether_a_worker_runs(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    # Nothing runs a job but the job worker: a job queued for minutes most likely has none.
    test_set_id = make_test_set(app)
    with app.app_context():
        fresh = create_job("pool", test_set_id, admin_id, {"runs": [], "depth": 10}).id
        old = create_job("pool", test_set_id, admin_id, {"runs": [], "depth": 10}).id
        long_ago = datetime.now(UTC) - timedelta(minutes=5)
        db.session.execute(sa.update(Job).where(Job.id == old).values(created_at=long_ago))
        db.session.commit()
    waiting = _text(as_admin.get(f"/jobs/{old}/status").get_data(as_text=True))
    assert re.search(r"No job worker has taken it after 30\d s: either the worker is busy", waiting)
    assert "flask --app app jobs worker" in waiting
    assert "No job worker" not in as_admin.get(f"/jobs/{fresh}").get_data(as_text=True)


def test_the_may_leave_sentence_goes_when_the_polled_status_ends(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    # htmx swaps only the status block: a sentence outside it stayed after the job ended.
    test_set_id = make_test_set(app)
    with app.app_context():
        job_id = create_job("pool", test_set_id, admin_id, {"runs": [], "depth": 10}).id
    running = as_admin.get(f"/jobs/{job_id}/status").get_data(as_text=True)
    assert "you may leave this page and come back" in running
    with app.app_context():
        db.session.execute(sa.update(Job).where(Job.id == job_id).values(state="done"))
        db.session.commit()
    ended = as_admin.get(f"/jobs/{job_id}/status").get_data(as_text=True)
    assert "you may leave this page" not in ended
