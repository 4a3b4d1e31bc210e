"""Large browser imports become jobs: fast POST, progress page, report, cancel, recovery."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.datastructures import FileStorage
from werkzeug.test import encode_multipart

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Job, Query
from ndcg_labeler.services import jobs as job_service
from ndcg_labeler.services._progress import Cancelled
from ndcg_labeler.services.jobs.reporting import JobProgress
from tests.factory import make_test_set


def queries_csv(n: int) -> bytes:
    """A queries CSV of n rows (q1..qn)."""
    rows = "".join(f"q{i},what is item number {i} about\n" for i in range(1, n + 1))
    return ("qid,text\n" + rows).encode()


def corpus_csv(n: int) -> bytes:
    """A corpus CSV of n chunks (d1..dn) with some text each."""
    body = "".join(f'd{i},"chunk {i}: {"lorem ipsum " * 8}",title {i}\n' for i in range(1, n + 1))
    return ("docid,text,title\n" + body).encode()


def post_import(client: FlaskClient, test_set_id: int, **files: bytes) -> tuple[object, float]:
    """POST the import form; returns the response and how long it took."""
    data = {
        name: FileStorage(io.BytesIO(content), f"{name}.csv", content_type="text/csv")
        for name, content in files.items()
    }
    # Encoded in memory: the test client would spool a large body to a file it never closes.
    boundary, body = encode_multipart(data)
    began = time.perf_counter()
    response = client.post(
        f"/test-sets/{test_set_id}/import",
        data=body,
        content_type=f"multipart/form-data; boundary={boundary}",
    )
    return response, time.perf_counter() - began


def wait_for(app: Flask, job_id: int, states: tuple[str, ...], timeout: float = 60) -> Job:
    """Poll the job until it reaches one of `states`."""
    deadline = time.monotonic() + timeout
    while True:
        with app.app_context():
            job = db.session.get(Job, job_id)
            assert job is not None
            db.session.expunge(job)
        if job.state in states or time.monotonic() > deadline:
            return job
        time.sleep(0.05)


def count(app: Flask, model: type, test_set_id: int) -> int:
    with app.app_context():
        stmt = sa.select(sa.func.count()).select_from(model).where(model.test_set_id == test_set_id)
        return int(db.session.scalar(stmt) or 0)


def spooled(app: Flask, upload_path: str) -> bool:
    """Whether the job's files are still spooled (in the database)."""
    with app.app_context():
        return job_service.is_spooled(upload_path)


def job_id_of(response: object) -> int:
    location = response.headers["Location"]  # type: ignore[attr-defined]
    assert location.startswith("/jobs/")
    return int(location.rsplit("/", 1)[1])


def test_large_import_becomes_a_job_and_reports(jobs_app, as_admin, consumer) -> None:
    ts = make_test_set(jobs_app)
    response, seconds = post_import(as_admin, ts, queries=queries_csv(3000))
    assert response.status_code == 302 and seconds < 2
    job_id = job_id_of(response)
    # Nothing is imported by the request itself; the job waits for the worker.
    assert count(jobs_app, Query, ts) == 0
    page = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "queued" in page and 'hx-trigger="every 1s"' in page and "Cancel" in page
    with jobs_app.app_context():
        spool = db.session.get(Job, job_id).upload_path
    assert spool.startswith("db:") and spooled(jobs_app, spool)
    with consumer(jobs_app):
        job = wait_for(jobs_app, job_id, ("done", "failed"))
    assert job.state == "done", job.error
    assert count(jobs_app, Query, ts) == 3000
    page = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "queries: 3000 created, 0 updated, 0 unchanged" in page
    assert 'hx-trigger="every 1s"' not in page  # polling stops once it ended
    assert job.rows == 3000 and not spooled(jobs_app, spool)


def test_small_import_stays_synchronous(app, as_admin) -> None:
    ts = make_test_set(app)
    response, _ = post_import(as_admin, ts, queries=queries_csv(3))
    assert response.status_code == 200
    assert "queries: 3 created" in response.get_data(as_text=True)
    assert count(app, Query, ts) == 3


def test_status_fragment_shows_real_progress(jobs_app, as_admin) -> None:
    ts = make_test_set(jobs_app)
    job_id = job_id_of(post_import(as_admin, ts, queries=queries_csv(3000))[0])
    with jobs_app.app_context():
        db.session.execute(sa.update(Job).where(Job.id == job_id).values(state="running"))
        db.session.commit()
        progress = JobProgress(job_id)
        progress("write", 1500, 6000, 3000)
        progress.close()
    fragment = as_admin.get(f"/jobs/{job_id}/status").get_data(as_text=True)
    assert '<progress id="job-progress" max="6000" value="1500">25%</progress>' in fragment
    assert "Writing records: 1,500 of 6,000" in fragment
    assert "3,000" in fragment  # records read


def test_cancel_a_queued_job(jobs_app, as_admin, consumer) -> None:
    ts = make_test_set(jobs_app)
    job_id = job_id_of(post_import(as_admin, ts, queries=queries_csv(3000))[0])
    response = as_admin.post(f"/jobs/{job_id}/cancel")
    assert response.status_code == 302
    with consumer(jobs_app):
        time.sleep(0.5)  # the worker picks the task up and must leave it alone
    job = wait_for(jobs_app, job_id, ("cancelled",))
    assert job.state == "cancelled" and not spooled(jobs_app, job.upload_path)
    assert count(jobs_app, Query, ts) == 0


