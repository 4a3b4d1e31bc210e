"""The worker's console: the minute's schedule tick is not logged three times a minute."""

from __future__ import annotations

import logging

import pytest
from flask import Flask

from ndcg_labeler.services import jobs as job_service

TICK = "ndcg_labeler.services.jobs.queue.ndcg.schedule_tick: 4caa861d"
JOB = "ndcg_labeler.services.jobs.queue.ndcg.run_job: 9b1f00aa"


def test_the_routine_tick_is_quiet_and_jobs_and_trouble_are_not(
    jobs_app: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    job_service.worker(jobs_app, threads=1)
    caplog.set_level(logging.INFO)
    # The three lines huey writes for every periodic run, word for word (huey 3.5).
    logging.getLogger("huey.consumer.Scheduler").info("Enqueueing periodic task %s.", TICK)
    logging.getLogger("huey").info("Executing %s", TICK)
    logging.getLogger("huey").info("%s executed in %0.3fs", TICK, 0.003)
    assert caplog.records == []
    logging.getLogger("huey").info("Executing %s", JOB)
    logging.getLogger("huey").warning("Unhandled exception in task %s.", TICK)
    assert [r.getMessage() for r in caplog.records] == [
        f"Executing {JOB}",
        f"Unhandled exception in task {TICK}.",
    ]
    # A second worker in the same process does not stack a second filter (nor need one).
    job_service.worker(jobs_app, threads=1)
    assert len(logging.getLogger("huey").filters) == 1
