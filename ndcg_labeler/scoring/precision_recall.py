"""Precision and recall at a cutoff k, and the counts behind them.

    P@k       = |relevant documents in the top k| / k
    recall@k  = |relevant documents in the top k| / num_rel, undefined when num_rel = 0
    num_rel   = the query's relevant judged documents, retrieved or not
    num_rel_ret, num_ret = the relevant documents retrieved, and all documents retrieved

A document is relevant when its grade reaches the threshold (`Options.threshold`, trec_eval's
`-l`); unjudged documents never are. As in trec_eval (NIST, v10: `P`, `recall`, `num_rel`,
`num_rel_ret`, `num_ret`), P@k divides by k even when fewer than k documents were retrieved,
and an undefined recall prints as 0.

References: C. J. van Rijsbergen, "Information Retrieval", 2nd ed., Butterworths, 1979,
chapter 7; C. Buckley and E. M. Voorhees, "Retrieval system evaluation", in E. M. Voorhees
and D. K. Harman (eds.), "TREC: Experiment and Evaluation in Information Retrieval", MIT
Press, 2005, chapter 3.
"""

from __future__ import annotations

import numpy as np

from ._arithmetic import ratio, ratios


def relevant_ranks(grades: np.ndarray, threshold: int) -> np.ndarray:
    """The 0-based ranks of one query's relevant documents (NaN, unjudged, never is)."""
    return np.flatnonzero(grades >= threshold)


def num_relevant(judged: np.ndarray, threshold: int) -> int:
    """How many of one query's judged grades reach the threshold."""
    return int(np.count_nonzero(judged >= threshold))


def relevant_rows(grades: np.ndarray, threshold: int) -> tuple[np.ndarray, np.ndarray]:
    """Which entries of each row are relevant, and how many are up to each rank."""
    relevant = grades >= threshold  # NaN (unjudged, padding) compares False
    return relevant, np.cumsum(relevant, axis=1, dtype=np.int32)


def num_relevant_rows(
    judged: np.ndarray, judged_rows: np.ndarray, threshold: int, rows: int
) -> np.ndarray:
    """Per row, how many judged grades reach the threshold (judged[i] is of judged_rows[i])."""
    return np.bincount(judged_rows[judged >= threshold], minlength=rows)


def precision(relevant_in_top: int | np.ndarray, k: int) -> float | np.ndarray:
    """P@k from the number of relevant documents in the top k (per row, or of one query)."""
    return relevant_in_top / k


def recall(relevant_in_top: int, num_rel: int) -> float:
    """recall@k of one query from its relevant documents in the top k; NaN if none exists."""
    return ratio(relevant_in_top, num_rel)


def recall_rows(relevant_in_top: np.ndarray, num_rel: np.ndarray) -> np.ndarray:
    """recall@k of each row; NaN where the query has no relevant document."""
    return ratios(relevant_in_top, num_rel)
