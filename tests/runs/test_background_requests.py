"""`Prefer: respond-async` (RFC 7240): an import or a run upload of any size done by the job
worker, 202 with the job at once; the Python client's `background=True` waits for it and
answers in the shape of the inline request. A live server and a real worker on 127.0.0.1."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.client import Client, ClientError
from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Job, Query, Run
from ndcg_labeler.services import jobs
from tests.runs.test_client import (
    RUN,
    Server,
    _pytrec,
    server,  # noqa: F401 - the live server fixture
)

ASYNC = {"Prefer": "respond-async"}


@pytest.fixture
def worker(app: Flask, tmp_path: Path) -> Iterator[None]:
    """A job queue of the test's own with a worker running it."""
    app.config["NDCG_JOBS_SQLITE"] = str(tmp_path / "jobs-queue.sqlite3")
    app.config["NDCG_JOBS_QUEUE"] = f"test-{uuid.uuid4().hex}"
    running = jobs.worker(app, threads=1)
    running._set_signal_handlers = lambda: None  # pytest keeps its own SIGINT handler
    running.start()
    yield
    running.stop(graceful=True)


def _count(app: Flask, model: type, *where: sa.ColumnElement[bool]) -> int:
    with app.app_context():
        stmt = sa.select(sa.func.count()).select_from(model).where(*where)
        return int(db.session.scalar(stmt) or 0)


def test_the_api_queues_an_import_when_asked_and_only_then(
    app: Flask,
    server: Server,  # noqa: F811
    worker: None,
    tmp_path: Path,
) -> None:
    import httpx

    headers = {"Authorization": f"Bearer {server.admin_token}"}
    url = f"{server.url}/api/testsets/desk/import"
    queries = {"queries": ("more.tsv", b"q4\tmonitor flickers\n")}
    inline = httpx.post(url, files=queries, headers=headers)
    assert inline.status_code == 201 and "Preference-Applied" not in inline.headers
    assert _count(app, Job) == 0
    lines = b'{"_id": "d1", "text": "a"}\n{"_id": "d99", "text": "b"}\n'
    corpus = {"corpus": ("corpus.jsonl", lines)}
    queued = httpx.post(
        url,
        files=corpus,
        data={"only_referenced": "true"},
        headers={**headers, "Prefer": "wait=5, respond-async"},
    )
    assert queued.status_code == 202, queued.text
    assert queued.headers["Preference-Applied"] == "respond-async"
    job = queued.json()["job"]
    assert job["kind"] == "import" and job["url"].endswith(f"/api/jobs/{job['id']}")
    with Client(server.url, server.admin_token) as api:
        done = api.wait_for_job(job["id"], poll=0.05, timeout=60)
    assert done["result"]["lines"][0].startswith("chunks: 0 created, 1 updated")
    # only_referenced went with the job: d99 is named by nothing the set has.
    assert _count(app, Chunk, Chunk.docid == "d99") == 0
    # Refusals come at once, as inline: two peers' files, or a peer beside our own files.
    both = httpx.post(
        url,
        files={**queries, "quepid": ("case.csv", b"query,docid,rating\n")},
        headers={**headers, **ASYNC},
    )
    assert both.status_code == 400 and "on its own" in both.json()["detail"]


def test_the_client_waits_for_background_imports_and_uploads(
    app: Flask,
    server: Server,  # noqa: F811
    worker: None,
    tmp_path: Path,
) -> None:
    queries = tmp_path / "more.tsv"
    queries.write_text("q4\tmonitor flickers\n")
    quepid = tmp_path / "case.csv"
    quepid.write_text("query,docid,rating\nscreen is black,d7,3\n")
    run = tmp_path / "splade.trec"
    ranked = (f"{q} Q0 {d} 1 {s} s\n" for q, docs in RUN.items() for d, s in docs.items())
    run.write_text("".join(ranked))
    with Client(server.url, server.admin_token) as api:
        imported = api.import_files("desk", queries=queries, background=True, poll=0.05)
        again = api.import_files("desk", queries=queries, background=True, poll=0.05)
        peer = api.import_peer("desk", quepid, "quepid", background=True, poll=0.05)
        stored = api.upload_run("desk", run, background=True, series="nightly", poll=0.05)
        later = api.upload_run("desk", run, name="later", background=True, wait=False)
        with pytest.raises(ClientError, match="no background"):
            api.upload_run("desk", run, name="q", quepid_snapshot=True, background=True)
        with pytest.raises(ClientError, match="already has a run named 'splade'"):
            api.upload_run("desk", run, background=True)
        scores = api.scores("desk", "splade", measures=["nDCG@3"], as_frame=False)
    assert imported["report"][0] == "queries: 1 created, 0 updated, 0 unchanged"
    assert imported["job"]["state"] == "done" and imported["nothing_new"] is False
    assert again["report"] == ["queries: 0 created, 0 updated, 1 unchanged"]
    assert peer["files"] == ["case.csv"] and peer["job"]["kind"] == "import"
    assert stored["name"] == "splade" and stored["report"]["entries_stored"] == 6
    assert stored["job"]["kind"] == "run_upload"
    assert later["job"]["state"] in ("queued", "running", "done")
    assert _count(app, Query, Query.qid == "q4") == 1
    assert _count(app, Run, Run.series == "nightly") == 1
    expected = _pytrec(RUN, 3)
    assert {q: scores[q]["nDCG@3"] for q in expected} == pytest.approx(expected, abs=1e-12)
