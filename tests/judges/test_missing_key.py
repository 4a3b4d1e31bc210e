"""A judge's API-key variable allowed but not set in the process that asks: the run goes on
without a key (a local model needs none), and says so where it is started and followed, and a
401 or 403 answer's stored error names the variable."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, MachineJudgment, ProbeAnswer
from ndcg_labeler.services import jobs, judges, testsets
from ndcg_labeler.services.imports import ImportFile, import_files
from ndcg_labeler.services.jobs.runner import run_job
from tests.factory import build_test_set, trec
from tests.judges.fake_llm import FakeLLM

VARIABLE = "NDCGTEST_API_KEY"
WARNING = f"{VARIABLE} is not set in this process: requests go without a key"


@pytest.fixture
def keyed(app: Flask, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLM]:
    """A test set of two graded pairs, and a judge whose endpoint wants a key never set."""
    monkeypatch.delenv(VARIABLE, raising=False)
    server = FakeLLM().start()
    server.require_key = "sesame"
    with app.app_context():
        test_set = build_test_set(
            "mk",
            {"q1": "refunds"},
            [("q1", "d1", 0), ("q1", "d2", 1)],
            corpus={
                "d1": "ANSWER0 opening hours",
                "d2": "ANSWER1 refund form",
            },
        )
        pool = {"q1": ["d1", "d2"]}
        import_files(test_set, pool=ImportFile(io.BytesIO(trec(pool)), "pool.trec"))
        judges.add_judge("keyed", server.url, "m", api_key_env=VARIABLE, timeout=5)
    yield server
    server.stop()


def _errors(app: Flask) -> list[str]:
    with app.app_context():
        return list(db.session.scalars(sa.select(MachineJudgment.error)))


def test_a_cli_run_warns_and_the_401_names_the_variable(
    app: Flask, runner: FlaskCliRunner, keyed: FakeLLM
) -> None:
    result = runner.invoke(args=["judges", "run", "mk", "--judge", "keyed", "--pairs", "all"])
    assert result.exit_code == 0, result.output
    assert f"Warning: {WARNING}" in result.stderr
    assert all(found["auth"] is None for found in keyed.requests)
    errors = _errors(app)
    assert len(errors) == 2
    for error in errors:
        assert "401" in error and WARNING in error, error
    as_json = runner.invoke(
        args=["judges", "run", "mk", "--judge", "keyed", "--pairs", "all", "--json"]
    )
    assert json.loads(as_json.stdout)["warnings"] == [WARNING]
    assert f"Warning: {WARNING}" in as_json.stderr


def test_with_the_key_set_nothing_is_said_and_the_key_goes(
    app: Flask, runner: FlaskCliRunner, keyed: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, "sesame")
    result = runner.invoke(args=["judges", "run", "mk", "--judge", "keyed", "--pairs", "all"])
    assert result.exit_code == 0 and "not set" not in result.output, result.output
    assert "2 labeled" in result.output
    assert {found["auth"] for found in keyed.requests} == {"Bearer sesame"}


def test_a_wrong_key_gets_a_hint_naming_its_variable(
    app: Flask, runner: FlaskCliRunner, keyed: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, "wrong")
    result = runner.invoke(args=["judges", "run", "mk", "--judge", "keyed", "--pairs", "all"])
    assert result.exit_code == 0 and "not set" not in result.output, result.output
    for error in _errors(app):
        assert "401" in error and f"check the key in {VARIABLE}" in error, error


def test_the_job_and_the_judge_page_say_it(
    app: Flask, as_admin: FlaskClient, keyed: FakeLLM
) -> None:
    with app.app_context():
        ts_id = testsets.require_by_name("mk").id
        judge_id = judges.require_judge("keyed").id
    page = as_admin.get(f"/test-sets/{ts_id}/judges/{judge_id}").get_data(as_text=True)
    assert WARNING in page
    with app.app_context():
        job_id = jobs.enqueue_judge(testsets.require_by_name("mk"), judge_id, "all", None).id
        run_job(job_id)
        job = db.session.get(Job, job_id)
        assert job is not None and job.state == "done", job and job.message
        assert WARNING in job.message and job.result["warnings"] == [WARNING]
    shown = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert WARNING in shown


def test_a_probe_warns_in_the_cli_and_its_job(
    app: Flask, runner: FlaskCliRunner, keyed: FakeLLM
) -> None:
    result = runner.invoke(args=["judges", "probe", "mk", "--judge", "keyed", "--pairs", "1"])
    assert f"Warning: {WARNING}" in result.stderr, result.output
    with app.app_context():
        errors = list(db.session.scalars(sa.select(ProbeAnswer.error)))
        assert errors and all(WARNING in error for error in errors), errors
        test_set = testsets.require_by_name("mk")
        job_id = jobs.enqueue_probe(test_set, judges.require_judge("keyed").id, 1, None).id
        run_job(job_id)
        job = db.session.get(Job, job_id)
        assert job is not None and job.state == "done", job and job.message
        assert WARNING in job.message and job.result["warnings"] == [WARNING]


@pytest.mark.parametrize("kind", ["judge", "probe"])
def test_the_jobs_progress_says_it_before_the_first_answer(
    app: Flask, keyed: FakeLLM, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Followed on its job page, a run that goes without a key says so while it runs (a run of
    thousands of failing pairs takes a while), not only once it has ended."""
    seen: list[str] = []
    real = keyed.answer

    def answer(passage: str, body: dict) -> object:
        # What the job's page reads while the first question is being asked: its row, through
        # a connection of its own (the job writes its progress through another).
        with app.app_context(), db.engine.connect() as conn:
            seen.append(conn.execute(sa.select(Job.message)).scalar_one())
        return real(passage, body)

    monkeypatch.setattr(keyed, "answer", answer)
    keyed.require_key = None  # answered (a local model needs no key): the warning still holds
    with app.app_context():
        test_set = testsets.require_by_name("mk")
        judge_id = judges.require_judge("keyed").id
        if kind == "judge":
            job_id = jobs.enqueue_judge(test_set, judge_id, "all", None).id
        else:
            job_id = jobs.enqueue_probe(test_set, judge_id, 1, None).id
        run_job(job_id)
    assert seen, "no question was asked"
    assert WARNING in seen[0], seen
