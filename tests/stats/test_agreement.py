"""Agreement figures checked against published worked examples and hand computation."""

from __future__ import annotations

import pytest

from ndcg_labeler.scoring.agreement import (
    CohenPair,
    agreement_summary,
    cohen_pairs,
    consensus_agreement,
    fleiss_kappa,
    krippendorff_alpha_ordinal,
    percent_agreement,
)


def from_counts(table: list[list[int]]) -> list[tuple[str, str, int]]:
    """Ratings whose grade counts per item are the rows of `table` (raters numbered per item)."""
    ratings = []
    for item, row in enumerate(table):
        grades = [grade for grade, count in enumerate(row) for _ in range(count)]
        ratings += [(f"item{item}", f"r{rater}", grade) for rater, grade in enumerate(grades)]
    return ratings


def from_rows(rows: list[list[int | None]]) -> list[tuple[int, int, int]]:
    """Ratings from a raters × items matrix, None meaning the rater skipped that item."""
    return [
        (item, rater, grade)
        for rater, row in enumerate(rows)
        for item, grade in enumerate(row)
        if grade is not None
    ]


# --- percent agreement ---------------------------------------------------------------------------


def test_percent_agreement_averages_pairwise_agreement_over_items_with_two_or_more() -> None:
    ratings = [
        ("i1", "a", 1), ("i1", "b", 1), ("i1", "c", 1),  # 3 of 3 pairs agree: 1
        ("i2", "a", 0), ("i2", "b", 1),  # 0 of 1 pair: 0
        ("i3", "a", 2), ("i3", "b", 2), ("i3", "c", 3), ("i3", "d", 3),  # 2 of 6 pairs: 1/3
        ("i4", "a", 2),  # one rating: not counted
    ]  # fmt: skip
    # (1 + 0 + 1/3) / 3 = 4/9
    assert percent_agreement(ratings) == pytest.approx(4 / 9)


def test_percent_agreement_is_none_without_an_item_rated_twice() -> None:
    assert percent_agreement([("i1", "a", 1), ("i2", "b", 1)]) is None
    assert percent_agreement([]) is None


# --- Fleiss' kappa -------------------------------------------------------------------------------

# Wikipedia, "Fleiss' kappa", worked example: 10 subjects, 14 raters, 5 categories; the article
# prints P̄ = 0.378, P_e = 0.213 and κ = 0.210. Rows are subjects, columns categories (here 0..4).
WIKIPEDIA_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]

# Fleiss (1971), Psychological Bulletin 76(5), Table 1: 30 patients, 6 psychiatrists each,
# 5 diagnoses (1 depression .. 5 other; here 0..4). The paper reports κ = .430.
FLEISS_1971_DIAGNOSES = """
444444 222555 233335 555555 222444 113333 333355 113334 114444 555555
144444 124444 222333 144444 224445 333335 111455 111112 224444 133555
555555 244444 224555 114444 144445 222224 111155 224444 133333 555555
"""


def test_fleiss_kappa_matches_the_wikipedia_worked_example() -> None:
    ratings = from_counts(WIKIPEDIA_TABLE)
    assert fleiss_kappa(ratings, scale_max=4) == pytest.approx(0.210, abs=5e-4)
    # The example's mean observed agreement P̄ is our percent agreement.
    assert percent_agreement(ratings) == pytest.approx(0.378, abs=5e-4)


def test_fleiss_kappa_matches_fleiss_1971() -> None:
    patients = FLEISS_1971_DIAGNOSES.split()
    assert len(patients) == 30 and all(len(row) == 6 for row in patients)
    ratings = [
        (patient, rater, int(diagnosis) - 1)
        for patient, row in enumerate(patients)
        for rater, diagnosis in enumerate(row)
    ]
    assert fleiss_kappa(ratings, scale_max=4) == pytest.approx(0.430, abs=5e-4)


def test_fleiss_kappa_allows_a_different_number_of_raters_per_item() -> None:
    ratings = [
        ("x", "a", 0), ("x", "b", 0), ("x", "c", 1),
        ("y", "a", 1), ("y", "b", 1),
        ("z", "b", 0), ("z", "c", 1),
        ("w", "a", 2),  # one rating: not counted
    ]  # fmt: skip
    # P_x = (2·1 + 1·0)/(3·2) = 1/3, P_y = 2·1/(2·1) = 1, P_z = 0   → P̄ = 4/9
    # π_0 = (2/3 + 0 + 1/2)/3 = 7/18, π_1 = (1/3 + 1 + 1/2)/3 = 11/18, π_2 = 0
    # P_e = (49 + 121)/324 = 85/162
    # κ = (4/9 − 85/162)/(1 − 85/162) = (72 − 85)/(162 − 85) = −13/77
    # (irrCAC 0.4.4's CAC(...).fleiss(), run once outside this suite, also gives −0.1688311688.)
    assert fleiss_kappa(ratings, scale_max=2) == pytest.approx(-13 / 77)


