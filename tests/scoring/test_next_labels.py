"""What to label next for a comparison: the weights (by hand), their order, the flip test."""

from __future__ import annotations

import math

import pytest

from ndcg_labeler import scoring
from ndcg_labeler.scoring import FlipQuery, NextLabel

L3 = math.log2(3)  # log2(rank 2 + 1)


def test_weights_by_hand_and_best_first() -> None:
    # A ranks x y z, B ranks y w; z is judged; top grade 3, depth 3.
    found = scoring.order_for_compare(
        {"q1": ["x", "y", "z"]}, {"q1": ["y", "w"]}, {"q1": {"z"}}, 3, 3.0
    )
    assert found == [
        # x: A rank 1, not in B: 3 × |1/log2(2) − 0| = 3 × 1 = 3
        NextLabel("q1", "x", 3.0, 1, None),
        # w: B rank 2 only: 3 × |0 − 1/log2(3)| = 3 / 1.5849625007211563 = 1.8927892607143724
        NextLabel("q1", "w", pytest.approx(1.8927892607143724), None, 2),
        # y: A rank 2, B rank 1: 3 × |1/log2(3) − 1/log2(2)| = 3 × (1 − 0.6309297535714575)
        #    = 3 × 0.3690702464285425 = 1.1072107392856276
        NextLabel("q1", "y", pytest.approx(1.1072107392856276), 2, 1),
    ]


def test_the_depth_cut_zeroes_a_runs_term() -> None:
    # Depth 1: y is at A's rank 2, beyond the cut, so A's term is 0: 3 × |0 − 1/log2(2)| = 3,
    # a tie with x (3 × 1), broken by docid: "x" < "y". w and z are beyond the cut.
    found = scoring.order_for_compare({"q1": ["x", "y", "z"]}, {"q1": ["y", "w"]}, {}, 1, 3.0)
    assert [(p.docid, p.weight, p.rank_a, p.rank_b) for p in found] == [
        ("x", 3.0, 1, None),
        ("y", 3.0, None, 1),
    ]


def test_ties_by_qid_then_docid_in_byte_order() -> None:
    # Every pair is at rank 1 of one run only: weight 3 × 1 = 3 for all of them.
    tops_a = {"q9": ["d9"], "q10": ["d9"], "a": ["a"], "B": ["a"]}
    tops_b = {"q9": ["d10"], "q10": ["D"], "a": ["B"], "B": ["b"]}
    found = scoring.order_for_compare(tops_a, tops_b, {}, 5, 3.0)
    assert [(p.qid, p.docid) for p in found] == [
        ("B", "a"),  # "B" (0x42) before "a" (0x61)
        ("B", "b"),
        ("a", "B"),
        ("a", "a"),
        ("q10", "D"),  # "q10" before "q9": '1' (0x31) < '9' (0x39)
        ("q10", "d9"),
        ("q9", "d10"),  # "d10" before "d9"
        ("q9", "d9"),
    ]
    assert {p.weight for p in found} == {3.0}


def test_same_rank_in_both_runs_weighs_nothing_and_judged_pairs_are_left_out() -> None:
    found = scoring.order_for_compare(
        {"q1": ["s", "j"], "q2": ["t"]}, {"q1": ["s", "j"]}, {"q1": {"j"}}, 10, 4.0
    )
    # t: 4 × |1 − 0| = 4; s at rank 1 in both: 4 × |1 − 1| = 0; j is judged.
    assert [(p.qid, p.docid, p.weight) for p in found] == [("q2", "t", 4.0), ("q1", "s", 0.0)]


# One query, k = 2: A ranks u1 r, B ranks r u2; r is judged 1, u1 and u2 are not. Linear gain.
FLIP = FlipQuery("q1", ["u1", "r"], [None, 1.0], ["r", "u2"], [1.0, None], [1.0])
# Today (unjudged 0): DCG_A = 1/log2(3), DCG_B = 1, IDCG = 1: B − A = 1 − 1/log2(3) > 0.
TODAY = 1 - 1 / L3
# u1 and u2 at grade 3, joining the ideal [3, 3]: DCG_A = 3 + 1/log2(3), DCG_B = 1 + 3/log2(3),
# IDCG@2 = 3 + 3/log2(3): B − A = (2/log2(3) − 2) / (3 + 3/log2(3)) < 0: A would win.
IF_TOP = (2 / L3 - 2) / (3 + 3 / L3)


