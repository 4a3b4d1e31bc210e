"""The t interval of a mean over queries, against scipy.stats.t and a hand-computed case."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ndcg_labeler.scoring import TInterval, t_interval
from ndcg_labeler.scoring.intervals import t_quantile


@pytest.mark.parametrize("probability", [0.975, 0.995, 0.95, 0.9, 0.6])
def test_t_quantile_matches_scipy(probability: float) -> None:
    for df in [*range(1, 120), 500, 1000, 6999, 100_000]:
        expected = stats.t.ppf(probability, df)
        assert t_quantile(probability, df) == pytest.approx(expected, rel=1e-10), df


def test_t_quantile_refuses_what_it_does_not_solve() -> None:
    with pytest.raises(ValueError):
        t_quantile(0.4, 10)
    with pytest.raises(ValueError):
        t_quantile(0.975, 0)


@pytest.mark.parametrize("n", [2, 3, 7, 43, 500])
def test_interval_matches_scipy_t_interval(n: int) -> None:
    values = np.random.default_rng(n).random(n)
    found = t_interval(values)
    low, high = stats.t.interval(0.95, n - 1, loc=values.mean(), scale=stats.sem(values))
    assert found.low == pytest.approx(low, rel=1e-10)
    assert found.high == pytest.approx(high, rel=1e-10)
    assert (found.mean, found.n, found.method, found.reason) == (
        pytest.approx(values.mean()),
        n,
        "t",
        None,
    )


def test_hand_computed_interval() -> None:
    # 0.2, 0.4, 0.6: mean 0.4, sd 0.2; with 2 degrees of freedom t_0.975 is
    # 0.95 / sqrt(2 · 0.975 · 0.025) (the t(2) quantile in closed form) = 4.302652729911275.
    t = 0.95 / math.sqrt(2 * 0.975 * 0.025)
    half = t * 0.2 / math.sqrt(3)
    found = t_interval(np.array([0.2, 0.4, 0.6]))
    assert found.mean == pytest.approx(0.4)
    assert found.low == pytest.approx(0.4 - half) == pytest.approx(-0.0968275, abs=1e-7)
    assert found.high == pytest.approx(0.4 + half) == pytest.approx(0.8968275, abs=1e-7)


def test_undefined_values_are_left_out() -> None:
    found = t_interval(np.array([0.2, np.nan, 0.4, 0.6, np.nan]))
    assert found == t_interval(np.array([0.2, 0.4, 0.6]))
    assert found.n == 3


def test_fewer_than_two_values_have_no_interval() -> None:
    one = t_interval(np.array([0.7, np.nan]))
    assert one == TInterval(0.7, 1, None, None, "one query: an interval needs at least 2")
    none = t_interval(np.array([np.nan]))
    assert none == TInterval(None, 0, None, None, "no query has a defined value")


def test_equal_values_give_a_zero_width_interval() -> None:
    found = t_interval(np.full(5, 0.5))
    assert (found.low, found.high) == (pytest.approx(0.5), pytest.approx(0.5))
