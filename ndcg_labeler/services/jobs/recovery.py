"""Jobs whose worker died: end them (failed, or done when their run was stored whole), and
delete the spooled uploads nobody will read."""

from __future__ import annotations

import logging
import os
import socket
import time
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from flask import current_app
from sqlalchemy.exc import OperationalError

from ndcg_labeler import sqlite
from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, Run, aware, utcnow
from ndcg_labeler.services._db import transaction
from ndcg_labeler.services.jobs import queue, spool
from ndcg_labeler.services.jobs.kinds import KINDS
from ndcg_labeler.services.jobs.records import record_asked_cancel, remove_upload

log = logging.getLogger(__name__)

INTERRUPTED = "interrupted: the worker stopped (restart or crash)"
STORED_THEN_STOPPED = "done — the worker stopped after storing the run, before scoring it"
STALE_SECONDS = 300
"""A running job whose heartbeat is older than this is taken for dead (NDCG_JOB_STALE_SECONDS)."""
LOCK_WAIT_MS = 1000
"""How long recovery waits for SQLite's write lock before it leaves the jobs for the next look:
a pass runs on every /jobs page, and an import may hold the lock for minutes."""


def _alive(worker: str) -> bool | None:
    """Whether the worker host:pid still runs (None when it is on another host)."""
    host, _, pid = worker.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stored_run(job: Job) -> dict[str, Any] | None:
    """The result of a run upload or fetch whose run was committed before its worker died.

    Both store the run in one transaction and then score it; a worker killed while scoring
    leaves the run whole. It is this job's run when the test set has a run of the job's name,
    file and uploader, stored after the job started (the name is unique in a test set).
    """
    params = job.params or {}
    kind = KINDS.get(job.kind)
    found = kind.stored_run if kind is not None else None
    if found is None or not params.get(found.name_param) or job.started_at is None:
        return None
    uploader = Run.uploaded_by_id == job.user_id if job.user_id else Run.uploaded_by_id.is_(None)
    run = db.session.scalar(
        sa.select(Run).where(
            Run.test_set_id == job.test_set_id,
            Run.name == params[found.name_param],
            Run.filename == found.filename(params),
            uploader,
            Run.uploaded_at >= job.started_at,
        )
    )
    if run is None:
        return None
    return {"run_id": run.id, "run_name": run.name, "run": run.name, "report": run.report}


def recover(stale_seconds: int | None = None) -> list[int]:
    """End every running job whose worker died; returns their ids.

    Dead means: the worker process (on this host) no longer exists, or the heartbeat is older
    than `stale_seconds`. Its import, upload or fetch was one transaction, so either nothing of
    it is stored and the job is marked failed (INTERRUPTED), or, for a run upload, fetch or
    fusion killed after its commit (while scoring the run), the run is whole and the job is marked
    done with it. It also deletes spooled uploads that no queued or running job will read.
    """
    if stale_seconds is None:
        stale_seconds = int(current_app.config.get("NDCG_JOB_STALE_SECONDS", STALE_SECONDS))
    limit = utcnow() - timedelta(seconds=stale_seconds)
    try:
        # Each write in a transaction of its own, each with the short wait: a commit gives the
        # connection back to the pool, and the next may be another one.
        with sqlite.busy_timeout(db.session.connection(), LOCK_WAIT_MS):
            _sweep_uploads()
        dead = _dead(limit)
        if dead:
            with sqlite.busy_timeout(db.session.connection(), LOCK_WAIT_MS):
                _end(dead)
    except OperationalError:
        # SQLite locked (by a running import): waiting would hold the page for its whole
        # import; the next look ends them.
        db.session.rollback()
        if db.session.get_bind().dialect.name != "sqlite":
            raise
        return []
    for job in db.session.scalars(sa.select(Job).where(Job.id.in_(dead))):
        remove_upload(job)
    return dead


def _dead(limit: datetime) -> list[int]:
    """The running jobs whose worker is gone or whose latest heartbeat is older than `limit`."""
    running = db.session.execute(
        sa.select(Job.id, Job.worker, Job.heartbeat_at, Job.started_at).where(
            Job.state == "running"
        )
    ).all()
    kept: dict[int, dict[str, Any]] = {}
    if running and db.session.get_bind().dialect.name == "sqlite":
        # A job whose import holds the write lock beats in the queue (reporting.JobProgress).
        kept = queue.kept_progress(job_id for job_id, *_ in running)
    dead = []
    for job_id, worker, heartbeat, started in running:
        beats = [aware(heartbeat or started), kept.get(job_id, {}).get("heartbeat_at")]
        beat = max((b for b in beats if b is not None), default=None)
        if _alive(worker) is False or beat is None or beat < limit:
            dead.append(job_id)
    return dead


def _end(dead: list[int]) -> None:
    """Mark the dead jobs done with the run they stored whole, or failed (INTERRUPTED); with
    the audit event of a cancel asked through the queue, which their worker did not live to
    write (records.record_asked_cancel)."""
    table = Job.__table__
    with transaction():
        for job in db.session.scalars(sa.select(Job).where(Job.id.in_(dead))):
            result = _stored_run(job)
            if job.state == "running":
                record_asked_cancel(job, "failed" if result is None else "done")
            if result is not None:
                db.session.execute(
                    sa.update(table)
                    .where(table.c.id == job.id, table.c.state == "running")
                    .values(
                        state="done",
                        result=result,
                        message=STORED_THEN_STOPPED,
                        finished_at=utcnow(),
                        done=table.c.total,
                    )
                )
        db.session.execute(
            sa.update(table)
            .where(table.c.id.in_(dead), table.c.state == "running")
            .values(state="failed", error=INTERRUPTED, message=INTERRUPTED, finished_at=utcnow())
        )
    for job_id in dead:  # ended: their requests and kept progress are of no more use
        try:
            queue.forget(job_id)
        except Exception:  # an unreachable queue must not fail the recovery that was committed
            log.warning("job %s: could not drop its keys from the queue", job_id, exc_info=True)


def _sweep_uploads() -> None:
    """Delete spooled uploads that no queued or running job will read (see spool.sweep)."""
    waiting = db.session.scalars(
        sa.select(Job.upload_path).where(
            Job.state.in_(("queued", "running")), Job.upload_path.is_not(None)
        )
    )
    spool.sweep({path for path in waiting if path}, time.time())
