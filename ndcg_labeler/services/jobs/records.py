"""Job records: create, read, list and cancel, plus the numbers a job page derives."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from flask_sqlalchemy.pagination import Pagination
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm.attributes import set_committed_value

from ndcg_labeler import sqlite
from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditEvent, Job, User, aware, utcnow
from ndcg_labeler.models.jobs import FINISHED_STATES
from ndcg_labeler.services import audit
from ndcg_labeler.services._db import paginate, transaction
from ndcg_labeler.services.jobs import queue, spool

CANCEL_WAIT_MS = 1000
"""How long a cancel waits for SQLite's write lock before it asks through the queue instead:
an import holds the lock until it commits, which may be minutes (a corpus of millions)."""


def worker_name() -> str:
    """host:pid of this process, stored on the jobs it runs."""
    return f"{socket.gethostname()}:{os.getpid()}"


def create_job(
    kind: str,
    test_set_id: int | None,
    user_id: int | None,
    params: dict[str, Any],
    upload_path: str = "",
) -> Job:
    """A new queued job (committed, so the worker can see it)."""
    job = Job(
        kind=kind,
        test_set_id=test_set_id,
        user_id=user_id,
        state="queued",
        params=params,
        upload_path=upload_path,
        message="waiting for the job worker",
    )
    with transaction():
        db.session.add(job)
    return job


def get_job(job_id: int) -> Job | None:
    """The job with this id, or None; a running one with its latest progress (with_progress)."""
    job = db.session.get(Job, job_id)
    if job is not None:
        with_progress([job])
    return job


# What a report kept in the queue may lay over the row (reporting.JobProgress writes these).
_KEPT = ("phase", "done", "total", "rows", "heartbeat_at", "phase_started_at", "message")


def with_progress(jobs: Iterable[Job]) -> None:
    """Show running jobs' progress kept in the queue where it is newer than their rows'.

    SQLite only: while a job's import holds the write lock its row cannot take progress or
    heartbeat, so the job keeps them in the queue's storage (queue.keep_progress). The values
    are set as if loaded, never written back: nothing is flushed, and a refresh reads the row.
    """
    running = [job for job in jobs if job.state == "running"]
    if not running or db.session.get_bind().dialect.name != "sqlite":
        return
    kept = queue.kept_progress(job.id for job in running)
    for job in running:
        report = kept.get(job.id)
        row_beat = aware(job.heartbeat_at)
        if report is None or (row_beat is not None and report["heartbeat_at"] <= row_beat):
            continue
        for name in _KEPT:
            set_committed_value(job, name, report[name])


def can_see(user: User, job: Job) -> bool:
    """Only the job's starter and admins may see or cancel a job."""
    return bool(user.is_admin) or (job.user_id is not None and job.user_id == user.id)


def list_jobs(user: User | None, page: int = 1, per_page: int = 50) -> Pagination:
    """Newest first: every job for an admin (or None: the CLI), one's own for anyone else."""
    stmt = sa.select(Job).order_by(Job.id.desc())
    if user is not None and not user.is_admin:
        stmt = stmt.where(Job.user_id == user.id)
    found = paginate(stmt, page, per_page)
    with_progress(found.items)
    return found


def remove_upload(job: Job) -> None:
    """Delete the job's spooled files (see spool.remove)."""
    spool.remove(job.upload_path)


