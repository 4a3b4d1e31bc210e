"""Small-sample guards on the calibration page and `judges agreement`: figures below the stated
minimums are withheld; above them they match sklearn, scipy and pytrec_eval."""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterator

import pytest
import pytrec_eval
from flask import Flask
from flask.testing import FlaskCliRunner
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from ndcg_labeler.services import judges
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.imports import ImportFile, import_files
from tests.factory import build_test_set, trec
from tests.judges.fake_llm import FakeLLM

# (human grade, machine grade) of docs a, b, c of each query; the fake LLM answers the grade
# written in the passage (ANSWERn).
GRADES = {
    "q1": ((3, 3), (1, 2), (0, 0)),
    "q2": ((2, 1), (0, 0), (1, 1)),
    "q3": ((1, 1), (3, 3), (0, 1)),
    "q4": ((0, 0), (2, 3), (2, 2)),
    "q5": ((3, 2), (3, 3), (1, 0)),
}
ORDERS = list(itertools.permutations("abc"))


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    server = FakeLLM().start()
    yield server
    server.stop()


def _docid(qid: str, letter: str) -> str:
    return f"{qid}{letter}"


def _runs() -> dict[str, dict[str, list[str]]]:
    """Five runs, each ranking every query's three docs in its own order."""
    return {
        f"r{i}": {
            qid: [_docid(qid, x) for x in ORDERS[(i * 2 + j) % 6]] for j, qid in enumerate(GRADES)
        }
        for i in range(5)
    }


def _qrels(side: int) -> dict[str, dict[str, int]]:
    return {
        qid: {_docid(qid, x): grades[n][side] for n, x in enumerate("abc")}
        for qid, grades in GRADES.items()
    }


def _ndcg3(qrels: dict[str, dict[str, int]], ranking: dict[str, list[str]]) -> float:
    """Mean NDCG@3 by pytrec_eval (trec_eval's measure), over the five queries."""
    run = {q: {d: float(10 - r) for r, d in enumerate(docs)} for q, docs in ranking.items()}
    found = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.3"}).evaluate(run)
    return sum(v["ndcg_cut_3"] for v in found.values()) / len(found)


