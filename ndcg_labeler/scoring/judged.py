"""Judged@k: the share of the top k that has a grade, how far the judgments cover a run.

    Judged@k = |judged documents in the top k| / k

Not a trec_eval measure: the definition ir_measures gives its `Judged@k` (S. MacAvaney,
C. Macdonald and I. Ounis, "Streamlining evaluation with ir-measures", ECIR 2022). Low coverage
makes a run's NDCG uncertain: unjudged documents gain 0 unless `Options.judged_only` drops them.
"""

from __future__ import annotations

import numpy as np


def judged_in_top(grades: np.ndarray, ks: np.ndarray) -> list[int]:
    """How many of one query's top k documents are judged (not NaN), for each k."""
    return np.searchsorted(np.flatnonzero(~np.isnan(grades)), ks).tolist()


def judged_count_rows(grades: np.ndarray) -> np.ndarray:
    """How many entries of each row are judged up to each rank (padding is NaN: unjudged)."""
    return np.cumsum(~np.isnan(grades), axis=1, dtype=np.int32)


def judged_share(judged_in_top_k: int | np.ndarray, k: int) -> float | np.ndarray:
    """Judged@k from the number of judged documents in the top k."""
    return judged_in_top_k / k
