"""Is run B really better than run A? Bootstrap intervals, paired tests and Holm's correction.

Per-query scores in, figures out:
- bootstrap_ci: percentile bootstrap of the mean (B. Efron and R. J. Tibshirani, "An
  Introduction to the Bootstrap", Chapman & Hall, 1993);
- paired_t_test and randomization_test, the two tests M. D. Smucker, J. Allan and
  B. Carterette recommend for IR ("A comparison of statistical significance tests for
  information retrieval evaluation", CIKM 2007);
- holm: the step-down adjustment of a family of p-values (S. Holm, "A simple sequentially
  rejective multiple test procedure", Scandinavian Journal of Statistics 6(2), 65-70, 1979).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

# Per-query score differences within this distance of each other (or of zero) count as equal:
# NDCG values computed along different paths can differ in the last bits.
TIE_TOLERANCE = 1e-12
# Up to this many pairs the randomisation test enumerates all 2**n sign patterns (2**16 = 65,536,
# the largest power of two ≤ 100,000) and its p-value is exact.
EXACT_MAX_PAIRS = 16
# Resampled values held in memory at once (rows × values): bounds memory at ~16 MB per batch.
_BATCH_CELLS = 2_000_000


class MeanInterval(NamedTuple):
    """A mean with the low and high ends of its confidence interval."""

    mean: float
    low: float
    high: float


@dataclass(frozen=True)
class Comparison:
    """Run B against run A, query by query (deltas are b − a, in the order given)."""

    wins: int
    ties: int
    losses: int
    t_test_p: float | None
    randomization_p: float | None
    deltas: tuple[float, ...]


def bootstrap_ci(
    values: Sequence[float],
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> MeanInterval | None:
    """Mean with a percentile-bootstrap confidence interval (scipy.stats.bootstrap).

    NaN values (undefined queries) should be left out by the caller; any that remain are dropped
    here. None when no value is left. One value, or all values equal, gives (v, v, v): every
    resample has the same mean. The same inputs and seed always give the same interval.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence}")
    data = np.asarray(values, dtype=np.float64)
    data = data[~np.isnan(data)]
    if data.size == 0:
        return None
    if np.ptp(data) == 0.0:
        value = float(data[0])  # not data.mean(): summing n copies can move the last bit
        return MeanInterval(value, value, value)
    mean = float(data.mean())
    from scipy import stats  # imported on use: scipy.stats takes seconds to import

    result = stats.bootstrap(
        (data,),
        np.mean,
        n_resamples=n_resamples,
        batch=max(1, _BATCH_CELLS // data.size),
        vectorized=True,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    interval = result.confidence_interval
    return MeanInterval(mean, float(interval.low), float(interval.high))


def _deltas(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    """b − a as floats; refuses lists of different lengths or non-finite scores."""
    first = np.asarray(a, dtype=np.float64)
    second = np.asarray(b, dtype=np.float64)
    if first.shape != second.shape or first.ndim != 1:
        raise ValueError(f"paired scores need two lists of one length, got {len(a)} and {len(b)}")
    if not (np.isfinite(first).all() and np.isfinite(second).all()):
        raise ValueError("paired scores must be finite: leave undefined queries out of both runs")
    return second - first


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided p-value of the paired t-test of b against a (scipy.stats.ttest_rel).

    Undefined cases, decided here rather than left as scipy's NaN:
    - fewer than two pairs: None;
    - every difference is zero (within TIE_TOLERANCE): 1.0, there is no difference to find;
    - every difference equals the same non-zero value: None. The differences have no variance,
      so the t statistic is infinite; the randomisation test still answers in that case.
    """
    deltas = _deltas(a, b)
    if deltas.size < 2:
        return None
    if np.ptp(deltas) <= TIE_TOLERANCE:
        return 1.0 if np.abs(deltas).max() <= TIE_TOLERANCE else None
    from scipy import stats  # imported on use: scipy.stats takes seconds to import

    return float(stats.ttest_rel(np.asarray(b, float), np.asarray(a, float)).pvalue)


def noninferiority_p(deltas: Sequence[float], margin: float) -> float | None:
    """One-sided p-value of the paired t-test of H0: mean d ≤ −margin against mean d > −margin.

    t = (mean d + margin) / (sd / √n) with n − 1 degrees of freedom, p = P(T ≥ t): the same as
    scipy's ttest_1samp(d + margin, 0, alternative="greater"). Undefined cases, decided here:
    - fewer than two differences: None;
    - every difference equal (within TIE_TOLERANCE): no spread, so the mean alone decides:
      0.0 when it lies above −margin, 1.0 otherwise.
    """
    d = np.asarray(deltas, dtype=np.float64)
    if d.ndim != 1 or not np.isfinite(d).all():
        raise ValueError("differences must be one finite list: leave undefined queries out")
    if d.size < 2:
        return None
    if np.ptp(d) <= TIE_TOLERANCE:
        return 0.0 if float(d[0]) > -margin else 1.0
    from scipy import stats  # imported on use: scipy.stats takes seconds to import

    t = (float(d.mean()) + margin) / (float(d.std(ddof=1)) / np.sqrt(d.size))
    return float(stats.t.sf(t, d.size - 1))


def _flip_sums(deltas: np.ndarray, flips: np.ndarray) -> np.ndarray:
    """Σ ±d_i for each row of `flips` (1 = negate that difference, 0 = keep it)."""
    return deltas.sum() - 2.0 * (flips @ deltas)


def randomization_test(
    a: Sequence[float], b: Sequence[float], n_resamples: int = 10_000, seed: int = 0
) -> float | None:
    """Two-sided paired randomisation (sign-flip) test of the mean difference b − a.

    Under the null hypothesis each query's difference is as likely to have either sign. The
    p-value is the share of sign patterns whose |mean difference| is at least the observed one
    (within a relative 1e-10, so mirror-image patterns that tie in exact arithmetic count):
    - n ≤ EXACT_MAX_PAIRS (2**n ≤ 100,000): all 2**n patterns are enumerated, an exact p-value;
    - otherwise `n_resamples` random patterns (seeded, so repeatable) plus the observed one:
      p = (1 + hits) / (n_resamples + 1), never below 1/(n_resamples + 1).
    None when there are no pairs; 1.0 when every difference is zero.
    """
    deltas = _deltas(a, b)
    n = deltas.size
    if n == 0:
        return None
    scale = float(np.abs(deltas).sum())
    if scale <= TIE_TOLERANCE:
        return 1.0
    threshold = abs(float(deltas.sum())) - 1e-10 * scale
    if n <= EXACT_MAX_PAIRS:
        patterns = np.arange(2**n)[:, np.newaxis]
        flips = ((patterns >> np.arange(n)) & 1).astype(np.float64)
        hits = np.count_nonzero(np.abs(_flip_sums(deltas, flips)) >= threshold)
        return hits / 2**n
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    rng = np.random.default_rng(seed)
    batch = max(1, _BATCH_CELLS // n)
    hits = 0
    for start in range(0, n_resamples, batch):
        rows = min(batch, n_resamples - start)
        # One random bit per sign: eight times less randomness to draw than rng.random() < 0.5.
        packed = np.frombuffer(rng.bytes(rows * ((n + 7) // 8)), dtype=np.uint8)
        flips = np.unpackbits(packed.reshape(rows, -1), axis=1, count=n).astype(np.float64)
        hits += int(np.count_nonzero(np.abs(_flip_sums(deltas, flips)) >= threshold))
    return (hits + 1) / (n_resamples + 1)


def compare_runs(
    a: Sequence[float], b: Sequence[float], n_resamples: int = 10_000, seed: int = 0
) -> Comparison:
    """Per-query comparison of run B with run A on the same queries, in the same order.

    A win is a query where b > a by more than TIE_TOLERANCE, a loss where b < a by more than it,
    anything else a tie. Both p-values are two-sided (see paired_t_test, randomization_test).
    """
    deltas = _deltas(a, b)
    wins = int(np.count_nonzero(deltas > TIE_TOLERANCE))
    losses = int(np.count_nonzero(deltas < -TIE_TOLERANCE))
    return Comparison(
        wins=wins,
        ties=deltas.size - wins - losses,
        losses=losses,
        t_test_p=paired_t_test(a, b),
        randomization_p=randomization_test(a, b, n_resamples=n_resamples, seed=seed),
        deltas=tuple(float(d) for d in deltas),
    )


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values, in the order given (family-wise error control).

    With the m p-values sorted ascending, p_(i) becomes max over j ≤ i of min(1, (m − j + 1)·p_(j)).
    An undefined p-value (None) stays None but still counts in m, so leaving it out never makes
    the others look more significant.
    """
    m = len(p_values)
    order = sorted((i for i, p in enumerate(p_values) if p is not None), key=lambda i: p_values[i])
    adjusted: list[float | None] = [None] * m
    running = 0.0
    for rank, i in enumerate(order):
        p = p_values[i]
        assert p is not None
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
