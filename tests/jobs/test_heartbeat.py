"""A job's liveness follows its worker, not its progress reports: while it runs, a thread of
its worker keeps its heartbeat fresh, so a step longer than NDCG_JOB_STALE_SECONDS without a
report (a long final commit, a slow CREATE INDEX) is not taken for dead, while a job whose
worker is gone still is."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, aware
from ndcg_labeler.services import jobs as job_service
from ndcg_labeler.services.jobs import queue
from ndcg_labeler.services.jobs.kinds import KINDS, Kind
from ndcg_labeler.services.jobs.records import create_job
from ndcg_labeler.services.jobs.recovery import INTERRUPTED
from ndcg_labeler.services.jobs.reporting import Heartbeat, heartbeat_interval
from ndcg_labeler.services.jobs.runner import run_job

STALE = 2
"""NDCG_JOB_STALE_SECONDS in these tests: the heartbeat beats every 0.4 s."""


class Step:
    """A job kind whose one step outlasts the stale time without a report: it tells when it
    began, then waits (up to 30 s) for the test to let it end."""

    def __init__(self, hold_the_row: bool = False) -> None:
        self.began = threading.Event()
        self.end = threading.Event()
        self.hold_the_row = hold_the_row

    def __call__(self, job: Job, progress: Any) -> dict[str, Any]:
        if self.hold_the_row:
            # The job's own transaction writes its row, as a long import's final commit would
            # keep SQLite's write lock: no other connection can write the row meanwhile.
            db.session.execute(sa.update(Job).where(Job.id == job.id).values(message="busy"))
        self.began.set()
        self.end.wait(30)
        db.session.commit()
        return {"slept": True}


@contextmanager
def running(app: Flask, step: Step, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A job of the slow kind run by run_job in a thread of this process (its worker)."""
    monkeypatch.setitem(KINDS, "slow", Kind("slow", "A slow step", step))
    with app.app_context():
        job_id = create_job("slow", None, None, {}).id

    def work() -> None:
        with app.app_context():
            run_job(job_id)

    thread = threading.Thread(target=work)
    thread.start()
    try:
        assert step.began.wait(10)
        yield job_id
    finally:
        step.end.set()
        thread.join(30)
    assert not thread.is_alive()


def test_a_step_longer_than_the_stale_time_is_not_taken_for_dead(
    jobs_app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It used to be marked interrupted after NDCG_JOB_STALE_SECONDS though it was working."""
    jobs_app.config["NDCG_JOB_STALE_SECONDS"] = STALE
    step = Step()
    with running(jobs_app, step, monkeypatch) as job_id:
        time.sleep(3 * STALE)  # no report meanwhile
        with jobs_app.app_context():
            assert job_service.recover() == []
            assert db.session.get_one(Job, job_id).state == "running"
    with jobs_app.app_context():
        job = db.session.get_one(Job, job_id)
        assert (job.state, job.result) == ("done", {"slept": True})
        assert queue.kept_progress([job_id]) == {}


@pytest.mark.parametrize("app", ["sqlite"], indirect=True)
def test_a_job_holding_its_own_row_beats_in_the_queue(
    jobs_app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite: the job's transaction holds the write lock, so the heartbeat goes to the queue's
    storage, which the job page and recovery read beside the row."""
    jobs_app.config["NDCG_JOB_STALE_SECONDS"] = STALE
    step = Step(hold_the_row=True)
    with running(jobs_app, step, monkeypatch) as job_id:
        time.sleep(3 * STALE)
        with jobs_app.app_context():
            fresh = datetime.now(UTC) - timedelta(seconds=STALE)
            row_beat = db.session.scalar(sa.select(Job.heartbeat_at).where(Job.id == job_id))
            assert aware(row_beat) < fresh  # the row could not take it
            assert queue.kept_progress([job_id])[job_id]["heartbeat_at"] > fresh
            shown = job_service.get_job(job_id)
            assert shown is not None and aware(shown.heartbeat_at) > fresh
            assert shown.message == "starting"  # the row's own report, kept with the beat
    with jobs_app.app_context():
        assert db.session.get_one(Job, job_id).state == "done"


def _running_job(app: Flask, worker: str) -> int:
    """A job some worker took a while ago, its heartbeat as old."""
    with app.app_context():
        job = create_job("slow", None, None, {})
        long_ago = datetime.now(UTC) - timedelta(minutes=10)
        db.session.execute(
            sa.update(Job)
            .where(Job.id == job.id)
            .values(state="running", worker=worker, started_at=long_ago, heartbeat_at=long_ago)
        )
        db.session.commit()
        return job.id


def test_a_job_whose_worker_is_gone_is_still_taken_for_dead(jobs_app: Flask) -> None:
    """On another host only the heartbeat tells: it stops with the worker's process."""
    jobs_app.config["NDCG_JOB_STALE_SECONDS"] = STALE
    job_id = _running_job(jobs_app, "elsewhere:1")
    with jobs_app.app_context():
        with Heartbeat(job_id, None, heartbeat_interval(STALE)):
            time.sleep(3 * STALE)
            assert job_service.recover() == []
        time.sleep(2 * STALE)  # the worker was killed: its thread stopped with it
        assert job_service.recover() == [job_id]
        db.session.expire_all()
        assert db.session.get_one(Job, job_id).error == INTERRUPTED


def test_a_dead_worker_on_this_host_is_taken_for_dead_at_once(jobs_app: Flask) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    job_id = _running_job(jobs_app, f"{socket.gethostname()}:{gone.pid}")
    with jobs_app.app_context(), Heartbeat(job_id, None, heartbeat_interval(STALE)):
        time.sleep(0.5)
        assert job_service.recover(stale_seconds=STALE) == [job_id]


def test_the_heartbeat_beats_often_enough_but_not_too_often() -> None:
    assert heartbeat_interval(300) == 30
    assert heartbeat_interval(60) == 12
    assert heartbeat_interval(1) == pytest.approx(0.2)
    assert heartbeat_interval(0) == pytest.approx(0.1)


def test_a_failing_heartbeat_never_fails_the_job(
    jobs_app: Flask, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The heartbeat is best effort: a database or queue it cannot write only logs."""
    jobs_app.config["NDCG_JOB_STALE_SECONDS"] = STALE

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("no database")

    monkeypatch.setattr(Heartbeat, "_beat", broken)
    step = Step()
    with running(jobs_app, step, monkeypatch) as job_id:
        time.sleep(0.5)
    with jobs_app.app_context():
        assert db.session.get_one(Job, job_id).state == "done"
    assert "could not refresh its heartbeat" in caplog.text