def _agreement(runner: FlaskCliRunner, *args: str) -> dict:
    result = runner.invoke(args=["judges", "agreement", "cal", "--judge", "gpt", "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _build(
    app: Flask, llm: FakeLLM, runs: dict[str, dict[str, list[str]]], only: str | None = None
) -> None:
    """The test set `cal`; with `only`, the judge gives a readable grade to that doc alone."""
    corpus = {
        _docid(qid, x): f"ANSWER{grades[n][1]} passage {qid}{x}"
        for qid, grades in GRADES.items()
        for n, x in enumerate("abc")
    }
    if only is not None:
        corpus = {d: text if d == only else "GARBAGE" for d, text in corpus.items()}
    qrels = [(q, d, g) for q, docs in _qrels(0).items() for d, g in docs.items()]
    with app.app_context():
        test_set = build_test_set("cal", {q: f"query {q}" for q in GRADES}, qrels, corpus=corpus)
        pool = {q: [_docid(q, x) for x in "abc"] for q in GRADES}
        import_files(test_set, pool=ImportFile(io.BytesIO(trec(pool)), "pool.trec"))
        for name, ranking in runs.items():
            run_service.upload_run(test_set, io.BytesIO(trec(ranking)), "r.trec", name, None)
        judges.add_judge("gpt", llm.url, "fake-model", timeout=2)


def test_enough_evidence_shows_every_figure_as_the_references_compute_it(
    app: Flask, runner: FlaskCliRunner, llm: FakeLLM
) -> None:
    runs = _runs()
    _build(app, llm, runs)
    result = runner.invoke(args=["judges", "run", "cal", "--judge", "gpt", "--pairs", "all"])
    assert result.exit_code == 0, result.output
    found = _agreement(runner, "--k", "3")
    assert found["withheld"] == {} and found["pairs"] == 15
    human = [g[0] for grades in GRADES.values() for g in grades]
    machine = [g[1] for grades in GRADES.values() for g in grades]
    quadratic = cohen_kappa_score(human, machine, labels=[0, 1, 2, 3], weights="quadratic")
    assert found["kappa_quadratic"] == pytest.approx(quadratic)
    binary = cohen_kappa_score([int(h >= 1) for h in human], [int(m >= 1) for m in machine])
    assert found["kappa_binary"] == pytest.approx(binary)
    human_means = [_ndcg3(_qrels(0), runs[name]) for name in runs]
    machine_means = [_ndcg3(_qrels(1), runs[name]) for name in runs]
    rows = {r["run"]: r for r in found["runs"]}
    assert [rows[n]["human_mean_ndcg"] for n in runs] == pytest.approx(human_means)
    assert [rows[n]["machine_mean_ndcg"] for n in runs] == pytest.approx(machine_means)
    assert found["kendall_tau"] == pytest.approx(kendalltau(human_means, machine_means).statistic)
    assert found["minimums"] == {"pairs": 10, "runs": 5, "queries": 5, "judged_at_k": 0.5}


def test_one_pair_and_three_runs_withhold_the_figures_and_say_why(
    app: Flask, runner: FlaskCliRunner, llm: FakeLLM, as_admin
) -> None:
    runs = dict(list(_runs().items())[:3])
    _build(app, llm, runs, only="q1a")  # the one machine label: q1a graded 3, as people did
    result = runner.invoke(args=["judges", "run", "cal", "--judge", "gpt", "--pairs", "all"])
    assert result.exit_code == 0, result.output
    found = _agreement(runner)
    assert found["pairs"] == 1
    for key in ("kappa_quadratic", "kappa_binary", "mean_difference"):
        if key in found["withheld"]:
            assert found[key] is None
            assert found["withheld"][key]["reason"] == (
                "from 1 compared pair; at least 10 are needed"
            )
    assert found["mean_difference"] is None and "mean_difference" in found["withheld"]
    # Each run's machine mean rests on one label (one query of five): withheld.
    for row in found["runs"]:
        assert row["machine_mean_ndcg"] is None and row["machine_queries"] == 1
        assert row["withheld"]["machine_mean_ndcg"]["reason"].startswith(
            "not enough labels: 1 defined query, mean judged@10 "
        )
    assert found["kendall_tau"] is None
    # The text output names what was withheld.
    text = runner.invoke(args=["judges", "agreement", "cal", "--judge", "gpt"]).output
    assert "mean_difference withheld: from 1 compared pair; at least 10 are needed" in text
    # The page states the minimums and shows no number where a figure is withheld.
    with app.app_context():
        from ndcg_labeler.services import testsets

        ts_id = testsets.require_by_name("cal").id
        judge_id = judges.require_judge("gpt").id
    page = as_admin.get(f"/test-sets/{ts_id}/judges/{judge_id}").get_data(as_text=True)
    assert "κ and the mean difference need at least 10 compared pairs" in page
    assert "Kendall's τ needs at least 5 runs whose two means are shown" in page
    assert page.count("withheld: not enough labels: 1 defined query") == 3
    assert "withheld: from 1 compared pair; at least 10 are needed" in page


def test_agreement_says_how_many_judge_answers_failed_as_the_page_does(
    app: Flask, runner: FlaskCliRunner, llm: FakeLLM
) -> None:
    # 15 pairs asked; the judge gives a readable grade to q1a alone: 14 unparsed.
    _build(app, llm, dict(list(_runs().items())[:1]), only="q1a")
    result = runner.invoke(args=["judges", "run", "cal", "--judge", "gpt", "--pairs", "all"])
    assert result.exit_code == 0, result.output
    note = "14 of 15 judge answers failed or were unparsed: counted as unjudged (not relevant)"
    found = _agreement(runner)
    assert found["audit"]["judge_failed"] == 14
    assert found["audit"]["judge_answers"] == 15
    assert found["audit"]["judge_failed_note"] == note
    assert found["audit"]["status"] == "0 of 5 queries audited"
    text = runner.invoke(args=["judges", "agreement", "cal", "--judge", "gpt"]).output
    assert note in text
    assert "0 of 5 queries audited" in text
    # A figure withheld or undefined reads as a dash, as on the page, not as Python's None.
    assert "None" not in text
    assert "mean difference —," in text and "Kendall's τ of the runs —" in text


def test_agreement_without_failed_answers_says_none_failed(
    app: Flask, runner: FlaskCliRunner, llm: FakeLLM
) -> None:
    _build(app, llm, dict(list(_runs().items())[:1]))
    result = runner.invoke(args=["judges", "run", "cal", "--judge", "gpt", "--pairs", "all"])
    assert result.exit_code == 0, result.output
    found = _agreement(runner)
    assert found["audit"]["judge_failed"] == 0 and found["audit"]["judge_answers"] == 15
    assert found["audit"]["judge_failed_note"] is None
    text = runner.invoke(args=["judges", "agreement", "cal", "--judge", "gpt"]).output
    assert "failed or were unparsed" not in text
