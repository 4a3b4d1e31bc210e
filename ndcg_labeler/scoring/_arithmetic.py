"""The arithmetic the measures share: sums added in rank order, and ratios undefined at 0."""

from __future__ import annotations

import numpy as np

NAN = float("nan")


def running_sum(terms: np.ndarray) -> np.ndarray:
    """[0, t1, t1 + t2, ...]: entry j is the sum of the first j terms, added in order."""
    running = np.zeros(terms.size + 1)
    np.cumsum(terms, out=running[1:])
    return running


def ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, NaN when the denominator is 0 (the measure is undefined)."""
    return numerator / denominator if denominator > 0 else NAN


def ratios(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator element-wise, NaN where the denominator is 0 (undefined)."""
    result = np.full(numerator.shape, np.nan)
    np.divide(numerator, denominator, out=result, where=denominator > 0)
    return result
