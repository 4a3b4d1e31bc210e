"""Machine judges end to end, offline: a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, MachineJudgment, Query, TestSet
from ndcg_labeler.services import judges, live, tallies, testsets
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.imports import ImportFile, import_files
from ndcg_labeler.services.jobs.runner import run_job
from tests.factory import build_test_set, trec
from tests.judges.fake_llm import FakeLLM

CORPUS = {
    "d1": "ANSWER3 refunds within 30 days",
    "d2": "ANSWER1 office opening hours",
    "d3": "GARBAGE a poem",
    "d4": "RATE429 the refund form",
    "d5": "JSONANS2 parking permits",
    "d6": "SLOW the canteen menu",
    "d7": "BROKEN nothing",
}
QRELS = [("q1", "d1", 3), ("q1", "d2", 0), ("q2", "d5", 1)]  # the human grades
POOL = {"q1": ["d1", "d2", "d3", "d4"], "q2": ["d5", "d6", "d7"]}
L3, L5 = math.log2(3), math.log2(5)


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    # SLOW sleeps well past the judges' timeout (0.8 s), which leaves every other answer, even
    # on a loaded 2-core CI machine, far more time than it needs (0.3 s was not enough there).
    server = FakeLLM(slow_seconds=2.5).start()
    yield server
    server.stop()


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries without the real backoff (the behaviour is the same, the test is quick)."""
    monkeypatch.setattr("ndcg_labeler.services.judges.client.BACKOFF", 0.01)


@pytest.fixture
def judged_set(app: Flask, llm: FakeLLM) -> str:
    with app.app_context():
        test_set = build_test_set(
            "mj", {"q1": "refund policy", "q2": "parking"}, QRELS, corpus=CORPUS
        )
        import_files(test_set, pool=ImportFile(io.BytesIO(trec(POOL)), "pool.trec"))
        run_service.upload_run(test_set, io.BytesIO(trec(POOL)), "a.trec", "A", None)
        reverse = {q: list(reversed(d)) for q, d in POOL.items()}
        run_service.upload_run(test_set, io.BytesIO(trec(reverse)), "b.trec", "B", None)
        judges.add_judge("gpt", llm.url, "fake-model", timeout=0.8, concurrency=4)
    return "mj"


def _run(runner: FlaskCliRunner, *args: str) -> dict:
    result = runner.invoke(args=["judges", "run", "mj", "--judge", "gpt", "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_run_labels_parses_and_records_failures(
    app: Flask, runner: FlaskCliRunner, judged_set: str, llm: FakeLLM, fast_retries: None
) -> None:
    report = _run(runner, "--pairs", "all")
    assert set(report) == {
        "judge",
        "prompt_version",
        "requested",
        "labeled",
        "unparsed",
        "failed",
        "skipped",
        "seconds",
        "prompt_tokens",
        "completion_tokens",
        "cost",
        "max_cost",
        "stopped_at_budget",
        "not_asked",
        "warnings",
    }
    assert report["warnings"] == []  # the judge names no key variable
    # d1 3, d2 1, d4 2 (after one 429), d5 2 (JSON); d3 unreadable; d6 times out, d7 500s.
    assert (report["requested"], report["labeled"], report["unparsed"], report["failed"]) == (
        7,
        4,
        1,
        2,
    )
    with app.app_context():
        rows = {
            r.chunk.docid if hasattr(r, "chunk") else r[0]: r
            for r in db.session.execute(
                sa.text(
                    "SELECT c.docid, m.status, m.grade, m.raw_answer, m.error, m.prompt_tokens "
                    "FROM machine_judgment m JOIN chunk c ON c.id = m.chunk_id"
                )
            )
        }
        assert {d: (r[1], r[2]) for d, r in rows.items()} == {
            "d1": ("labeled", 3),
            "d2": ("labeled", 1),
            "d3": ("unparsed", None),  # never guessed as 0
            "d4": ("labeled", 2),
            "d5": ("labeled", 2),
            "d6": ("failed", None),
            "d7": ("failed", None),
        }
        assert "##final score: 3" in rows["d1"][3] and rows["d1"][5] == 100
        assert "HTTP 500" in rows["d7"][4] and "(timeout)" in rows["d6"][4]
        # Machine labels are not human judgments.
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Judgment)) == 3
    # The request: the model, temperature 0, the test set's own scale and grade names.
    body = llm.requests[0]["body"]
    assert body["model"] == "fake-model" and body["temperature"] == 0.0
    prompt = body["messages"][0]["content"]
    assert "from 0 to 3" in prompt and "3 = Perfect" in prompt and "##final score: N" in prompt


