"""`flask jobs list`: the newest jobs, and a word when there are none or more than it shows."""

from __future__ import annotations

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job
from ndcg_labeler.services.jobs.records import create_job
from tests.factory import make_test_set


def _jobs(app: Flask, admin_id: int, count: int) -> list[int]:
    test_set_id = make_test_set(app, "listed")
    with app.app_context():
        ids = [
            create_job("pool", test_set_id, admin_id, {"runs": [], "depth": 10}).id
            for _ in range(count)
        ]
        db.session.execute(sa.update(Job).values(state="done", message="pooled"))
        db.session.commit()
    return ids


def test_no_job_is_said_on_stderr(runner: FlaskCliRunner) -> None:
    done = runner.invoke(args=["jobs", "list"])
    assert done.exit_code == 0, done.output
    assert (done.stdout, done.stderr) == ("", "No jobs yet.\n")


def test_more_jobs_than_shown_are_counted(
    app: Flask, runner: FlaskCliRunner, admin_id: int
) -> None:
    ids = _jobs(app, admin_id, 4)
    done = runner.invoke(args=["jobs", "list", "--limit", "3"])
    assert done.exit_code == 0, done.output
    # Newest first, one tab-separated line a job on stdout; the count on stderr for scripts.
    assert [line.split("\t")[0] for line in done.stdout.splitlines()] == [
        str(i) for i in reversed(ids[1:])
    ]
    assert done.stderr == "3 of 4 jobs shown, newest first (--limit 4 shows them all).\n"
    every = runner.invoke(args=["jobs", "list"])
    assert len(every.stdout.splitlines()) == 4 and every.stderr == ""


def test_a_limit_out_of_range_is_refused(runner: FlaskCliRunner) -> None:
    done = runner.invoke(args=["jobs", "list", "--limit", "0"])
    assert done.exit_code == 2
    assert "0 is not in the range 1<=x<=1000" in done.output
