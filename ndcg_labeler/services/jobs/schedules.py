"""The scheduler tick: claim the endpoints' due slots and queue one evaluation job for each.

The job worker runs it every minute (a huey periodic task, see queue.py); `flask jobs tick`
runs it once (e.g. from the system's cron when no worker runs the scheduler)."""

from __future__ import annotations

from datetime import datetime

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job
from ndcg_labeler.services import series
from ndcg_labeler.services.jobs import kinds, queue, records


def tick(now: datetime | None = None) -> list[Job]:
    """Queue an evaluation for every slot due at `now` (each slot once); the jobs queued."""
    recorded: list[Job] = []

    def record(due: series.Due) -> None:
        # Committed with the claim (create_job commits): see series.claim_due.
        params = {
            "endpoint": due.endpoint,
            "series": due.series,
            "k": due.k,
            "slot": due.slot.isoformat(),
        }
        recorded.append(records.create_job(kinds.SCHEDULED.name, due.test_set_id, None, params))

    series.claim_due(now, record)
    queued = []
    for job in recorded:
        try:
            queue.send(job.id)
        except Exception as exc:
            job.state, job.error = "failed", f"the job queue is unavailable: {exc}"
            job.message = job.error
            db.session.commit()
            continue
        # An immediate queue (tests, NDCG_JOBS_IMMEDIATE) ran it in another session already.
        db.session.refresh(job)
        queued.append(job)
    return queued