def test_runs_resume_and_retry_what_failed(
    app: Flask, runner: FlaskCliRunner, judged_set: str, llm: FakeLLM, fast_retries: None
) -> None:
    first = _run(runner, "--pairs", "unjudged")  # d3, d4, d6, d7 have no grade yet
    assert (first["requested"], first["labeled"], first["failed"]) == (4, 1, 2)
    asked = len(llm.requests)
    llm.slow_seconds = 0.0  # the endpoint got faster; d7 still fails
    again = _run(runner, "--pairs", "unjudged")
    assert (again["labeled"], again["unparsed"], again["failed"]) == (1, 0, 1)
    # The JSON says where the other two of the four went: answered before (d3 unparsed, d4
    # labeled), so requested = labeled + unparsed + failed + skipped.
    assert (again["requested"], again["skipped"]) == (4, 2)
    # Only the two failures were asked again (d7 with its retries), not d3 or d4.
    assert {
        r["body"]["messages"][0]["content"].split("Passage:")[1].split()[0]
        for r in llm.requests[asked:]
    } == {"SLOW", "BROKEN"}


def test_a_server_that_dies_mid_job_is_resumed(
    app: Flask, runner: FlaskCliRunner, judged_set: str, llm: FakeLLM, fast_retries: None
) -> None:
    port = llm.port
    llm.stop()  # the endpoint is gone: every pair fails, the run still finishes
    down = _run(runner, "--pairs", "human")
    assert (down["requested"], down["labeled"], down["failed"]) == (3, 0, 3)
    llm.start(port)  # back, on the same address
    up = _run(runner, "--pairs", "human")
    assert (up["requested"], up["labeled"], up["failed"]) == (3, 3, 0)


def test_scores_with_machine_and_fill_labels(
    app: Flask, runner: FlaskCliRunner, judged_set: str, fast_retries: None
) -> None:
    _run(runner, "--pairs", "all")
    with app.app_context():
        test_set = testsets.require_by_name("mj")
        run = run_service.require_run(test_set, "A")
        human = live.score_run(run)
        machine = live.score_run(run, live.ScoreOptions(labels="machine:gpt"))
        fill = live.score_run(run, live.ScoreOptions(labels="fill:gpt"))
    # Machine: q1 d1 3, d2 1, d3 -, d4 2 in that order; ideal 3, 2, 1.
    q1 = (3 + 1 / L3 + 2 / L5) / (3 + 2 / L3 + 1 / 2)
    assert machine.ndcg.tolist() == pytest.approx([q1, 1.0])
    # Fill: people's d1 3, d2 0 win; the judge adds d4 2. q2: people's d5 1 alone.
    q1_fill = (3 + 2 / L5) / (3 + 2 / L3)
    assert fill.ndcg.tolist() == pytest.approx([q1_fill, 1.0])
    with app.app_context():
        test_set = testsets.require_by_name("mj")
        run = run_service.require_run(test_set, "A")
        q1_row = db.session.scalar(sa.select(Query).where(Query.qid == "q1"))
        detail = live.query_detail(run, q1_row, live.ScoreOptions(labels="fill:gpt"))
    sources = {r.docid: (r.grade, r.by_machine) for r in detail.ranked}
    assert sources == {"d1": (3, False), "d2": (0, False), "d3": (None, False), "d4": (2, True)}
    assert detail.ndcg == pytest.approx(q1_fill)
    # People only: q1 d1 3, d2 0 -> ideal = DCG; q2 d5 1 -> 1.
    assert human.ndcg.tolist() == pytest.approx([1.0, 1.0])
    assert machine.options.labels == "machine:gpt"
    cli = runner.invoke(args=["run", "score", "mj", "A", "--labels", "machine:gpt", "--json"])
    assert json.loads(cli.output)["mean_ndcg"] == pytest.approx((q1 + 1.0) / 2)
    bad = runner.invoke(args=["run", "score", "mj", "A", "--labels", "machine:nobody"])
    assert bad.exit_code == 1 and "unknown judge 'nobody'" in bad.output


