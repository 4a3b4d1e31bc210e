"""Job inputs spooled in the database (issue 30, item 6): a web process and a worker with
separate instance folders share only the database and the queue."""

from __future__ import annotations

import io
import os
import time
from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Job, JobFile, Query, utcnow
from ndcg_labeler.services.jobs import spool
from tests.factory import make_app, make_test_set
from tests.jobs.test_import_jobs import (
    corpus_csv,
    count,
    job_id_of,
    post_import,
    queries_csv,
    spooled,
    wait_for,
)


def _parts(app: Flask) -> int:
    with app.app_context():
        return int(db.session.scalar(sa.select(sa.func.count()).select_from(JobFile)) or 0)


def test_a_worker_on_another_machine_imports_what_the_web_process_spooled(
    jobs_app, as_admin, consumer, tmp_path: Path
) -> None:
    web_instance = Path(jobs_app.instance_path)
    # The worker: its own instance folder, the same database and queue (as Redis would be).
    worker_app = make_app(
        tmp_path / "worker-machine",
        jobs_app.config["SQLALCHEMY_DATABASE_URI"],
        NDCG_JOBS_SQLITE=jobs_app.config["NDCG_JOBS_SQLITE"],
        NDCG_JOBS_QUEUE=jobs_app.config["NDCG_JOBS_QUEUE"],
        NDCG_JOB_THRESHOLD_MB=jobs_app.config["NDCG_JOB_THRESHOLD_MB"],
    )
    assert Path(worker_app.instance_path) != web_instance
    ts = make_test_set(jobs_app)
    response, _ = post_import(as_admin, ts, queries=queries_csv(3000), corpus=corpus_csv(3000))
    job_id = job_id_of(response)
    with jobs_app.app_context():
        upload_path = db.session.get(Job, job_id).upload_path
    # Nothing on the web process's disk; the files are in the database.
    assert upload_path.startswith("db:") and spooled(jobs_app, upload_path)
    assert not (web_instance / "uploads").exists() and _parts(jobs_app) >= 2
    with consumer(worker_app):
        job = wait_for(jobs_app, job_id, ("done", "failed"))
    assert job.state == "done", job.error
    assert count(jobs_app, Query, ts) == 3000 and count(jobs_app, Chunk, ts) == 3000
    # Deleted after the job, and neither machine kept a copy.
    assert not spooled(jobs_app, upload_path) and _parts(jobs_app) == 0
    assert not (web_instance / "uploads").exists()
    assert not (Path(worker_app.instance_path) / "uploads").exists()
    with worker_app.app_context():
        db.engine.dispose()


def assert_reads_back(path: str, payload: bytes) -> None:
    """The spool `path` of {"run": ".../run.trec" holding payload, "empty": "e" (empty)}
    reads back byte for byte into a temporary copy, lacks other fields, and goes on remove."""
    with spool.spooled(path, "run") as found:
        assert found is not None and found[1] == "run.trec"
        local = found[0]
        assert Path(local).read_bytes() == payload
    assert not Path(local).exists()  # the worker's copy is temporary
    with spool.spooled(path, "empty") as found:
        assert found is not None and Path(found[0]).read_bytes() == b""
    with spool.spooled(path, "qrels") as found:
        assert found is None
    assert spool.is_spooled(path)
    spool.remove(path)
    assert not spool.is_spooled(path)


def test_spool_round_trip_is_byte_exact_and_streams_in_parts(app: Flask) -> None:
    payload = os.urandom(2 * 1024 * 1024 + 123)  # three parts of at most 1 MiB
    with app.app_context():
        path = spool.spool(
            {"run": ("dir/run.trec", io.BytesIO(payload)), "empty": ("e", io.BytesIO())}
        )
        db.session.commit()
        sizes = db.session.scalars(
            sa.select(sa.func.length(JobFile.data))
            .where(JobFile.field == "run")
            .order_by(JobFile.seq)
        ).all()
        assert sizes == [1 << 20, 1 << 20, 123]
        assert_reads_back(path, payload)


def test_sweep_deletes_only_old_spools_no_job_will_read(app: Flask) -> None:
    with app.app_context():
        paths = {
            name: spool.spool({"file": (name, io.BytesIO(b"x"))})
            for name in ("orphan", "waiting", "fresh")
        }
        db.session.commit()
        old = utcnow() - timedelta(minutes=30)
        stale = [paths["orphan"][3:], paths["waiting"][3:]]
        db.session.execute(
            sa.update(JobFile).where(JobFile.token.in_(stale)).values(created_at=old)
        )
        db.session.commit()
        removed = spool.sweep({paths["waiting"]}, time.time())
        assert removed == [paths["orphan"]]
        assert not spool.is_spooled(paths["orphan"])
        assert spool.is_spooled(paths["waiting"]) and spool.is_spooled(paths["fresh"])
