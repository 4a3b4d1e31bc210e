"""NDCG bands: the reference texts' reading of a score (excellent, good, fair, poor)."""

from __future__ import annotations

import math

import numpy as np

# Lower bound of each band, best first; below the last bound a score is "poor".
BAND_BOUNDS = (("excellent", 0.9), ("good", 0.7), ("fair", 0.5))
BANDS = ("excellent", "good", "fair", "poor")
UNDEFINED = "undefined"  # IDCG = 0: no NDCG, left out of means (never "excluded")
BAND_FILTERS = (*BANDS, UNDEFINED, "missing")


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