def test_calibration_against_sklearn_and_scipy(
    app: Flask, runner: FlaskCliRunner, judged_set: str, fast_retries: None
) -> None:
    from scipy.stats import kendalltau
    from sklearn.metrics import cohen_kappa_score

    _run(runner, "--pairs", "all")
    result = runner.invoke(args=["judges", "agreement", "mj", "--judge", "gpt", "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert set(found) == {
        "judge",
        "prompt_version",
        "pairs",
        "kappa_quadratic",
        "kappa_binary",
        "confusion",
        "mean_difference",
        "runs",
        "kendall_tau",
        "k",
        "minimums",
        "withheld",
        "audit",
    }

    def raw(holder: dict, key: str) -> float | None:
        """A figure, shown or withheld (3 pairs, 2 runs of 2 queries: below every minimum)."""
        assert holder[key] is None or key not in holder.get("withheld", {})
        return holder[key] if holder[key] is not None else holder["withheld"][key]["value"]

    human, machine = [3, 0, 1], [3, 1, 2]  # (q1,d1), (q1,d2), (q2,d5)
    assert found["pairs"] == 3
    expected = cohen_kappa_score(human, machine, labels=[0, 1, 2, 3], weights="quadratic")
    assert found["kappa_quadratic"] is None
    assert raw(found, "kappa_quadratic") == pytest.approx(expected)
    binary = cohen_kappa_score([1, 0, 1], [1, 1, 1], labels=[0, 1])
    assert raw(found, "kappa_binary") == pytest.approx(binary)
    assert found["confusion"] == [[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 1]]
    assert raw(found, "mean_difference") == pytest.approx(2 / 3)
    runs = {r["run"]: r for r in found["runs"]}
    assert set(runs) == {"A", "B"}
    tau = kendalltau(
        [raw(runs[n], "human_mean_ndcg") for n in ("A", "B")],
        [raw(runs[n], "machine_mean_ndcg") for n in ("A", "B")],
    ).statistic
    assert found["kendall_tau"] is None
    assert (math.isnan(tau) and "kendall_tau" not in found["withheld"]) or found["withheld"][
        "kendall_tau"
    ]["value"] == pytest.approx(tau)


def test_bad_judges_are_refused(app: Flask, runner: FlaskCliRunner, llm: FakeLLM) -> None:
    cases = [
        (["judges", "add", "x", "--base-url", "ftp://h", "--model", "m"], "http:// or https://"),
        (
            ["judges", "add", "x", "--base-url", llm.url, "--model", "m", "--api-key-env", "sk-1"],
            "NAME of an environment variable",
        ),
        (["judges", "run", "nope", "--judge", "x"], "unknown test set 'nope'"),
        # 0 was refused with "timeout must be 0–600 s"
        (
            ["judges", "add", "x", "--base-url", llm.url, "--model", "m", "--timeout", "0"],
            "timeout must be more than 0 and at most 600 s",
        ),
    ]
    for args, message in cases:
        result = runner.invoke(args=args)
        assert result.exit_code == 1 and message in result.output, result.output
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(MachineJudgment)) == 0
        assert db.session.scalar(sa.select(sa.func.count()).select_from(TestSet)) == 0


