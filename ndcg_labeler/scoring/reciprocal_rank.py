"""Reciprocal rank (RR; its mean over queries is MRR, trec_eval's `recip_rank`).

    RR = 1 / (rank of the first relevant document), 0 when none was retrieved

Undefined (NaN here, 0 in trec_eval's output) when the query has no relevant document at all.

Reference: P. B. Kantor and E. M. Voorhees, "The TREC-5 confusion track: comparing retrieval
methods for scanned text", Information Retrieval 2(2/3), 165-176, 2000.
"""

from __future__ import annotations

import numpy as np

from ._arithmetic import NAN


def reciprocal_rank(relevant_at: np.ndarray, num_rel: int) -> float:
    """RR of one query from the 0-based ranks of its relevant retrieved documents."""
    if not num_rel:
        return NAN
    return 1.0 / float(relevant_at[0] + 1) if relevant_at.size else 0.0


def reciprocal_rank_rows(
    relevant: np.ndarray, relevant_cum: np.ndarray, num_rel: np.ndarray
) -> np.ndarray:
    """RR of each row, from which entries are relevant and how many are up to each rank."""
    first = np.argmax(relevant, axis=1) + 1.0
    reciprocal = np.where(relevant_cum[:, -1] > 0, 1.0 / first, 0.0)
    return np.where(num_rel > 0, reciprocal, np.nan)
