"""`flask run upload|score`: exact JSON, trec_eval -q layout checked against trec_eval, errors."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner
from scipy import stats

from ndcg_labeler.cli import runs as cli_runs
from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run
from ndcg_labeler.services import runs as run_service
from tests.factory import build_test_set
from tests.paths import CONFORMANCE
from tests.runs.helpers import QRELS, QUERIES, RUN

L3 = math.log2(3)
CHECKED = re.compile(
    r"^(ndcg|ndcg_cut_\d+|P_\d+|recall_\d+|recip_rank|map|num_rel|num_rel_ret|num_ret|num_q)$"
)


def invoke(runner: FlaskCliRunner, *args: str):
    return runner.invoke(args=list(args))


@pytest.fixture
def uploaded(app: Flask, runner: FlaskCliRunner, tmp_path: Path) -> FlaskCliRunner:
    with app.app_context():
        build_test_set("hr", QUERIES, QRELS)
        db.session.remove()
    path = tmp_path / "bm25.trec"
    path.write_text(RUN)
    result = invoke(runner, "run", "upload", "hr", str(path), "--name", "bm25")
    assert result.exit_code == 0, result.output
    assert "Uploaded run 'bm25'" in result.output
    assert "3 queries, 6 ranked entries (format trec, depth 1000)" in result.output
    assert "no ranking for 1 test-set query; it scores 0" in result.output
    return runner


def test_upload_without_a_name_uses_the_file_name(
    app: Flask, uploaded: FlaskCliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "dense-e5.run"
    path.write_text(RUN)
    result = invoke(uploaded, "run", "upload", "hr", str(path))
    assert result.exit_code == 0, result.output
    assert "Uploaded run 'dense-e5'" in result.output


def test_upload_stores_the_run(app: Flask, uploaded: FlaskCliRunner) -> None:
    with app.app_context():
        run = db.session.scalar(sa.select(Run).where(Run.name == "bm25"))
        assert (run.num_queries, run.num_entries, run.depth) == (3, 6, 1000)


def test_upload_with_depth_and_notes(app: Flask, uploaded: FlaskCliRunner, tmp_path: Path):
    path = tmp_path / "r.trec"
    path.write_text(RUN)
    result = invoke(
        uploaded,
        "run",
        "upload",
        "hr",
        str(path),
        "--name",
        "top1",
        "--depth",
        "1",
        "--notes",
        "first only",
    )
    assert result.exit_code == 0, result.output
    with app.app_context():
        run = db.session.scalar(sa.select(Run).where(Run.name == "top1"))
        assert (run.num_entries, run.notes) == (3, "first only")


def test_score_json_is_exact(uploaded: FlaskCliRunner) -> None:
    result = invoke(uploaded, "run", "score", "hr", "bm25", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert list(data) == [
        "testset",
        "run",
        "k",
        "gain",
        "ideal",
        "judged_only",
        "aggregation",
        "labels",
        "mean_ndcg",
        "n",
        "ci_low",
        "ci_high",
        "ci_method",
        "ci_reason",
        "mean_if_unjudged_top",
        "mean_condensed",
        "top_grade",
        "queries_in_mean",
        "queries_undefined",
        "queries_missing",
        "mean_trec_all",
        "queries_trec_all",
        "queries",
    ]
    assert (data["testset"], data["run"], data["k"]) == ("hr", "bm25", 10)
    assert (data["gain"], data["ideal"]) == ("linear", "judged")
    q1_dcg, q1_idcg = 2 + 3 / 2, 3 + 3 / L3 + 1
    q2_dcg = 1 / L3
    # q3 has no judgments (undefined, null); q4 is missing from the run (0, and in the mean).
    assert data["queries_in_mean"] == 3
    assert data["mean_ndcg"] == pytest.approx((q1_dcg / q1_idcg + q2_dcg + 0.0) / 3)
    assert (data["labels"], data["aggregation"], data["judged_only"]) == ("human", "median", False)
    # trec_eval's all: the judged queries in the run (q1, q2); q4 is not in the run.
    assert (data["queries_undefined"], data["queries_missing"]) == (1, 1)
    assert data["queries_trec_all"] == 2
    assert data["mean_trec_all"] == pytest.approx((q1_dcg / q1_idcg + q2_dcg) / 2)
    by_qid = {q["qid"]: q for q in data["queries"]}
    assert list(by_qid["q1"]) == [
        "qid",
        "ndcg",
        "ndcg_if_unjudged_top",
        "ndcg_condensed",
        "dcg",
        "idcg",
        "gap",
        "judged_at_k",
        "num_rel",
    ]
    assert by_qid["q1"]["dcg"] == pytest.approx(q1_dcg)
    assert by_qid["q1"]["idcg"] == pytest.approx(q1_idcg)
    assert by_qid["q1"]["gap"] == pytest.approx(q1_idcg - q1_dcg)
    assert by_qid["q1"]["judged_at_k"] == pytest.approx(0.2)
    assert by_qid["q1"]["num_rel"] == 3
    assert by_qid["q3"]["ndcg"] is None
    assert by_qid["q4"]["ndcg"] == 0.0
    # Largest gap first (q1 2.39, q4 2.0, q2 0.37, q3 0).
    assert [q["qid"] for q in data["queries"]] == ["q1", "q4", "q2", "q3"]


def test_score_json_options(uploaded: FlaskCliRunner) -> None:
    result = invoke(
        uploaded,
        "run",
        "score",
        "hr",
        "bm25",
        "--k",
        "1",
        "--gain",
        "exp",
        "--ideal",
        "retrieved",
        "--json",
    )
    data = json.loads(result.output)
    assert (data["k"], data["gain"], data["ideal"]) == (1, "exp", "retrieved")
    q1 = next(q for q in data["queries"] if q["qid"] == "q1")
    # Top 1 is b (grade 2): gain 3; best retrieved is a (grade 3): gain 7.
    assert (q1["dcg"], q1["idcg"]) == (pytest.approx(3.0), pytest.approx(7.0))


def test_score_table(uploaded: FlaskCliRunner) -> None:
    result = invoke(uploaded, "run", "score", "hr", "bm25")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    # The pages' words: "aggregation median" beside "mean NDCG@10" read as a median of NDCG.
    assert lines[1] == "NDCG@10, gain linear, ideal judged, grades combined by median"
    assert "mean NDCG@10 = " in lines[2]
    assert "over 3 of 4 queries (1 undefined: IDCG 0; 1 missing from the run" in lines[2]
    trec_all = ((2 + 1.5) / (3 + 3 / L3 + 1) + 1 / L3) / 2
    assert lines[3].startswith(f"trec_eval all ndcg_cut_10 = {trec_all:.4f} over 2 queries (")
    assert lines[4].startswith("95% t interval [")
    assert lines[5].startswith("if every unjudged chunk of the top 10 had grade 3: ")
    assert lines[8].startswith("q1")
    assert "missing from run" in result.output


def test_score_trec_layout(uploaded: FlaskCliRunner) -> None:
    result = invoke(uploaded, "run", "score", "hr", "bm25", "--trec")
    lines = [line.split("\t") for line in result.output.splitlines()]
    values = {(m.strip(), q): v for m, q, v in lines}
    # Only queries with judgments that the run has (q1, q2), as trec_eval without -c.
    assert {q for _, q in values} == {"q1", "q2", "all"}
    assert values[("ndcg_cut_10", "q1")] == f"{(2 + 1.5) / (3 + 3 / L3 + 1):.4f}"
    assert values[("num_q", "all")] == "2"
    assert values[("num_ret", "all")] == "5"
    assert values[("runid", "all")] == "bm25"
    assert lines[0][0] == "num_ret" + " " * 15  # trec_eval pads names to 22 characters


def import_conformance(app: Flask, qrels: str, name: str) -> set[str]:
    """A test set holding trec_eval's qrels file as judgments; returns its qids."""
    text = (CONFORMANCE / qrels).read_text()
    rows = [line.split() for line in text.splitlines() if line.strip()]
    qids = sorted({r[0] for r in rows})
    with app.app_context():
        build_test_set(
            name, {q: f"topic {q}" for q in qids}, [(r[0], r[2], int(r[3])) for r in rows]
        )
        db.session.remove()
    return set(qids)


