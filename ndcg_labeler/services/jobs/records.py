"""Job records: create, read, list, cancel and recover, plus the numbers a job page derives."""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from flask import current_app
from flask_sqlalchemy.pagination import Pagination

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, Run, User, utcnow
from ndcg_labeler.models.jobs import FINISHED_STATES
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services._db import paginate, transaction
from ndcg_labeler.services.jobs import spool

INTERRUPTED = "interrupted: the worker stopped (restart or crash)"
STORED_THEN_STOPPED = "done — the worker stopped after storing the run, before scoring it"
STALE_SECONDS = 300
"""A running job whose heartbeat is older than this is taken for dead (NDCG_JOB_STALE_SECONDS)."""


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
    """The job with this id, or None."""
    return db.session.get(Job, job_id)


def can_see(user: User, job: Job) -> bool:
    """Only the job's starter and admins may see or cancel a job."""
    return bool(user.is_admin) or (job.user_id is not None and job.user_id == user.id)


def list_jobs(user: User, page: int = 1, per_page: int = 50) -> Pagination:
    """Newest first: every job for an admin, one's own jobs for anyone else."""
    stmt = sa.select(Job).order_by(Job.id.desc())
    if not user.is_admin:
        stmt = stmt.where(Job.user_id == user.id)
    return paginate(stmt, page, per_page)


def remove_upload(job: Job) -> None:
    """Delete the job's spooled files (only inside the instance's uploads folder)."""
    if not job.upload_path:
        return
    root = os.path.realpath(os.path.join(current_app.instance_path, "uploads"))
    path = os.path.realpath(job.upload_path)
    if os.path.commonpath([root, path]) == root and path != root:
        shutil.rmtree(path, ignore_errors=True)


def cancel(job: Job) -> bool:
    """Cancel a queued job at once, or ask a running one to stop; False when already finished.

    A running job stops at its next progress report and rolls back: nothing is written.
    """
    table = Job.__table__
    now = utcnow()
    with transaction():
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
    db.session.refresh(job)
    if queued:
        remove_upload(job)
    return bool(queued or running)


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


# Jobs that store a run and then score it: the parameter naming the run, and the file name
# the run is stored under (a fetch stores its answers as ENDPOINT.trec, a fusion as
# fused-METHOD.trec).
_RUN_JOBS: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    "run_upload": ("name", lambda params: (params.get("filename") or "upload")[:300]),
    "fetch": ("run", lambda params: f"{params.get('endpoint') or ''}.trec"[:300]),
    "fuse": ("name", lambda params: (params.get("filename") or "")[:300]),
}


def _stored_run(job: Job) -> dict[str, Any] | None:
    """The result of a run upload or fetch whose run was committed before its worker died.

    Both store the run in one transaction and then score it; a worker killed while scoring
    leaves the run whole. It is this job's run when the test set has a run of the job's name,
    file and uploader, stored after the job started (the name is unique in a test set).
    """
    params = job.params or {}
    kind = _RUN_JOBS.get(job.kind)
    if kind is None or not params.get(kind[0]) or job.started_at is None:
        return None
    uploader = Run.uploaded_by_id == job.user_id if job.user_id else Run.uploaded_by_id.is_(None)
    run = db.session.scalar(
        sa.select(Run).where(
            Run.test_set_id == job.test_set_id,
            Run.name == params[kind[0]],
            Run.filename == kind[1](params),
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
    _sweep_uploads()
    running = db.session.execute(
        sa.select(Job.id, Job.worker, Job.heartbeat_at, Job.started_at).where(
            Job.state == "running"
        )
    ).all()
    dead = []
    for job_id, worker, heartbeat, started in running:
        beat = _aware(heartbeat or started)
        if _alive(worker) is False or beat is None or beat < limit:
            dead.append(job_id)
    if not dead:
        return []
    table = Job.__table__
    with transaction():
        for job in db.session.scalars(sa.select(Job).where(Job.id.in_(dead))):
            result = _stored_run(job)
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
    for job in db.session.scalars(sa.select(Job).where(Job.id.in_(dead))):
        remove_upload(job)
    return dead


def _sweep_uploads() -> None:
    """Delete spooled uploads that no queued or running job will read (see spool.sweep)."""
    waiting = db.session.scalars(
        sa.select(Job.upload_path).where(
            Job.state.in_(("queued", "running")), Job.upload_path.is_not(None)
        )
    )
    spool.sweep({path for path in waiting if path}, time.time())


def _aware(moment: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; they are UTC."""
    if moment is None or moment.tzinfo is not None:
        return moment
    from datetime import UTC

    return moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Figures:
    """What a job page shows beside the bar: speed, time spent, time left."""

    fraction: float | None
    rows_per_second: float | None
    elapsed: float | None
    eta: float | None


def figures(job: Job, now: datetime | None = None) -> Figures:
    """Rows per second since the start, and the ETA of the current phase at its own pace."""
    now = now or utcnow()
    started = _aware(job.started_at)
    end = _aware(job.finished_at) or now
    elapsed = (end - started).total_seconds() if started else None
    rate = job.rows / elapsed if elapsed and job.rows else None
    fraction = min(job.done / job.total, 1.0) if job.total else None
    eta = None
    phase_start = _aware(job.phase_started_at)
    if job.state == "running" and phase_start and job.done and job.total:
        spent = (now - phase_start).total_seconds()
        eta = spent * (job.total - job.done) / job.done
    return Figures(fraction, rate, elapsed, eta)


def is_finished(job: Job) -> bool:
    """True once the job is done, failed or cancelled."""
    return job.state in FINISHED_STATES


def require_job(job_id: int) -> Job:
    """The job with this id, or a ServiceError (CLI)."""
    job = get_job(job_id)
    if job is None:
        raise ServiceError(f"no job {job_id}")
    return job
