"""Textbook DCG and NDCG@k on a single list of grades (the reference texts' API)."""

from __future__ import annotations

import math
from collections.abc import Sequence


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
