"""A BM25 run of a large corpus from the browser is a job: queued at once, the run once done."""

from __future__ import annotations

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, Run
from ndcg_labeler.services import runs as run_service
from tests.jobs.test_import_jobs import job_id_of, wait_for
from tests.runs.test_bm25 import build_shop


def test_a_large_corpus_is_indexed_by_the_job_worker(jobs_app, as_admin, consumer) -> None:
    test_set_id = build_shop(jobs_app)
    jobs_app.config["NDCG_BM25_JOB_CHUNKS"] = 2  # the corpus has 3 chunks
    form = {"name": "BM25", "depth": "100", "k1": "0.9", "b": "0.4"}
    response = as_admin.post(f"/test-sets/{test_set_id}/runs/bm25", data=form)
    job_id = job_id_of(response)
    with jobs_app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Run)) == 0  # queued only
    with consumer(jobs_app):
        job = wait_for(jobs_app, job_id, ("done", "failed"))
    assert job.state == "done", job.error
    with jobs_app.app_context():
        run = db.session.get_one(Run, job.result["run_id"])
        assert [doc for doc, _ in run_service.ranked_lists(run)["q1"]] == ["d2", "d1"]
        assert db.session.get_one(Job, job_id).kind == "bm25"
    page = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "Run BM25 created" in page and "Pool its top chunks for labeling" in page
