"""PPI++ for a mean: hand-computed cases at λ = 0, λ = 1, an interior λ and the edges; the
interval about the set's mean against scipy's t distribution."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ndcg_labeler.scoring import MIN_AUDITED, ppi_mean, ppi_p_value, ppi_paired

T975_DF1 = 12.7062047361747  # Student's t 0.975 quantiles (tables): 1 and 4 df
T975_DF4 = 2.7764451051978


def test_negative_covariance_clips_lambda_to_zero_the_classical_mean() -> None:
    # cov(Y, Ŷ) = ((1 − ½)(0 − ½) + (0 − ½)(1 − ½)) / 2 = −¼ < 0, so λ̂ = 0: the mean of Y
    # alone, se² = var(Y) / n = ¼ / 2. About the set's 5 queries: nothing fitted but the mean,
    # 1 df; se_set² = (1 − 2/5) · s²_Y / 2 with s²_Y = ½ (n − 1): 0.15.
    found = ppi_mean([1.0, 0.0], [0.0, 1.0], [0.3, 0.9, 0.5])
    assert found.lam == 0.0
    assert found.estimate == pytest.approx(0.5, abs=1e-15)
    assert found.se == pytest.approx(math.sqrt(1 / 8), abs=1e-15)
    assert (found.se_set, found.df) == (pytest.approx(math.sqrt(0.15), abs=1e-15), 1)
    assert found.ci_low == pytest.approx(0.5 - T975_DF1 * math.sqrt(0.15), abs=1e-10)
    assert found.ci_high == pytest.approx(0.5 + T975_DF1 * math.sqrt(0.15), abs=1e-10)
    assert (found.n_audited, found.n_unaudited) == (2, 3)


def test_strong_covariance_clips_lambda_to_one_plain_ppi() -> None:
    # Y = (0, 1), Ŷ = (0, ½): cov = ⅛. All eight Ŷ alternate 0 and ½: var (n − 1) = 8·(1/16)/7
    # = 1/14; 1 + n/N = 4/3; λ = ⅛ / (4/3 · 1/14) = 21/16 > 1, so λ̂ = 1.
    # θ̂ = mean(Ŷ unlabeled) + mean(Y − Ŷ) = ¼ + ¼; se² = (1/16)/6 + (1/16)/2 = 1/24.
    found = ppi_mean([0.0, 1.0], [0.0, 0.5], [0.0, 0.5, 0.0, 0.5, 0.0, 0.5])
    assert found.lam == 1.0
    assert found.estimate == pytest.approx(0.5, abs=1e-15)
    assert found.se == pytest.approx(math.sqrt(1 / 24), abs=1e-15)
    # λ̂ was fitted: n − 2 = 0 df, no interval.
    assert found.df == 0
    assert math.isnan(found.se_set) and math.isnan(found.ci_low) and math.isnan(found.ci_high)


def test_interior_lambda_by_hand() -> None:
    # Y = (0, 1), Ŷ = (0, 1): cov = ¼. With Ŷ unlabeled (0, 0, 1, 1, 1, 1) the eight Ŷ are three
    # 0s and five 1s: mean ⅝, var (n − 1) = (3·(25/64) + 5·(9/64)) / 7 = 15/56; 1 + n/N = 4/3;
    # λ̂ = ¼ / (4/3 · 15/56) = 7/10.
    # θ̂ = 0.7 · ⅔ + mean(0, 0.3) = 7/15 + 3/20 = 37/60;
    # se² = 0.49 · (2/9) / 6 + var(0, 0.3) / 2 = 49/2700 + 9/800.
    found = ppi_mean([0.0, 1.0], [0.0, 1.0], [0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    assert found.lam == pytest.approx(7 / 10, abs=1e-15)
    assert found.estimate == pytest.approx(37 / 60, abs=1e-15)
    assert found.se == pytest.approx(math.sqrt(49 / 2700 + 9 / 800), abs=1e-15)


def test_no_unaudited_query_or_constant_predictions_give_the_classical_mean() -> None:
    # N = 0: ppi-python divides by zero; here λ̂ = 0. Every query is audited: the estimate is
    # the set's mean, exactly (a zero-width interval).
    alone = ppi_mean([0.2, 0.4, 0.9], [0.1, 0.5, 0.8], [])
    assert (alone.lam, alone.n_unaudited) == (0.0, 0)
    assert alone.estimate == pytest.approx(0.5, abs=1e-15)
    assert alone.se == pytest.approx(math.sqrt(((0.3**2) + 0.1**2 + 0.4**2) / 3 / 3), abs=1e-15)
    assert (alone.se_set, alone.ci_low, alone.ci_high) == (0.0, alone.estimate, alone.estimate)
    # Constant predictions: ppi-python's λ is 0/0; every λ gives the mean of Y and its se.
    flat = ppi_mean([0.0, 1.0, 1.0], [0.5, 0.5, 0.5], [0.5, 0.5])
    assert flat.lam == 0.0
    assert flat.estimate == pytest.approx(2 / 3, abs=1e-15)
    assert flat.se == pytest.approx(math.sqrt((2 / 9) / 3), abs=1e-15)


def test_interval_about_the_set_by_hand() -> None:
    # Y = (0, 1, 0, 1, 1, 0), Ŷ = Y: cov = ¼ (over n). Ŷ unlabeled (1, 1): the eight Ŷ are three
    # 0s and five 1s, var (n − 1) = 15/56; 1 + n/N = 4; λ̂ = ¼ / (4 · 15/56) = 7/30.
    # θ̂ = 7/30 · 1 + mean(Y − 7/30 · Y) = 7/30 + ½ · 23/30 = 37/60.
    # W = (N/M) Y − λ̂ Ŷ = (¼ − 7/30) Y = Y / 60, each ±1/120 from its mean 1/120:
    # Σ (W − W̄)² = 6 · (1/120)² = 1/2400, over n − 2 = 4 (λ̂ fitted): s²_W = 1/9600.
    # se_set² = 1/9600 · (1/6 + 1/2) = 1/14400: se_set = 1/120, 4 df.
    y = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    found = ppi_mean(y, y, [1.0, 1.0])
    assert found.lam == pytest.approx(7 / 30, abs=1e-15)
    assert found.estimate == pytest.approx(37 / 60, abs=1e-15)
    assert (found.se_set, found.df) == (pytest.approx(1 / 120, abs=1e-15), 4)
    assert found.ci_high - found.estimate == pytest.approx(T975_DF4 / 120, abs=1e-12)


def test_classical_case_is_scipys_t_interval_with_the_finite_population_correction() -> None:
    # Predictions anti-correlated with Y clip λ̂ to 0: the interval must be scipy's t interval of
    # the labeled mean, its scale the sem times √(1 − n/M).
    rng = np.random.default_rng(3)
    y = rng.random(12)
    found = ppi_mean(y, 1.0 - y, rng.random(36), alpha=0.1)
    assert found.lam == 0.0
    scale = stats.sem(y) * math.sqrt(1 - 12 / 48)
    low, high = stats.t.interval(0.9, 11, loc=y.mean(), scale=scale)
    assert (found.ci_low, found.ci_high) == (pytest.approx(low, abs=1e-12), pytest.approx(high))


def test_fitted_case_uses_n_minus_two_df_from_scipy() -> None:
    rng = np.random.default_rng(4)
    truth = rng.random(60)
    machine = truth + rng.normal(0, 0.1, 60)
    y, yhat, unl = truth[:15], machine[:15], machine[15:]
    found = ppi_mean(y, yhat, unl)
    assert 0.0 < found.lam < 1.0 and found.df == 13
    w = (45 / 60) * y - found.lam * yhat
    se_set = math.sqrt(np.var(w, ddof=2) * (1 / 15 + 1 / 45))
    half = stats.t.ppf(0.975, 13) * se_set
    assert found.ci_low == pytest.approx(found.estimate - half, abs=1e-12)
    assert found.ci_high == pytest.approx(found.estimate + half, abs=1e-12)


def test_paired_difference_is_ppi_on_per_query_differences() -> None:
    # Differences: Y = (1, 0) − (0, 0) = (1, 0) and Ŷ = (0, 1) − (0, 0): the first case above.
    found = ppi_paired(
        ([0.0, 0.0], [0.0, 0.0], [0.1, 0.1, 0.1]),
        ([1.0, 0.0], [0.0, 1.0], [0.4, 1.0, 0.6]),
    )
    assert found.lam == 0.0
    assert found.estimate == pytest.approx(0.5, abs=1e-15)
    assert found.se == pytest.approx(math.sqrt(1 / 8), abs=1e-15)
    with pytest.raises(ValueError, match="same labeled and unlabeled"):
        ppi_paired(([0.0], [0.0], [0.0]), ([0.0], [0.0], [0.0, 1.0]))


def test_z_tests_by_hand() -> None:
    found = ppi_mean([1.0, 0.0], [0.0, 1.0], [0.3, 0.9, 0.5])  # θ̂ = ½, se = √⅛
    z = 0.5 / math.sqrt(1 / 8)  # = √2
    # Φ(−√2) = erfc(1) / 2 = 0.0786496035251426 (tables of erfc).
    assert ppi_p_value(found) == pytest.approx(2 * math.erfc(z / math.sqrt(2)) / 2, abs=1e-15)
    assert ppi_p_value(found) == pytest.approx(2 * 0.0786496035251426, abs=1e-14)
    assert ppi_p_value(found, 0.0, "larger") == pytest.approx(0.0786496035251426, abs=1e-14)
    assert ppi_p_value(found, 0.0, "smaller") == pytest.approx(1 - 0.0786496035251426, abs=1e-14)
    # At null = θ̂ the z statistic is 0: p = 1 two-sided, ½ one-sided.
    assert ppi_p_value(found, 0.5) == pytest.approx(1.0)
    assert ppi_p_value(found, 0.5, "larger") == pytest.approx(0.5)


def test_zero_se_lets_the_estimate_decide() -> None:
    found = ppi_mean([0.3, 0.3], [0.3, 0.3], [0.3])
    assert found.se == 0.0
    assert ppi_p_value(found, 0.0) == 0.0
    assert ppi_p_value(found, 0.3) == 1.0
    assert ppi_p_value(found, -0.01, "larger") == 0.0
    assert ppi_p_value(found, 0.31, "larger") == 1.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([], [], [0.5]), "at least one labeled"),
        (([0.1, 0.2], [0.1], [0.5]), "one value per labeled"),
        (([0.1, float("nan")], [0.1, 0.2], [0.5]), "finite"),
        (([[0.1]], [[0.1]], [0.5]), "one list"),
    ],
)
def test_refuses_what_it_cannot_estimate(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ppi_mean(*args)


def test_refuses_alpha_and_alternatives_outside_their_range() -> None:
    with pytest.raises(ValueError, match="alpha"):
        ppi_mean([0.1, 0.2], [0.1, 0.2], [0.5], alpha=0.0)
    with pytest.raises(ValueError, match="alternative"):
        ppi_p_value(ppi_mean([0.1, 0.2], [0.1, 0.2], [0.5]), 0.0, "greater")


def test_withholding_threshold_is_ten_audited_queries() -> None:
    assert MIN_AUDITED == 10
