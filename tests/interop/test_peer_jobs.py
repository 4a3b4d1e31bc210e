"""A peer file large enough for the job worker ends as the same small one does."""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judgment, Query, TestSet, User
from ndcg_labeler.services import imports
from ndcg_labeler.services.accounts import create_token
from tests.factory import make_test_set
from tests.interop.test_ir_datasets import _run_queue
from tests.jobs.test_import_jobs import job_id_of

NOTHING_NEW = "nothing new: every query is in the test set already, and no ratings"

# 60 texts, each file above the 1 KiB threshold below.
TEXTS = [f"a rather long query text number {i}" for i in range(60)]
LARGE = {
    "srw-queries": (
        json.dumps({"querySetQueries": [{"queryText": t} for t in TEXTS]}),
        "qs.json",
    ),
    # Queries alone: Quepid lists a query without ratings as its text only.
    "quepid": ("query,docid,rating\n" + "".join(f"{t},,\n" for t in TEXTS), "case.csv"),
}


@pytest.mark.parametrize("fmt", sorted(LARGE))
def test_a_large_peer_file_with_nothing_new_is_a_job_that_says_so(
    app: Flask,
    as_admin: FlaskClient,
    runner: FlaskCliRunner,
    admin_id: int,
    tmp_path: Path,
    fmt: str,
) -> None:
    body, filename = LARGE[fmt]
    assert len(body.encode()) > 1024
    set_id = make_test_set(app, "Again")
    # Small enough to import in the request: every text becomes a query.
    first = as_admin.post(
        f"/test-sets/{set_id}/import/peer",
        data={"peer-fmt": fmt, "peer-file": (io.BytesIO(body.encode()), filename)},
    )
    assert first.status_code == 200 and "queries: 60 created" in first.get_data(as_text=True)
    app.config["NDCG_JOB_THRESHOLD_MB"] = 1 / 1024  # above 1 KiB: a job
    app.config["NDCG_JOBS_SQLITE"] = str(tmp_path / "jobs-queue.sqlite3")
    app.config["NDCG_JOBS_QUEUE"] = f"test-{uuid.uuid4().hex}"
    again = as_admin.post(
        f"/test-sets/{set_id}/import/peer",
        data={"peer-fmt": fmt, "peer-file": (io.BytesIO(body.encode()), filename)},
    )
    job_id = job_id_of(again)
    job = _run_queue(app, job_id)
    assert job.state == "done", job.error
    assert job.result["lines"] == [] and job.result["files"] == [filename]
    assert job.result["nothing_new"] is True and job.result["message"] == NOTHING_NEW
    page = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "<h2>Nothing new</h2>" in page and f"<p>N{NOTHING_NEW[1:]}.</p>" in page
    assert "<h2>Imported</h2>" not in page
    assert f"File: {filename}." in page  # the file sent, not the files it was translated into
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
    api = as_admin.get(f"/api/jobs/{job_id}", headers={"Authorization": f"Bearer {token}"})
    assert api.json["state"] == "done"
    assert api.json["result"]["nothing_new"] is True
    assert api.json["result"]["message"] == NOTHING_NEW
    listed = runner.invoke(args=["jobs", "list"])
    assert listed.exit_code == 0
    assert f"{job_id}\timport\tdone\t" in listed.stdout and NOTHING_NEW in listed.stdout


def test_a_peer_job_matches_the_texts_of_queries_added_after_it_was_sent(
    app: Flask, as_admin: FlaskClient, tmp_path: Path
) -> None:
    """The job matches texts to queries when it runs, as an import in the request does: a
    query added with one of the file's texts meanwhile is that text's query, not doubled."""
    body = "query,docid,rating\n" + "".join(f"{t},d{i},1\n" for i, t in enumerate(TEXTS))
    set_id = make_test_set(app, "Later")
    app.config["NDCG_JOB_THRESHOLD_MB"] = 1 / 1024  # above 1 KiB: a job
    app.config["NDCG_JOBS_SQLITE"] = str(tmp_path / "jobs-queue.sqlite3")
    app.config["NDCG_JOBS_QUEUE"] = f"test-{uuid.uuid4().hex}"
    sent = as_admin.post(
        f"/test-sets/{set_id}/import/peer",
        data={"peer-fmt": "quepid", "peer-file": (io.BytesIO(body.encode()), "case.csv")},
    )
    job_id = job_id_of(sent)
    with app.app_context():  # meanwhile someone imports a query with the first text
        test_set = db.session.get_one(TestSet, set_id)
        queries = imports.ImportFile(io.BytesIO(f"mine-1\t{TEXTS[0]}\n".encode()), "q.tsv")
        imports.import_files(test_set, queries=queries)
        db.session.commit()
    job = _run_queue(app, job_id)
    assert job.state == "done", job.error
    with app.app_context():
        rows = db.session.execute(
            sa.select(Query.qid, Query.text).where(Query.test_set_id == set_id)
        ).all()
        texts = [text for _, text in rows]
        assert len(rows) == 60 and len(set(texts)) == 60  # no text twice
        assert {t: q for q, t in rows}[TEXTS[0]] == "mine-1"
        graded = sa.select(Judgment.chunk_id).join(Query, Query.id == Judgment.query_id)
        found = db.session.scalars(graded.where(Query.qid == "mine-1")).all()
        assert len(found) == 1  # d0's rating went to the query that has the text
