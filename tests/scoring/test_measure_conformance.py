"""Every measure name, per query, against trec_eval's printed suite and pytrec_eval (to 1e-9).

Two independent oracles: the values trec_eval v10 printed for its own test suite (4 decimals,
tests/data/trec_eval), and pytrec_eval (trec_eval's C code as a library, the backend
ir_measures uses for these measures) on the same files and on generated queries.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scoring_trec_files import read_expected, read_qrels, read_run

from ndcg_labeler.scoring import (
    Options,
    Qrel,
    RunInputs,
    ScoredDoc,
    measure_values,
    parse_measure,
    run_inputs,
)
from tests.paths import CONFORMANCE

# ir_measures name -> (pytrec_eval measure to ask for, its key in the answer, relevance level)
ORACLE: dict[str, tuple[str, str, int]] = {
    "nDCG": ("ndcg", "ndcg", 1),
    "nDCG@10": ("ndcg_cut.10", "ndcg_cut_10", 1),
    "P@5": ("P.5", "P_5", 1),
    "P(rel=2)@5": ("P.5", "P_5", 2),
    "R@100": ("recall.100", "recall_100", 1),
    "R(rel=2)@100": ("recall.100", "recall_100", 2),
    "AP": ("map", "map", 1),
    "AP(rel=2)": ("map", "map", 2),
    "AP@100": ("map_cut.100", "map_cut_100", 1),
    "AP(rel=3)@20": ("map_cut.20", "map_cut_20", 3),
    "RR": ("recip_rank", "recip_rank", 1),
    "RR(rel=2)": ("recip_rank", "recip_rank", 2),
    "Rprec": ("Rprec", "Rprec", 1),
    "Rprec(rel=2)": ("Rprec", "Rprec", 2),
    "bpref": ("bpref", "bpref", 1),
    "bpref(rel=2)": ("bpref", "bpref", 2),
    "infAP": ("infAP", "infAP", 1),
    "infAP(rel=2)": ("infAP", "infAP", 2),
    "Success@10": ("success.10", "success_10", 1),
    "Success(rel=2)@3": ("success.3", "success_3", 2),
    "NumRel": ("num_rel", "num_rel", 1),
    "NumRel(rel=3)": ("num_rel", "num_rel", 3),
    "NumRet": ("num_ret", "num_ret", 1),
    "NumRet(rel=2)": ("num_rel_ret", "num_rel_ret", 2),
}
# RR@k has no pytrec_eval measure: it is RR of the run cut to its top k (checked so below).
CUT_RR = {"RR@10": 10, "RR(rel=2)@5": 5}
FILES = [("qrels.test", "results.test"), ("qrels.rel_level", "results.test")]


@cache
def joined(qrels: str, run: str) -> RunInputs:
    """Our join of a qrels file and a run (trec_eval's ranking)."""
    return run_inputs(read_qrels(CONFORMANCE / qrels), read_run(CONFORMANCE / run))


@cache
def oracle_input(qrels: str, run: str) -> tuple[dict, dict]:
    """The same files as pytrec_eval's dicts."""
    q: dict[str, dict[str, int]] = {}
    for row in read_qrels(CONFORMANCE / qrels):
        q.setdefault(row.qid, {})[row.docid] = row.grade
    r: dict[str, dict[str, float]] = {}
    for row in read_run(CONFORMANCE / run):
        r.setdefault(row.qid, {})[row.docid] = row.score
    return q, r


def ours(name: str, data: RunInputs) -> dict[str, float]:
    """Our value per query, printed trec_eval's way (undefined: 0)."""
    values = measure_values(parse_measure(name), data.ranked, data.judged, Options())
    return {
        q: 0.0 if math.isnan(v) else float(v)
        for q, v in zip(data.qids, values.tolist(), strict=True)
    }


def oracle(name: str, qrels: dict, run: dict) -> dict[str, float]:
    """pytrec_eval's value per query."""
    asked, key, level = ORACLE[name]
    found = pytrec_eval.RelevanceEvaluator(qrels, {asked}, relevance_level=level).evaluate(run)
    return {q: values[key] for q, values in found.items()}


@pytest.mark.parametrize("files", FILES, ids=[f[0] for f in FILES])
@pytest.mark.parametrize("name", list(ORACLE))
def test_measure_equals_pytrec_eval_on_trec_eval_suite(name: str, files: tuple[str, str]) -> None:
    data = joined(*files)
    expected = oracle(name, *oracle_input(*files))
    got = ours(name, data)
    assert set(expected) == set(got)
    for qid, value in expected.items():
        assert got[qid] == pytest.approx(value, abs=1e-9, rel=0), (name, qid)


@pytest.mark.parametrize("files", FILES, ids=[f[0] for f in FILES])
@pytest.mark.parametrize("name", list(CUT_RR))
def test_rr_at_k_is_rr_of_the_top_k(name: str, files: tuple[str, str]) -> None:
    k = CUT_RR[name]
    level = 2 if "rel=2" in name else 1
    data = joined(*files)
    qrels, _ = oracle_input(*files)
    top = {
        q: {str(d): float(k - j) for j, d in enumerate(docs[:k])}
        for q, docs in zip(data.qids, (d.tolist() for d in data.docids), strict=True)
    }
    found = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, relevance_level=level)
    expected = {q: v["recip_rank"] for q, v in found.evaluate(top).items()}
    got = ours(name, data)
    for qid, value in expected.items():
        assert got[qid] == pytest.approx(value, abs=1e-9, rel=0), (name, qid)


