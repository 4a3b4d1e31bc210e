"""Judge prices, costs, the estimate before a run and a budget that stops a run cleanly (and
resumes later), against the fake OpenAI-compatible server (100 + 10 tokens an answer)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job
from ndcg_labeler.services import judges, testsets
from ndcg_labeler.services.imports import ImportFile, import_files
from ndcg_labeler.services.jobs.runner import run_job
from tests.factory import build_test_set, trec
from tests.judges.fake_llm import FakeLLM

# Twelve passages of the same length: every prompt has the same length, so the run's
# prediction after its first answer is exactly 100 + 10 tokens a pair.
CORPUS = {f"d{i:02d}": f"passage number {i:02d}" for i in range(1, 13)}
POOL = {"q1": list(CORPUS)}


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.fixture
def priced(app: Flask, llm: FakeLLM, runner: FlaskCliRunner) -> None:
    with app.app_context():
        test_set = build_test_set("bud", {"q1": "refund policy"}, corpus=CORPUS)
        import_files(test_set, pool=ImportFile(io.BytesIO(trec(POOL)), "pool.trec"))
    # $1,000 per million tokens both ways: 110 tokens an answer cost $0.11.
    added = runner.invoke(
        args=["judges", "add", "gpt", "--base-url", llm.url, "--model", "m", "--max-tokens",
              "20", "--input-price", "1000", "--output-price", "1000"]
    )  # fmt: skip
    assert added.exit_code == 0, added.output


def _cli(runner: FlaskCliRunner, *args: str, code: int = 0) -> str:
    result = runner.invoke(args=list(args))
    assert result.exit_code == code, result.output
    return result.output


def test_a_budget_stops_cleanly_and_a_later_run_resumes(
    app: Flask, runner: FlaskCliRunner, llm: FakeLLM, priced: None
) -> None:
    before = json.loads(
        _cli(runner, "judges", "run", "bud", "--judge", "gpt", "--estimate", "--json")
    )
    # Nothing answered yet: from the prompt length, with max_tokens (20) as the output.
    assert (before["pairs"], before["basis"], before["answers"]) == (12, "prompt", 12)
    assert before["completion_tokens"] == 12 * 20
    assert len(llm.requests) == 0  # an estimate asks nothing

    run = json.loads(
        _cli(runner, "judges", "run", "bud", "--judge", "gpt", "--max-cost", "0.5", "--json")
    )
    # First batch: k pairs at the predicted price p1 (prompt length and 20 output tokens),
    # k = floor(0.5 / p1), between 1 and 4 since $0.10 < p1 <= $0.50. Each answer then costs
    # $0.11 and is predicted so: pairs are added while the total stays <= $0.50, i.e. up to
    # four (0.44); a fifth (0.55) would pass it. Whatever k was, four pairs are asked.
    p1 = (before["prompt_tokens"] / 12 + 20) * 1000 / 1e6
    assert 0.1 < p1 <= 0.5
    assert (run["labeled"], run["not_asked"], run["stopped_at_budget"]) == (4, 8, True)
    assert run["cost"] == pytest.approx(0.44) and run["max_cost"] == 0.5
    assert (run["prompt_tokens"], run["completion_tokens"]) == (400, 40)
    assert len(llm.requests) == 4  # nothing asked beyond the budget

    after = json.loads(
        _cli(runner, "judges", "run", "bud", "--judge", "gpt", "--estimate", "--json")
    )
    assert after == {
        "pairs": 8,
        "prompt_tokens": 800,
        "completion_tokens": 80,
        "cost": pytest.approx(0.88),
        "basis": "seen",
        "answers": 4,
        "text": "about 8 pairs, ~$0.88 (from the average tokens of 4 answers so far)",
    }
    rest = json.loads(_cli(runner, "judges", "run", "bud", "--judge", "gpt", "--json"))
    assert (rest["requested"], rest["labeled"], rest["not_asked"]) == (12, 8, 0)
    assert rest["cost"] == pytest.approx(0.88) and len(llm.requests) == 12


def test_prices_and_refusals(app: Flask, runner: FlaskCliRunner, llm: FakeLLM) -> None:
    with app.app_context():
        build_test_set("bud", {"q1": "refund policy"}, corpus=CORPUS)
        judges.add_judge("free", llm.url, "m")
    out = _cli(runner, "judges", "run", "bud", "--judge", "free", "--max-cost", "1", code=1)
    assert "judge free has no prices per million tokens" in out
    assert "input not set, output not set" in _cli(runner, "judges", "prices", "free")
    assert "must be a number from 0 to 10000 dollars per million tokens, not -1" in _cli(
        runner, "judges", "prices", "free", "--input-price", "-1", code=1
    )
    out = _cli(runner, "judges", "prices", "free", "--input-price", "0.15", "--output-price", "0.6")
    assert "free: input $0.15 per million tokens, output $0.6 per million tokens" in out
    assert "input not set" in _cli(runner, "judges", "prices", "free", "--clear")


def test_the_run_form_passes_the_budget_to_the_job(
    app: Flask, as_admin, llm: FakeLLM, priced: None
) -> None:
    with app.app_context():
        test_set_id = testsets.require_by_name("bud").id
        judge_id = judges.require_judge("gpt").id
    page = as_admin.get(f"/test-sets/{test_set_id}/judges/{judge_id}")
    html = page.get_data(as_text=True)
    assert "Unjudged pairs: about 12 pairs, ~$" in html and "from the prompt length of 12" in html
    response = as_admin.post(
        f"/test-sets/{test_set_id}/judges/{judge_id}",
        data={"pairs": "unjudged", "max_cost": "0.05", "sample": "100"},
    )
    assert response.status_code == 302, response.get_data(as_text=True)
    job_id = int(response.headers["Location"].rsplit("/", 1)[1])
    with app.app_context():
        run_job(job_id)
        job = db.session.get(Job, job_id)
        assert job.params["max_cost"] == 0.05
        # Not one pair (over $0.10 predicted) fits in $0.05: nothing is asked.
        assert (job.result["labeled"], job.result["not_asked"]) == (0, 12)
    shown = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "Stopped at the budget of $0.05: 12 pairs not asked yet" in shown


def test_prices_from_the_forms(app: Flask, as_admin, llm: FakeLLM) -> None:
    with app.app_context():
        test_set_id = build_test_set("bud", {"q1": "refund policy"}, corpus=CORPUS).id
    added = as_admin.post(
        "/judges/",
        data={"name": "gpt", "base_url": llm.url, "model": "m", "temperature": "0",
              "max_tokens": "20", "timeout": "60", "concurrency": "2",
              "requests_per_minute": "0", "input_price": "0.15", "output_price": ""},
    )  # fmt: skip
    assert added.status_code == 302, added.get_data(as_text=True)
    with app.app_context():
        judge = judges.require_judge("gpt")
        assert (judge.input_price, judge.output_price) == (0.15, None)
        judge_id = judge.id
    url = f"/test-sets/{test_set_id}/judges/{judge_id}/prices"
    bad = as_admin.post(url, data={"prices-input_price": "-2"}, follow_redirects=True)
    wrong = "Prices: the input price must be a number from 0 to 10000 dollars per million tokens"
    assert f"{wrong}, not -2" in bad.get_data(True)
    saved = as_admin.post(
        url, data={"prices-input_price": "2.5", "prices-output_price": "10"}, follow_redirects=True
    )
    assert "Prices of gpt saved." in saved.get_data(as_text=True)
    with app.app_context():
        judge = judges.require_judge("gpt")
        assert (judge.input_price, judge.output_price) == (2.5, 10.0)
