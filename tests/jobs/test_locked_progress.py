"""SQLite: a corpus import holds the one write lock until it commits, so its job's row cannot
take progress or heartbeat. The job keeps them in the queue's storage: the job page, the API
and `flask jobs list` show them, and recovery does not take the busy job for dead."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, User
from ndcg_labeler.services.accounts import create_token
from ndcg_labeler.services.jobs import queue
from ndcg_labeler.services.jobs.records import worker_name
from ndcg_labeler.services.jobs.reporting import JobProgress
from ndcg_labeler.services.jobs.runner import run_job
from tests.factory import make_test_set
from tests.jobs.test_import_jobs import job_id_of, post_import, queries_csv

# SQLite only: PostgreSQL has no database-wide write lock.
pytestmark = pytest.mark.parametrize("app", ["sqlite"], indirect=True)


@contextmanager
def write_lock(app: Flask) -> Iterator[None]:
    """Hold SQLite's write lock from another connection, as a corpus import does."""
    locker = db.engine.connect()
    locker.exec_driver_sql("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        locker.rollback()
        locker.close()


def running_job(app: Flask, client, heartbeat_age: timedelta = timedelta(0)) -> int:
    """A queued import job turned running in this process, its row's heartbeat that old."""
    ts = make_test_set(app)
    job_id = job_id_of(post_import(client, ts, queries=queries_csv(3000))[0])
    beat = datetime.now(UTC) - heartbeat_age
    with app.app_context():
        db.session.execute(
            sa.update(Job)
            .where(Job.id == job_id)
            .values(
                state="running",
                worker=worker_name(),
                started_at=beat,
                heartbeat_at=beat,
                phase="write",
                done=0,
                total=3000,
                message="writing records",
            )
        )
        db.session.commit()
    return job_id


def test_the_job_page_api_and_cli_show_progress_reported_under_the_lock(
    jobs_app, as_admin, admin_id
) -> None:
    """It used to show "writing records", 0 records and no bar for the whole corpus."""
    job_id = running_job(jobs_app, as_admin)
    with jobs_app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
        progress = JobProgress(job_id, interval=0)
        with write_lock(jobs_app):
            progress("corpus", 50 * 1048576, 200 * 1048576, 125_000)
            status = as_admin.get(f"/jobs/{job_id}/status").get_data(as_text=True)
            listed = as_admin.get("/jobs/").get_data(as_text=True)
            api = as_admin.get(f"/api/jobs/{job_id}", headers={"Authorization": f"Bearer {token}"})
            cli = jobs_app.test_cli_runner().invoke(args=["jobs", "list"])
        progress.close()
        db.session.expire_all()
        row = db.session.get_one(Job, job_id)
        assert (row.phase, row.rows) == ("write", 0)  # the row itself was never written
    assert "Reading and writing the corpus: 50.0 of 200.0 MB" in status, status
    assert "125,000" in status and 'value="52428800"' in status
    assert "25%" in listed and "reading and writing the corpus" in listed
    assert api.status_code == 200
    assert (api.json["phase"], api.json["rows"], api.json["fraction"]) == ("corpus", 125_000, 0.25)
    assert cli.exit_code == 0 and f"{job_id}\timport\trunning\t25%" in cli.output, cli.output


def test_the_row_wins_again_once_written(jobs_app, as_admin) -> None:
    job_id = running_job(jobs_app, as_admin)
    with jobs_app.app_context():
        progress = JobProgress(job_id, interval=0)
        with write_lock(jobs_app):
            progress("corpus", 10, 100, 5000)
        progress._blocked_until = 0.0  # the back-off is over
        progress("index", 30, 100, 9000)
        progress.close()
    page = as_admin.get(f"/jobs/{job_id}/status").get_data(as_text=True)
    assert "Indexing the corpus: 30 of 100" in page and "9,000" in page


def test_a_busy_import_is_not_taken_for_dead_and_jobs_never_waits(jobs_app, as_admin) -> None:
    """Its row's heartbeat stopped with the lock: after NDCG_JOB_STALE_SECONDS /jobs marked it
    interrupted, waiting 10 s for the lock (500), or marking failed an import that committed."""
    job_id = running_job(jobs_app, as_admin, heartbeat_age=timedelta(minutes=10))
    with jobs_app.app_context():
        progress = JobProgress(job_id, interval=0)
        with write_lock(jobs_app):
            progress("corpus", 10, 100, 5000)  # the heartbeat, in the queue
            began = time.monotonic()
            listed = as_admin.get("/jobs/")
            shown = as_admin.get(f"/jobs/{job_id}")
            waited = time.monotonic() - began
        progress.close()
        assert listed.status_code == shown.status_code == 200 and waited < 5
        db.session.expire_all()
        assert db.session.get_one(Job, job_id).state == "running"
        # Unlocked, the queue's heartbeat still counts: the import is alive.
        assert as_admin.get("/jobs/").status_code == 200
        db.session.expire_all()
        assert db.session.get_one(Job, job_id).state == "running"


def test_a_dead_job_under_the_lock_waits_for_a_later_look(jobs_app, as_admin) -> None:
    """Truly stale, but the lock is held: the page answers at once and a later look ends it."""
    job_id = running_job(jobs_app, as_admin, heartbeat_age=timedelta(minutes=10))
    with jobs_app.app_context():
        with write_lock(jobs_app):
            began = time.monotonic()
            listed = as_admin.get("/jobs/")
            waited = time.monotonic() - began
        assert listed.status_code == 200 and waited < 5
        db.session.expire_all()
        assert db.session.get_one(Job, job_id).state == "running"
        assert as_admin.get("/jobs/").status_code == 200
        db.session.expire_all()
        assert db.session.get_one(Job, job_id).state == "failed"


def test_the_kept_progress_is_dropped_when_the_job_ends(jobs_app, as_admin) -> None:
    ts = make_test_set(jobs_app)
    job_id = job_id_of(post_import(as_admin, ts, queries=queries_csv(3000))[0])
    with jobs_app.app_context():
        queue.keep_progress(job_id, {"heartbeat_at": datetime.now(UTC)})
        run_job(job_id)
        assert db.session.get_one(Job, job_id).state == "done"
        assert queue.kept_progress([job_id]) == {}


def test_an_unreachable_queue_costs_only_the_kept_figures(
    app: Flask, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Progress is a courtesy: a queue storage that fails (Redis down) neither fails the job
    that reports nor the page that reads it."""

    class Down:
        def put(self, *args: object) -> None:
            raise ConnectionError("queue storage down")

        @property
        def storage(self) -> Down:
            return self

        def peek_many(self, keys: list[str]) -> dict[str, bytes]:
            raise ConnectionError("queue storage down")

    monkeypatch.setattr(queue, "get_queue", lambda app=None: Down())
    with app.app_context():
        queue.keep_progress(1, {"phase": "write", "done": 5})
        assert queue.kept_progress([1, 2]) == {}
    assert "could not keep its progress" in caplog.text
    assert "could not read the jobs' progress" in caplog.text