def cancel(job: Job, actor: User | None = None) -> str:
    """Cancel a queued job at once ("cancelled"), or ask a running one to stop ("stopping");
    "" when it had already ended. `actor` (None: the command line) is audited as "job.cancel".

    A running job stops at its next progress report and rolls back (a judge keeps the answers
    it committed); one that ends first keeps its result. On SQLite a running import holds the
    write lock, so when the job's row cannot be written at once the request goes through the
    queue's storage, which the job's progress callback reads too; its audit event, which cannot
    be written either, goes with it and lands in the transaction that records the job's end.
    """
    table = Job.__table__
    now = utcnow()
    try:
        with sqlite.busy_timeout(db.session.connection(), CANCEL_WAIT_MS), transaction():
            queued = db.session.execute(
                sa.update(table)
                .where(table.c.id == job.id, table.c.state == "queued")
                .values(
                    state="cancelled",
                    cancel_requested=True,
                    finished_at=now,
                    message="cancelled before it started",
                )
            ).rowcount
            running = 0
            if not queued:
                running = db.session.execute(
                    sa.update(table)
                    .where(table.c.id == job.id, table.c.state == "running")
                    .values(cancel_requested=True, message="cancelling…")
                ).rowcount
            if queued or running:
                outcome = "cancelled" if queued else "stopping"
                _audit(actor, job, outcome=outcome)
    except OperationalError:
        if db.session.get_bind().dialect.name != "sqlite":
            raise
        db.session.rollback()
        db.session.refresh(job)
        if is_finished(job):
            return ""
        # A queued job stops at its first report. Who asked is kept with the request: the
        # runner writes the event when it records the end (see record_asked_cancel).
        queue.ask_to_cancel(
            job.id,
            {
                "actor_id": actor.id if actor is not None else None,
                "at": now.isoformat(),
            },
        )
        return "stopping"
    db.session.refresh(job)
    if queued:
        remove_upload(job)
        return "cancelled"
    return "stopping" if running else ""


def _audit(actor: User | None, job: Job, **details: Any) -> AuditEvent:
    """Add the job's "job.cancel" event to the session (the caller's transaction)."""
    return audit.record(
        actor, "job.cancel", "job", job.id, kind=job.kind, test_set_id=job.test_set_id, **details
    )


def record_asked_cancel(job: Job, ended: str) -> None:
    """Add the event of a cancel asked through the queue (SQLite's lock was held then) to the
    session, dated when it was asked; `ended` is the state the job ends in. Nothing when no
    cancel went through the queue."""
    asked = queue.cancel_request(job.id)
    if asked is None:
        return
    actor_id = asked.get("actor_id")
    actor = db.session.get(User, actor_id) if actor_id is not None else None
    event = _audit(actor, job, outcome="stopping", ended=ended)
    if asked.get("at"):
        event.created_at = datetime.fromisoformat(asked["at"])


def stopping(job: Job) -> bool:
    """Whether the job, not yet ended, was asked to stop (in its row or through the queue)."""
    if is_finished(job):
        return False
    if job.cancel_requested:
        return True
    # Only SQLite's cancel goes through the queue (see cancel).
    return db.session.get_bind().dialect.name == "sqlite" and queue.cancel_asked(job.id)


# A worker takes a queued job within a second or two; one still queued after this long most
# likely has no worker running at all (one is started apart from the web server).
UNCLAIMED_AFTER = 60


@dataclass(frozen=True)
class Figures:
    """What a job page shows beside the bar: speed, time spent, time left; and, for a job
    queued longer than UNCLAIMED_AFTER seconds, how long it has waited (else None)."""

    fraction: float | None
    rows_per_second: float | None
    elapsed: float | None
    eta: float | None
    unclaimed: float | None = None


def figures(job: Job, now: datetime | None = None) -> Figures:
    """Rows per second since the start, and the ETA of the current phase at its own pace."""
    now = now or utcnow()
    started = aware(job.started_at)
    end = aware(job.finished_at) or now
    elapsed = (end - started).total_seconds() if started else None
    rate = job.rows / elapsed if elapsed and job.rows else None
    fraction = min(job.done / job.total, 1.0) if job.total else None
    eta = None
    phase_start = aware(job.phase_started_at)
    if job.state == "running" and phase_start and job.done and job.total:
        spent = (now - phase_start).total_seconds()
        eta = spent * (job.total - job.done) / job.done
    created = aware(job.created_at)
    waited = (now - created).total_seconds() if job.state == "queued" and created else None
    unclaimed = waited if waited is not None and waited >= UNCLAIMED_AFTER else None
    return Figures(fraction, rate, elapsed, eta, unclaimed)


def is_finished(job: Job) -> bool:
    """True once the job is done, failed or cancelled."""
    return job.state in FINISHED_STATES
