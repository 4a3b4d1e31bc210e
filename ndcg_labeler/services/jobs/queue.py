"""The task queue (huey), built lazily per app: SQLite in instance/ by default, or Redis.

huey is imported only when a job is enqueued or the worker starts, so `flask --help` and the
web server's start stay fast. One task, `ndcg.run_job(job_id)`, runs any job inside the app.

Settings: NDCG_REDIS_URL (or NDCG_JOBS_URL) switches the storage to Redis; NDCG_JOBS_QUEUE
names the queue (default "ndcg-labeler"); NDCG_JOBS_SQLITE is the SQLite file (default
instance/jobs.sqlite3).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import Any

from flask import Flask, current_app

EXTENSION = "ndcg_jobs_queue"
TASK_NAME = "ndcg.run_job"
TICK_NAME = "ndcg.schedule_tick"

_log = logging.getLogger(__name__)


def storage_url(app: Flask) -> str | None:
    """The Redis URL when the queue lives in Redis, None for the embedded SQLite storage."""
    return app.config.get("NDCG_REDIS_URL") or app.config.get("NDCG_JOBS_URL") or None


def _build(app: Flask) -> Any:
    """A huey instance for the app's settings, with the one task registered."""
    import huey  # lazily: huey (and redis) cost start-up time

    # Here, not at the top: the runner (through the progress callback and the job records)
    # asks this module whether a job was cancelled.
    from ndcg_labeler.services.jobs.runner import run_job as run

    name = app.config.get("NDCG_JOBS_QUEUE") or "ndcg-labeler"
    immediate = bool(app.config.get("NDCG_JOBS_IMMEDIATE", False))
    url = storage_url(app)
    if url:
        queue = huey.RedisHuey(name, url=url, immediate=immediate, results=False)
    else:
        filename = app.config.get("NDCG_JOBS_SQLITE") or os.path.join(
            app.instance_path, "jobs.sqlite3"
        )
        queue = huey.SqliteHuey(name, filename=filename, immediate=immediate, results=False)

    @queue.task(name=TASK_NAME)
    def run_job(job_id: int) -> None:
        with app.app_context():
            run(job_id)

    # Every minute the worker's scheduler queues this; it queues the evaluations due then.
    @queue.periodic_task(huey.crontab(minute="*"), name=TICK_NAME)
    def schedule_tick() -> None:
        from ndcg_labeler.services.jobs.schedules import tick

        with app.app_context():
            tick()

    queue.ndcg_run_job = run_job
    queue.ndcg_schedule_tick = schedule_tick
    return queue


def get_queue(app: Flask | None = None) -> Any:
    """The app's huey instance (built on first use)."""
    app = app or current_app._get_current_object()  # type: ignore[attr-defined]
    queue = app.extensions.get(EXTENSION)
    if queue is None:
        queue = app.extensions[EXTENSION] = _build(app)
    return queue


def send(job_id: int) -> None:
    """Put the job on the queue for the worker."""
    get_queue().ndcg_run_job(job_id)


class _QuietTicks(logging.Filter):
    """Drops huey's info lines about the schedule tick: three a minute, for ever, buried the
    lines about jobs on the worker's console. Its warnings and errors still go through."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or TICK_NAME not in record.getMessage()


# huey writes "Executing"/"executed in" on `huey` and "Enqueueing periodic task" on its
# scheduler's logger; a logger's filter sees only the records made on that very logger.
_TICK_LOGGERS = ("huey", "huey.consumer.Scheduler")


def worker(app: Flask, threads: int = 2) -> Any:
    """A huey consumer for the app's queue: `run()` it in the foreground. Its scheduler runs
    the schedule tick every minute unless NDCG_SCHEDULER is off (and does not log it)."""
    for name in _TICK_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _QuietTicks) for f in logger.filters):
            logger.addFilter(_QuietTicks())
    periodic = bool(app.config.get("NDCG_SCHEDULER", True))
    return get_queue(app).create_consumer(workers=threads, worker_type="thread", periodic=periodic)


# A cancel asked through the queue's own storage (Redis or its SQLite file), beside the job's
# row: on SQLite an import holds the database's one write lock until it commits, so the row's
# cancel flag cannot be set while it runs, yet web and worker share the queue.
_CANCEL_KEY = "ndcg.cancel.{}"


def ask_to_cancel(job_id: int, asked: dict[str, Any]) -> None:
    """Ask the worker to stop the job at its next progress report (records.cancel); `asked`
    says who asked and when, for the audit event written at the job's end."""
    get_queue().put(_CANCEL_KEY.format(job_id), asked)


def cancel_asked(job_id: int) -> bool:
    """Whether a cancel of the job was asked through the queue (left in place)."""
    return bool(get_queue().get(_CANCEL_KEY.format(job_id), peek=True))


def cancel_request(job_id: int) -> dict[str, Any] | None:
    """Who asked, through the queue, to cancel the job and when; None when nobody did (a
    request kept by an older version, a bare True, says nobody in particular)."""
    try:
        asked = get_queue().get(_CANCEL_KEY.format(job_id), peek=True)
    except Exception:  # Redis down, say: the job's end must still be recorded
        _log.warning(
            "job %s: could not read its cancel request from the queue", job_id, exc_info=True
        )
        return None
    if not asked:
        return None
    return asked if isinstance(asked, dict) else {}


# A job's latest progress and heartbeat, kept beside its row for the same reason: while its own
# import holds SQLite's write lock the row cannot take them (reporting.JobProgress), and the
# job page, the API and recovery would see a job frozen at its first phase, then dead.
_PROGRESS_KEY = "ndcg.progress.{}"


def keep_progress(job_id: int, report: dict[str, Any]) -> None:
    """Keep the job's latest report (phase, done, total, rows, heartbeat_at...) in the queue."""
    try:
        get_queue().put(_PROGRESS_KEY.format(job_id), report)
    except Exception:  # Redis down, say: a progress figure must not fail the job
        _log.warning("job %s: could not keep its progress in the queue", job_id, exc_info=True)


def kept_progress(job_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """The reports kept in the queue for these jobs, by id (jobs without one left out; none
    when the queue's storage cannot be read: the rows' own figures are shown then)."""
    keys = {_PROGRESS_KEY.format(job_id): job_id for job_id in job_ids}
    if not keys:
        return {}
    huey = get_queue()
    try:
        found = huey.storage.peek_many(list(keys))  # one round trip for a page of jobs
    except Exception:  # an unreadable queue must not take the jobs page down
        _log.warning("could not read the jobs' progress from the queue", exc_info=True)
        return {}
    return {
        keys[key.decode() if isinstance(key, bytes) else key]: huey.serializer.deserialize(value)
        for key, value in found.items()
    }


def forget(job_id: int) -> None:
    """Drop the job's cancel request and kept progress once the job has ended."""
    huey = get_queue()
    huey.delete(_CANCEL_KEY.format(job_id))
    huey.delete(_PROGRESS_KEY.format(job_id))
