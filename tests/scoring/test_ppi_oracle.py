"""PPI++ for a mean against ppi-python 0.2.3, the authors' package (a test-only oracle).

The estimate, λ̂, the se and the z-tests are ppi-python's; the interval shown is not (it is about
the test set's own mean, tests/scoring/test_ppi.py), so ppi-python's interval is checked as
θ̂ ± z · se.

ppi_py imports numba, statsmodels and scikit-learn (seconds) and switches every warning off as
it is imported, so it is imported once, here, with the warning filters put back afterwards.
"""

from __future__ import annotations

import warnings
from statistics import NormalDist
from types import ModuleType

import numpy as np
import pytest

from ndcg_labeler.scoring import PPIEstimate, ppi_mean, ppi_p_value, ppi_paired

TOLERANCE = 1e-9


def _z_interval(found: PPIEstimate, alpha: float) -> tuple[float, float]:
    """ppi-python's interval from our estimate and se: θ̂ ± z_{1−α/2} · se."""
    half = NormalDist().inv_cdf(1 - alpha / 2) * found.se
    return found.estimate - half, found.estimate + half


@pytest.fixture(scope="module")
def ppi() -> ModuleType:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import ppi_py
    return ppi_py


def _oracle_lambda(ppi: ModuleType, y: np.ndarray, yhat: np.ndarray, unl: np.ndarray) -> float:
    """λ̂ as ppi_mean_ci computes it before its second call (clipped to [0, 1])."""
    from ppi_py.ppi import _calc_lam_glm

    theta = ppi.ppi_mean_pointestimate(y, yhat, unl, lam=1)
    return float(
        _calc_lam_glm(y - theta, yhat - theta, unl - theta, np.eye(1), coord=None, clip=True)
    )


def _datasets() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """NDCG-like values in [0, 1]: machine predictions good, poor, anti-correlated, and sizes
    from a bare audit to many audited queries."""
    out = []
    for seed, n, big_n, noise, sign in [
        (1, 10, 200, 0.05, 1),
        (2, 25, 1000, 0.2, 1),
        (3, 40, 60, 0.5, 1),
        (4, 12, 7000, 0.1, 1),
        (5, 30, 300, 0.1, -1),
        (6, 200, 20, 0.02, 1),
    ]:
        rng = np.random.default_rng(seed)
        truth = rng.beta(2, 3, n + big_n)
        machine = np.clip(0.5 + sign * (truth - 0.5) + rng.normal(0, noise, n + big_n), 0, 1)
        out.append((truth[:n], machine[:n], machine[n:]))
    return out


@pytest.mark.parametrize("data", _datasets(), ids=lambda d: f"n{d[0].size}-N{d[2].size}")
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_estimate_se_and_lambda_match_ppi_python(
    ppi: ModuleType, data: tuple[np.ndarray, np.ndarray, np.ndarray], alpha: float
) -> None:
    y, yhat, unl = data
    found = ppi_mean(y, yhat, unl, alpha=alpha)
    estimate = float(np.squeeze(ppi.ppi_mean_pointestimate(y, yhat, unl, lam=None)))
    low, high = (float(np.squeeze(v)) for v in ppi.ppi_mean_ci(y, yhat, unl, alpha=alpha))
    assert found.estimate == pytest.approx(estimate, abs=TOLERANCE)
    z_low, z_high = _z_interval(found, alpha)
    assert z_low == pytest.approx(low, abs=TOLERANCE)
    assert z_high == pytest.approx(high, abs=TOLERANCE)
    assert found.lam == pytest.approx(_oracle_lambda(ppi, y, yhat, unl), abs=TOLERANCE)
    assert (found.n_audited, found.n_unaudited) == (y.size, unl.size)


def test_the_datasets_reach_both_clips_and_the_inside(ppi: ModuleType) -> None:
    """The oracle comparisons above cover λ̂ = 0, an interior λ̂, and (below) λ̂ = 1."""
    lams = {round(ppi_mean(*d).lam, 3) for d in _datasets()}
    assert 0.0 in lams
    assert any(0.0 < lam < 1.0 for lam in lams)
    rng = np.random.default_rng(9)
    # Human values move twice as far as the machine's: cov ≈ 2 var(Ŷ), so λ̂ clips at 1.
    yhat, unl = rng.random(15) / 2, rng.random(100) / 2
    y = 2 * yhat
    found = ppi_mean(y, yhat, unl)
    assert found.lam == 1.0
    low, high = (float(np.squeeze(v)) for v in ppi.ppi_mean_ci(y, yhat, unl, alpha=0.05))
    assert _z_interval(found, 0.05) == (
        pytest.approx(low, abs=TOLERANCE),
        pytest.approx(high, abs=TOLERANCE),
    )


@pytest.mark.parametrize("data", _datasets()[:4], ids=lambda d: f"n{d[0].size}-N{d[2].size}")
def test_paired_difference_matches_ppi_python_on_differences(
    ppi: ModuleType, data: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> None:
    y_b, yhat_b, unl_b = data
    rng = np.random.default_rng(y_b.size)
    y_a = np.clip(y_b - 0.03 + rng.normal(0, 0.1, y_b.size), 0, 1)
    yhat_a = np.clip(yhat_b - 0.03 + rng.normal(0, 0.1, y_b.size), 0, 1)
    unl_a = np.clip(unl_b - 0.03 + rng.normal(0, 0.1, unl_b.size), 0, 1)
    found = ppi_paired((y_a, yhat_a, unl_a), (y_b, yhat_b, unl_b))
    d, dhat, dunl = y_b - y_a, yhat_b - yhat_a, unl_b - unl_a
    low, high = (float(np.squeeze(v)) for v in ppi.ppi_mean_ci(d, dhat, dunl, alpha=0.05))
    estimate = float(np.squeeze(ppi.ppi_mean_pointestimate(d, dhat, dunl, lam=None)))
    assert found.estimate == pytest.approx(estimate, abs=TOLERANCE)
    assert _z_interval(found, 0.05) == (
        pytest.approx(low, abs=TOLERANCE),
        pytest.approx(high, abs=TOLERANCE),
    )


@pytest.mark.parametrize("data", _datasets(), ids=lambda d: f"n{d[0].size}-N{d[2].size}")
@pytest.mark.parametrize(
    ("null", "alternative"), [(0.0, "two-sided"), (0.3, "larger"), (0.5, "smaller")]
)
def test_z_test_p_values_match_ppi_python(
    ppi: ModuleType, data: tuple[np.ndarray, np.ndarray, np.ndarray], null: float, alternative: str
) -> None:
    # ppi_mean_pval tunes λ without clipping it, so it is given the clipped λ̂ of ppi_mean_ci.
    y, yhat, unl = data
    lam = _oracle_lambda(ppi, y, yhat, unl)
    expected = float(
        np.squeeze(ppi.ppi_mean_pval(y, yhat, unl, null=null, alternative=alternative, lam=lam))
    )
    found = ppi_p_value(ppi_mean(y, yhat, unl), null, alternative)
    assert found == pytest.approx(expected, abs=TOLERANCE)
