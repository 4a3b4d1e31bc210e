"""Property tests: NDCG bounds, ideal orderings, swaps, and pytrec_eval as an oracle."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from ndcg_labeler.scoring import (
    Options,
    Qrel,
    ScoredDoc,
    aggregate,
    dcg,
    evaluate,
    evaluate_one,
    rank_order,
    run_inputs,
)

CUTS = (1, 2, 3, 5, 10)
EXAMPLES = settings(max_examples=100, deadline=None)
OPTIONS = st.builds(
    Options,
    gain=st.sampled_from(["linear", "exp"]),
    ideal=st.sampled_from(["judged", "retrieved"]),
    judged_only=st.booleans(),
    threshold=st.integers(1, 3),
)
# Docids with the characters that make byte order matter: digits vs letters, case, `#`.
DOCIDS = st.text(alphabet="aBz09#_-.", min_size=1, max_size=5)
GRADE = st.integers(-1, 4)


@st.composite
def judged_query(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Consistent (ranked grades, judged grades): the ranked judged docs are among the judged."""
    judged = draw(st.lists(GRADE, max_size=25))
    retrieved = draw(st.permutations(range(len(judged))))[: draw(st.integers(0, len(judged)))]
    ranked = [float(judged[i]) for i in retrieved]
    for _ in range(draw(st.integers(0, 5))):  # sprinkle unjudged documents
        ranked.insert(draw(st.integers(0, len(ranked))), math.nan)
    return np.array(ranked), np.array(judged, dtype=np.int64)


@EXAMPLES
@given(judged_query(), OPTIONS)
def test_ndcg_is_between_zero_and_one(query: tuple[np.ndarray, np.ndarray], options: Options):
    ranked, judged = query
    ev = evaluate([ranked], [judged], CUTS, options)
    for measure in ["ndcg"] + [f"ndcg_cut_{k}" for k in CUTS]:
        value = ev.array(measure)[0]
        assert math.isnan(value) or 0.0 <= value <= 1.0 + 1e-12, measure


@EXAMPLES
@given(st.lists(GRADE, min_size=1, max_size=25), st.sampled_from(["linear", "exp"]))
def test_the_ideal_ordering_scores_exactly_one(grades: list[int], gain: str) -> None:
    ranked = np.array(sorted(grades, reverse=True), dtype=float)
    for ideal in ("judged", "retrieved"):
        options = Options(gain=gain, ideal=ideal)  # type: ignore[arg-type]
        ev = evaluate([ranked], [np.array(grades)], CUTS, options)
        for measure in ["ndcg"] + [f"ndcg_cut_{k}" for k in CUTS]:
            value = ev.array(measure)[0]
            if max(grades) > 0:
                assert value == 1.0, measure
            else:
                assert math.isnan(value), measure  # nothing to gain: undefined


@EXAMPLES
@given(st.lists(st.integers(0, 4), min_size=2, max_size=20), st.data())
def test_moving_a_better_chunk_up_never_lowers_dcg(grades: list[int], data: st.DataObject):
    i = data.draw(st.integers(0, len(grades) - 2))
    j = data.draw(st.integers(i + 1, len(grades) - 1))
    swapped = list(grades)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    # Of the two orders, the one with the higher grade at the upper position i is "better".
    better, worse = (swapped, grades) if grades[i] < grades[j] else (grades, swapped)
    assert dcg(better) >= dcg(worse)
    judged = np.array(grades)
    after = evaluate([np.array(better, float)], [judged], CUTS).dcg_cut
    before = evaluate([np.array(worse, float)], [judged], CUTS).dcg_cut
    for k in CUTS:
        assert after[k][0] >= before[k][0]


@EXAMPLES
@given(st.lists(judged_query(), min_size=1, max_size=6), OPTIONS)
def test_evaluate_one_equals_the_vectorised_row(queries, options: Options) -> None:
    ranked = [q[0] for q in queries]
    judged = [q[1] for q in queries]
    ev = evaluate(ranked, judged, CUTS, options)
    for i, (r, j) in enumerate(queries):
        fast, row = evaluate_one(r, j, CUTS, options), ev.row(i)
        assert fast.keys() == row.keys()
        for name in row:
            assert fast[name] == row[name] or (math.isnan(fast[name]) and math.isnan(row[name]))


