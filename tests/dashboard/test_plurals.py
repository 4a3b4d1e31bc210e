"""Counts of one are said in the singular on the dashboard and in job messages:
"mean over 1 of 1 query", "1 pair not asked yet", "Marked 1 interrupted job as failed."."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.jobs.records import create_job
from tests.factory import build, build_test_set, trec


def _set_with_run(app: Flask, name: str, queries: dict[str, str], qrels, ranked) -> tuple[int, int]:
    with app.app_context():
        test_set = build_test_set(name, queries, qrels)
        run = run_service.upload_run(test_set, io.BytesIO(trec(ranked)), "r.trec", "r", None)
        ids = test_set.id, run.id
        db.session.remove()
        return ids


def _text(page: str) -> str:
    """The page's text with tags dropped and white space squeezed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", page))


def test_one_query_is_said_in_the_singular(app: Flask, as_admin: FlaskClient) -> None:
    # One query whose one relevant chunk the run ranks first: the mean covers 1 of 1 query.
    set_id, run_id = _set_with_run(app, "one", {"q1": "one"}, [("q1", "a", 1)], {"q1": ["a"]})
    overview = _text(as_admin.get(f"/test-sets/{set_id}/dashboard/").get_data(as_text=True))
    assert "mean over 1 of 1 query; 0 undefined; 0 missing from run" in overview
    table = _text(as_admin.get(f"/test-sets/{set_id}/dashboard/runs/{run_id}").get_data(True))
    assert "mean over 1 of 1 query; 0 undefined; 0 missing from run." in table


def test_one_defined_query_is_said_in_the_singular(app: Flask, as_admin: FlaskClient) -> None:
    # q1: its relevant chunk a first, NDCG 1; q2: judged, nothing relevant, so undefined
    # (trec_eval's all counts it 0): means 1/1 = 1.0000 and (1 + 0)/2 = 0.5000.
    set_id, run_id = _set_with_run(
        app,
        "two",
        {"q1": "one", "q2": "two"},
        [("q1", "a", 1), ("q2", "b", 0)],
        {"q1": ["a"], "q2": ["b"]},
    )
    table = _text(as_admin.get(f"/test-sets/{set_id}/dashboard/runs/{run_id}").get_data(True))
    assert "mean over 1 of 2 queries; 1 undefined;" in table
    assert "mean over 1 defined query: 1.0000; trec_eval all over 2 queries: 0.5000" in table
    assert "the mean over 1 defined query (1.0000) leaves out the 1 with no" in table


def test_a_judge_job_one_pair_short_of_its_budget_says_pair(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    with app.app_context():
        job = create_job("judge", None, admin_id, {})
        result = {"judge": "j", "labeled": 0, "requested": 1, "not_asked": 1, "max_cost": 0.05}
        db.session.execute(
            sa.update(Job).where(Job.id == job.id).values(state="done", result=result)
        )
        db.session.commit()
        job_id = job.id
    shown = _text(as_admin.get(f"/jobs/{job_id}").get_data(as_text=True))
    assert "Stopped at the budget of $0.05: 1 pair not asked yet;" in shown


def test_recovering_one_job_says_job(app: Flask, runner: FlaskCliRunner, admin_id: int) -> None:
    with app.app_context():
        job = create_job("run_upload", None, admin_id, {"name": "r", "filename": "r.trec"})
        stale = datetime.now(UTC) - timedelta(hours=1)
        db.session.execute(
            sa.update(Job)
            .where(Job.id == job.id)
            .values(state="running", worker="elsewhere:1", started_at=stale, heartbeat_at=stale)
        )
        db.session.commit()
    out = runner.invoke(args=["jobs", "recover"])
    assert out.output.strip() == "Marked 1 interrupted job as failed.", out.output


def test_the_overviews_progress_says_one_pair_and_one_person(
    app: Flask, as_admin: FlaskClient
) -> None:
    # One pooled pair (q1, a), 1 judgment wanted per pair; nobody has answered yet.
    built = build(app, "onepair", pool={"q1": ["a"]}, target=1)
    page = as_admin.get(f"/test-sets/{built.test_set_id}/dashboard/").get_data(as_text=True)
    overview = _text(page)
    assert "Graded: 0 of 1 pair has a grade (0%" in overview
    assert "Complete: 0 of 1 pair has the 1 person's judgment it needs (0%)" in overview
    assert "Mine: 0 of 1 pair open to me answered" in overview