def expected(name: str) -> dict[tuple[str, str], str]:
    out = {}
    for line in (CONFORMANCE / name).read_text().splitlines():
        measure, qid, value = line.split()
        if CHECKED.match(measure):
            out[(measure, qid)] = value
    return out


@pytest.mark.parametrize(
    ("qrels", "results", "output"),
    [
        ("qrels.test", "results.test", "out.test.aq"),
        ("qrels.comment.test", "results.comment.test", "out.comment.test"),
    ],
)
def test_score_trec_equals_trec_eval(
    app: Flask, runner: FlaskCliRunner, qrels: str, results: str, output: str
) -> None:
    import_conformance(app, qrels, "conformance")
    upload = invoke(
        runner, "run", "upload", "conformance", str(CONFORMANCE / results), "--name", "STANDARD"
    )
    assert upload.exit_code == 0, upload.output
    result = invoke(runner, "run", "score", "conformance", "STANDARD", "--trec")
    assert result.exit_code == 0, result.output
    ours = {}
    for line in result.output.splitlines():
        measure, qid, value = line.split("\t")
        ours[(measure.strip(), qid)] = value
    want = expected(output)
    assert want, "no expected values read"
    compared = 0
    for key, value in want.items():
        if key in ours:
            assert ours[key] == value, key
            compared += 1
    # Everything trec_eval printed for these measures, we printed too (k=10 adds no extra).
    assert compared == len(want)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "score", "nope", "bm25"], "Error: unknown test set 'nope'"),
        (["run", "score", "hr", "nope"], "Error: test set 'hr' has no run named 'nope'"),
        (
            ["run", "score", "hr", "bm25", "--k", "ten"],
            "Error: k must be a whole number from 1 to 100000, not 'ten'",
        ),
        (["run", "score", "hr", "bm25", "--k", "0"], "Error: k must be a whole number from 1"),
        (["run", "score", "hr", "bm25", "--gain", "log"], "Error: gain must be one of"),
        (["run", "score", "hr", "bm25", "--json", "--trec"], "Error: choose one of --json"),
        (["run", "upload", "hr", "/nonexistent.trec", "--name", "x"], "No such file"),
        (["run", "upload", "hr", "/dev/null", "--name", "x"], "Error: null: file is empty"),
    ],
)
def test_one_line_errors(uploaded: FlaskCliRunner, args: list[str], message: str) -> None:
    result = invoke(uploaded, *args)
    assert result.exit_code == 1
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_bad_file_is_a_line_numbered_one_line_error(
    uploaded: FlaskCliRunner, app: Flask, tmp_path: Path
) -> None:
    path = tmp_path / "bad.trec"
    path.write_text("q1 Q0 a 1 1.0 s\nq1 Q0 b 2 x s\n")
    result = invoke(uploaded, "run", "upload", "hr", str(path), "--name", "bad")
    assert result.exit_code == 1
    assert result.output.strip() == "Error: bad.trec:2: score 'x' is not a number"
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Run)) == 1


