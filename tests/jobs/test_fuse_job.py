"""Fusing large runs from the browser is a job: fast POST, progress page, the fused run; a
worker killed after storing it ends the job done with that run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, Run, TestSet
from ndcg_labeler.services import jobs as job_service
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.jobs.recovery import STORED_THEN_STOPPED
from tests.factory import build_dashboard
from tests.jobs.test_import_jobs import job_id_of, wait_for


def _fuse_url(demo) -> str:
    return demo.url("/compare/fuse")


def test_large_fusion_runs_as_a_job_and_equals_the_inline_one(jobs_app, as_admin, consumer) -> None:
    demo = build_dashboard(jobs_app)
    jobs_app.config["NDCG_FUSE_JOB_ENTRIES"] = 5  # runs A and B hold 19 entries together
    form = {"run": [demo.run_a, demo.run_b], "name": "F", "method": "rrf", "k": "60"}
    response = as_admin.post(_fuse_url(demo), data=form)
    assert response.status_code == 302
    job_id = job_id_of(response)
    with jobs_app.app_context():
        assert db.session.scalar(sa.select(Run).where(Run.name == "F")) is None  # queued only
    with consumer(jobs_app):
        job = wait_for(jobs_app, job_id, ("done", "failed"))
    assert job.state == "done", job.error
    with jobs_app.app_context():
        test_set = db.session.get_one(TestSet, demo.test_set_id)
        runs = [db.session.get_one(Run, demo.run_a), db.session.get_one(Run, demo.run_b)]
        inline = run_service.fuse_runs(test_set, runs, "G", None, method="rrf", k=60)
        fused = db.session.get_one(Run, job.result["run_id"])
        assert fused.name == "F" and fused.notes == inline.notes
        assert run_service.ranked_lists(fused) == run_service.ranked_lists(inline)
    page = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "Run F created" in page and "Compare it with the runs it was fused from" in page
    # A taken name is refused at once, with no job queued.
    again = as_admin.post(_fuse_url(demo), data=form, follow_redirects=True)
    assert "already has a run named" in again.get_data(as_text=True)
    with jobs_app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Job)) == 1


def test_small_fusion_stays_in_the_request(jobs_app, as_admin) -> None:
    demo = build_dashboard(jobs_app)
    with jobs_app.app_context():
        entries = db.session.scalar(sa.select(sa.func.sum(Run.num_entries)))
    jobs_app.config["NDCG_FUSE_JOB_ENTRIES"] = entries  # exactly what A and B hold
    form = {"run": [demo.run_a, demo.run_b], "name": "F", "method": "combsum", "k": "60"}
    response = as_admin.post(_fuse_url(demo), data=form)
    assert "/compare/" in response.headers["Location"]
    with jobs_app.app_context():
        assert db.session.scalar(sa.select(Run.notes).where(Run.name == "F")).startswith(
            "Fused with CombSUM"
        )


def test_a_fusion_killed_after_storing_its_run_ends_done(app: Flask, admin_id: int) -> None:
    demo = build_dashboard(app)
    with app.app_context():
        test_set = db.session.get_one(TestSet, demo.test_set_id)
        runs = [db.session.get_one(Run, demo.run_a), db.session.get_one(Run, demo.run_b)]
        job = job_service.enqueue_fuse(test_set, runs, "F", "rrf", 60, None)
        long_ago = datetime.now(UTC) - timedelta(minutes=20)
        db.session.execute(
            sa.update(Job)
            .where(Job.id == job.id)
            .values(state="running", worker="elsewhere:1", started_at=long_ago,
                    heartbeat_at=long_ago)
        )  # fmt: skip
        db.session.commit()
        fused = run_service.fuse_runs(test_set, runs, "F", None).id  # the dead worker's commit
        assert job_service.recover(stale_seconds=60) == [job.id]
        db.session.remove()
        ended = db.session.get_one(Job, job.id)
        assert (ended.state, ended.message) == ("done", STORED_THEN_STOPPED)
        assert ended.result["run_id"] == fused
