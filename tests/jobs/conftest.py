"""Fixtures for the job tests: a queue of its own per test, and a real huey consumer thread."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from ndcg_labeler.services import jobs as job_service


@pytest.fixture
def jobs_app(app: Flask, tmp_path: Path) -> Flask:
    """The app with every upload above 1 KiB going to the job worker, on its own SQLite queue."""
    app.config["NDCG_JOB_THRESHOLD_MB"] = 1 / 1024
    app.config["NDCG_JOBS_SQLITE"] = str(tmp_path / "jobs-queue.sqlite3")
    app.config["NDCG_JOBS_QUEUE"] = f"test-{uuid.uuid4().hex}"
    return app


@pytest.fixture
def consumer() -> Callable[[Flask], Any]:
    """Start a real huey consumer (2 worker threads) for an app's queue: `with consumer(app):`."""

    @contextmanager
    def running(app: Flask) -> Iterator[Any]:
        worker = job_service.worker(app, threads=2)
        worker._set_signal_handlers = lambda: None  # pytest keeps its own SIGINT handler
        worker.start()
        try:
            yield worker
        finally:
            worker.stop(graceful=True)

    return running
