"""Average precision (AP; its mean over queries is MAP, trec_eval's `map`).

    AP = (1 / num_rel) * sum over the ranks r of the relevant retrieved documents of P@r

Relevant documents that were not retrieved add 0 but still count in num_rel; AP is undefined
(NaN here, 0 in trec_eval's output) when the query has no relevant document. As trec_eval
(NIST, v10) does, the precisions are added in rank order.

References: D. K. Harman, "Overview of the second Text REtrieval Conference (TREC-2)",
Information Processing & Management 31(3), 271-289, 1995; C. Buckley and E. M. Voorhees,
"Retrieval system evaluation", in "TREC: Experiment and Evaluation in Information Retrieval",
MIT Press, 2005, chapter 3.
"""

from __future__ import annotations

import numpy as np

from ._arithmetic import ratio, ratios, running_sum


def average_precision(relevant_at: np.ndarray, num_rel: int) -> float:
    """AP of one query from the 0-based ranks of its relevant retrieved documents."""
    precisions = np.arange(1.0, relevant_at.size + 1.0) / (relevant_at + 1.0)
    return ratio(float(running_sum(precisions)[-1]), num_rel)


def average_precision_rows(
    relevant: np.ndarray, relevant_cum: np.ndarray, num_rel: np.ndarray
) -> np.ndarray:
    """AP of each row, from which entries are relevant and how many are up to each rank."""
    # A running sum along the row, not a pairwise one, so the result does not depend on
    # the padding and equals the one-query form bit for bit.
    precisions = np.divide(
        relevant_cum,
        np.arange(1.0, relevant.shape[1] + 1.0),
        out=np.zeros(relevant.shape),
        where=relevant,
    )
    precision_sum = np.cumsum(precisions, axis=1, out=precisions)[:, -1]
    return ratios(precision_sum, num_rel)
