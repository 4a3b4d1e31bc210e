"""Runs one job in the worker: claim it, run its kind with a progress callback, record the end."""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from flask import current_app

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import FormatError
from ndcg_labeler.models import Job, utcnow
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services._db import transaction
from ndcg_labeler.services._progress import Cancelled, stop_on
from ndcg_labeler.services.jobs import queue, records
from ndcg_labeler.services.jobs.kinds import KINDS
from ndcg_labeler.services.jobs.recovery import STALE_SECONDS
from ndcg_labeler.services.jobs.reporting import Heartbeat, JobProgress, heartbeat_interval

log = logging.getLogger(__name__)


def _claim(job_id: int) -> bool:
    """queued -> running, unless it was cancelled or taken meanwhile."""
    table = Job.__table__
    now = utcnow()
    with transaction():
        claimed = db.session.execute(
            sa.update(table)
            .where(table.c.id == job_id, table.c.state == "queued", ~table.c.cancel_requested)
            .values(
                state="running",
                started_at=now,
                heartbeat_at=now,
                phase_started_at=now,
                worker=records.worker_name(),
                message="starting",
            )
        ).rowcount
    return bool(claimed)


def _finish(job_id: int, state: str, **values: Any) -> None:
    """Record how the job ended (only a running job can end), with the audit event of a cancel
    that SQLite's lock kept from being written when it was asked."""
    table = Job.__table__
    with transaction():
        ended = db.session.execute(
            sa.update(table)
            .where(table.c.id == job_id, table.c.state == "running")
            .values(state=state, finished_at=utcnow(), heartbeat_at=utcnow(), **values)
        ).rowcount
        job = db.session.get(Job, job_id) if ended else None
        if job is not None:
            records.record_asked_cancel(job, state)


def run_job(job_id: int) -> None:
    """Run a queued job to its end: done (with its result), failed (with why) or cancelled."""
    job = records.get_job(job_id)
    if job is None:
        return
    if not _claim(job_id):
        db.session.refresh(job)
        if records.is_finished(job):
            records.remove_upload(job)
        return
    db.session.refresh(job)
    kind = KINDS.get(job.kind)
    nothing = kind.nothing if kind is not None else "nothing was written"
    progress = JobProgress(job_id)
    stale = float(current_app.config.get("NDCG_JOB_STALE_SECONDS", STALE_SECONDS))
    try:
        if kind is None:
            raise ServiceError(f"unknown kind of job '{job.kind}'")
        # Alive while its worker is, however long a step goes without a report; stopped
        # before the job's end is recorded. A cancel it sees ends the job's waits (pause).
        with Heartbeat(job_id, progress, heartbeat_interval(stale)), stop_on(progress.stopped):
            result = kind.run(job, progress)
    except Cancelled:
        db.session.rollback()
        _finish(job_id, "cancelled", message=f"cancelled — {nothing}")
    except (FormatError, ServiceError) as exc:
        db.session.rollback()
        error = f"{exc} — {nothing}."
        _finish(job_id, "failed", error=error, message=error)
    except Exception as exc:
        db.session.rollback()
        log.exception("job %s failed", job_id)
        error = f"internal error ({type(exc).__name__}: {exc}) — {nothing}."
        _finish(job_id, "failed", error=error, message=error)
    else:
        table = Job.__table__
        # A result's own message (an import that brought nothing new) says more than "done".
        message = result.get("message") or "done"
        _finish(
            job_id, "done", result=result, message=message, done=table.c.total, rows=progress.rows
        )
    finally:
        progress.close()
        queue.forget(job_id)
        db.session.rollback()
        job = records.get_job(job_id)
        if job is not None:
            records.remove_upload(job)
