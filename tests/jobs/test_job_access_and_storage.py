"""Who may see a job; run uploads as jobs; the Redis storage; a killed worker process."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask
from werkzeug.datastructures import FileStorage
from werkzeug.test import encode_multipart

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, Query, Run, TestSet, User
from ndcg_labeler.services import jobs as job_service
from ndcg_labeler.services.jobs.queue import get_queue
from ndcg_labeler.services.jobs.recovery import INTERRUPTED
from tests.factory import AuthActions, build_test_set, make_test_set, make_user
from tests.jobs.test_import_jobs import (
    count,
    job_id_of,
    post_import,
    queries_csv,
    spooled,
    wait_for,
)
from tests.paths import REPO


def _own_job(app: Flask, username: str) -> int:
    """A queued import job started by `username` (through the service, as the view does)."""
    user_id = make_user(app, username)
    ts = make_test_set(app, f"set of {username}")
    with app.app_context():
        job = job_service.enqueue_import(
            db.session.get(TestSet, ts),
            {"queries": ("q.csv", io.BytesIO(queries_csv(5)))},
            None,
            db.session.get(User, user_id),
        )
        return job.id


def test_only_the_starter_and_admins_see_a_job(jobs_app, client) -> None:
    job_id = _own_job(jobs_app, "mine")
    make_user(jobs_app, "other")
    make_user(jobs_app, "boss", "admin")
    auth = AuthActions(client)
    # Anonymous: sent to the login page.
    response = client.get(f"/jobs/{job_id}")
    assert response.status_code == 302 and "/login" in response.headers["Location"]
    auth.login("other")
    assert client.get(f"/jobs/{job_id}").status_code == 404
    assert client.get(f"/jobs/{job_id}/status").status_code == 404
    assert client.post(f"/jobs/{job_id}/cancel").status_code == 404
    assert f'href="/jobs/{job_id}"' not in client.get("/jobs/").get_data(as_text=True)
    with jobs_app.app_context():
        assert db.session.get(Job, job_id).state == "queued"  # the foreign cancel did nothing
    auth.logout()
    auth.login("mine")
    assert client.get(f"/jobs/{job_id}").status_code == 200
    assert f'href="/jobs/{job_id}"' in client.get("/jobs/").get_data(as_text=True)
    auth.logout()
    auth.login("boss")
    assert f'href="/jobs/{job_id}"' in client.get("/jobs/").get_data(as_text=True)
    assert client.post(f"/jobs/{job_id}/cancel").status_code == 302
    with jobs_app.app_context():
        assert db.session.get(Job, job_id).state == "cancelled"


def _trec_run(qids: list[str], per_query: int) -> bytes:
    lines = [
        f"{qid} Q0 d{i} {i} {1000 - i}.5 bm25\n" for qid in qids for i in range(1, per_query + 1)
    ]
    return "".join(lines).encode()


def test_large_run_upload_becomes_a_job(jobs_app, as_admin, consumer) -> None:
    qids = [f"q{i}" for i in range(1, 41)]
    with jobs_app.app_context():
        ts = build_test_set("runs", {qid: f"query {qid}" for qid in qids}).id
    data = {
        "file": FileStorage(io.BytesIO(_trec_run(qids, 500)), "big.trec"),
        "name": "big",
        "depth": "100",
    }
    boundary, body = encode_multipart(data)
    began = time.perf_counter()
    response = as_admin.post(
        f"/test-sets/{ts}/runs/upload",
        data=body,
        content_type=f"multipart/form-data; boundary={boundary}",
    )
    assert response.status_code == 302 and time.perf_counter() - began < 2
    job_id = job_id_of(response)
    with consumer(jobs_app):
        job = wait_for(jobs_app, job_id, ("done", "failed"))
    assert job.state == "done", job.error
    with jobs_app.app_context():
        run = db.session.scalar(sa.select(Run).where(Run.test_set_id == ts, Run.name == "big"))
        assert run is not None and run.num_entries == 100 * len(qids)
    page = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert f"/test-sets/{ts}/runs/{run.id}" in page
    assert f"Ranked entries stored: {100 * len(qids)}" in page


def _redis_up() -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url("redis://127.0.0.1:6379/0").ping())
    except Exception:
        return False


@pytest.mark.skipif(not _redis_up(), reason="no Redis on 127.0.0.1:6379")
def test_redis_storage_round_trip(jobs_app, as_admin, consumer) -> None:
    jobs_app.config["NDCG_REDIS_URL"] = "redis://127.0.0.1:6379/0"
    jobs_app.config["NDCG_JOBS_QUEUE"] = f"ndcg-test-{uuid.uuid4().hex}"
    queue = get_queue(jobs_app)
    assert type(queue).__name__ == "RedisHuey"
    try:
        ts = make_test_set(jobs_app)
        job_id = job_id_of(post_import(as_admin, ts, queries=queries_csv(3000))[0])
        assert queue.pending_count() == 1  # the task waits in Redis
        with consumer(jobs_app):
            job = wait_for(jobs_app, job_id, ("done", "failed"))
        assert job.state == "done", job.error
        assert count(jobs_app, Query, ts) == 3000 and queue.pending_count() == 0
    finally:
        queue.storage.flush_all()


def test_killed_worker_process_leaves_nothing(jobs_app, as_admin, tmp_path: Path) -> None:
    """A real `flask jobs worker` is killed mid-import: recovery fails the job, nothing stored."""
    url = jobs_app.config["SQLALCHEMY_DATABASE_URI"]
    ts = make_test_set(jobs_app)
    big = b"".join(f"q{i},text of query {i} {'x' * 40}\n".encode() for i in range(400_000))
    job_id = job_id_of(post_import(as_admin, ts, queries=b"qid,text\n" + big)[0])
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        DATABASE_URL=url,
        NDCG_INSTANCE_PATH=jobs_app.instance_path,
        NDCG_SECRET_KEY="test",
        NDCG_JOBS_QUEUE=jobs_app.config["NDCG_JOBS_QUEUE"],
    )
    env.pop("NDCG_REDIS_URL", None)
    env["NDCG_JOBS_SQLITE"] = jobs_app.config["NDCG_JOBS_SQLITE"]
    worker = subprocess.Popen(
        [sys.executable, "-m", "flask", "--app", "app", "jobs", "worker"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        job = wait_for(jobs_app, job_id, ("running", "done", "failed"), timeout=30)
        assert job.state == "running"
        time.sleep(0.3)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    with jobs_app.app_context():
        assert job_service.recover() == [job_id]
    job = wait_for(jobs_app, job_id, ("failed",))
    assert job.error == INTERRUPTED
    assert count(jobs_app, Query, ts) == 0 and not spooled(jobs_app, job.upload_path)
