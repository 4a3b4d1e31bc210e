"""(n)DCG: discounted cumulative gain, and DCG normalised by the DCG of the ideal ranking.

    DCG@k  = sum over ranks i = 1..k of gain(grade_i) / log2(i + 1)
    IDCG@k = DCG@k of the ideal ranking: the query's gains sorted descending
    nDCG@k = DCG@k / IDCG@k, undefined (NaN here, 0 in trec_eval's output) when IDCG@k = 0

Without a cutoff, k is the length of the list. The gain is the gain rule's (module `gains`).

Reference: K. Järvelin and J. Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
ACM Transactions on Information Systems 20(4), 422-446, 2002. Their discount divides the gain
at a rank i >= b by log_b(i) and leaves the ranks before b undiscounted; we follow trec_eval
(NIST, v10: `ndcg`, `ndcg_cut`), which divides the gain at every rank i by log2(i + 1) and,
with `ideal="judged"`, builds the ideal from
every judged grade of the query, retrieved or not (`ideal="retrieved"`: the retrieved list's
own grades, the convention of many tutorials and of `ndcg_at_k` below).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ._arithmetic import running_sum
from ._ragged import pad
from .gains import gain_values
from .options import Options

_discount_cache: np.ndarray = np.empty(0, dtype=np.float64)


def dcg(rels: Sequence[float]) -> float:
    """Sum of rel_i / log2(i + 1) over ranks i = 1..n, added in rank order."""
    total = 0.0
    for i, rel in enumerate(rels, start=1):
        total += rel / math.log2(i + 1)
    return total


def ndcg_at_k(ranked_rels: Sequence[float], k: int) -> float:
    """DCG@k over the DCG@k of the same grades sorted descending; 0.0 when that ideal is 0."""
    if k < 1:
        raise ValueError(f"k must be >= 1, not {k}")
    ideal = dcg(sorted(ranked_rels, reverse=True)[:k])
    if ideal <= 0.0:
        return 0.0
    return dcg(list(ranked_rels)[:k]) / ideal


def log2_ranks(n: int) -> np.ndarray:
    """log2(rank + 1) for ranks 1..n (read-only view; divide gains by it like trec_eval)."""
    global _discount_cache
    if n > _discount_cache.size:
        size = max(n, 2 * _discount_cache.size, 1024)
        # math.log2 is the C library's log2, the function trec_eval calls, so DCG terms
        # are bit-identical to trec_eval's `gain / log2(i + 2)`.
        values = np.array([math.log2(r + 1) for r in range(1, size + 1)], dtype=np.float64)
        values.setflags(write=False)
        _discount_cache = values
    return _discount_cache[:n]


def running_dcg(gains: np.ndarray) -> np.ndarray:
    """DCG at every rank of each row of gains: discounted, then summed in rank order."""
    terms = gains / log2_ranks(gains.shape[1])
    return np.cumsum(terms, axis=1, out=terms)


def ideal_gain_rows(
    gains: np.ndarray, judged: np.ndarray, judged_rows: np.ndarray, options: Options
) -> np.ndarray:
    """Each row's ideal gains, best first, padded with 0 (judged[i] is of row judged_rows[i])."""
    if options.ideal == "retrieved":
        return np.sort(gains, axis=1)[:, ::-1]
    judged_gains = gain_values(judged, options.gain)
    positive = judged_gains > 0
    counts = np.bincount(judged_rows[positive], minlength=gains.shape[0])
    ideal = pad(judged_gains[positive], counts, 0.0)
    return np.sort(ideal, axis=1)[:, ::-1]


class CutDCG(NamedTuple):
    """One query's DCG and IDCG over the whole list and at each cutoff."""

    dcg: float
    idcg: float
    dcg_at: list[float]
    idcg_at: list[float]


def dcg_at_cutoffs(
    grades: np.ndarray, judged: np.ndarray, ks: np.ndarray, options: Options
) -> CutDCG:
    """DCG and IDCG of one query's ranked grades (NaN = unjudged), in full and at each k."""
    gains = gain_values(grades, options.gain)
    # Only ranks with a positive gain add a term: summing those alone gives the same running
    # sums bit for bit, and searchsorted counts how many of them fall in the top k.
    gain_at = np.flatnonzero(gains)
    running = running_sum(gains[gain_at] / log2_ranks(grades.size)[gain_at])
    if options.ideal == "retrieved":
        ideal = np.sort(gains[gain_at])[::-1]
    else:
        ideal = gain_values(judged, options.gain)
        ideal = np.sort(ideal[ideal > 0])[::-1]
    ideal_running = running_sum(ideal / log2_ranks(ideal.size))
    return CutDCG(
        float(running[-1]),
        float(ideal_running[-1]),
        running[np.searchsorted(gain_at, ks)].tolist(),
        ideal_running[np.minimum(ks, ideal.size)].tolist(),
    )
