"""Recovery of a run upload whose worker died after committing the run (while scoring it):
the run is whole, so the job ends done with it; without such a run it fails as interrupted."""

from __future__ import annotations

import io
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, TestSet, User
from ndcg_labeler.services import jobs as job_service
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.jobs.records import create_job
from ndcg_labeler.services.jobs.recovery import INTERRUPTED, STORED_THEN_STOPPED
from tests.factory import AuthActions, build_test_set, make_user, trec


def _dead_upload(test_set: TestSet, user_id: int, name: str, started: datetime) -> int:
    """A run upload job some worker took at `started` and whose heartbeat stopped long ago."""
    params = {"name": name, "depth": None, "notes": "", "filename": f"{name}.trec"}
    job = create_job("run_upload", test_set.id, user_id, params)
    stale = datetime.now(UTC) - timedelta(minutes=10)
    db.session.execute(
        sa.update(Job)
        .where(Job.id == job.id)
        .values(state="running", worker="elsewhere:1", started_at=started, heartbeat_at=stale)
    )
    db.session.commit()
    return job.id


def _upload(test_set: TestSet, name: str, user_id: int) -> int:
    file = io.BytesIO(trec({"q1": ["d1", "d2"], "q2": ["d3"]}))
    user = db.session.get(User, user_id)
    return run_service.upload_run(test_set, file, f"{name}.trec", name, user).id


def test_recovery_marks_done_the_upload_whose_run_was_stored(app: Flask, client) -> None:
    boss = make_user(app, "boss", "admin")
    other = make_user(app, "other", "admin")
    with app.app_context():
        test_set = build_test_set("Rec", {"q1": "one", "q2": "two"})
        _upload(test_set, "older", boss)  # stored before its namesake job below started
        long_ago = datetime.now(UTC) - timedelta(minutes=20)
        stored = _dead_upload(test_set, boss, "stored", long_ago)
        stored_run = _upload(test_set, "stored", boss)  # the dead worker's commit
        foreign = _dead_upload(test_set, boss, "foreign", long_ago)
        _upload(test_set, "foreign", other)  # the same name, but another admin's upload
        older = _dead_upload(test_set, boss, "older", datetime.now(UTC))
        assert sorted(job_service.recover(stale_seconds=60)) == [stored, foreign, older]
        db.session.remove()
        jobs = {j.id: j for j in db.session.scalars(sa.select(Job))}
        assert (jobs[stored].state, jobs[stored].error) == ("done", "")
        assert jobs[stored].message == STORED_THEN_STOPPED
        assert jobs[stored].result["run_id"] == stored_run
        assert jobs[stored].result["report"]["entries_stored"] == 3
        for failed in (foreign, older):
            assert (jobs[failed].state, jobs[failed].error) == ("failed", INTERRUPTED)
    AuthActions(client).login("boss")
    page = client.get(f"/jobs/{stored}").get_data(as_text=True)
    assert "Run stored uploaded" in page and f"/runs/{stored_run}" in page


def test_recovery_marks_done_the_fetch_whose_run_was_stored(app: Flask, client) -> None:
    boss = make_user(app, "boss", "admin")
    with app.app_context():
        test_set = build_test_set("Fetched", {"q1": "one", "q2": "two"})
        params = {"endpoint": "search-api", "run": "live", "k": 10, "accept_partial": False}
        job = create_job("fetch", test_set.id, boss, params)
        long_ago = datetime.now(UTC) - timedelta(minutes=20)
        db.session.execute(
            sa.update(Job)
            .where(Job.id == job.id)
            .values(
                state="running",
                worker="elsewhere:1",
                started_at=long_ago,
                heartbeat_at=long_ago + timedelta(minutes=5),
            )
        )
        db.session.commit()
        # The fetch's commit: its answers stored as ENDPOINT.trec under the run's name.
        file = io.BytesIO(trec({"q1": ["d1", "d2"], "q2": ["d3"]}))
        run_id = run_service.upload_run(
            test_set, file, "search-api.trec", "live", db.session.get(User, boss)
        ).id
        assert job_service.recover(stale_seconds=60) == [job.id]
        db.session.remove()
        found = db.session.get_one(Job, job.id)
        assert (found.state, found.message) == ("done", STORED_THEN_STOPPED)
        assert found.result["run_id"] == run_id
        job_id = job.id
    AuthActions(client).login("boss")
    page = client.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "Run live fetched" in page and "Queries stored: 2; ranked entries: 3" in page
    assert f"/runs/{run_id}" in page


def test_recovery_deletes_spooled_uploads_no_job_will_read(app: Flask) -> None:
    """A worker killed after ending its job but before deleting the job's files, or a server
    killed between spooling an upload and creating its job, leaves a folder under uploads/:
    recovery deletes it once it is old, and never a queued job's file or a fresh folder."""
    boss = make_user(app, "boss", "admin")
    with app.app_context():
        test_set = build_test_set("Spool", {"q1": "one"})
        uploads = Path(app.instance_path) / "uploads"

        def spooled(name: str, age_minutes: float) -> Path:
            folder = uploads / name / "file"
            folder.mkdir(parents=True)
            (folder / "run.trec").write_text("q1 Q0 d1 1 1.0 x\n")
            moment = time.time() - age_minutes * 60
            for path in (folder / "run.trec", folder, folder.parent):
                os.utime(path, (moment, moment))
            return folder.parent

        ended = spooled("ended", 30)
        orphan = spooled("orphan", 30)
        waiting = spooled("waiting", 30)
        fresh = spooled("fresh", 1)
        done = create_job("run_upload", test_set.id, boss, {"name": "a"}, str(ended))
        queued = create_job("run_upload", test_set.id, boss, {"name": "b"}, str(waiting))
        db.session.execute(sa.update(Job).where(Job.id == done.id).values(state="done"))
        db.session.commit()
        assert queued.state == "queued"
        job_service.recover()
        assert sorted(p.name for p in uploads.iterdir()) == ["fresh", "waiting"]
        assert not ended.exists() and not orphan.exists() and fresh.exists()
