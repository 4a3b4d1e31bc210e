"""How many queries a paired comparison needs: to clear a non-inferiority margin, or for power.

Both answers assume the per-query differences d keep the mean and standard deviation observed:
- queries_to_clear: the smallest n at which the one-sided (1 − alpha) lower confidence bound
  mean − t(1 − alpha, n − 1) · sd / √n lies above −margin, i.e. at which the non-inferiority
  test (significance.noninferiority_p) would give p < alpha;
- queries_for_power: the smallest n at which the two-sided paired t-test at level alpha detects
  a true mean difference `effect` with the power asked for. Power at n uses the noncentral t
  distribution: with df = n − 1, noncentrality δ = effect · √n / sd and c = t(1 − alpha/2, df),
  power = P(T' > c) + P(T' < −c), T' ~ nct(df, δ) (J. Cohen, "Statistical Power Analysis for
  the Behavioral Sciences", 2nd ed., 1988, ch. 2).
Both functions search n from 2 up to MAX_QUERIES and return None beyond it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .significance import TIE_TOLERANCE

# Beyond this many queries the answer is "more than any test set will have" (None).
MAX_QUERIES = 10**9


def _smallest_n(enough: Callable[[int], bool], start: int) -> int | None:
    """The smallest n ≥ start with enough(n), for a predicate that stays true once true."""
    low, high = start - 1, max(start, 2)
    while not enough(high):  # double until the predicate holds, then bisect (low fails)
        if high >= MAX_QUERIES:
            return None
        low, high = high, min(2 * high, MAX_QUERIES)
    while high - low > 1:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle
    return high


def _t_upper(q: float, df: int) -> float:
    """t(1 − q, df), the t quantile with q above it.

    scipy's isf keeps precision where ppf(1 − q) cannot (1 − q rounds to 1 below q ≈ 1e-16),
    but for q far below that it can answer −inf at small df; the quantile is then +inf.
    """
    from scipy import stats  # imported on use: scipy.stats takes seconds to import

    value = float(stats.t.isf(q, df))
    if q < 0.5 and not (math.isfinite(value) and value > 0):
        return math.inf
    return value


def queries_to_clear(mean: float, sd: float, margin: float, alpha: float) -> int | None:
    """Paired queries at which the one-sided bound of mean d would clear −margin (n ≥ 2).

    None when no number of queries would: mean ≤ −margin, alpha ≤ 0, or more than MAX_QUERIES.
    With sd 0 (every difference equal) two queries do: the mean alone decides.
    """
    gap = mean + margin
    if gap <= 0 or alpha <= 0:
        return None
    if sd <= TIE_TOLERANCE:
        return 2
    from scipy import stats  # imported on use: scipy.stats takes seconds to import

    def enough(n: int) -> bool:
        return gap * math.sqrt(n) / sd > _t_upper(alpha, n - 1)

    # The normal quantile is below every t quantile, so n below the normal answer never clears.
    root = float(stats.norm.isf(alpha)) * sd / gap
    if root >= math.sqrt(MAX_QUERIES):
        return None
    return _smallest_n(enough, max(2, math.ceil(root * root)) if root > 0 else 2)


def paired_power(effect: float, sd: float, n: int, alpha: float) -> float:
    """Power of the two-sided paired t-test at level alpha with n pairs, true mean `effect`."""
    from scipy import stats  # imported on use: scipy.stats takes seconds to import

    df = n - 1
    noncentrality = effect * math.sqrt(n) / sd
    critical = _t_upper(alpha / 2, df)
    upper = stats.nct.sf(critical, df, noncentrality)
    lower = stats.nct.cdf(-critical, df, noncentrality)
    return float(upper + lower)


def queries_for_power(effect: float, sd: float, alpha: float, power: float = 0.8) -> int | None:
    """Paired queries the two-sided t-test needs to detect `effect` with `power` at `alpha`.

    None when nothing can be detected (effect 0, alpha ≤ 0) or beyond MAX_QUERIES; 2 when
    sd is 0 (every difference equal: any non-zero effect shows at once).
    """
    effect = abs(effect)
    if effect <= TIE_TOLERANCE or alpha <= 0:
        return None
    if sd <= TIE_TOLERANCE:
        return 2
    return _smallest_n(lambda n: paired_power(effect, sd, n, alpha) >= power, 2)