def test_duplicate_name_via_cli(uploaded: FlaskCliRunner, tmp_path: Path) -> None:
    path = tmp_path / "again.trec"
    path.write_text(RUN)
    result = invoke(uploaded, "run", "upload", "hr", str(path), "--name", "bm25")
    assert result.exit_code == 1
    assert "already has a run named 'bm25'" in result.output


def test_list_and_delete(uploaded: FlaskCliRunner) -> None:
    listed = invoke(uploaded, "run", "list", "hr")
    assert listed.output.startswith("bm25\t3 queries\t6 entries\tNDCG@10 ")
    deleted = invoke(uploaded, "run", "delete", "hr", "bm25")
    assert deleted.exit_code == 0
    emptied = invoke(uploaded, "run", "list", "hr")
    assert (emptied.stdout, emptied.stderr) == (
        "",
        "'hr' has no runs yet: flask run upload adds one.\n",
    )


# The per-query NDCG@10 of bm25 in the mean: q1, q2, and q4 (missing from the run: 0).
BM25 = [(2 + 3 / 2) / (3 + 3 / L3 + 1), 1 / L3, 0.0]


def _t_interval(values: list[float]) -> tuple[float, float]:
    """The independent oracle: scipy's t interval of the mean."""
    low, high = stats.t.interval(
        0.95, len(values) - 1, loc=sum(values) / len(values), scale=stats.sem(values)
    )
    return float(low), float(high)


def test_score_json_carries_the_interval(uploaded: FlaskCliRunner) -> None:
    data = json.loads(invoke(uploaded, "run", "score", "hr", "bm25", "--json").output)
    low, high = _t_interval(BM25)
    assert (data["n"], data["ci_method"], data["ci_reason"]) == (3, "t", None)
    assert data["ci_low"] == pytest.approx(low, rel=1e-10)
    assert data["ci_high"] == pytest.approx(high, rel=1e-10)


def test_list_shows_each_mean_with_its_interval(uploaded: FlaskCliRunner) -> None:
    low, high = _t_interval(BM25)
    line = invoke(uploaded, "run", "list", "hr").output.splitlines()[0].split("\t")
    assert line[3] == f"NDCG@10 {sum(BM25) / 3:.4f} over 3 defined queries"
    assert line[4] == f"95% t interval [{low:.4f}, {high:.4f}] n=3"
    assert line[5].startswith(f"trec_eval all ndcg_cut_10 = {sum(BM25[:2]) / 2:.4f} over 2 queries")
    table = invoke(uploaded, "run", "score", "hr", "bm25").output.splitlines()
    assert table[4] == line[4]