def test_the_browser_defines_runs_and_calibrates_a_judge(
    app: Flask, as_admin, judged_set: str, llm: FakeLLM, fast_retries: None
) -> None:
    page = as_admin.get("/judges/")
    assert page.status_code == 200 and "##final score: N" in page.get_data(as_text=True)
    added = as_admin.post(
        "/judges/",
        data={
            "name": "local",
            "base_url": llm.url,
            "model": "llama",
            "api_key_env": "LOCAL_API_KEY",
            "temperature": "0",
            "max_tokens": "256",
            "timeout": "5",
            "concurrency": "2",
            "requests_per_minute": "0",
            "prompt_template": "",
        },
    )
    assert added.status_code == 302
    with app.app_context():
        local = judges.require_judge("local")
        ts_id, judge_id = testsets.require_by_name("mj").id, local.id
        assert local.api_key_env == "LOCAL_API_KEY"  # the name is stored, never a key
    url = f"/test-sets/{ts_id}/judges/{judge_id}"
    assert as_admin.get(url).status_code == 200
    run = as_admin.post(url, data={"pairs": "human"})
    assert run.status_code == 302 and run.headers["Location"].startswith("/jobs/")
    job_id = int(run.headers["Location"].rsplit("/", 1)[1])
    with app.app_context():
        run_job(job_id)  # what the job worker does with the queued job
    page = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "local: 3 labeled" in page and "Tokens: 300 in, 30 out" in page
    shown = as_admin.get(url).get_data(as_text=True)
    assert "Pairs compared</dt><dd>3</dd>" in shown
    assert "withheld: from 3 compared pairs; at least 10 are needed" in shown
    assert "##final score: 3" in shown  # the raw answer is inspectable per pair


def test_judges_are_for_admins(app: Flask, client, auth, judged_set: str) -> None:
    from tests.factory import make_user

    make_user(app, "ann")
    auth.login("ann")
    assert client.get("/judges/").status_code == 403
    with app.app_context():
        ts_id = testsets.require_by_name("mj").id
    assert client.get(f"/test-sets/{ts_id}/judges/").status_code == 403


def test_annotators_see_machine_suggestions_only_when_the_test_set_shows_them(
    app: Flask, client, auth, runner: FlaskCliRunner, judged_set: str, fast_retries: None
) -> None:
    from ndcg_labeler.models import Pair
    from tests.factory import grant, make_user

    _run(runner, "--pairs", "all")
    ann = make_user(app, "ann")
    with app.app_context():
        test_set = testsets.require_by_name("mj")
        ts_id = test_set.id
        d4 = db.session.scalar(
            sa.select(Pair.id)
            .join(Chunk, Chunk.id == Pair.chunk_id)
            .where(Pair.test_set_id == ts_id, Chunk.docid == "d4")
        )
    grant(app, ts_id, ann)
    auth.login("ann")
    page = client.get(f"/test-sets/{ts_id}/label/{d4}")
    assert page.status_code == 200
    assert "Machine suggestion" not in page.get_data(as_text=True)  # off by default: no anchoring
    with app.app_context():
        test_set = db.session.get_one(TestSet, ts_id)
        test_set.show_machine_suggestions = True
        db.session.commit()
    shown = client.get(f"/test-sets/{ts_id}/label/{d4}").get_data(as_text=True)
    assert "Machine suggestion: gpt says 2 (Relevant)" in shown


