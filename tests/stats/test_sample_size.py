"""Non-inferiority p-values and sample sizes against scipy, t tables and published power values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ndcg_labeler.scoring import (
    noninferiority_p,
    paired_power,
    queries_for_power,
    queries_to_clear,
)


def test_noninferiority_p_equals_scipys_one_sided_test_on_shifted_differences() -> None:
    rng = np.random.default_rng(3)
    for margin in (0.0, 0.01, 0.05):
        d = rng.normal(-0.005, 0.05, 30)
        expected = stats.ttest_1samp(d + margin, 0.0, alternative="greater").pvalue
        assert noninferiority_p(list(d), margin) == pytest.approx(expected, rel=1e-10)


def test_noninferiority_p_by_hand() -> None:
    # d = 0, 0.1, 0.2 with margin 0.1: d + margin = 0.1, 0.2, 0.3, mean 0.2, sd 0.1,
    # t = 0.2 / (0.1/√3) = 2√3 on 2 df; Student's t with 2 df: P(T ≥ t) = (1 − t/√(2 + t²))/2.
    t = 2 * math.sqrt(3)
    assert noninferiority_p([0.0, 0.1, 0.2], 0.1) == pytest.approx((1 - t / math.sqrt(14)) / 2)


def test_noninferiority_p_undefined_cases() -> None:
    assert noninferiority_p([0.3], 0.01) is None  # one pair: no test
    assert noninferiority_p([], 0.01) is None
    # No spread: the mean alone decides.
    assert noninferiority_p([0.0, 0.0, 0.0], 0.01) == 0.0
    assert noninferiority_p([-0.02, -0.02], 0.01) == 1.0
    assert noninferiority_p([0.0, 0.0], 0.0) == 1.0  # mean 0 is not above −0
    with pytest.raises(ValueError):
        noninferiority_p([0.1, float("nan")], 0.01)


def test_queries_to_clear_by_hand_from_a_t_table() -> None:
    # mean + margin = 1, sd = 1, alpha 0.05: the bound clears when √n > t(0.95, n − 1).
    # t table: n=2: 1.414 < 6.314; n=3: 1.732 < 2.920; n=4: 2.000 < 2.353; n=5: 2.236 > 2.132.
    assert queries_to_clear(0.5, 1.0, 0.5, 0.05) == 5
    # The answer is the first n at which noninferiority_p would say p < alpha, if the
    # differences kept mean 0.5 and sd 1 exactly.
    for n in (4, 5):
        d = np.array([1.0, -1.0] * (n // 2) + [0.0] * (n % 2))
        d = 0.5 + d / d.std(ddof=1)
        assert (noninferiority_p(list(d), 0.5) < 0.05) is (n == 5)


def test_queries_to_clear_against_a_scan_with_scipy() -> None:
    for mean, sd, margin, alpha in [(0.0, 0.1, 0.01, 0.05), (0.004, 0.07, 0.01, 0.01)]:
        n = queries_to_clear(mean, sd, margin, alpha)
        assert n is not None
        bound = [mean - stats.t.ppf(1 - alpha, m - 1) * sd / math.sqrt(m) for m in (n - 1, n)]
        assert bound[0] <= -margin < bound[1]
    # 0.01·√n/0.1 > t(0.95, n − 1) from about n = 100 · 1.645² ≈ 271 up.
    assert 271 <= queries_to_clear(0.0, 0.1, 0.01, 0.05) <= 275


def test_queries_to_clear_when_more_queries_will_not_help() -> None:
    assert queries_to_clear(-0.01, 0.1, 0.01, 0.05) is None  # mean = −margin
    assert queries_to_clear(-0.2, 0.1, 0.01, 0.05) is None
    assert queries_to_clear(0.1, 0.1, 0.01, 0.0) is None  # alpha 0: nothing passes
    assert queries_to_clear(0.0, 0.0, 0.01, 0.05) == 2  # no spread: the mean decides
    # A hair-thin gap: beyond any test set, answered without overflow.
    assert queries_to_clear(-0.01 + 1e-300, 0.1, 0.01, 0.05) is None
    # A tiny alpha (1 − alpha rounds to 1): the normal approximation (z · sd / gap)² with
    # z = norm.isf(1e-300) ≈ 37.0 gives ≈ 137,000; the t answer is just above it.
    z = stats.norm.isf(1e-300)
    assert (z * 10) ** 2 <= queries_to_clear(0.0, 0.1, 0.01, 1e-300) <= (z * 10) ** 2 * 1.01
    assert queries_to_clear(0.1, 0.1, 0.01, 1.0) == 2  # alpha 1: any positive gap passes


def test_power_matches_the_noncentral_t_computed_directly() -> None:
    n, effect, sd, alpha = 20, 0.03, 0.06, 0.05
    df, nc = n - 1, effect * math.sqrt(n) / sd
    c = stats.t.ppf(0.975, df)
    expected = stats.nct.sf(c, df, nc) + stats.nct.cdf(-c, df, nc)
    assert paired_power(effect, sd, n, alpha) == pytest.approx(expected)
    # Zero effect: the power is the test's level.
    assert paired_power(0.0, sd, n, alpha) == pytest.approx(alpha)


@pytest.mark.parametrize(
    ("effect_size", "expected"),
    # Published: Cohen's d for a paired / one-sample two-sided t-test at alpha 0.05 and power
    # 0.8 (G*Power "difference from constant"; statsmodels TTestPower.solve_power gives 198.15,
    # 33.37 and 14.30 before rounding up).
    [(0.2, 199), (0.5, 34), (0.8, 15)],
)
def test_queries_for_power_matches_published_values(effect_size: float, expected: int) -> None:
    assert queries_for_power(effect_size * 0.1, 0.1, 0.05) == expected
    assert paired_power(effect_size * 0.1, 0.1, expected - 1, 0.05) < 0.8
    assert paired_power(effect_size * 0.1, 0.1, expected, 0.05) >= 0.8


def test_queries_for_power_edge_cases() -> None:
    assert queries_for_power(0.0, 0.1, 0.05) is None  # nothing to detect
    assert queries_for_power(0.02, 0.0, 0.05) == 2  # no spread
    assert queries_for_power(-0.05, 0.1, 0.05) == queries_for_power(0.05, 0.1, 0.05)
    # Tiny alpha: the normal approximation ((z(1 − alpha/2) + z(0.8)) · sd / effect)² is close.
    normal = ((stats.norm.isf(0.5e-300) + stats.norm.ppf(0.8)) / 0.2) ** 2
    assert normal <= queries_for_power(0.02, 0.1, 1e-300) <= normal * 1.1