# trec_eval's printed names (out.test.aq: -l1, out.test.aql: -l2) and ours.
PRINTED = {
    "Rprec": "Rprec",
    "bpref": "bpref",
    "infAP": "infAP",
    "success_1": "Success@1",
    "success_5": "Success@5",
    "success_10": "Success@10",
    "map_cut_5": "AP@5",
    "map_cut_100": "AP@100",
}


@pytest.mark.parametrize(
    ("out", "qrels", "rel"),
    [("out.test.aq", "qrels.test", 1), ("out.test.aql", "qrels.rel_level", 2)],
)
@pytest.mark.parametrize("printed", list(PRINTED))
def test_measure_matches_what_trec_eval_printed(
    out: str, qrels: str, rel: int, printed: str
) -> None:
    expected = read_expected(CONFORMANCE / out)
    name = PRINTED[printed]
    family, _, cut = name.partition("@")
    ir_name = f"{family}(rel={rel})" + (f"@{cut}" if cut else "")
    got = ours(ir_name, joined(qrels, "results.test"))
    assert len(got) == 3
    for qid, value in got.items():
        assert f"{value:.4f}" == expected[(printed, qid)], (printed, qid)


def test_judged_at_k_is_one_minus_trec_evals_unjudged_share() -> None:
    expected = read_expected(CONFORMANCE / "out.test.aq")
    for k in (5, 10, 20):
        got = ours(f"Judged@{k}", joined("qrels.test", "results.test"))
        for qid, value in got.items():
            assert f"{1 - value:.4f}" == expected[(f"unj_{k}", qid)]


def test_trec_eval_and_ir_measures_names_give_the_same_numbers() -> None:
    data = joined("qrels.rel_level", "results.test")
    pairs = [
        ("ndcg_cut_10", "nDCG@10"),
        ("P_5", "P@5"),
        ("map", "AP"),
        ("map_cut_100", "AP@100"),
        ("recall_100", "R@100"),
        ("recip_rank", "RR"),
        ("success_10", "Success@10"),
        ("num_rel_ret", "NumRet(rel=1)"),
    ]
    for trec, ir in pairs:
        assert ours(trec, data) == ours(ir, data)


# Generated queries: grades -1..3 (-1: pooled but unjudged), unjudged documents, ties, short lists.
_GRADE = st.one_of(st.none(), st.integers(-1, 3))


@st.composite
def _query(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, float]]:
    n_docs = draw(st.integers(1, 12))
    grades = draw(st.lists(_GRADE, min_size=n_docs, max_size=n_docs))
    qrels = {f"d{i}": g for i, g in enumerate(grades) if g is not None}
    if not any(g >= 0 for g in qrels.values()):
        # Not an empty qrels, nor one of -1s only: trec_eval's ndcg (pytrec_eval 0.5) never
        # returns on a query whose only judgments are -1 (it hung a suite run).
        qrels["d0"] = draw(st.integers(0, 3))
    retrieved = draw(st.lists(st.integers(0, n_docs - 1), unique=True, max_size=n_docs))
    scores = draw(st.lists(st.integers(0, 4), min_size=len(retrieved), max_size=len(retrieved)))
    return qrels, {f"d{i}": float(s) for i, s in zip(retrieved, scores, strict=True)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries=st.lists(_query(), min_size=1, max_size=4))
def test_every_measure_equals_pytrec_eval_on_generated_queries(queries: list) -> None:
    qrels = {f"q{i}": q for i, (q, _) in enumerate(queries)}
    run = {f"q{i}": r for i, (_, r) in enumerate(queries) if r}
    data = run_inputs(
        [Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
        [ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()],
        qids=sorted(run),
    )
    if not data.qids:
        return
    for name in ORACLE:
        expected = oracle(name, qrels, run)
        got = ours(name, data)
        for qid, value in expected.items():
            assert got[qid] == pytest.approx(value, abs=1e-9, rel=0), (name, qid)


def test_undefined_where_no_document_is_relevant() -> None:
    # One query, nothing judged relevant: R = 0, so Rprec, bpref, infAP, Success, AP@k, RR@k
    # have no value (NaN), as recall and AP; trec_eval prints 0.
    ranked, judged = [np.array([0.0, np.nan])], [np.array([0, 0])]
    for name in ("Rprec", "bpref", "infAP", "Success@5", "AP@5", "RR@5"):
        assert math.isnan(measure_values(parse_measure(name), ranked, judged)[0]), name
    assert measure_values(parse_measure("P@2"), ranked, judged)[0] == 0.0
