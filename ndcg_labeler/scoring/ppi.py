"""Prediction-powered inference for a mean, with power tuning (PPI++), and its z-tests.

A. N. Angelopoulos, J. C. Duchi and T. Zrnic, "PPI++: Efficient Prediction-Powered Inference",
arXiv:2311.01453, 2023 (the mean, their Example 6.1); the estimate, λ̂ and se as ppi-python
0.2.3 computes them (`ppi_mean_pointestimate`, `ppi_mean_ci` with lam=None, `_calc_lam_glm` with
clip=True).

Labeled: n values Y_i with predictions Ŷ_i (audited queries: human and machine NDCG);
unlabeled: N predictions Ŷ_j (every other query: machine NDCG). For a weight λ,

    θ̂_λ = λ · mean_j(Ŷ_j) + mean_i(Y_i − λ Ŷ_i),
    se² = λ² · var(Ŷ_j) / N + var(Y_i − λ Ŷ_i) / n        (variances over n, not n − 1).

λ = 0 is the classical mean of the labeled values, λ = 1 plain PPI. Power tuning takes the λ
that minimises se² when estimated from the data,

    λ̂ = cov(Y, Ŷ) / ((1 + n/N) · var(Ŷ over labeled and unlabeled)),

cov over the labeled pairs (divided by n), var over all n + N predictions (divided by
n + N − 1), clipped to [0, 1]. Cases ppi-python leaves undefined (NaN or a division by zero),
decided here: no unlabeled value (N = 0) or no spread in the predictions gives λ̂ = 0, the
classical estimate (with constant predictions every λ gives the same estimate and se).

The interval is not ppi-python's θ̂ ± z · se. That se is the error of θ̂ about the mean of an
endless supply of queries, of which the labeled and the unlabeled ones are two fresh samples.
Our estimand is the mean of Y over the test set's own n + N queries, and the audit sample is n
of them drawn without replacement (services/audit_samples): the unlabeled queries' Y are part
of the estimand, not noise around it, so that se is too wide for it (and, at n = 10 to 40, z
is too narrow for an estimated se). With M = n + N and W = (N/M) · Y − λ̂ Ŷ,

    θ̂ − mean_M(Y) = mean_labeled(W) − mean_unlabeled(W),
    se_set² = s²_W · (1/n + 1/N),

s²_W over the labeled W with n − 2 in the denominator (one degree of freedom for the mean, one
for λ̂: the regression estimator's residual variance, Cochran, Sampling Techniques, 1977, §7.3),
and the interval is θ̂ ± t_{1−α/2, n−2} · se_set. With λ̂ = 0 nothing was fitted: n − 1, and the
interval is the classical one with the finite-population correction, mean(Y) ± t_{n−1} ·
s_Y · √((1 − n/M) / n). N = 0: every query is audited, θ̂ is the set's mean and se_set = 0.
PPI++'s λ̂ is also the λ that minimises se_set² ((N/M) · cov / var(Ŷ), the same number), so the
two share the estimate. The decisions bench measures both choices against the set's mean.

A paired difference of two runs is the same estimate on per-query differences (candidate −
baseline, human and machine alike). The z-tests (the gate's) use θ̂ and ppi-python's se: they
ask about queries like these, not about this set alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from .intervals import t_quantile

# Below this many audited queries the interval is withheld: λ̂ and the labeled variance rest on
# too few values for the interval to mean what it says.
MIN_AUDITED = 10
ALTERNATIVES = ("two-sided", "larger", "smaller")


@dataclass(frozen=True)
class PPIEstimate:
    """A PPI++ estimate of the test set's mean, its t interval, the sample sizes, λ̂, the PPI++
    se (ppi-python's, for the z-tests), the se about the set's mean and the interval's df."""

    estimate: float
    ci_low: float
    ci_high: float
    n_audited: int
    n_unaudited: int
    lam: float
    se: float
    se_set: float
    df: int


def _vector(values: np.ndarray | list[float], name: str) -> np.ndarray:
    """A 1-D float64 array of finite values, or ValueError naming the argument."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or not np.isfinite(array).all():
        raise ValueError(f"{name} must be one list of finite numbers")
    return array


def ppi_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> float:
    """Power-tuned λ̂ for the mean, clipped to [0, 1] (0 when N = 0 or Ŷ has no spread)."""
    n, big_n = y.size, yhat_unlabeled.size
    if big_n == 0 or n == 0:
        return 0.0
    every = np.concatenate([yhat, yhat_unlabeled])
    var = float(every.var(ddof=1)) if every.size >= 2 else 0.0
    if var <= 0.0:
        return 0.0
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    return float(np.clip(cov / ((1.0 + n / big_n) * var), 0.0, 1.0))


def ppi_mean(
    y_labeled: np.ndarray | list[float],
    yhat_labeled: np.ndarray | list[float],
    yhat_unlabeled: np.ndarray | list[float],
    alpha: float = 0.05,
) -> PPIEstimate:
    """PPI++ estimate of the set's mean with its (1 − alpha) t interval (see the module)."""
    y = _vector(y_labeled, "y_labeled")
    yhat = _vector(yhat_labeled, "yhat_labeled")
    unlabeled = _vector(yhat_unlabeled, "yhat_unlabeled")
    if y.size != yhat.size:
        raise ValueError("y_labeled and yhat_labeled must have one value per labeled item")
    if y.size == 0:
        raise ValueError("PPI needs at least one labeled value")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, not {alpha}")
    lam = ppi_lambda(y, yhat, unlabeled)
    rectifier = y - lam * yhat
    imputed = lam * unlabeled.mean() if unlabeled.size else 0.0
    estimate = float(imputed + rectifier.mean())
    imputed_var = lam * lam * float(unlabeled.var()) / unlabeled.size if unlabeled.size else 0.0
    se = math.sqrt(imputed_var + float(rectifier.var()) / y.size)
    se_set, df = _set_se(y, yhat, unlabeled.size, lam)
    half = t_quantile(1.0 - alpha / 2.0, df) * se_set if df >= 1 and se_set > 0 else se_set
    return PPIEstimate(
        estimate,
        estimate - half,
        estimate + half,
        int(y.size),
        int(unlabeled.size),
        lam,
        se,
        se_set,
        df,
    )


def _set_se(y: np.ndarray, yhat: np.ndarray, big_n: int, lam: float) -> tuple[float, int]:
    """(se of θ̂ about the set's mean, its degrees of freedom); NaN when n leaves no df."""
    n = y.size
    fitted = 2 if lam > 0.0 else 1  # the mean, and λ̂ when it moved off 0
    df = n - fitted
    if big_n == 0:
        return 0.0, df  # every query audited: the estimate is the set's mean
    if df < 1:
        return math.nan, df
    w = (big_n / (n + big_n)) * y - lam * yhat
    return math.sqrt(float(w.var(ddof=fitted)) * (1.0 / n + 1.0 / big_n)), df


def ppi_paired(
    baseline: tuple[np.ndarray, np.ndarray, np.ndarray],
    candidate: tuple[np.ndarray, np.ndarray, np.ndarray],
    alpha: float = 0.05,
) -> PPIEstimate:
    """PPI++ estimate of mean(candidate − baseline) from per-query differences.

    Each side is (Y labeled, Ŷ labeled, Ŷ unlabeled) over the same queries in the same order.
    """
    y_a, yhat_a, unl_a = (_vector(v, "baseline") for v in baseline)
    y_b, yhat_b, unl_b = (_vector(v, "candidate") for v in candidate)
    if (y_a.size, yhat_a.size, unl_a.size) != (y_b.size, yhat_b.size, unl_b.size):
        raise ValueError("both runs must cover the same labeled and unlabeled queries")
    return ppi_mean(y_b - y_a, yhat_b - yhat_a, unl_b - unl_a, alpha)


def ppi_p_value(found: PPIEstimate, null: float = 0.0, alternative: str = "two-sided") -> float:
    """z-test p-value of H0: mean = null against `alternative` (larger: mean > null).

    z = (θ̂ − null) / se. With se 0 (no spread at all) the estimate alone decides: 0 when it
    lies on the alternative's side of null, else 1.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {', '.join(ALTERNATIVES)}")
    gap = found.estimate - null
    if found.se == 0.0:
        beyond = {"two-sided": gap != 0.0, "larger": gap > 0.0, "smaller": gap < 0.0}
        return 0.0 if beyond[alternative] else 1.0
    z = gap / found.se
    normal = NormalDist()
    if alternative == "larger":
        return normal.cdf(-z)
    if alternative == "smaller":
        return normal.cdf(z)
    return 2.0 * normal.cdf(-abs(z))
