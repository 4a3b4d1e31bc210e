"""The t interval of a mean over queries, with Student's t quantile computed here (no scipy).

mean ± t_{(1+c)/2, n−1} · s / √n, s the sample standard deviation (n − 1 in its denominator),
over the per-query values with a defined score. It is the interval every mean in listings
carries: it costs one pass over the values, where the compare page's percentile bootstrap
(significance.py) resamples thousands of times.

The quantile solves P(|T| ≤ t) = c by Newton's method on the closed form of that probability
for an integer number of degrees of freedom (M. Abramowitz and I. A. Stegun, "Handbook of
Mathematical Functions", 1964, 26.7.3 and 26.7.4), so that `flask run list` answers without
importing scipy (seconds of start-up); tests check it against scipy.stats.t.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

T_METHOD = "t"
CONFIDENCE = 0.95
# Newton's steps from t = 0 climb a concave curve, so they rise to the root without passing
# it; the heaviest tail (1 degree of freedom) is solved in closed form. They stop at a
# relative step of _TOLERANCE: below it the series' rounding (about 1e-13 at 7,000 degrees of
# freedom) decides the last digits, not the steps.
_TOLERANCE = 1e-13
_MAX_STEPS = 100


@dataclass(frozen=True)
class TInterval:
    """A mean over n values and its t interval; low and high None (with the reason) if n < 2."""

    mean: float | None
    n: int
    low: float | None
    high: float | None
    reason: str | None
    method: str = T_METHOD

    def to_json(self) -> dict[str, Any]:
        """The interval's JSON keys, sent beside a mean (n, ci_low, ci_high, method, reason)."""
        return {
            "n": self.n,
            "ci_low": self.low,
            "ci_high": self.high,
            "ci_method": self.method,
            "ci_reason": self.reason,
        }


def _two_sided(t: float, df: int) -> float:
    """P(|T| ≤ t) for Student's t with df ≥ 2 degrees of freedom (Abramowitz and Stegun
    26.7.3-4)."""
    import numpy as np  # here: TInterval alone (stored list lines) needs none

    theta = math.atan(t / math.sqrt(df))
    sin, cos = math.sin(theta), math.cos(theta)
    c2 = cos * cos
    if df % 2:
        j = np.arange(1, (df - 3) // 2 + 1, dtype=np.float64)
        series = cos * (1.0 + np.cumprod(c2 * (2 * j) / (2 * j + 1)).sum())
        return 2.0 / math.pi * (theta + sin * series)
    j = np.arange(1, (df - 2) // 2 + 1, dtype=np.float64)
    return sin * (1.0 + np.cumprod(c2 * (2 * j - 1) / (2 * j)).sum())


def _density(t: float, df: int) -> float:
    """Student's t density at t."""
    log_scale = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_scale - (df + 1) / 2 * math.log1p(t * t / df))


@lru_cache(maxsize=1024)
def t_quantile(probability: float, df: int) -> float:
    """Student's t quantile t_{probability, df} for probability in (0.5, 1) and integer df ≥ 1."""
    if not 0.5 < probability < 1.0 or df < 1:
        raise ValueError(f"need 0.5 < probability < 1 and df ≥ 1, not {probability}, {df}")
    if df == 1:
        return math.tan(math.pi * (probability - 0.5))
    if df == 2:
        return (2 * probability - 1) / math.sqrt(2 * probability * (1 - probability))
    target = 2 * probability - 1
    t = 0.0
    for _ in range(_MAX_STEPS):
        step = (target - _two_sided(t, df)) / (2 * _density(t, df))
        t += step
        if abs(step) <= _TOLERANCE * t:
            break
    return t


def t_interval(values: np.ndarray, confidence: float = CONFIDENCE) -> TInterval:
    """Mean of the defined (non-NaN) values with its t interval at `confidence`."""
    import numpy as np  # here: TInterval alone (stored list lines) needs none

    data = np.asarray(values, dtype=np.float64)
    data = data[~np.isnan(data)]
    n = int(data.size)
    if n == 0:
        return TInterval(None, 0, None, None, "no query has a defined value")
    mean = float(data.mean())
    if n == 1:
        return TInterval(mean, 1, None, None, "one query: an interval needs at least 2")
    half = t_quantile((1 + confidence) / 2, n - 1) * float(data.std(ddof=1)) / math.sqrt(n)
    return TInterval(mean, n, float(mean - half), float(mean + half), None)
