"""The vectorised evaluator against hand-computed numbers, one option at a time."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from ndcg_labeler.scoring import Evaluation, Options, evaluate, evaluate_flat, evaluate_one

NAN = float("nan")
L3, L5, L6 = math.log2(3), math.log2(5), math.log2(6)  # discounts of ranks 2, 4, 5
CUTS = (1, 3, 5, 10)

# One query used throughout: ranked grades 3, unjudged, 1, 0, 2 and judged grades
# {3, 1, 0, 2, 2}: one judged doc of grade 2 was not retrieved.
RANKED = [3.0, NAN, 1.0, 0.0, 2.0]
JUDGED = [3, 1, 0, 2, 2]


DEFAULT = Options()


def one(options: Options = DEFAULT, ranked=RANKED, judged=JUDGED) -> dict[str, float]:
    """Evaluate the single query with `evaluate` and check `evaluate_one` agrees exactly."""
    result = evaluate([np.array(ranked)], [np.array(judged)], CUTS, options).row(0)
    fast = evaluate_one(ranked, judged, CUTS, options)
    assert fast.keys() == result.keys()
    for name, value in result.items():
        assert fast[name] == pytest.approx(value, abs=1e-15, nan_ok=True), name
    return result


def test_linear_gain_judged_ideal() -> None:
    r = one()
    # DCG@1 = 3; DCG@3 = 3 + 0/log2(3) + 1/log2(4) = 3.5
    # DCG@5 = 3.5 + 0/log2(5) + 2/log2(6) = 3.5 + 0.773706 = 4.273706
    assert r["dcg_cut_1"] == 3.0
    assert r["dcg_cut_3"] == 3.5
    assert r["dcg_cut_5"] == pytest.approx(3.5 + 2 / L6, abs=1e-15)
    assert r["dcg_cut_10"] == r["dcg_cut_5"] == r["dcg"]  # the list has 5 entries
    # Ideal from judged grades 3, 2, 2, 1 (0 adds nothing):
    # IDCG@3 = 3 + 2/log2(3) + 2/2 = 5.261860; IDCG@5 = 5.261860 + 1/log2(5) = 5.692537
    assert r["idcg_cut_1"] == 3.0
    assert r["idcg_cut_3"] == pytest.approx(3 + 2 / L3 + 1, abs=1e-15)
    assert r["idcg_cut_5"] == pytest.approx(3 + 2 / L3 + 1 + 1 / L5, abs=1e-15)
    assert r["idcg"] == r["idcg_cut_10"] == r["idcg_cut_5"]
    # NDCG@1 = 1; NDCG@3 = 3.5 / 5.261860 = 0.665164; NDCG@5 = 4.273706 / 5.692537 = 0.750756
    assert r["ndcg_cut_1"] == 1.0
    assert r["ndcg_cut_3"] == pytest.approx(0.665164, abs=5e-7)
    assert r["ndcg_cut_5"] == pytest.approx(0.750756, abs=5e-7)
    assert r["ndcg"] == r["ndcg_cut_5"]


def test_binary_measures_with_threshold_one() -> None:
    r = one()
    # Relevant (grade >= 1) at ranks 1, 3 and 5; judged relevant: 3, 1, 2, 2 -> num_rel 4.
    assert (r["num_ret"], r["num_rel"], r["num_rel_ret"]) == (5, 4, 3)
    assert r["P_1"] == 1.0
    assert r["P_3"] == 2 / 3
    assert r["P_5"] == 3 / 5
    assert r["P_10"] == 3 / 10  # trec_eval divides by k even past the end of the list
    assert r["recall_5"] == 3 / 4
    assert r["recip_rank"] == 1.0
    # AP = (1/1 + 2/3 + 3/5) / 4 = 2.266667 / 4 = 0.566667
    assert r["map"] == pytest.approx((1 + 2 / 3 + 3 / 5) / 4, abs=1e-15)


def test_judged_at_k_counts_graded_entries_over_k() -> None:
    r = one()
    assert r["judged_at_1"] == 1.0
    assert r["judged_at_3"] == 2 / 3  # rank 2 is unjudged
    assert r["judged_at_5"] == 4 / 5
    assert r["judged_at_10"] == 4 / 10


def test_threshold_two_changes_binary_measures_only() -> None:
    r = one(Options(threshold=2))
    # Relevant now: grade 3 at rank 1 and grade 2 at rank 5; judged relevant: 3, 2, 2.
    assert (r["num_rel"], r["num_rel_ret"]) == (3, 2)
    assert r["P_3"] == 1 / 3
    assert r["P_5"] == 2 / 5
    # AP = (1/1 + 2/5) / 3 = 0.466667
    assert r["map"] == pytest.approx((1 + 2 / 5) / 3, abs=1e-15)
    assert r["ndcg_cut_5"] == one()["ndcg_cut_5"]  # gains still use every positive grade


def test_exp_gain() -> None:
    r = one(Options(gain="exp"))
    # Gains 2^g - 1: 7, 0 (unjudged), 1, 0, 3. DCG@5 = 7 + 1/2 + 3/log2(6) = 8.660558
    assert r["dcg_cut_5"] == pytest.approx(7 + 0.5 + 3 / L6, abs=1e-14)
    # Ideal 7, 3, 3, 1: 7 + 3/log2(3) + 3/2 + 1/log2(5) = 7 + 1.892789 + 1.5 + 0.430677
    assert r["idcg_cut_5"] == pytest.approx(7 + 3 / L3 + 1.5 + 1 / L5, abs=1e-14)
    assert r["ndcg_cut_5"] == pytest.approx(8.660558 / 10.823466, abs=1e-6)
    assert r["P_5"] == 3 / 5  # binary measures are unaffected


def test_ideal_from_retrieved_differs_when_a_judged_relevant_doc_is_missing() -> None:
    judged = one(Options(ideal="judged"))
    retrieved = one(Options(ideal="retrieved"))
    # Retrieved grades 3, (unjudged = 0), 1, 0, 2 sorted: 3, 2, 1, 0, 0
    # IDCG@5 = 3 + 2/log2(3) + 1/2 = 4.761860; NDCG@5 = 4.273706 / 4.761860 = 0.897487
    assert retrieved["idcg_cut_5"] == pytest.approx(3 + 2 / L3 + 0.5, abs=1e-15)
    assert retrieved["ndcg_cut_5"] == pytest.approx(0.897487, abs=5e-7)
    assert judged["ndcg_cut_5"] == pytest.approx(0.750756, abs=5e-7)
    assert retrieved["num_rel"] == judged["num_rel"] == 4  # binary measures keep the qrels


def test_ideal_from_retrieved_equals_judged_when_everything_judged_is_retrieved() -> None:
    ranked, judged = [1.0, 3.0, 0.0, 2.0], [0, 1, 2, 3]
    a = one(Options(ideal="retrieved"), ranked, judged)
    b = one(Options(ideal="judged"), ranked, judged)
    assert a == b


def test_judged_only_condenses_the_list() -> None:
    r = one(Options(judged_only=True))
    # Condensed list: 3, 1, 0, 2 at ranks 1..4.
    # DCG@3 = 3 + 1/log2(3) + 0 = 3.630930; DCG@5 = 3.630930 + 2/log2(5) = 4.492283
    assert r["dcg_cut_3"] == pytest.approx(3 + 1 / L3, abs=1e-15)
    assert r["dcg_cut_5"] == pytest.approx(3 + 1 / L3 + 2 / L5, abs=1e-15)
    assert r["num_ret"] == 4
    assert r["P_5"] == 3 / 5
    # AP: relevant at ranks 1, 2, 4 -> (1/1 + 2/2 + 3/4) / 4 = 0.6875
    assert r["map"] == 0.6875
    assert r["judged_at_3"] == 1.0
    assert r["idcg_cut_5"] == one()["idcg_cut_5"]  # the ideal still comes from the qrels


def test_undefined_values_are_nan_but_trec_eval_prints_zero() -> None:
    ranked, judged = [np.array([0.0, NAN])], [np.array([0, 0])]
    ev = evaluate(ranked, judged, CUTS)
    for measure in ("ndcg", "ndcg_cut_5", "recall_5", "map", "recip_rank"):
        assert math.isnan(ev.array(measure)[0]), measure
        assert ev.trec_value(measure, 0) == 0.0
        assert ev.trec_array(measure).tolist() == [0.0]
    assert ev.array("P_5")[0] == 0.0  # precision is always defined
    assert ev.array("num_rel")[0] == 0


def test_negative_grades_are_judged_with_zero_gain() -> None:
    r = one(Options(), ranked=[-1.0, 2.0], judged=[-1, 2])
    # DCG = 0 + 2/log2(3); IDCG = 2 -> NDCG = 1/log2(3) = 0.630930
    assert r["ndcg"] == pytest.approx(1 / L3, abs=1e-15)
    assert r["judged_at_3"] == 2 / 3  # the -1 has a grade, so it is judged
    assert (r["num_rel"], r["num_rel_ret"], r["recip_rank"]) == (1, 1, 0.5)


def test_a_query_missing_from_the_run_scores_zero_not_undefined() -> None:
    r = one(Options(), ranked=[], judged=[2, 1, 0])
    assert (r["ndcg"], r["ndcg_cut_5"], r["P_5"], r["recall_5"]) == (0.0, 0.0, 0.0, 0.0)
    assert (r["recip_rank"], r["map"], r["num_ret"], r["num_rel"]) == (0.0, 0.0, 0, 2)
    assert r["judged_at_5"] == 0.0


def test_many_queries_are_independent_rows() -> None:
    ranked = [np.array(RANKED), np.array([]), np.array([1.0, 1.0]), np.array([NAN])]
    judged = [np.array(JUDGED), np.array([1]), np.array([1, 1]), np.array([], dtype=int)]
    ev = evaluate(ranked, judged, CUTS)
    assert len(ev) == 4
    for i in range(4):
        alone = evaluate([ranked[i]], [judged[i]], CUTS).row(i - i)
        assert ev.row(i) == pytest.approx(alone, abs=0, nan_ok=True)
    assert ev.num_ret.tolist() == [5, 0, 2, 1]
    assert ev.ndcg[2] == 1.0
    assert math.isnan(ev.ndcg[3])  # nothing judged relevant: undefined


def test_evaluate_flat_takes_csr_input() -> None:
    grades = np.array([*RANKED, 2.0])
    ev = evaluate_flat(grades, [0, 5, 6], np.array([*JUDGED, 2, 3]), [0, 5, 7], CUTS)
    assert ev.row(0) == evaluate([np.array(RANKED)], [np.array(JUDGED)], CUTS).row(0)
    # Query 2: grade 2 at rank 1, ideal 3, 2 -> 2 / (3 + 2/log2(3))
    assert ev.ndcg[1] == pytest.approx(2 / (3 + 2 / L3), abs=1e-15)


def test_evaluation_names_and_lookups() -> None:
    ev = evaluate([np.array(RANKED)], [np.array(JUDGED)], CUTS)
    assert isinstance(ev, Evaluation)
    assert ev.cutoffs == CUTS
    names = ev.measures()
    assert names[:3] == ["ndcg", "dcg", "idcg"]
    assert "ndcg_cut_10" in names and "judged_at_1" in names and "map" in names
    assert ev.array("map") is ev.ap and ev.array("ap") is ev.ap
    assert ev.array("P_3") is ev.P[3]
    assert list(ev.row(0)) == names
    with pytest.raises(KeyError):
        ev.array("ndcg_cut_7")
    with pytest.raises(KeyError):
        ev.array("bpref")


def test_default_cutoffs_are_trec_evals() -> None:
    ev = evaluate([np.array(RANKED)], [np.array(JUDGED)])
    assert ev.cutoffs == (5, 10, 15, 20, 30, 100, 200, 500, 1000)


@pytest.mark.parametrize("cutoffs", [(0,), (5, 5), (-1, 3)])
def test_bad_cutoffs_are_rejected(cutoffs: tuple[int, ...]) -> None:
    with pytest.raises(ValueError):
        evaluate([np.array([1.0])], [np.array([1])], cutoffs)
    with pytest.raises(ValueError):
        evaluate_one([1.0], [1], cutoffs)


def test_bad_options_are_rejected() -> None:
    with pytest.raises(ValueError):
        Options(gain="log")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Options(ideal="all")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Options(threshold=0)
    with pytest.raises(TypeError):
        Options(threshold=1.5)  # type: ignore[arg-type]


def test_bad_shapes_are_rejected() -> None:
    with pytest.raises(ValueError):
        evaluate([np.array([1.0])], [])
    with pytest.raises(ValueError):
        evaluate([np.array([1.0])], [np.array([NAN])])
    with pytest.raises(ValueError):
        evaluate_flat(np.array([1.0]), [0, 1], np.array([1.0]), [0, 1, 1])


def test_blocks_give_the_same_numbers_as_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    from ndcg_labeler.scoring._ragged import row_blocks

    module = importlib.import_module("ndcg_labeler.scoring.many_queries")

    rng = np.random.default_rng(11)
    ranked = [rng.integers(-1, 4, size=n).astype(float) for n in rng.integers(0, 30, size=60)]
    for grades in ranked:
        grades[rng.random(grades.size) < 0.2] = NAN
    judged = [rng.integers(-1, 4, size=n) for n in rng.integers(0, 40, size=60)]
    whole = evaluate(ranked, judged, CUTS)
    monkeypatch.setattr(module, "row_blocks", lambda lengths: row_blocks(lengths, budget=50))
    split = evaluate(ranked, judged, CUTS)
    for measure in whole.measures():
        np.testing.assert_array_equal(split.array(measure), whole.array(measure))


def test_no_queries_give_an_empty_evaluation() -> None:
    ev = evaluate([], [])
    assert len(ev) == 0
    assert ev.ndcg.size == 0 and ev.P[5].size == 0 and ev.num_ret.size == 0