def test_pooling_can_queue_first_what_the_judge_says_matters_most(
    app: Flask, runner: FlaskCliRunner, llm: FakeLLM, fast_retries: None
) -> None:
    from ndcg_labeler.models import Chunk, Pair

    corpus = {"e1": "ANSWER1 a", "e2": "ANSWER3 b", "e3": "GARBAGE c", "e4": "ANSWER2 d"}
    with app.app_context():
        test_set = build_test_set("pool", {"q1": "anything"}, corpus=corpus)
        run_service.upload_run(
            test_set, io.BytesIO(trec({"q1": ["e1", "e2", "e3", "e4"]})), "r.trec", "R", None
        )
        judge = judges.add_judge("gpt", llm.url, "m", timeout=1)
        # The judge answers on pairs of a first pool; then the queue is emptied again, so that
        # pooling from the run must refill it, in the order the judge's grades suggest.
        import_files(test_set, pool=ImportFile(io.BytesIO(trec({"q1": list(corpus)})), "p.trec"))
        judges.run_judge(test_set, judge, "all")
        db.session.execute(sa.delete(Pair))
        tallies.recount_pool(test_set.id)
        db.session.commit()
    result = runner.invoke(args=["pool", "pool", "--depth", "4", "--order-by-judge", "gpt"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        order = [
            docid
            for (docid,) in db.session.execute(
                sa.select(Chunk.docid).join(Pair, Pair.chunk_id == Chunk.id).order_by(Pair.priority)
            )
        ]
    # impact = grade / log2(rank + 1): e2 3/1.585=1.89, e4 2/2.32=0.86, e1 1/1=1; e3 unparsed last.
    assert order == ["e2", "e1", "e4", "e3"]


def test_dashboards_switch_to_machine_labels(
    app: Flask, as_admin, runner: FlaskCliRunner, judged_set: str, fast_retries: None
) -> None:
    _run(runner, "--pairs", "all")
    with app.app_context():
        test_set = testsets.require_by_name("mj")
        ts_id, run_id = test_set.id, run_service.require_run(test_set, "A").id
    page = as_admin.get(f"/test-sets/{ts_id}/dashboard/runs/{run_id}").get_data(as_text=True)
    assert 'value="machine:gpt"' in page and 'value="fill:gpt"' in page  # offered like gain
    machine = as_admin.get(
        f"/test-sets/{ts_id}/dashboard/runs/{run_id}?labels=machine:gpt"
    ).get_data(as_text=True)
    assert "labels <strong>machine:gpt</strong>" in machine
    q1 = (3 + 1 / L3 + 2 / L5) / (3 + 2 / L3 + 1 / 2)
    assert f"{q1:.4f}" in machine  # q1's NDCG@10 under the judge's grades


def test_machine_label_scores_follow_the_judges_answers(
    app: Flask,
    runner: FlaskCliRunner,
    judged_set: str,
    llm: FakeLLM,
    fast_retries: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Failures answered again move the scores; a new process reads them from the store."""
    from ndcg_labeler.models import RunScore
    from ndcg_labeler.services.live import figures

    port = llm.port
    llm.stop()
    _run(runner, "--pairs", "all")  # every answer failed: no machine grade at all
    machine = live.ScoreOptions(labels="machine:gpt")
    with app.app_context():
        run = run_service.require_run(testsets.require_by_name("mj"), "A")
        assert live.score_run(run, machine).queries_in_mean == 0
    llm.start(port)
    llm.slow_seconds = 0.0
    _run(runner, "--pairs", "all")  # the failures are asked again and replaced
    with app.app_context():
        run = run_service.require_run(testsets.require_by_name("mj"), "A")
        answered = live.score_run(run, machine)
        app.extensions.pop("ndcg_live_scores")  # as a freshly started process
        with monkeypatch.context() as patch:
            patch.setattr(figures, "evaluate_flat", None)  # a full scoring would fail
            assert live.score_run(run, machine).to_json() == answered.to_json()
        keys = db.session.scalars(
            sa.select(RunScore.settings).where(
                RunScore.run_id == run.id, RunScore.settings.contains("machine:gpt@")
            )
        ).all()
    # q1: d1 3, d2 1, d3 unreadable, d4 2, as ranked; ideal 3, 2, 1. q2: d5 2 first.
    q1 = (3 + 1 / L3 + 2 / L5) / (3 + 2 / L3 + 1 / 2)
    assert answered.ndcg.tolist() == pytest.approx([q1, 1.0])
    assert len(keys) == 1  # the row of the judge's earlier answers is gone


def test_a_pair_whose_prompt_goes_over_a_limit_fails_alone(
    app: Flask, runner: FlaskCliRunner, judged_set: str, llm: FakeLLM, fast_retries: None
) -> None:
    # Accepted when saved (the sample passage is short); only d7's passage sets it off.
    template = '{% if "BROKEN" in passage %}{{ passage * 100000 }}{% endif %}Passage: {{ passage }}'
    with app.app_context():
        judges.add_judge("limited", llm.url, "m", prompt_template=template, timeout=0.8)
    args = ["judges", "run", "mj", "--judge", "limited", "--json", "--pairs", "all"]
    result = runner.invoke(args=args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["requested"] == 7
    with app.app_context():
        rows = dict(
            db.session.execute(
                sa.select(Chunk.docid, MachineJudgment.error).join(
                    Chunk, Chunk.id == MachineJudgment.chunk_id
                )
            ).all()
        )
    assert "prompt template is over a limit: repeating a sequence" in rows["d7"]
    assert rows["d1"] == ""  # the other pairs were asked as usual
    assert not any("BROKEN" in str(r["body"]) for r in llm.requests)  # never sent
