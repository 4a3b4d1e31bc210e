"""NDCG bands: the reference texts' reading of a score (excellent, good, fair, poor)."""

from __future__ import annotations

import math

import numpy as np

# Lower bound of each band, best first; below the last bound a score is "poor".
BAND_BOUNDS = (("excellent", 0.9), ("good", 0.7), ("fair", 0.5))
BANDS = ("excellent", "good", "fair", "poor")
UNDEFINED = "undefined"  # IDCG = 0: no NDCG, left out of means (never "excluded")
BAND_FILTERS = (*BANDS, UNDEFINED, "missing")

# A run's MEAN gets a band only on enough evidence. Below MIN_QUERIES defined queries one query
# moves the mean by a fifth or more of its range; below MIN_JUDGED mean judged@k most of the top
# k has no grade (counted as not relevant), so the mean is mostly a statement about missing
# labels. Either way the mean is shown, without a band, as NOT_ENOUGH.
MIN_QUERIES = 5
MIN_JUDGED = 0.5
NOT_ENOUGH = "not enough labels"
# A bootstrap interval from fewer queries resamples so few values that it is far too narrow
# (from one query it is a single point); the compare page shows none below this.
MIN_INTERVAL_QUERIES = 10


def band(ndcg: float | None) -> str:
    """The band of an NDCG value, or "undefined" for None/NaN."""
    if ndcg is None or math.isnan(ndcg):
        return UNDEFINED
    for name, low in BAND_BOUNDS:
        if ndcg >= low:
            return name
    return "poor"


def bands_of(ndcg: np.ndarray) -> np.ndarray:
    """The band of every value of an array (vectorised), "undefined" where it is NaN."""
    defined = ~np.isnan(ndcg)
    filled = np.where(defined, ndcg, -1.0)
    conditions = [~defined] + [filled >= low for _name, low in BAND_BOUNDS]
    return np.select(conditions, [UNDEFINED] + [name for name, _low in BAND_BOUNDS], "poor")


def mean_band(mean: float | None, queries: int, judged: float | None) -> str:
    """The band of a mean NDCG over `queries` defined queries with mean judged@k `judged`:
    NOT_ENOUGH when the evidence is thin (see MIN_QUERIES and MIN_JUDGED)."""
    if mean is None or math.isnan(mean):
        return UNDEFINED
    if queries < MIN_QUERIES or judged is None or judged < MIN_JUDGED:
        return NOT_ENOUGH
    return band(mean)
