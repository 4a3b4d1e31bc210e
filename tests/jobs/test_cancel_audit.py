"""Cancelling a job leaves one audit event ("job.cancel"), from the page, the CLI and the API;
under SQLite's held write lock the event waits for the job's end instead of for the lock."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditEvent, Job, User
from ndcg_labeler.services.accounts import create_token
from ndcg_labeler.services.jobs.records import create_job
from ndcg_labeler.services.jobs.runner import run_job
from tests.factory import PASSWORD, make_test_set, make_user


def _job(app: Flask, user_id: int, state: str, name: str = "Cancelled set") -> tuple[int, int]:
    """(job id, test set id) of a pool job of `user_id`'s in `state`."""
    test_set_id = make_test_set(app, f"{name} {state}")
    with app.app_context():
        job_id = create_job("pool", test_set_id, user_id, {"runs": [], "depth": 10}).id
        db.session.execute(sa.update(Job).where(Job.id == job_id).values(state=state))
        db.session.commit()
    return job_id, test_set_id


def _events(app: Flask) -> list[tuple[str, int | None, tuple[str, int | None], dict[str, Any]]]:
    """(actor, actor id, target, details) of every job.cancel event, oldest first."""
    with app.app_context():
        stmt = (
            sa.select(AuditEvent).where(AuditEvent.action == "job.cancel").order_by(AuditEvent.id)
        )
        return [
            (e.actor_name, e.actor_id, (e.target_type, e.target_id), e.details)
            for e in db.session.scalars(stmt)
        ]


def _token(app: Flask, user_id: int) -> dict[str, str]:
    with app.app_context():
        return {"Authorization": f"Bearer {create_token(db.session.get_one(User, user_id))}"}