def test_fleiss_kappa_is_none_when_undefined() -> None:
    one_grade_only = [("x", "a", 2), ("x", "b", 2), ("y", "a", 2), ("y", "c", 2)]
    assert fleiss_kappa(one_grade_only, scale_max=3) is None  # P_e = 1
    assert fleiss_kappa([("x", "a", 1), ("y", "a", 2)], scale_max=3) is None
    assert fleiss_kappa([], scale_max=3) is None


# --- Krippendorff's alpha ------------------------------------------------------------------------

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers,
# 12 units, values 1..5, missing values. The paper reports α_ordinal = .815 (α_nominal = .743,
# α_interval = .849). Unit 12 has a single value and is not pairable.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def test_krippendorff_alpha_ordinal_matches_krippendorff_2011() -> None:
    ratings = from_rows(KRIPPENDORFF_2011)
    assert krippendorff_alpha_ordinal(ratings, scale_max=5) == pytest.approx(0.815, abs=5e-4)


def test_krippendorff_alpha_ordinal_ignores_unused_grades_and_a_shift_of_the_scale() -> None:
    # Values 1..5 moved to grades 0..4: the ordinal metric only sees ranks and counts.
    shifted = [(item, rater, grade - 1) for item, rater, grade in from_rows(KRIPPENDORFF_2011)]
    assert krippendorff_alpha_ordinal(shifted, scale_max=4) == pytest.approx(0.815, abs=5e-4)


def test_krippendorff_alpha_ordinal_by_hand() -> None:
    ratings = [
        ("u1", "a", 0), ("u1", "b", 2),
        ("u2", "a", 1), ("u2", "b", 1),
        ("u3", "a", 0), ("u3", "b", 0),
        ("u4", "a", 2), ("u4", "b", 2),
    ]  # fmt: skip
    # Coincidences: o_02 = o_20 = 1, o_00 = o_11 = o_22 = 2; n_0 = 3, n_1 = 2, n_2 = 3, n = 8.
    # Ordinal δ²(c, k) = (n_c/2 + Σ_{c<g<k} n_g + n_k/2)²:
    #   δ²(0,1) = (1.5 + 1)² = 6.25, δ²(1,2) = (1 + 1.5)² = 6.25, δ²(0,2) = (1.5 + 2 + 1.5)² = 25
    # D_o = Σ o δ² / n = 2·25/8 = 6.25
    # D_e = Σ_{c≠k} n_c n_k δ² / (n(n − 1)) = 2·(3·2·6.25 + 3·3·25 + 2·3·6.25)/56 = 600/56
    # α = 1 − D_o/D_e = 1 − 6.25·56/600 = 1 − 7/12 = 5/12
    assert krippendorff_alpha_ordinal(ratings, scale_max=3) == pytest.approx(5 / 12)


def test_krippendorff_alpha_is_one_for_perfect_agreement_and_none_when_undefined() -> None:
    perfect = [("x", "a", 0), ("x", "b", 0), ("y", "a", 3), ("y", "b", 3)]
    assert krippendorff_alpha_ordinal(perfect, scale_max=3) == pytest.approx(1.0)
    one_grade_only = [("x", "a", 1), ("x", "b", 1), ("y", "a", 1), ("y", "b", 1)]
    assert krippendorff_alpha_ordinal(one_grade_only, scale_max=3) is None
    assert krippendorff_alpha_ordinal([("x", "a", 1), ("y", "b", 2)], scale_max=3) is None


# --- Cohen's kappa -------------------------------------------------------------------------------


def test_cohen_weighted_kappa_by_hand() -> None:
    ann = [0, 0, 1, 1, 2, 2]
    bob = [0, 1, 1, 2, 2, 1]
    ratings = [(i, "ann", g) for i, g in enumerate(ann)] + [
        (i, "bob", g) for i, g in enumerate(bob)
    ]
    # κ_w = 1 − Σ w·observed / Σ w·expected, with w = |i − j| (linear) or (i − j)² (quadratic).
    # Observed pairs (0,0) (0,1) (1,1) (1,2) (2,2) (2,1): Σ|i − j| = Σ(i − j)² = 3 → 3/6 = 1/2.
    # Marginals: ann (1/3, 1/3, 1/3), bob (1/6, 1/2, 1/3).
    # Expected linear   = 1/3 · (1/6·(0+1+2) + 1/2·(1+0+1) + 1/3·(2+1+0)) = 1/3 · 5/2 = 5/6
    # Expected quadratic = 1/3 · (1/6·(0+1+4) + 1/2·(1+0+1) + 1/3·(4+1+0)) = 1/3 · 7/2 = 7/6
    # κ_linear = 1 − (1/2)/(5/6) = 2/5;  κ_quadratic = 1 − (1/2)/(7/6) = 4/7
    [pair] = cohen_pairs(ratings, scale_max=2)
    assert (pair.a, pair.b, pair.n) == ("ann", "bob", 6)
    assert pair.kappa_linear == pytest.approx(2 / 5)
    assert pair.kappa_quadratic == pytest.approx(4 / 7)


