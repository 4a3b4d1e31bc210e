"""`?measure=` on the CSV exports (queries.csv, compare.csv): columns named as asked for.

The data are trec_eval's own test files (qrels.rel_level graded 0–4, results.test); expected
values are pytrec_eval's on the same qrels and runs, never our own output.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytrec_eval
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.services import runs as run_service
from tests.factory import build_test_set

DATA = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
# Name as asked -> (pytrec_eval measure, relevance level).
MEASURES = {
    "P(rel=2)@5": ("P_5", 2),
    "bpref": ("bpref", 1),
    "ndcg_cut_10": ("ndcg_cut_10", 1),
    "RR": ("recip_rank", 1),
}
OLD_RUN_HEADER = (
    "qid,query,ndcg,dcg,idcg,gap,one_minus_ndcg,judged_at_k,num_rel,missing,"
    "ndcg_if_unjudged_top,ndcg_condensed"
)


def _qrels() -> dict[str, dict[str, int]]:
    """qrels.rel_level with trec_eval's negative grades as 0, as the import stores them."""
    qrels: dict[str, dict[str, int]] = {}
    for line in (DATA / "qrels.rel_level").read_text().splitlines():
        qid, _, docid, grade = line.split()
        qrels.setdefault(qid, {})[docid] = max(0, int(grade))
    return qrels


def _runs() -> dict[str, dict[str, dict[str, float]]]:
    """results.test as run A; run B is A with every score negated (its ranking reversed)."""
    a: dict[str, dict[str, float]] = {}
    for line in (DATA / "results.test").read_text().splitlines():
        qid, _, docid, _, score, _ = line.split()
        a.setdefault(qid, {})[docid] = float(score)
    b = {q: {d: -s for d, s in docs.items()} for q, docs in a.items()}
    return {"A": a, "B": b}


def _trec(run: dict[str, dict[str, float]]) -> bytes:
    lines = (f"{q} Q0 {d} 0 {s!r} x\n" for q, docs in run.items() for d, s in docs.items())
    return "".join(lines).encode()


def _expected(run: dict[str, dict[str, float]], name: str) -> dict[str, float]:
    measure, level = MEASURES[name]
    evaluator = pytrec_eval.RelevanceEvaluator(_qrels(), {measure}, relevance_level=level)
    return {q: v[measure] for q, v in evaluator.evaluate(run).items()}


def _rows(body: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(body.decode())))


@dataclass
class Suite:
    """The test set's id and its runs' ids."""

    test_set_id: int
    run_ids: dict[str, int]

    def url(self, tail: str) -> str:
        return f"/test-sets/{self.test_set_id}/dashboard/export/{tail}"


@pytest.fixture
def suite(app: Flask) -> Iterator[Suite]:
    qrels = _qrels()
    with app.app_context():
        test_set = build_test_set(
            "trec",
            {q: f"topic {q}" for q in qrels},
            [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
            scale=4,
        )
        ids = {
            name: run_service.upload_run(
                test_set, io.BytesIO(_trec(run)), f"{name}.trec", name, None
            ).id
            for name, run in _runs().items()
        }
        suite = Suite(test_set.id, ids)
        db.session.remove()
    yield suite


def test_queries_csv_adds_the_named_measures(as_admin: FlaskClient, suite: Suite) -> None:
    run_id = suite.run_ids["A"]
    plain = as_admin.get(suite.url(f"runs/{run_id}/queries.csv"))
    assert plain.status_code == 200
    # Without ?measure= (or with an empty one, as a blank form field sends) nothing changes.
    assert plain.get_data(as_text=True).splitlines()[0] == OLD_RUN_HEADER
    blank = as_admin.get(suite.url(f"runs/{run_id}/queries.csv?measure="))
    assert blank.data == plain.data
    asked = "?measure=P(rel=2)@5,bpref&measure=ndcg_cut_10&measure=RR"
    response = as_admin.get(suite.url(f"runs/{run_id}/queries.csv{asked}"))
    assert response.status_code == 200
    lines = response.get_data(as_text=True).split("\r\n")
    assert lines[0] == OLD_RUN_HEADER + ",P(rel=2)@5,bpref,ndcg_cut_10,RR"
    # The default columns are untouched, row for row: the new ones only follow them.
    for old, new in zip(plain.get_data(as_text=True).split("\r\n")[1:], lines[1:], strict=True):
        assert new.startswith(old)
    rows = _rows(response.data)
    assert len(rows) == 3
    run = _runs()["A"]
    for name in MEASURES:
        expected = _expected(run, name)
        for row in rows:
            assert float(row[name]) == pytest.approx(expected[row["qid"]], abs=1e-9), name


def test_compare_csv_adds_each_runs_value(as_admin: FlaskClient, suite: Suite) -> None:
    both = f"run={suite.run_ids['A']}&run={suite.run_ids['B']}"
    plain = as_admin.get(suite.url(f"compare.csv?{both}"))
    asked = as_admin.get(suite.url(f"compare.csv?{both}&measure=bpref,P(rel=2)@5"))
    assert asked.status_code == 200
    old_lines = plain.get_data(as_text=True).split("\r\n")
    new_lines = asked.get_data(as_text=True).split("\r\n")
    assert new_lines[0] == old_lines[0] + ",bpref:A,bpref:B,P(rel=2)@5:A,P(rel=2)@5:B"
    for old, new in zip(old_lines[1:], new_lines[1:], strict=True):
        assert new.startswith(old)
    rows = _rows(asked.data)
    assert rows
    runs = _runs()
    for name in ("bpref", "P(rel=2)@5"):
        for run_name in ("A", "B"):
            expected = _expected(runs[run_name], name)
            for row in rows:
                got = float(row[f"{name}:{run_name}"])
                assert got == pytest.approx(expected[row["qid"]], abs=1e-9), (name, run_name)


def test_a_bad_measure_name_is_refused_with_what_is_accepted(
    as_admin: FlaskClient, suite: Suite
) -> None:
    both = f"run={suite.run_ids['A']}&run={suite.run_ids['B']}"
    for tail in (
        f"runs/{suite.run_ids['A']}/queries.csv?measure=P@x",
        f"compare.csv?{both}&measure=P@x",
    ):
        response = as_admin.get(suite.url(tail))
        assert response.status_code == 400
        assert "unknown measure &#39;P@x&#39;" in response.get_data(as_text=True)
