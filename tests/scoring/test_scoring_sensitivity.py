"""Sensitivity to unjudged chunks: hand-computed cases, and pytrec_eval on changed qrels/runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st
from test_scoring_properties import CUTS, GRADE, collection

from ndcg_labeler.scoring import Options, evaluate, evaluate_one, run_inputs

NAN = math.nan
L3, L4, L5 = math.log2(3), math.log2(4), math.log2(5)
EXAMPLES = settings(max_examples=100, deadline=None)


def _values(ranked: list[float], judged: list[int], k: int, options: Options) -> tuple[float, ...]:
    """(NDCG@k, if-unjudged-top, condensed) of one query, checked equal on both paths."""
    ev = evaluate([np.array(ranked)], [np.array(judged)], (k,), options)
    one = evaluate_one(ranked, judged, (k,), options)
    names = (f"ndcg_cut_{k}", f"ndcg_if_unjudged_top_cut_{k}", f"ndcg_condensed_cut_{k}")
    assert [one[n] for n in names] == pytest.approx([ev.array(n)[0] for n in names], abs=0)
    return tuple(float(ev.array(n)[0]) for n in names)


def test_hand_computed_linear_judged_ideal() -> None:
    # Ranked: unjudged, 2, unjudged, 0; judged grades 2, 0 and a 3 the run missed. k = 3.
    # Today:   DCG@3 = 2/log2(3);                      IDCG@3 = 3 + 2/log2(3) + 0/log2(4)
    # Top (3): DCG'@3 = 3/log2(2) + 2/log2(3) + 3/log2(4); ideal 3, 3 (the two unjudged) + 3, 2, 0
    #          IDCG'@3 = 3 + 3/log2(3) + 3/log2(4)
    # Condensed list 2, 0: DCG@3 = 2/log2(2) + 0;      IDCG@3 as today
    ndcg, top, condensed = _values([NAN, 2, NAN, 0], [2, 0, 3], 3, Options(top_grade=3))
    assert ndcg == pytest.approx((2 / L3) / (3 + 2 / L3), abs=1e-15)
    assert top == pytest.approx((3 + 2 / L3 + 3 / L4) / (3 + 3 / L3 + 3 / L4), abs=1e-15)
    assert condensed == pytest.approx(2 / (3 + 2 / L3), abs=1e-15)
    assert (round(ndcg, 4), round(top, 4), round(condensed, 4)) == (0.2961, 0.9013, 0.4693)


def test_the_top_grade_value_can_be_below_todays() -> None:
    # 2, 2, unjudged with judged grades 2, 2: ideal on what is judged, NDCG@3 = 1. With the top
    # grade 3 at rank 3 the ideal ranks that 3 first: (2 + 2/log2(3) + 3/log2(4)) over
    # (3 + 2/log2(3) + 2/log2(4)) = 0.905: not an upper bound.
    ndcg, top, condensed = _values([2, 2, NAN], [2, 2], 3, Options(top_grade=3))
    assert ndcg == 1.0 and condensed == 1.0
    assert top == pytest.approx((2 + 2 / L3 + 3 / L4) / (3 + 2 / L3 + 2 / L4), abs=1e-15)
    assert top < ndcg


def test_hand_computed_exp_gain_and_the_scale_of_four() -> None:
    # exp gain, top grade 4: g_top = 2**4 - 1 = 15. Ranked 1, unjudged, unjudged, 3; judged 1, 3.
    # k = 4. Today: DCG = 1 + 7/log2(5); IDCG = 7 + 1/log2(3).
    # Top: DCG' = 1 + 15/log2(3) + 15/log2(4) + 7/log2(5); ideal 15, 15, 7, 1.
    # Condensed 1, 3: DCG = 1 + 7/log2(3).
    options = Options(gain="exp", top_grade=4)
    ndcg, top, condensed = _values([1, NAN, NAN, 3], [1, 3], 4, options)
    assert ndcg == pytest.approx((1 + 7 / L5) / (7 + 1 / L3), abs=1e-15)
    ideal = 15 + 15 / L3 + 7 / L4 + 1 / L5
    assert top == pytest.approx((1 + 15 / L3 + 15 / L4 + 7 / L5) / ideal, abs=1e-15)
    assert condensed == pytest.approx((1 + 7 / L3) / (7 + 1 / L3), abs=1e-15)


def test_hand_computed_retrieved_ideal_counts_only_the_top_k() -> None:
    # ideal=retrieved, k = 2. Ranked unjudged, 1, unjudged (below k: keeps gain 0), 2.
    # Today: DCG = 1/log2(3); ideal from the list's grades 2, 1: IDCG@2 = 2 + 1/log2(3).
    # Top (3): DCG' = 3 + 1/log2(3); ideal 3 (rank 1's) then 2, 1: IDCG'@2 = 3 + 2/log2(3).
    # Condensed 1, 2: DCG@2 = 1 + 2/log2(3).
    options = Options(ideal="retrieved", top_grade=3)
    ndcg, top, condensed = _values([NAN, 1, NAN, 2], [1, 2], 2, options)
    assert ndcg == pytest.approx((1 / L3) / (2 + 1 / L3), abs=1e-15)
    assert top == pytest.approx((3 + 1 / L3) / (3 + 2 / L3), abs=1e-15)
    assert condensed == pytest.approx((1 + 2 / L3) / (2 + 1 / L3), abs=1e-15)


def test_no_unjudged_in_the_top_k_leaves_ndcg_as_it_is() -> None:
    ranked, judged = [3, 0, 1, NAN, NAN], [3, 0, 1, 2]
    ndcg, top, condensed = _values(ranked, judged, 3, Options())
    assert top == ndcg and condensed == ndcg
    # Condensed lists already: nothing is unjudged, all three agree at every k.
    for k in (1, 3, 5):
        assert len(set(_values(ranked, judged, k, Options(judged_only=True)))) == 1


def test_a_top_k_of_unjudged_only_scores_one_if_they_were_top() -> None:
    ndcg, top, condensed = _values([NAN, NAN, 1], [1, 3], 2, Options())
    assert (ndcg, top, condensed) == (0.0, 1.0, pytest.approx(1 / (3 + 1 / L3), abs=1e-15))
    # A query the run does not rank: nothing is unjudged, all stay 0.
    assert _values([], [2], 5, Options()) == (0.0, 0.0, 0.0)


def test_the_top_grade_must_be_a_positive_int() -> None:
    with pytest.raises(ValueError):
        Options(top_grade=0)
    with pytest.raises(TypeError):
        Options(top_grade=True)


def _oracle(qrels: dict, run: dict, measures: set[str]) -> dict:
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


@pytest.mark.parametrize("tied_scores", [False, True], ids=["distinct", "tied"])
@EXAMPLES
@given(data=st.data())
def test_condensed_equals_pytrec_eval_without_the_unjudged(tied_scores: bool, data) -> None:
    qrels, run = data.draw(collection(tied_scores))
    inputs = run_inputs(qrels, run)
    ev = evaluate(inputs.ranked, inputs.judged, CUTS, Options())
    oracle_qrels: dict[str, dict[str, int]] = {}
    for qid, docid, grade in qrels:
        oracle_qrels.setdefault(qid, {})[docid] = grade
    condensed_run: dict[str, dict[str, float]] = {}
    for qid, docid, score in run:
        if docid in oracle_qrels.get(qid, {}):
            condensed_run.setdefault(qid, {})[docid] = score
    measures = {"ndcg_cut." + ",".join(map(str, CUTS))}
    oracle = _oracle(oracle_qrels, condensed_run, measures)
    for i, qid in enumerate(inputs.qids):
        for k in CUTS:
            expected = oracle.get(qid, {}).get(f"ndcg_cut_{k}", 0.0)
            ours = ev.trec_value(f"ndcg_condensed_cut_{k}", i)
            assert ours == pytest.approx(expected, abs=1e-12), (qid, k)


@pytest.mark.parametrize("tied_scores", [False, True], ids=["distinct", "tied"])
@EXAMPLES
@given(data=st.data())
def test_if_top_equals_pytrec_eval_with_the_unjudged_top_k_judged_top(tied_scores, data) -> None:
    qrels, run = data.draw(collection(tied_scores))
    inputs = run_inputs(qrels, run)
    top = 4  # the largest grade the collection draws
    ev = evaluate(inputs.ranked, inputs.judged, CUTS, Options(top_grade=top))
    oracle_run: dict[str, dict[str, float]] = {}
    for qid, docid, score in run:
        oracle_run.setdefault(qid, {})[docid] = score
    for k in CUTS:
        oracle_qrels: dict[str, dict[str, int]] = {}
        for qid, docid, grade in qrels:
            oracle_qrels.setdefault(qid, {})[docid] = grade
        for i, qid in enumerate(inputs.qids):
            for docid, grade in zip(inputs.docids[i][:k], inputs.ranked[i][:k], strict=True):
                if math.isnan(grade):
                    oracle_qrels[qid][str(docid)] = top
        oracle = _oracle(oracle_qrels, oracle_run, {f"ndcg_cut.{k}"})
        for i, qid in enumerate(inputs.qids):
            expected = oracle[qid][f"ndcg_cut_{k}"]
            ours = ev.trec_value(f"ndcg_if_unjudged_top_cut_{k}", i)
            assert ours == pytest.approx(expected, abs=1e-12), (qid, k)


OPTIONS_TOP4 = st.builds(
    Options,
    gain=st.sampled_from(["linear", "exp"]),
    ideal=st.sampled_from(["judged", "retrieved"]),
    top_grade=st.just(4),
)


@EXAMPLES
@given(st.lists(GRADE, max_size=20), st.integers(0, 6), st.data(), OPTIONS_TOP4)
def test_unjudged_ranked_first_never_lower_ndcg(judged, unjudged, data, options) -> None:
    """When the unjudged entries of the top k are its first ranks, the top-grade value is at
    least NDCG@k. Proof (docs/reference/scoring.md#sensitivity-to-unjudged-chunks):
    with T the top grades' DCG at ranks 1..u, D today's DCG@k and S the base ideal's DCG moved
    down u ranks, D <= S <= IDCG@k, so D / IDCG <= D / S <= (T + D) / (T + S)."""
    retrieved = data.draw(st.permutations(range(len(judged))))
    ranked = [NAN] * unjudged + [float(judged[i]) for i in retrieved]
    ev = evaluate([np.array(ranked)], [np.array(judged)], CUTS, options)
    for k in CUTS:
        today = ev.array(f"ndcg_cut_{k}")[0]
        if not math.isnan(today):
            assert ev.array(f"ndcg_if_unjudged_top_cut_{k}")[0] >= today - 1e-12


@EXAMPLES
@given(st.lists(GRADE, max_size=20), st.data(), OPTIONS_TOP4)
def test_condensed_is_todays_judged_only_value_bit_for_bit(judged, data, options) -> None:
    retrieved = data.draw(st.permutations(range(len(judged))))
    ranked = [float(judged[i]) for i in retrieved]
    for _ in range(data.draw(st.integers(0, 6))):
        ranked.insert(data.draw(st.integers(0, len(ranked))), NAN)
    ev = evaluate([np.array(ranked)], [np.array(judged)], CUTS, options)
    condensed_options = Options(options.gain, options.ideal, True, top_grade=4)
    condensed = evaluate([np.array(ranked)], [np.array(judged)], CUTS, condensed_options)
    for k in CUTS:
        np.testing.assert_array_equal(
            ev.array(f"ndcg_condensed_cut_{k}"), condensed.array(f"ndcg_cut_{k}")
        )
