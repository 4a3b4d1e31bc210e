"""Bootstrap intervals and paired tests against scipy, brute force and hand computation."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from ndcg_labeler.scoring.significance import (
    bootstrap_ci,
    compare_runs,
    paired_t_test,
    randomization_test,
)

# --- paired t-test -------------------------------------------------------------------------------


def test_paired_t_test_by_hand() -> None:
    a = [0.0, 0.0, 0.0]
    b = [1.0, 2.0, 3.0]
    # Differences 1, 2, 3: mean 2, sd 1, t = 2/(1/√3) = √12 with 2 degrees of freedom.
    # Student's t with 2 df has a closed form: two-sided p = 1 − t/√(2 + t²) = 1 − √(12/14).
    assert paired_t_test(a, b) == pytest.approx(1 - math.sqrt(12 / 14))


def test_paired_t_test_equals_scipy_on_the_same_inputs() -> None:
    rng = np.random.default_rng(7)
    a = rng.random(40)
    b = np.clip(a + rng.normal(0.02, 0.1, 40), 0, 1)
    expected = stats.ttest_rel(a, b).pvalue
    assert paired_t_test(list(a), list(b)) == pytest.approx(expected, rel=1e-12)
    assert paired_t_test(b, a) == pytest.approx(expected, rel=1e-12)  # two-sided: symmetric


def test_paired_t_test_undefined_cases() -> None:
    assert paired_t_test([], []) is None
    assert paired_t_test([0.3], [0.5]) is None  # one pair
    assert paired_t_test([0.2, 0.7, 0.4], [0.2, 0.7, 0.4]) == 1.0  # identical runs
    # 0.1 + 0.2 − 0.3 is 5.6e-17, not 0: still the same score, so still p = 1.
    assert paired_t_test([0.1 + 0.2, 0.5], [0.3, 0.5]) == 1.0
    assert paired_t_test([0.2, 0.5, 0.6], [0.3, 0.6, 0.7]) is None  # constant shift: no variance


# --- randomisation test --------------------------------------------------------------------------


def exact_sign_flip_p(deltas: list[Fraction]) -> Fraction:
    """Brute force in exact arithmetic: share of all 2**n sign patterns with |Σ| ≥ |Σ observed|."""
    observed = abs(sum(deltas))
    patterns = list(itertools.product((1, -1), repeat=len(deltas)))
    hits = 0
    for signs in patterns:
        flipped = sum(sign * delta for sign, delta in zip(signs, deltas, strict=True))
        hits += abs(flipped) >= observed
    return Fraction(hits, len(patterns))


def test_randomization_test_is_exact_for_six_pairs() -> None:
    a = [0.5, 0.4, 0.2, 0.6, 0.1, 0.9]
    b = [0.6, 0.2, 0.5, 0.7, 0.3, 0.8]
    # Decimal differences; in floats 0.6 − 0.5 and 0.7 − 0.6 differ in the last bits, and patterns
    # that tie in exact arithmetic must still count.
    deltas = [Fraction(x) for x in ("0.1", "-0.2", "0.3", "0.1", "0.2", "-0.1")]
    expected = exact_sign_flip_p(deltas)
    assert randomization_test(a, b) == pytest.approx(float(expected), abs=1e-15)
    # By hand, in tenths: magnitudes {1, 1, 1, 2, 2, 3} sum to 10 and the observed Σ is 4. A
    # pattern negating magnitudes summing to S has Σ = 10 − 2S, so |Σ| ≥ 4 ⇔ S ≤ 3 or S ≥ 7.
    # Subsets with S ≤ 3: S=0: 1; S=1: 3; S=2: 3 (1+1) + 2 (a 2) = 5; S=3: 1 (1+1+1) + 6 (1+2)
    # + 1 (the 3) = 8; 17 in all, and as many with S ≥ 7 (complements): p = 34/64.
    assert expected == Fraction(34, 64)


def test_randomization_test_smallest_exact_p() -> None:
    # Differences 1, 2, 3: only "all +" and "all −" reach |Σ| = 6, so p = 2/8.
    assert randomization_test([0, 0, 0], [1, 2, 3]) == 0.25


def test_randomization_test_sampled_agrees_with_full_enumeration() -> None:
    rng = np.random.default_rng(3)
    n = 18  # 2**18 patterns: above the exact limit, so the test samples
    deltas = rng.normal(0.15, 1.0, n)
    flips = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    sums = np.abs((1 - 2 * flips) @ deltas)
    exact = np.count_nonzero(sums >= abs(deltas.sum()) - 1e-9) / 2**n
    sampled = randomization_test(np.zeros(n), deltas, n_resamples=20_000, seed=1)
    # Monte Carlo standard error is √(p(1 − p)/20000) ≤ 0.0036; allow four of them.
    assert sampled == pytest.approx(exact, abs=0.015)


def test_randomization_test_counts_the_observed_arrangement_and_repeats_with_a_seed() -> None:
    a = [0.0] * 40
    b = [0.5] * 40  # every difference positive: no random sign pattern reaches the observed sum
    assert randomization_test(a, b, n_resamples=999) == pytest.approx(1 / 1000)
    rng = np.random.default_rng(11)
    x, y = rng.random(50), rng.random(50)
    assert randomization_test(x, y, seed=5) == randomization_test(x, y, seed=5)


def test_randomization_test_edge_cases() -> None:
    assert randomization_test([], []) is None
    assert randomization_test([0.4, 0.5], [0.4, 0.5]) == 1.0
    with pytest.raises(ValueError, match="one length"):
        randomization_test([0.1, 0.2], [0.1])
    with pytest.raises(ValueError, match="finite"):
        randomization_test([0.1, float("nan")], [0.1, 0.2])


# --- bootstrap -----------------------------------------------------------------------------------


def test_bootstrap_ci_contains_the_mean_and_is_repeatable() -> None:
    values = list(np.random.default_rng(2).random(200))
    first = bootstrap_ci(values, seed=4)
    assert first is not None
    assert first.mean == pytest.approx(sum(values) / len(values))
    assert first.low < first.mean < first.high
    assert bootstrap_ci(values, seed=4) == first
    narrower = bootstrap_ci(values, confidence=0.5, seed=4)
    assert narrower is not None
    assert first.low < narrower.low < narrower.high < first.high


def test_bootstrap_ci_is_close_to_the_normal_interval_for_many_values() -> None:
    values = np.random.default_rng(9).random(1000)
    interval = bootstrap_ci(values, n_resamples=4000)
    assert interval is not None
    # Central limit theorem: mean ± 1.96·s/√n. The percentile bootstrap lands within a few %.
    half_width = 1.96 * values.std(ddof=1) / math.sqrt(values.size)
    assert interval.high - interval.low == pytest.approx(2 * half_width, rel=0.08)


def test_bootstrap_ci_edge_cases() -> None:
    assert bootstrap_ci([]) is None
    assert bootstrap_ci([float("nan")]) is None
    assert bootstrap_ci([0.4]) == (0.4, 0.4, 0.4)
    assert bootstrap_ci([0.7, 0.7, 0.7]) == (0.7, 0.7, 0.7)
    with_nan = bootstrap_ci([0.2, float("nan"), 0.6, 0.4], n_resamples=500)
    assert with_nan is not None and with_nan.mean == pytest.approx(0.4)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci([0.1, 0.2], confidence=95)


# --- comparison ----------------------------------------------------------------------------------


def test_compare_runs_counts_wins_ties_and_losses_of_b() -> None:
    a = [0.5, 0.5, 0.3, 0.2, 0.1 + 0.2]
    b = [0.6, 0.5, 0.2, 0.2, 0.3]  # +0.1, 0, −0.1, 0, −5.6e-17 (a tie, not a loss)
    comparison = compare_runs(a, b)
    assert (comparison.wins, comparison.ties, comparison.losses) == (1, 3, 1)
    assert comparison.deltas == pytest.approx((0.1, 0.0, -0.1, 0.0, 0.0))
    assert comparison.t_test_p == pytest.approx(stats.ttest_rel(a, b).pvalue)
    # The differences sum to (about) 0, so every sign pattern is at least as extreme: p = 1.
    assert comparison.randomization_p == pytest.approx(1.0)
