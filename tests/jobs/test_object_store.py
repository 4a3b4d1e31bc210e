"""Job inputs in an S3-compatible object store (issue 30, item 6): a web process and a worker
with separate instance folders share the database, the queue and the store, never a disk.

The store is moto's S3 server on 127.0.0.1, started for these tests.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from flask import Flask
from moto.server import ThreadedMotoServer

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Job, JobFile, Query
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services.jobs import spool
from tests.factory import make_app, make_test_set
from tests.jobs.test_db_spool import assert_reads_back
from tests.jobs.test_import_jobs import (
    corpus_csv,
    count,
    job_id_of,
    post_import,
    queries_csv,
    wait_for,
)

BUCKET = "ndcg-jobs"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server on a free port of 127.0.0.1."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """An empty bucket in the fake store, with the credentials boto3 reads from the
    environment; yields a client to look inside it."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "test-key",
        "AWS_SECRET_ACCESS_KEY": "test-secret",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    client = boto3.client("s3", endpoint_url=s3_endpoint)
    client.create_bucket(Bucket=BUCKET)
    yield client
    listed = client.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    for item in listed:
        client.delete_object(Bucket=BUCKET, Key=item["Key"])
    client.delete_bucket(Bucket=BUCKET)


def _use_store(app: Flask, endpoint: str, prefix: str = "spool") -> None:
    app.config["NDCG_JOB_STORE_URL"] = f"s3://{BUCKET}/{prefix}"
    app.config["NDCG_S3_ENDPOINT_URL"] = endpoint


def _keys(client: object) -> list[str]:
    return [item["Key"] for item in client.list_objects_v2(Bucket=BUCKET).get("Contents", [])]  # type: ignore[attr-defined]


def test_round_trip_is_byte_exact_and_nothing_goes_to_the_database(
    app: Flask, s3: object, s3_endpoint: str
) -> None:
    _use_store(app, s3_endpoint)
    payload = os.urandom(9 * 1024 * 1024 + 7)  # past boto3's 8 MiB multipart threshold
    with app.app_context():
        path = spool.spool(
            {"run": ("C:\\runs\\run.trec", io.BytesIO(payload)), "empty": ("e", io.BytesIO())}
        )
        db.session.commit()
        token = path.removeprefix("s3:")
        assert path.startswith("s3:") and db.session.query(JobFile).count() == 0
        assert sorted(_keys(s3)) == [f"spool/{token}/empty/e", f"spool/{token}/run/run.trec"]
        assert_reads_back(path, payload)
    assert _keys(s3) == []


def test_sweep_deletes_only_unclaimed_spools_and_never_other_objects(
    app: Flask, s3: object, s3_endpoint: str
) -> None:
    _use_store(app, s3_endpoint)
    s3.put_object(Bucket=BUCKET, Key="spool/reports/2026.csv", Body=b"not ours")  # type: ignore[attr-defined]
    with app.app_context():
        orphan = spool.spool({"file": ("orphan", io.BytesIO(b"x"))})
        waiting = spool.spool({"file": ("waiting", io.BytesIO(b"y"))})
        # Within the grace period nothing goes, claimed or not.
        assert spool.sweep({waiting}, 0.0, grace=3600) == []
        # Past it (a negative grace makes every object old), only the unclaimed spool goes.
        assert spool.sweep({waiting}, 0.0, grace=-60) == [orphan]
        assert not spool.is_spooled(orphan) and spool.is_spooled(waiting)
    assert "spool/reports/2026.csv" in _keys(s3)


def test_a_worker_on_another_machine_imports_from_the_store(
    jobs_app: Flask, as_admin, consumer, s3: object, s3_endpoint: str, tmp_path: Path
) -> None:
    _use_store(jobs_app, s3_endpoint, prefix="")
    worker_app = make_app(
        tmp_path / "worker-machine",
        jobs_app.config["SQLALCHEMY_DATABASE_URI"],
        NDCG_JOBS_SQLITE=jobs_app.config["NDCG_JOBS_SQLITE"],
        NDCG_JOBS_QUEUE=jobs_app.config["NDCG_JOBS_QUEUE"],
        NDCG_JOB_THRESHOLD_MB=jobs_app.config["NDCG_JOB_THRESHOLD_MB"],
        NDCG_JOB_STORE_URL=jobs_app.config["NDCG_JOB_STORE_URL"],
        NDCG_S3_ENDPOINT_URL=s3_endpoint,
    )
    ts = make_test_set(jobs_app)
    response, _ = post_import(as_admin, ts, queries=queries_csv(3000), corpus=corpus_csv(3000))
    job_id = job_id_of(response)
    with jobs_app.app_context():
        upload_path = db.session.get_one(Job, job_id).upload_path
        assert db.session.query(JobFile).count() == 0
    token = upload_path.removeprefix("s3:")
    assert upload_path.startswith("s3:") and len(_keys(s3)) == 2
    assert all(key.startswith(token + "/") for key in _keys(s3))
    assert not (Path(jobs_app.instance_path) / "uploads").exists()
    with consumer(worker_app):
        job = wait_for(jobs_app, job_id, ("done", "failed"))
    assert job.state == "done", job.error
    assert count(jobs_app, Query, ts) == 3000 and count(jobs_app, Chunk, ts) == 3000
    assert _keys(s3) == []  # deleted when the job ended
    assert not (Path(worker_app.instance_path) / "uploads").exists()
    with worker_app.app_context():
        db.engine.dispose()


def test_store_failures_and_bad_settings_are_refused_clearly(
    app: Flask, s3: object, s3_endpoint: str
) -> None:
    app.config["NDCG_JOB_STORE_URL"] = "s3://no-such-bucket/x"
    app.config["NDCG_S3_ENDPOINT_URL"] = s3_endpoint
    with app.app_context():
        with pytest.raises(ServiceError, match="could not store an upload in the object store"):
            spool.spool({"run": ("run.trec", io.BytesIO(b"q1 Q0 d1 1 1.0 r\n"))})
        app.config["NDCG_JOB_STORE_URL"] = "https://bucket/x"
        with pytest.raises(ServiceError, match="must look like s3://bucket"):
            spool.spool({"run": ("run.trec", io.BytesIO(b"x"))})
        app.config["NDCG_JOB_STORE_URL"] = ""
        with pytest.raises(ServiceError, match="no longer names one"):
            spool.is_spooled("s3:" + "0" * 24)
