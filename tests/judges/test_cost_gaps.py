"""Issue 31 item 5 where probes, ensembles and ask-again meet costs: a slow endpoint (answers
late but in time, or after the judge's timeout), ask-again and probes within a budget, and an
ensemble's estimate, budget, tokens and cost as its members'. Every expected figure is worked
out by hand from the fake servers' fixed usage (tests/judges/fake_llm.py, two_models.py)."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Job, Judge, MachineJudgment, Probe, ProbeAnswer
from ndcg_labeler.services import judge_costs, judges, probes, testsets
from ndcg_labeler.services.imports import ImportFile, import_files
from ndcg_labeler.services.jobs.runner import run_job
from tests.factory import build_test_set, make_user, trec
from tests.judges.fake_llm import FakeLLM
from tests.judges.fake_probes import GullibleLLM
from tests.judges.two_models import TwoModels, build_ens_set

# Output priced only: every answer reports 10 output tokens and the judge's max_tokens is 10,
# so each question is predicted and billed at exactly 10 × $1,000 / 1e6 = $0.01.
PER_ANSWER = 0.01


def _cli(runner: FlaskCliRunner, *args: str, code: int = 0) -> tuple[str, str]:
    result = runner.invoke(args=list(args))
    assert result.exit_code == code, result.output
    return result.stdout, result.stderr


def _price_by_output(name: str) -> None:
    judge = judges.require_judge(name)
    judge.max_tokens = 10
    judge_costs.set_prices(judge, 0.0, 1000.0)


@pytest.fixture
def slow(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLM]:
    # One try per question: a timed-out pair fails at once instead of after four retries.
    monkeypatch.setattr("ndcg_labeler.services.judges.client.RETRIES", 0)
    # SLOW sleeps well past the judge's timeout (1.2 s) and DELAYED far within it, so only the
    # SLOW pairs time out, however loaded the (2-core) machine is.
    server = FakeLLM(slow_seconds=2.5, delay_seconds=0.1).start()
    yield server
    server.stop()


def test_a_slow_endpoint_fails_late_pairs_cleanly_and_they_resume(
    app: Flask, runner: FlaskCliRunner, slow: FakeLLM
) -> None:
    corpus = {
        "d1": "ANSWER2 on time",
        "d2": "DELAYED but in time",
        "d3": "SLOW past the timeout",
        "d4": "SLOW past the timeout",
        "d5": "DELAYED but in time",
        "d6": "SLOW past the timeout",
    }
    with app.app_context():
        test_set = build_test_set("slow", {"q1": "refund policy"}, corpus=corpus)
        import_files(test_set, pool=ImportFile(io.BytesIO(trec({"q1": list(corpus)})), "p.trec"))
        # A timeout between the late answer (0.1 s) and the slow one (2.5 s).
        judges.add_judge("j", slow.url, "m", timeout=1.2, concurrency=6)
        _price_by_output("j")
    out, _ = _cli(runner, "judges", "run", "slow", "--judge", "j", "--pairs", "all", "--json")
    first = json.loads(out)
    assert (first["requested"], first["labeled"], first["failed"]) == (6, 3, 3)
    assert first["cost"] == pytest.approx(3 * PER_ANSWER)  # a timed-out request is not billed
    with app.app_context():
        rows = {
            d: (s, g, raw, err)
            for d, s, g, raw, err in db.session.execute(
                sa.select(
                    Chunk.docid,
                    MachineJudgment.status,
                    MachineJudgment.grade,
                    MachineJudgment.raw_answer,
                    MachineJudgment.error,
                ).join(Chunk, Chunk.id == MachineJudgment.chunk_id)
            )
        }
    # One row a pair: the late ones graded, the timed-out ones failed with nothing half-read.
    assert {d: r[:2] for d, r in rows.items()} == {
        "d1": ("labeled", 2),
        "d2": ("labeled", 1),
        "d3": ("failed", None),
        "d4": ("failed", None),
        "d5": ("labeled", 1),
        "d6": ("failed", None),
    }
    for docid in ("d3", "d4", "d6"):
        assert rows[docid][2] == "" and "within 1.2 s (timeout)" in rows[docid][3]

    with app.app_context():
        # Asking the three failed ones again, from the three answers' usage: 3 × $0.01.
        guess = judge_costs.estimate_run(
            testsets.require_by_name("slow"), judges.require_judge("j"), "again:failed"
        )
        assert (guess.pairs, guess.cost) == (3, pytest.approx(0.03))
        assert guess.text().endswith("(from the average tokens of 3 answers so far)")
    slow.slow_seconds = 0.05  # the endpoint recovers
    # Ask again within $0.025: two of the three failed pairs fit ($0.01 each), one waits.
    out, _ = _cli(
        runner, "judges", "ask-again", "slow", "--judge", "j", "--pairs", "failed",
        "--max-cost", "0.025", "--json",
    )  # fmt: skip
    again = json.loads(out)
    assert (again["requested"], again["labeled"], again["not_asked"]) == (3, 2, 1)
    assert again["stopped_at_budget"] is True and again["cost"] == pytest.approx(0.02)
    # A later run resumes with the one pair left and skips the five answered.
    out, _ = _cli(runner, "judges", "run", "slow", "--judge", "j", "--pairs", "all", "--json")
    rest = json.loads(out)
    assert (rest["requested"], rest["labeled"], rest["failed"]) == (6, 1, 0)
    assert len(slow.requests) == 6 + 2 + 1
    with app.app_context():
        statuses = db.session.scalars(sa.select(MachineJudgment.status)).all()
        assert sorted(statuses) == ["labeled"] * 6


@pytest.fixture
def gullible() -> Iterator[GullibleLLM]:
    server = GullibleLLM().start()
    yield server
    server.stop()


QRELS = [("q1", "d1", 0), ("q1", "d2", 0), ("q1", "d3", 0), ("q1", "d4", 0), ("q1", "d5", 3)]
CORPUS = {
    "d1": "office opening hours",
    "d2": "a poem about autumn",
    "d3": "holiday schedule",
    "d4": "printer drivers",
    "d5": "refunds in 30 days",
}


def test_a_probe_within_a_budget_reports_the_variants_it_asked(
    app: Flask, runner: FlaskCliRunner, as_admin, gullible: GullibleLLM
) -> None:
    with app.app_context():
        test_set_id = build_test_set("pb", {"q1": "refund policy"}, QRELS, CORPUS).id
        judge_id = judges.add_judge("j", gullible.url, "m", timeout=2, concurrency=4).id
        _price_by_output("j")
    out, err = _cli(
        runner, "judges", "probe", "pb", "--judge", "j", "--pairs", "4", "--max-cost", "0.2",
        "--json",
    )  # fmt: skip
    # Four pairs, nine questions each at $0.01; the estimate comes first, on stderr.
    assert "Estimate: about 36 questions (4 pairs, 9 variants each), ~$0.36" in err
    # $0.20 holds 20 questions: two whole pairs (18), the third's nine would pass it.
    found = json.loads(out)
    assert list(found) == list(probes.JSON_KEYS) and found["pairs"] == 2
    # The gullible fake: originals and empties 0, every stuffed, injected and echo one 3.
    assert found["variants"] == {
        "original": {"asked": 2, "relevant": 0, "share": 0.0},
        "stuffed": {"asked": 6, "relevant": 6, "share": 1.0},
        "injected": {"asked": 6, "relevant": 6, "share": 1.0},
        "echo": {"asked": 2, "relevant": 2, "share": 1.0},
        "empty": {"asked": 2, "relevant": 0, "share": 0.0},
    }
    assert found["flagged"] is True
    assert "Stopped at the budget of $0.20: 2 of 4 pairs probed" in err
    assert len(gullible.requests) == 18
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(ProbeAnswer)) == 18
        # Not the judge's last probe: the calibration page keeps comparing full probes.
        assert db.session.scalar(sa.select(Probe.finished_at)) is None
        test_set = testsets.require_by_name("pb")
        assert probes.last_probe(test_set, judges.require_judge("j")) is None

    # The form's budget: $0.05 holds five questions, not one whole pair; nothing is asked.
    url = f"/test-sets/{test_set_id}/judges/{judge_id}"
    response = as_admin.post(f"{url}/probe", data={"probe-pairs": "4", "probe-max_cost": "0.05"})
    assert response.status_code == 302, response.get_data(as_text=True)
    job_id = int(response.headers["Location"].rsplit("/", 1)[1])
    with app.app_context():
        run_job(job_id)
        job = db.session.get_one(Job, job_id)
        assert job.params["max_cost"] == 0.05
        assert (job.result["stopped_at_budget"], job.result["not_asked"]) == (True, 4)
    shown = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "Stopped at the budget of $0.05: 0 of 4 pairs probed" in shown
    assert len(gullible.requests) == 18
    page = as_admin.get(url).get_data(as_text=True)
    assert 'id="probe-max_cost"' in page and 'id="again-max_cost"' in page
    # Fifty asked for, five pairs graded: 45 questions at the 18 answers' $0.01 each.
    assert (
        "A probe of 50 pairs: about 45 questions (5 pairs, 9 variants each), ~$0.45 (from the "
        "average tokens of 18 answers so far)." in page
    )


@pytest.fixture
def two() -> Iterator[TwoModels]:
    server = TwoModels().start()
    yield server
    server.stop()


def test_an_ensemble_estimates_budgets_and_counts_its_members_costs(
    app: Flask, runner: FlaskCliRunner, as_admin, two: TwoModels
) -> None:
    """Each answer reports 50 tokens in and 5 out; alpha costs $1,000 and beta $2,000 per
    million both ways: $0.055 and $0.11 an answer, $0.165 a pair asked of both."""
    make_user(app, "ann")
    with app.app_context():
        test_set_id = build_ens_set(two.url)
        for name in ("alpha", "beta"):
            judges.require_judge(name).max_tokens = 5
        judge_costs.set_prices(judges.require_judge("alpha"), 1000.0, 1000.0)
    _cli(runner, "judges", "ensemble", "duo", "--member", "alpha", "--member", "beta")
    # beta has no prices yet: a budget is refused before anything is asked.
    _, err = _cli(runner, "judges", "run", "ens", "--judge", "duo", "--max-cost", "1", code=1)
    assert "judge beta has no prices per million tokens" in err and not two.requests
    with app.app_context():
        judge_costs.set_prices(judges.require_judge("beta"), 2000.0, 2000.0)

    out, _ = _cli(runner, "judges", "run", "ens", "--judge", "duo", "--pairs", "all",
                  "--estimate", "--json")  # fmt: skip
    before = json.loads(out)
    alpha, beta = before["members"]["alpha"], before["members"]["beta"]
    # From the prompt length (every prompt of this set has the same length) and 5 tokens out.
    assert (before["pairs"], before["basis"], alpha["pairs"], beta["pairs"]) == (
        15,
        "members",
        15,
        15,
    )
    assert before["completion_tokens"] == 15 * 5 * 2
    assert before["prompt_tokens"] == alpha["prompt_tokens"] + beta["prompt_tokens"]
    assert before["cost"] == pytest.approx(alpha["cost"] + beta["cost"])
    # The first pair's predicted price, over-estimated from the prompt length, fits in $1.70:
    per_alpha = alpha["prompt_tokens"] / 15 + 5
    first = per_alpha * 1000 / 1e6 + per_alpha * 2000 / 1e6
    assert 0.165 < first <= 1.7
    # Whatever the first batch took, pairs are added while the total stays within $1.70:
    # ten pairs ($1.65); an eleventh ($1.815) would pass it. Each pair is asked of both.
    out, _ = _cli(runner, "judges", "run", "ens", "--judge", "duo", "--pairs", "all",
                  "--max-cost", "1.7", "--json")  # fmt: skip
    run = json.loads(out)
    assert (run["requested"], run["labeled"], run["failed"], run["not_asked"]) == (15, 10, 0, 5)
    assert run["stopped_at_budget"] is True and run["cost"] == pytest.approx(1.65)
    assert (run["prompt_tokens"], run["completion_tokens"]) == (1000, 100)
    assert run["members"] == [
        {"judge": "alpha", "prompt_tokens": 500, "completion_tokens": 50, "cost": 0.55},
        {"judge": "beta", "prompt_tokens": 500, "completion_tokens": 50, "cost": 1.1},
    ]
    assert len(two.requests) == 20
    with app.app_context():
        duo_id = judges.require_judge("duo").id
        # Nothing half-written: ten combined answers, none waiting for a member.
        rows = db.session.scalars(
            sa.select(MachineJudgment.status).where(MachineJudgment.judge_id == duo_id)
        ).all()
        assert sorted(rows) == ["labeled"] * 10

    out, _ = _cli(runner, "judges", "run", "ens", "--judge", "duo", "--pairs", "all",
                  "--estimate", "--json")  # fmt: skip
    after = json.loads(out)
    # Five pairs left, from the answers so far: 5 × (50 + 5) tokens at each member's prices.
    assert (after["pairs"], after["prompt_tokens"], after["completion_tokens"]) == (5, 500, 50)
    assert after["cost"] == pytest.approx(5 * 0.165)
    page = as_admin.get(f"/test-sets/{test_set_id}/judges/{duo_id}").get_data(as_text=True)
    assert "Its members' answers on this test set (alpha, beta" in page
    assert "1,000 tokens in, 100 out; $1.65" in page
    # $0.825 shown to the cent: either way of rounding its binary value is fine.
    assert re.search(r"Every pair: about 5 pairs, ~\$0\.8[23] \(the sum over its 2 members", page)

    # The rest as a job from the run form: one progress count over both members' questions.
    response = as_admin.post(
        f"/test-sets/{test_set_id}/judges/{duo_id}", data={"pairs": "all", "sample": "100"}
    )
    assert response.status_code == 302, response.get_data(as_text=True)
    job_id = int(response.headers["Location"].rsplit("/", 1)[1])
    with app.app_context():
        run_job(job_id)
        job = db.session.get_one(Job, job_id)
        # Five pairs asked of two members: one count of ten (not five, then five again).
        assert job.total == 10
        result = job.result
        assert (result["skipped"], result["labeled"], result["not_asked"]) == (10, 15, 0)
        assert (result["prompt_tokens"], result["completion_tokens"]) == (500, 50)
        assert result["cost"] == pytest.approx(0.825)
        assert (
            db.session.scalar(sa.select(sa.func.count()).where(MachineJudgment.judge_id == duo_id))
            == 15
        )
        assert db.session.scalar(sa.select(Judge.id).where(Judge.name == "duo")) == duo_id
    shown = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "An ensemble: tokens and cost are its members'" in shown
    assert "alpha: 250 in, 25 out, $0.2750; beta: 250 in, 25 out, $0.5500" in shown
    assert len(two.requests) == 30