def test_the_page_records_who_cancelled_a_queued_job(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    job_id, ts = _job(app, admin_id, "queued")
    assert as_admin.post(f"/jobs/{job_id}/cancel").status_code == 302
    assert _events(app) == [
        (
            "admin",
            admin_id,
            ("job", job_id),
            {"kind": "pool", "test_set_id": ts, "outcome": "cancelled"},
        )
    ]


def test_an_ended_job_leaves_no_event(app: Flask, as_admin: FlaskClient, admin_id: int) -> None:
    job_id, _ = _job(app, admin_id, "done")
    assert as_admin.post(f"/jobs/{job_id}/cancel").status_code == 302
    assert _events(app) == []


def test_the_cli_records_a_stop_asked_of_a_running_job(
    app: Flask, runner: FlaskCliRunner, admin_id: int
) -> None:
    job_id, ts = _job(app, admin_id, "running")
    assert runner.invoke(args=["jobs", "cancel", str(job_id)]).exit_code == 0
    assert _events(app) == [
        ("cli", None, ("job", job_id), {"kind": "pool", "test_set_id": ts, "outcome": "stopping"})
    ]


def test_the_api_cancels_ones_own_job(app: Flask, client: FlaskClient, annotator_id: int) -> None:
    job_id, ts = _job(app, annotator_id, "queued")
    response = client.post(f"/api/jobs/{job_id}/cancel", headers=_token(app, annotator_id))
    assert response.status_code == 200, response.get_data(as_text=True)
    body = response.get_json()
    assert body["id"] == job_id and body["state"] == "cancelled"
    assert _events(app) == [
        (
            "ann",
            annotator_id,
            ("job", job_id),
            {"kind": "pool", "test_set_id": ts, "outcome": "cancelled"},
        )
    ]
    with app.app_context():
        assert db.session.get_one(Job, job_id).state == "cancelled"


def test_the_api_refuses_as_the_page_does(
    app: Flask, client: FlaskClient, admin_id: int, annotator_id: int
) -> None:
    others, _ = _job(app, admin_id, "queued", "Admin's")
    ended, _ = _job(app, annotator_id, "done", "Ann's")
    mine = _token(app, annotator_id)
    # Someone else's job, one that does not exist, or no id at all: 404, as GET /api/jobs/ID.
    for address in (f"/api/jobs/{others}/cancel", "/api/jobs/9999/cancel", "/api/jobs/x/cancel"):
        response = client.post(address, headers=mine)
        assert response.status_code == 404, address
        assert response.get_json() == {"error": "Not Found", "detail": "no such job"}
    response = client.post(f"/api/jobs/{ended}/cancel", headers=mine)
    assert response.status_code == 409
    assert response.get_json()["error"] == "Conflict"
    assert "already ended (done)" in response.get_json()["detail"]
    assert client.post(f"/api/jobs/{others}/cancel").status_code == 401
    assert _events(app) == []
    with app.app_context():
        assert db.session.get_one(Job, others).state == "queued"
    # An admin may cancel anyone's job, as on the page.
    admin = _token(app, admin_id)
    assert client.post(f"/api/jobs/{others}/cancel", headers=admin).status_code == 200
    assert [e[0] for e in _events(app)] == ["admin"]


@contextmanager
def _write_lock(app: Flask) -> Iterator[None]:
    """Hold SQLite's write lock from another connection, as a long corpus import does."""
    with app.app_context():
        locker = db.engine.connect()
        locker.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            locker.rollback()
            locker.close()


@pytest.mark.parametrize("app", ["sqlite"], indirect=True)
def test_under_the_sqlite_lock_the_event_lands_with_the_jobs_end(
    jobs_app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    """The cancel goes through the queue at once (no wait for the lock), and the event, with
    who asked and when, is written in the transaction that records the job's end."""
    job_id, ts = _job(jobs_app, admin_id, "queued")
    with _write_lock(jobs_app):
        began = time.monotonic()
        response = as_admin.post(f"/jobs/{job_id}/cancel")
        took = time.monotonic() - began
        assert response.status_code == 302
        assert took < 5, took  # the cancel's own 1 s wait, never the 10 s busy timeout
    asked = _events(jobs_app)
    assert asked == []  # nothing could be written yet
    with jobs_app.app_context():
        run_job(job_id)
        ended = db.session.get_one(Job, job_id).state
        event = db.session.scalars(
            sa.select(AuditEvent).where(AuditEvent.action == "job.cancel")
        ).one()
        assert event.created_at.replace(tzinfo=None) <= db.session.get_one(
            Job, job_id
        ).finished_at.replace(tzinfo=None)
    assert _events(jobs_app) == [
        (
            "admin",
            admin_id,
            ("job", job_id),
            {"kind": "pool", "test_set_id": ts, "outcome": "stopping", "ended": ended},
        )
    ]


@pytest.mark.parametrize("app", ["sqlite"], indirect=True)
def test_the_cli_under_the_lock_is_recorded_as_the_cli(
    jobs_app: Flask, runner: FlaskCliRunner, admin_id: int
) -> None:
    job_id, _ = _job(jobs_app, admin_id, "queued")
    with _write_lock(jobs_app):
        assert runner.invoke(args=["jobs", "cancel", str(job_id)]).exit_code == 0
    with jobs_app.app_context():
        run_job(job_id)
    assert [(e[0], e[1]) for e in _events(jobs_app)] == [("cli", None)]


def test_a_plain_user_cannot_cancel_anothers_job_on_the_page(
    app: Flask, client: FlaskClient, admin_id: int
) -> None:
    make_user(app, "other")
    job_id, _ = _job(app, admin_id, "queued")
    client.post("/login", data={"username": "other", "password": PASSWORD})
    client.post(f"/jobs/{job_id}/cancel")
    assert _events(app) == []


@pytest.mark.parametrize("app", ["sqlite"], indirect=True)
def test_a_cancel_asked_under_the_lock_of_a_job_whose_worker_died_is_recorded_by_recovery(
    jobs_app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    """The worker that would have written the event at the job's end is gone: recovery, which
    marks the job failed, writes it instead (and the request is dropped from the queue)."""
    from datetime import UTC, datetime, timedelta

    from ndcg_labeler.services import jobs as job_service
    from ndcg_labeler.services.jobs import queue

    job_id, ts = _job(jobs_app, admin_id, "running")
    with _write_lock(jobs_app):
        assert as_admin.post(f"/jobs/{job_id}/cancel").status_code == 302
    old = datetime.now(UTC) - timedelta(hours=1)
    with jobs_app.app_context():
        db.session.execute(
            sa.update(Job)
            .where(Job.id == job_id)
            .values(worker="elsewhere:1", started_at=old, heartbeat_at=old)
        )
        db.session.commit()
        assert job_service.recover(stale_seconds=60) == [job_id]
        assert queue.cancel_request(job_id) is None
    assert _events(jobs_app) == [
        (
            "admin",
            admin_id,
            ("job", job_id),
            {"kind": "pool", "test_set_id": ts, "outcome": "stopping", "ended": "failed"},
        )
    ]