def test_list_json(uploaded: FlaskCliRunner) -> None:
    result = invoke(uploaded, "run", "list", "hr", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    low, high = _t_interval(BM25)
    assert data["testset"] == "hr"
    (row,) = data["runs"]
    assert list(row) == [
        "run",
        "queries",
        "entries",
        "k",
        "mean_ndcg",
        "n",
        "ci_low",
        "ci_high",
        "ci_method",
        "ci_reason",
        "mean_if_unjudged_top",
        "mean_condensed",
        "top_grade",
        "queries_in_mean",
        "queries_undefined",
        "queries_missing",
        "mean_trec_all",
        "queries_trec_all",
        "tags",
        "pinned",
        "archived",
        "kept_depth",
    ]
    assert (row["queries_trec_all"], row["queries_undefined"]) == (2, 1)
    assert row["mean_trec_all"] == pytest.approx(sum(BM25[:2]) / 2)
    assert (row["run"], row["queries"], row["entries"], row["k"]) == ("bm25", 3, 6, 10)
    assert row["mean_ndcg"] == pytest.approx(sum(BM25) / 3)
    assert (row["n"], row["queries_in_mean"], row["ci_method"]) == (3, 3, "t")
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low), pytest.approx(high))


def test_one_query_has_no_interval_and_says_why(app: Flask, runner: FlaskCliRunner) -> None:
    with app.app_context():
        test_set = build_test_set("one", {"q1": "leave"}, [("q1", "a", 1)])
        run_service.upload_run(test_set, io.BytesIO(b"q1 Q0 a 1 1.0 s\n"), "r", "r", None)
        db.session.remove()
    row = json.loads(invoke(runner, "run", "list", "one", "--json").output)["runs"][0]
    assert (row["mean_ndcg"], row["n"], row["ci_low"], row["ci_high"]) == (1.0, 1, None, None)
    assert row["ci_reason"] == "one query: an interval needs at least 2"
    scored = json.loads(invoke(runner, "run", "score", "one", "r", "--json").output)
    assert (scored["n"], scored["ci_low"], scored["ci_high"]) == (1, None, None)
    line = invoke(runner, "run", "list", "one").output.split("\t")
    assert line[4].strip() == "no 95% interval: one query: an interval needs at least 2"


def _runs(app: Flask) -> list[str]:
    with app.app_context():
        return list(db.session.scalars(sa.select(Run.name)))


def test_delete_on_a_terminal_asks_first_naming_the_run_and_its_size(
    app: Flask, uploaded: FlaskCliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A typo in `flask run delete` used to take the run at once: on a terminal it now asks."""
    monkeypatch.setattr(cli_runs, "stdin_is_terminal", lambda: True, raising=False)
    kept = uploaded.invoke(args=["run", "delete", "hr", "bm25"], input="n\n")
    # The fixture's run: q1 (3 entries), q2 (2), q3 (1).
    question = "Delete run 'bm25' of test set 'hr' (3 queries, 6 ranked entries)? [y/N]: n"
    assert question in kept.stderr
    assert kept.exit_code == 1 and "Aborted" in kept.stderr
    assert _runs(app) == ["bm25"]
    deleted = uploaded.invoke(args=["run", "delete", "hr", "bm25"], input="y\n")
    assert deleted.exit_code == 0, deleted.output
    assert deleted.stdout == "Deleted run 'bm25' of test set 'hr'.\n"
    assert _runs(app) == []


@pytest.mark.parametrize("flag", ["--yes", "-y"])
def test_delete_with_yes_does_not_ask(
    app: Flask, uploaded: FlaskCliRunner, monkeypatch: pytest.MonkeyPatch, flag: str
) -> None:
    monkeypatch.setattr(cli_runs, "stdin_is_terminal", lambda: True, raising=False)
    deleted = uploaded.invoke(args=["run", "delete", "hr", "bm25", flag], input="")
    assert deleted.exit_code == 0, deleted.output
    assert "Delete run" not in deleted.output
    assert _runs(app) == []


def test_delete_from_a_script_does_not_ask(app: Flask, uploaded: FlaskCliRunner) -> None:
    """Without a terminal on stdin (cron, CI) the delete goes ahead, as it always did."""
    deleted = uploaded.invoke(args=["run", "delete", "hr", "bm25"], input="n\n")
    assert deleted.exit_code == 0, deleted.output
    assert (deleted.stdout, deleted.stderr) == ("Deleted run 'bm25' of test set 'hr'.\n", "")
    assert _runs(app) == []
