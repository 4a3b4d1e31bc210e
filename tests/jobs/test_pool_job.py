"""Pooling many pairs from the browser is a job: fast POST, progress page, result; a cancel
or a failure adds nothing (one transaction)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Pair, Query, Run, TestSet
from ndcg_labeler.services import pooling, tallies
from ndcg_labeler.services._progress import Cancelled
from tests.factory import build_dashboard
from tests.jobs.test_import_jobs import job_id_of, wait_for


def _pooled(app: Flask) -> list[tuple[str, str]]:
    with app.app_context():
        rows = db.session.execute(
            sa.select(Query.qid, Chunk.docid)
            .select_from(Pair)
            .join(Query, Query.id == Pair.query_id)
            .join(Chunk, Chunk.id == Pair.chunk_id)
            .where(Pair.source.like("pool:%"))
            .order_by(Query.qid, Chunk.docid)
        )
        return [(q, d) for q, d in rows]


def test_large_pooling_runs_as_a_job_with_its_result(jobs_app, as_admin, consumer) -> None:
    demo = build_dashboard(jobs_app)
    jobs_app.config["NDCG_POOL_JOB_PAIRS"] = 5  # run A offers 5 queries × 3 = 15 pairs
    preview = as_admin.get(demo.url(f"/pool/?depth=3&run={demo.run_a}")).get_data(as_text=True)
    assert 'id="pool-as-job"' in preview
    response = as_admin.post(demo.url("/pool/"), data={"depth": 3, "run": demo.run_a})
    assert response.status_code == 302
    job_id = job_id_of(response)
    assert _pooled(jobs_app) == []  # the request only queued the job
    with consumer(jobs_app):
        job = wait_for(jobs_app, job_id, ("done", "failed"))
    assert job.state == "done", job.error
    assert job.result["added"] == 2 and job.result["source"] == "pool:A@3"
    # The same pairs as pooling in the request (tests/dashboard/test_pooling.py).
    assert _pooled(jobs_app) == [("q3", "f2"), ("q4", "a")]
    page = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "Added 2 pairs to the labeling queue" in page and "pool:A@3" in page
    assert "Pooling" in as_admin.get("/jobs/").get_data(as_text=True)


def test_small_pooling_stays_in_the_request(jobs_app, as_admin) -> None:
    demo = build_dashboard(jobs_app)
    jobs_app.config["NDCG_POOL_JOB_PAIRS"] = 15  # exactly what run A offers at depth 3
    preview = as_admin.get(demo.url(f"/pool/?depth=3&run={demo.run_a}")).get_data(as_text=True)
    assert 'id="pool-as-job"' not in preview
    response = as_admin.post(demo.url("/pool/"), data={"depth": 3, "run": demo.run_a})
    assert "/jobs/" not in response.headers["Location"]
    assert _pooled(jobs_app) == [("q3", "f2"), ("q4", "a")]


def test_a_cancelled_pooling_adds_nothing(app: Flask) -> None:
    demo = build_dashboard(app)
    with app.app_context():
        test_set = db.session.get_one(TestSet, demo.test_set_id)
        before = tallies.pool_counts(test_set.id)

        def cancel_once_written(phase: str, done: int, total: int, rows: int) -> None:
            if phase == "pool" and total and done == total:  # every pair inserted, not committed
                raise Cancelled

        with pytest.raises(Cancelled):
            run_a = db.session.get_one(Run, demo.run_a)
            pooling.add_pool(test_set, [run_a], 3, progress=cancel_once_written)
        db.session.rollback()
        assert tallies.pool_counts(test_set.id) == before
    assert _pooled(app) == []
