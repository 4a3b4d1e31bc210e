"""`flask run score --measure`: ir_measures and trec_eval names as more columns and JSON keys,
checked by hand on the small HR set and against what trec_eval printed for its own suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from tests.factory import build_test_set
from tests.paths import CONFORMANCE
from tests.runs.helpers import QRELS, QUERIES, RUN


@pytest.fixture
def uploaded(app: Flask, runner: FlaskCliRunner, tmp_path: Path) -> FlaskCliRunner:
    with app.app_context():
        build_test_set("hr", QUERIES, QRELS)
        db.session.remove()
    path = tmp_path / "bm25.trec"
    path.write_text(RUN)
    result = runner.invoke(args=["run", "upload", "hr", str(path), "--name", "bm25"])
    assert result.exit_code == 0, result.output
    return runner


def score(runner: FlaskCliRunner, *args: str):
    return runner.invoke(args=["run", "score", *args])


def test_measures_are_added_to_the_json_by_hand(uploaded: FlaskCliRunner) -> None:
    result = score(uploaded, "hr", "bm25", "--json", "--measure", "P(rel=3)@3, bpref")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    # q1 ranks b (2), z (unjudged), a (3); judged a 3, b 2, c 0, d 3: P(rel=3)@3 = 1/3.
    # bpref: R = 3, no judged non-relevant above b or a: (1 + 1) / 3. q2: x relevant, nothing
    # judged above it: 1. q3 has no grade: undefined. q4 is missing from the run: 0.
    per_query = {q["qid"]: q["measures"] for q in out["queries"]}
    assert per_query["q1"]["P(rel=3)@3"] == pytest.approx(1 / 3)
    assert per_query["q1"]["bpref"] == pytest.approx(2 / 3)
    assert per_query["q2"] == {"P(rel=3)@3": 0.0, "bpref": 1.0}
    assert per_query["q3"]["bpref"] is None and per_query["q4"]["bpref"] == 0.0
    summary = {m["measure"]: m for m in out["measures"]}
    assert summary["bpref"]["mean"] == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert summary["bpref"]["queries_defined"] == 3
    assert summary["P(rel=3)@3"] == {
        "measure": "P(rel=3)@3",
        "canonical": "P(rel=3)@3",
        "trec_eval": None,
        "mean": pytest.approx(1 / 12),
        "queries_defined": 4,
    }


def test_measures_become_columns_and_the_default_table_is_unchanged(
    uploaded: FlaskCliRunner,
) -> None:
    plain = score(uploaded, "hr", "bm25").output
    wide = score(uploaded, "hr", "bm25", "--measure", "ndcg_cut_10", "--measure", "Rprec").output
    assert "Rprec" not in plain and "measures" not in score(uploaded, "hr", "bm25", "--json").output
    header = next(line for line in wide.splitlines() if line.startswith("qid"))
    assert header.endswith("ndcg_cut_10      Rprec  note")
    assert "mean Rprec = " in wide and "over 3 of 4 queries" in wide
    # The ndcg_cut_10 column repeats the NDCG@10 one.
    for line in wide.splitlines():
        if line.startswith("q1"):
            cells = line.split()
            assert cells[1] == cells[9]


def test_bad_names_and_trec_layout(uploaded: FlaskCliRunner) -> None:
    bad = score(uploaded, "hr", "bm25", "--measure", "nDCG(rel=2)@5")
    assert bad.exit_code != 0 and "takes no rel=R" in bad.output and "bpref" in bad.output
    trec = score(uploaded, "hr", "bm25", "--trec", "--measure", "bpref")
    assert trec.exit_code != 0 and "drop --measure" in trec.output


# trec_eval -m all_trec -q qrels.test results.test (out.test.aq) printed these per topic.
PRINTED = {
    "Rprec": "Rprec",
    "bpref": "bpref",
    "infAP": "infAP",
    "Success@5": "success_5",
    "success_10": "success_10",
    "AP@100": "map_cut_100",
    "Judged@10": None,  # trec_eval's unj_10 is 1 - Judged@10
}


def test_new_measures_through_the_app_equal_what_trec_eval_printed(
    app: Flask, runner: FlaskCliRunner
) -> None:
    rows = [line.split() for line in (CONFORMANCE / "qrels.test").read_text().splitlines()]
    with app.app_context():
        build_test_set(
            "conformance",
            {q: f"topic {q}" for q in sorted({r[0] for r in rows})},
            [(r[0], r[2], int(r[3])) for r in rows],
        )
        db.session.remove()
    path = str(CONFORMANCE / "results.test")
    upload = runner.invoke(args=["run", "upload", "conformance", path, "--name", "STANDARD"])
    assert upload.exit_code == 0, upload.output
    args = ["conformance", "STANDARD", "--json"]
    for name in PRINTED:
        args += ["--measure", name]
    out = json.loads(score(runner, *args).output)
    printed = {}
    for line in (CONFORMANCE / "out.test.aq").read_text().splitlines():
        measure, qid, value = line.split()
        printed[(measure, qid)] = value
    for query in out["queries"]:
        for name, trec in PRINTED.items():
            value = query["measures"][name]
            if trec is None:
                assert f"{1 - value:.4f}" == printed[("unj_10", query["qid"])]
            else:
                assert f"{value:.4f}" == printed[(trec, query["qid"])], (name, query["qid"])