def test_cancel_a_running_job_writes_nothing(jobs_app, as_admin, consumer) -> None:
    ts = make_test_set(jobs_app)
    response, _ = post_import(
        as_admin, ts, queries=queries_csv(200_000), corpus=corpus_csv(200_000)
    )
    job_id = job_id_of(response)
    with consumer(jobs_app):
        job = wait_for(jobs_app, job_id, ("running",))
        assert job.state == "running"
        assert as_admin.post(f"/jobs/{job_id}/cancel").status_code == 302
        job = wait_for(jobs_app, job_id, ("done", "failed", "cancelled"))
    assert job.state == "cancelled", job.state
    assert "nothing was imported" in job.message
    assert count(jobs_app, Query, ts) == 0 and count(jobs_app, Chunk, ts) == 0


def test_a_bad_file_fails_the_job_with_its_line(jobs_app, as_admin, consumer) -> None:
    ts = make_test_set(jobs_app)
    bad = queries_csv(3000) + b"q1,a second q1\n"
    job_id = job_id_of(post_import(as_admin, ts, queries=bad)[0])
    with consumer(jobs_app):
        job = wait_for(jobs_app, job_id, ("done", "failed"))
    assert job.state == "failed"
    assert "queries.csv:3002" in job.error and "nothing was imported" in job.error
    assert count(jobs_app, Query, ts) == 0
    page = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "queries.csv:3002" in page


def test_recovery_marks_a_dead_workers_job_failed(jobs_app, as_admin, tmp_path: Path) -> None:
    ts = make_test_set(jobs_app)
    job_id = job_id_of(post_import(as_admin, ts, queries=queries_csv(3000))[0])
    with jobs_app.app_context():
        old = db.session.get(Job, job_id)
        spool = old.upload_path
        # A job some worker took long ago; its heartbeat stopped 10 minutes ago.
        from datetime import UTC, datetime, timedelta

        stale = datetime.now(UTC) - timedelta(minutes=10)
        db.session.execute(
            sa.update(Job)
            .where(Job.id == job_id)
            .values(state="running", worker="elsewhere:1", started_at=stale, heartbeat_at=stale)
        )
        db.session.commit()
        assert job_service.recover() == [job_id]
    job = wait_for(jobs_app, job_id, ("failed",))
    assert job.error == "interrupted: the worker stopped (restart or crash)"
    assert not spooled(jobs_app, spool) and count(jobs_app, Query, ts) == 0
    assert "interrupted: the worker stopped" in as_admin.get(f"/jobs/{job_id}").get_data(
        as_text=True
    )


# SQLite only: PostgreSQL has no database-wide write lock to back off from.
@pytest.mark.parametrize("app", ["sqlite"], indirect=True)
def test_progress_backs_off_while_sqlite_is_locked_but_still_cancels(jobs_app, as_admin) -> None:
    """A long corpus import holds SQLite's write lock: a report that found it locked is not
    tried again for a while (each try waits the busy timeout), yet a cancel is still seen."""
    ts = make_test_set(jobs_app)
    job_id = job_id_of(post_import(as_admin, ts, queries=queries_csv(3000))[0])
    with jobs_app.app_context():
        db.session.execute(sa.update(Job).where(Job.id == job_id).values(state="running"))
        db.session.commit()
        progress = JobProgress(job_id, interval=0)
        locker = db.engine.connect()
        locker.exec_driver_sql("BEGIN IMMEDIATE")  # as an import holding the write lock
        try:
            progress("corpus", 10, 100, 5000)  # locked: not recorded
        finally:
            locker.rollback()
        progress("corpus", 20, 100, 10000)  # unlocked, but within the back-off: not tried
        db.session.expire_all()
        assert db.session.get(Job, job_id).phase != "corpus"
        locker.exec_driver_sql("BEGIN IMMEDIATE")
        locker.execute(sa.update(Job).where(Job.id == job_id).values(cancel_requested=True))
        locker.commit()
        locker.close()
        with pytest.raises(Cancelled):
            progress("corpus", 30, 100, 15000)
        progress.close()


@pytest.mark.parametrize("app", ["sqlite"], indirect=True)
def test_cancel_while_an_import_holds_sqlites_write_lock_stops_it(jobs_app, as_admin) -> None:
    """A corpus import holds SQLite's write lock until it commits: Cancel used to wait for it
    (10 s, then 500; or, once the import had committed, "nothing of it is written" over a job
    that then ended done). It now asks through the queue at once, and the job stops."""
    ts = make_test_set(jobs_app)
    job_id = job_id_of(post_import(as_admin, ts, queries=queries_csv(3000))[0])
    with jobs_app.app_context():
        db.session.execute(sa.update(Job).where(Job.id == job_id).values(state="running"))
        db.session.commit()
        progress = JobProgress(job_id, interval=0)
        locker = db.engine.connect()
        locker.exec_driver_sql("BEGIN IMMEDIATE")  # as an import holding the write lock
        try:
            began = time.monotonic()
            response = as_admin.post(f"/jobs/{job_id}/cancel")
            waited = time.monotonic() - began
            status = as_admin.get(f"/jobs/{job_id}/status").get_data(as_text=True)
            with pytest.raises(Cancelled):
                progress("corpus", 10, 100, 5000)
        finally:
            locker.rollback()
            locker.close()
            progress.close()
    assert response.status_code == 302 and waited < 5
    with as_admin.session_transaction() as session:
        flashed = [message for _, message in session.get("_flashes", [])]
    assert flashed and flashed[0].startswith("Cancelling:"), flashed
    assert "cancelling…" in status and 'action="/jobs/' not in status  # no second Cancel