def _trec_cmp(a: tuple[str, float], b: tuple[str, float]) -> int:
    """trec_eval's comp_sim_docno: score descending, then strcmp(docno2, docno1)."""
    if a[1] != b[1]:
        return -1 if a[1] > b[1] else 1
    da, db = a[0].encode(), b[0].encode()
    return (db > da) - (db < da)


@EXAMPLES
@given(st.lists(st.tuples(DOCIDS, st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.5, math.inf]))))
def test_rank_order_is_trec_evals_comparator(docs: list[tuple[str, float]]) -> None:
    ids = [d for d, _ in docs]
    scores = np.array([s for _, s in docs])
    ours = [docs[i] for i in rank_order(ids, scores)]
    expected = sorted(docs, key=functools.cmp_to_key(_trec_cmp))
    assert [(d, s) for d, s in ours] == [(d, s) for d, s in expected]


@st.composite
def collection(draw: st.DrawFn, tied_scores: bool):
    """Random graded qrels and a run over 1-4 queries, as Qrel / ScoredDoc lists."""
    qrels, run = [], []
    for q in range(draw(st.integers(1, 4))):
        qid = f"q{q}"
        pool = draw(st.lists(DOCIDS, min_size=1, max_size=30, unique=True))
        # At least one grade >= 0: trec_eval cannot evaluate a topic whose judgments are all
        # negative (form_res_rels fails; pytrec_eval then returns zeros or even hangs).
        qrels.append(Qrel(qid, pool[0], draw(st.integers(0, 4))))
        for docid in pool[1:]:
            grade = draw(st.one_of(st.none(), GRADE))
            if grade is not None:
                qrels.append(Qrel(qid, docid, grade))
        retrieved = draw(st.lists(st.sampled_from(pool), min_size=1, unique=True))
        if tied_scores:  # few distinct values, all exact in float32: many real ties
            scores = [draw(st.sampled_from([0.0, 0.25, 0.5, 3.0])) for _ in retrieved]
        else:  # distinct and far apart, so float32 rounding cannot create ties
            scores = [float(s) for s in draw(st.permutations(range(len(retrieved))))]
        run += [ScoredDoc(qid, d, s) for d, s in zip(retrieved, scores, strict=True)]
    return qrels, run


PYTREC_MEASURES = {
    "ndcg",
    "ndcg_cut." + ",".join(map(str, CUTS)),
    "P." + ",".join(map(str, CUTS)),
    "recall." + ",".join(map(str, CUTS)),
    "recip_rank",
    "map",
    "num_rel",
    "num_rel_ret",
    "num_ret",
}


@pytest.mark.parametrize("tied_scores", [False, True], ids=["distinct", "tied"])
@EXAMPLES
@given(data=st.data(), threshold=st.integers(1, 3))
def test_pytrec_eval_agrees_per_query(tied_scores: bool, data: st.DataObject, threshold: int):
    qrels, run = data.draw(collection(tied_scores))
    inputs = run_inputs(qrels, run)
    ev = evaluate(inputs.ranked, inputs.judged, CUTS, Options(threshold=threshold))

    oracle_qrels: dict[str, dict[str, int]] = {}
    for qid, docid, grade in qrels:
        oracle_qrels.setdefault(qid, {})[docid] = grade
    oracle_run: dict[str, dict[str, float]] = {}
    for qid, docid, score in run:
        oracle_run.setdefault(qid, {})[docid] = score
    oracle = pytrec_eval.RelevanceEvaluator(
        oracle_qrels, PYTREC_MEASURES, relevance_level=threshold
    ).evaluate(oracle_run)

    assert set(oracle) == set(inputs.qids)
    for qid, values in oracle.items():
        i = inputs.qids.index(qid)
        for measure, expected in values.items():
            assert ev.trec_value(measure, i) == pytest.approx(expected, abs=1e-12), (qid, measure)


@EXAMPLES
@given(st.lists(st.integers(0, 4), min_size=1, max_size=9))
def test_every_policy_stays_within_the_given_grades(grades: list[int]) -> None:
    for policy in ("median", "mean", "max", "min", "majority"):
        value = aggregate(grades, policy)
        assert value is not None and min(grades) <= value <= max(grades)
    assert aggregate(grades, "majority") in grades
    assert aggregate(grades, "median") in grades