def test_cohen_weights_span_the_whole_scale_even_when_a_grade_is_unused() -> None:
    ann = [0, 0, 1, 1, 3, 3]
    bob = [0, 1, 1, 3, 3, 1]  # grade 2 never used: 1 vs 3 is still two steps apart
    ratings = [(i, "ann", g) for i, g in enumerate(ann)] + [
        (i, "bob", g) for i, g in enumerate(bob)
    ]
    # Observed pairs (0,0) (0,1) (1,1) (1,3) (3,3) (3,1): Σ|i − j| = 5, Σ(i − j)² = 9.
    # Marginals over grades 0, 1, 3: ann (1/3, 1/3, 1/3), bob (1/6, 1/2, 1/3).
    # Expected linear   = 1/3 · (1/6·(0+1+3) + 1/2·(1+0+2) + 1/3·(3+2+0)) = 1/3 · 23/6 = 23/18
    # Expected quadratic = 1/3 · (1/6·(0+1+9) + 1/2·(1+0+4) + 1/3·(9+4+0)) = 1/3 · 51/6 = 17/6
    # κ_linear = 1 − (5/6)/(23/18) = 8/23;  κ_quadratic = 1 − (9/6)/(17/6) = 8/17
    [pair] = cohen_pairs(ratings, scale_max=3)
    assert pair.kappa_linear == pytest.approx(8 / 23)
    assert pair.kappa_quadratic == pytest.approx(8 / 17)


def test_cohen_pairs_lists_every_pair_that_shares_an_item_and_marks_undefined_kappas() -> None:
    ratings = [
        ("i1", "cat", 1), ("i1", "bob", 1), ("i1", "ann", 0),
        ("i2", "bob", 1), ("i2", "ann", 2),
        ("i3", "dan", 3),  # shares nothing: no pair with dan
        ("i4", "eve", 2), ("i4", "fay", 2),
        ("i5", "eve", 2), ("i5", "fay", 2),  # eve and fay agree, always on grade 2: undefined
    ]  # fmt: skip
    pairs = cohen_pairs(ratings, scale_max=3)
    assert [(p.a, p.b, p.n) for p in pairs] == [
        ("ann", "bob", 2),
        ("ann", "cat", 1),
        ("bob", "cat", 1),
        ("eve", "fay", 2),
    ]
    assert pairs[1] == CohenPair("ann", "cat", 1, None, None)  # n < 2
    assert pairs[3] == CohenPair("eve", "fay", 2, None, None)  # no chance disagreement possible
    # ann (0, 2) vs bob (1, 1): expected disagreement > 0, observed equals it → κ = 0 both ways.
    assert pairs[0].kappa_linear == pytest.approx(0.0)
    assert pairs[0].kappa_quadratic == pytest.approx(0.0)


# --- summary, consensus, input checks ------------------------------------------------------------


def test_agreement_summary_maps_onto_the_cli_json() -> None:
    ratings = [
        ("x", "a", 0), ("x", "b", 0),
        ("y", "a", 1), ("y", "b", 2),
        ("z", "a", 3),
    ]  # fmt: skip
    summary = agreement_summary(ratings, scale_max=3).as_dict()
    assert list(summary) == [
        "pairs_with_2plus",
        "percent_agreement",
        "fleiss_kappa",
        "krippendorff_alpha_ordinal",
        "cohen",
    ]
    assert summary["pairs_with_2plus"] == 2
    assert summary["percent_agreement"] == pytest.approx(0.5)  # x agrees, y does not
    assert list(summary["cohen"][0]) == ["a", "b", "n", "kappa_quadratic", "kappa_linear"]
    assert summary["cohen"][0]["n"] == 2


def test_consensus_agreement_compares_a_rater_with_the_others_aggregate() -> None:
    ratings = [
        ("i1", "me", 2), ("i1", "a", 1), ("i1", "b", 2), ("i1", "c", 3),  # median(1,2,3) = 2
        ("i2", "me", 0), ("i2", "a", 1), ("i2", "b", 3),  # median(1,3), lower middle = 1
        ("i3", "me", 3),  # nobody else: not counted
        ("i4", "a", 0), ("i4", "b", 0),  # not rated by me
    ]  # fmt: skip
    median = consensus_agreement(ratings, "me")
    assert (median.items, median.agreement, median.mean_abs_diff) == (2, 0.5, 0.5)
    # max: i1 → 3 (|2 − 3| = 1), i2 → 3 (|0 − 3| = 3)
    highest = consensus_agreement(ratings, "me", policy="max")
    assert (highest.items, highest.agreement, highest.mean_abs_diff) == (2, 0.0, 2.0)
    nobody = consensus_agreement(ratings, "zoe")
    assert (nobody.items, nobody.agreement, nobody.mean_abs_diff) == (0, None, None)
    with pytest.raises(ValueError, match="policy"):
        consensus_agreement(ratings, "me", policy="mode")


def test_a_rater_grading_an_item_twice_or_off_the_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="more than once"):
        percent_agreement([("x", "a", 1), ("x", "a", 2)])
    with pytest.raises(ValueError, match="outside"):
        fleiss_kappa([("x", "a", 4), ("x", "b", 1)], scale_max=3)
