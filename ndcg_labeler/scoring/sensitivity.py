"""Sensitivity of NDCG@k to unjudged chunks: the value if they had the top grade, and condensed.

Today's NDCG@k gives an unjudged chunk gain 0. Beside it, two values bound how much that
choice matters (u_k = the unjudged entries in the run's top k; g_top = the gain of the
scale's top grade: the grade itself with gain=linear, 2**grade - 1 with gain=exp):

    if-unjudged-top NDCG@k = DCG'@k / IDCG'@k
      DCG'@k  = DCG@k + g_top * sum over the unjudged ranks i <= k of 1 / log2(i + 1)
      IDCG'@k = DCG@k of the ideal ranking of the base ideal gains b plus u_k gains g_top
              = g_top * sum_{i=1..min(u_k, k)} 1 / log2(i + 1)
                + sum_{j=1..k-u_k} b_j / log2(u_k + j + 1)
    condensed NDCG@k       = DCG@k of the list with the unjudged entries removed / IDCG@k

b is the ideal in force: with ideal="judged" every judged grade of the query (so the top
grades join the query's judged grades, as if those chunks had been judged top); with
ideal="retrieved" the retrieved list's own grades (unjudged entries below k still gain 0).
The condensed list (T. Sakai, "Alternatives to Bpref", SIGIR 2007; `Options.judged_only`)
keeps the same ideal under both conventions: removing entries of gain 0 changes neither the
judged grades nor the retrieved positive gains. With `judged_only` the list is condensed
already: it has no unjudged entries and both values equal NDCG@k. Where u_k = 0 the top-grade
value is NDCG@k itself. Neither value bounds NDCG@k from one side: a list ideal on its judged
grades (2, 2 then an unjudged chunk, all judged grades 2, 2; top grade 3, k = 3) has NDCG@3
1.0 and top-grade value 0.905, because the ideal now ranks the top grade first.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._arithmetic import ratios, running_sum
from ._ragged import pad
from .gains import gain_values
from .ndcg import log2_ranks, running_dcg
from .options import Options


class Sensitivity(NamedTuple):
    """Each row's NDCG@k (one column per cutoff k) if its unjudged top k had the top grade, and
    on the condensed list."""

    if_unjudged_top: np.ndarray
    condensed: np.ndarray


def top_gain(options: Options) -> float:
    """The gain of the scale's top grade under the options' gain rule."""
    return float(gain_values(np.array([options.top_grade], dtype=np.float64), options.gain)[0])


def discount_sums(n: int) -> np.ndarray:
    """[0, 1/log2(2), 1/log2(2) + 1/log2(3), ...]: entry j sums the discounts of ranks 1..j."""
    return running_sum(1.0 / log2_ranks(n))


def ideal_with_top(ideal: np.ndarray, extra: np.ndarray, ks: np.ndarray, gain: float) -> np.ndarray:
    """IDCG@k of each row's ideal gains (best first, 0-padded) with extra[r, c] gains `gain`
    ranked first, for k = ks[c] (the top grade is the largest: those gains lead the ideal).

    A row gets the same bits alone or in a block: the sums run in rank order, not in np.sum's
    pairwise grouping, which depends on the padding.
    """
    extra = np.asarray(extra, dtype=np.int64)
    ks = np.asarray(ks, dtype=np.int64)
    most = int(ks.max()) if ks.size else 0
    total = gain * discount_sums(most)[np.minimum(extra, ks)]
    width = min(_positive_width(ideal), most)
    if width == 0:
        return total
    # Row c of the table: the discount 1 / log2(r + 1) of rank r = 1..most + width, and 0
    # past ks[c] (where the base ideal, moved down by extra ranks, falls out of the top k).
    size = most + width + 1
    table = np.zeros((ks.size, size))
    table[:, 1 : most + 1] = 1.0 / log2_ranks(most)
    table[np.arange(size) > ks[:, None]] = 0.0
    at = extra + (np.arange(ks.size) * size)  # flat index of rank extra + 0 in row c
    flat = table.ravel()
    for j in range(width):  # column by column: the sums run in rank order
        total += ideal[:, j, None] * flat[at + (j + 1)]
    return total


def _positive_width(ideal: np.ndarray) -> int:
    """How many leading columns of rows sorted best first hold a positive gain in some row
    (bisection: a column is all zero only when every column after it is)."""
    low, high = 0, ideal.shape[1] if ideal.shape[0] else 0
    while low < high:
        middle = (low + high) // 2
        if (ideal[:, middle] > 0).any():
            low = middle + 1
        else:
            high = middle
    return low


def sensitivity_rows(
    flat: np.ndarray,
    lengths: np.ndarray,
    judged_cum: np.ndarray,
    ideal: np.ndarray,
    at_k: tuple[np.ndarray, np.ndarray, np.ndarray],
    ks: np.ndarray,
    options: Options,
) -> Sensitivity:
    """The two values for rows of ranked grades (NaN = unjudged), at each cutoff in ks.

    flat: the rows' grades one after the other (row r has lengths[r]); judged_cum: judged
    entries up to each rank, padded (scoring.judged.judged_count_rows); ideal: the rows' base
    ideal gains, best first; at_k: DCG@k, IDCG@k and NDCG@k of the rows, a column per k.
    """
    dcg_k, idcg_k, ndcg_k = at_k
    width = judged_cum.shape[1]
    at = np.flatnonzero(~np.isnan(flat))
    counts = judged_cum[:, -1].astype(np.int64)
    starts = np.cumsum(lengths) - lengths
    ranks = at - np.repeat(starts, counts)  # 0-based rank of each judged entry in its row
    condensed_dcg = running_dcg(pad(gain_values(flat[at], options.gain), counts, 0.0))
    # Running sum of the discounts at the judged entries' own ranks: the rest of the top k's
    # discounts belong to the unjudged entries.
    judged_discounts = np.cumsum(pad(1.0 / log2_ranks(width)[ranks], counts, 0.0), axis=1)
    judged_k = judged_cum[:, np.minimum(ks, width) - 1].astype(np.int64)
    listed = np.minimum(lengths[:, None], ks)
    unjudged = listed - judged_k
    condensed = ratios(condensed_dcg[:, np.minimum(ks, condensed_dcg.shape[1]) - 1], idcg_k)
    taken = np.take_along_axis(judged_discounts, np.maximum(judged_k - 1, 0), axis=1)
    taken[judged_k == 0] = 0.0
    gain = top_gain(options)
    value = ratios(
        dcg_k + gain * (discount_sums(width)[listed] - taken),
        ideal_with_top(ideal, unjudged, ks, gain),
    )
    # DCG'@k <= IDCG'@k, but the two sums add their terms in different orders: a perfect list
    # could come out 1 ulp above 1.
    np.minimum(value, 1.0, out=value)
    # No unjudged entry in the top k: the value is NDCG@k itself, to the last bit.
    return Sensitivity(np.where(unjudged > 0, value, ndcg_k), condensed)