def test_not_robust_until_the_heaviest_pair_is_labeled() -> None:
    found = scoring.labels_to_robust([FLIP], [("q1", "u1"), ("q1", "u2")], 2, 3.0)
    assert not found.robust
    assert found.mean_delta == pytest.approx(TODAY)
    assert found.mean_delta_if_top == pytest.approx(IF_TOP)
    # u1 labeled 0, u2 still 3: DCG_A = 1/log2(3), DCG_B = 1 + 3/log2(3), ideal [3, 1]:
    # IDCG = 3 + 1/log2(3); B − A = (1 + 2/log2(3)) / (3 + 1/log2(3)) > 0: B wins, as today.
    assert (1 + 2 / L3) / (3 + 1 / L3) > 0
    assert found.labels_remaining == 1


def test_the_other_order_needs_both_labels() -> None:
    # u2 labeled 0, u1 still 3: DCG_A = 3 + 1/log2(3), DCG_B = 1, ideal [3, 1] = 3 + 1/log2(3):
    # B − A = (1 − 3 − 1/log2(3)) / (3 + 1/log2(3)) < 0, A still wins; then u1: today's values.
    assert (1 - 3 - 1 / L3) / (3 + 1 / L3) < 0
    found = scoring.labels_to_robust([FLIP], [("q1", "u2"), ("q1", "u1")], 2, 3.0)
    assert (found.robust, found.labels_remaining) == (False, 2)


def test_a_list_that_misses_an_unjudged_chunk_never_gets_there() -> None:
    # Pairs beyond k, judged ones and unknown queries in the order count as labels but move
    # nothing; without u1 the flip test cannot pass.
    order = [("q1", "u2"), ("q1", "r"), ("q7", "z")]
    found = scoring.labels_to_robust([FLIP], order, 2, 3.0)
    assert (found.robust, found.labels_remaining) == (False, None)


def test_undefined_queries_are_left_out_and_robust_needs_no_labels() -> None:
    # q0 has no judged grade: NDCG undefined today, left out as the comparison leaves it out.
    q0 = FlipQuery("q0", ["v"], [None], [], [], [])
    # q2: A ranks g (judged 3) first, B nothing: B − A = −1 today; with q1's top-grade value
    # the mean is (IF_TOP − 1)/2 < 0, and today's (TODAY − 1)/2 < 0: A wins both ways.
    q2 = FlipQuery("q2", ["g"], [3.0], [], [], [3.0])
    found = scoring.labels_to_robust([q0, FLIP, q2], [("q0", "v")], 2, 3.0)
    assert found.robust and found.labels_remaining == 0
    assert found.mean_delta == pytest.approx((TODAY - 1) / 2)
    assert found.mean_delta_if_top == pytest.approx((IF_TOP - 1) / 2)


def test_exponential_gain_uses_two_to_the_grade_minus_one() -> None:
    # gain 2**g − 1: r (grade 1) gains 1, the top grade 3 gains 7. Today as with linear gain;
    # top: DCG_A = 7 + 1/log2(3), DCG_B = 1 + 7/log2(3), IDCG = 7 + 7/log2(3).
    found = scoring.labels_to_robust([FLIP], [("q1", "u1")], 2, 3.0, "exp")
    assert found.mean_delta == pytest.approx(TODAY)
    assert found.mean_delta_if_top == pytest.approx((6 / L3 - 6) / (7 + 7 / L3))
    # u1 labeled: DCG_A = 1/log2(3), DCG_B = 1 + 7/log2(3) > DCG_A: B wins again.
    assert found.labels_remaining == 1


def test_revealed_grades_move_todays_values_and_the_winner() -> None:
    # u1 found highly relevant (3): today DCG_A = 3 + 1/log2(3), DCG_B = 1, ideal [3, 1]:
    # B − A = (1 − 3 − 1/log2(3)) / (3 + 1/log2(3)) < 0, A wins now; with u2 at 3 (ideal 3 3):
    # (1 + 3/log2(3) − 3 − 1/log2(3)) / (3 + 3/log2(3)) < 0, A still wins: robust after 1.
    assert (1 - 3 - 1 / L3) / (3 + 1 / L3) < 0 and (2 / L3 - 2) / (3 + 3 / L3) < 0
    found = scoring.labels_to_robust([FLIP], [("q1", "u1")], 2, 3.0, revealed={("q1", "u1"): 3})
    assert (found.robust, found.labels_remaining) == (False, 1)
    # u2 found relevant (3) first: today (1 + 3/log2(3) − 1/log2(3)) / (3 + 1/log2(3)) > 0,
    # B wins; with u1 at 3, (2/log2(3) − 2) / (3 + 3/log2(3)) < 0: not yet; u1 then found 0.
    assert (1 + 2 / L3) / (3 + 1 / L3) > 0
    order = [("q1", "u2"), ("q1", "u1")]
    found = scoring.labels_to_robust([FLIP], order, 2, 3.0, revealed={("q1", "u2"): 3})
    assert (found.robust, found.labels_remaining) == (False, 2)
