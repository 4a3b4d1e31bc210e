"""`flask jobs cancel ID`: an operator stops a job from the command line as the job page does."""

from __future__ import annotations

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job
from ndcg_labeler.services.jobs.records import create_job
from tests.factory import make_test_set


def _job(app: Flask, admin_id: int, state: str) -> int:
    test_set_id = make_test_set(app, f"set-{state}")
    with app.app_context():
        job_id = create_job("pool", test_set_id, admin_id, {"runs": [], "depth": 10}).id
        db.session.execute(sa.update(Job).where(Job.id == job_id).values(state=state))
        db.session.commit()
        return job_id


def _state(app: Flask, job_id: int) -> tuple[str, bool]:
    with app.app_context():
        job = db.session.get_one(Job, job_id)
        return job.state, job.cancel_requested


def test_cancel_a_queued_job(app: Flask, runner: FlaskCliRunner, admin_id: int) -> None:
    job_id = _job(app, admin_id, "queued")
    done = runner.invoke(args=["jobs", "cancel", str(job_id)])
    assert done.exit_code == 0, done.output
    assert done.output == f"Cancelled job {job_id} (Pooling): nothing of it is written.\n"
    assert _state(app, job_id) == ("cancelled", True)


def test_cancel_a_running_job_asks_it_to_stop(
    app: Flask, runner: FlaskCliRunner, admin_id: int
) -> None:
    job_id = _job(app, admin_id, "running")
    done = runner.invoke(args=["jobs", "cancel", str(job_id)])
    assert done.exit_code == 0, done.output
    assert done.output.startswith(f"Cancelling job {job_id} (Pooling): it stops at its next step")
    assert _state(app, job_id) == ("running", True)


def test_cancel_refuses_an_ended_or_unknown_job(
    app: Flask, runner: FlaskCliRunner, admin_id: int
) -> None:
    job_id = _job(app, admin_id, "done")
    ended = runner.invoke(args=["jobs", "cancel", str(job_id)])
    assert ended.exit_code == 1
    assert f"Error: job {job_id} (Pooling) had already ended (done)" in ended.output
    unknown = runner.invoke(args=["jobs", "cancel", "999"])
    assert unknown.exit_code == 1 and "Error: no job 999" in unknown.output
