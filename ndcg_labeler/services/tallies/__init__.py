"""Stored counters of the labeling pool, changed in the transaction of every judgment change."""

from .counters import (
    annotator_counts,
    count_judgment_change,
    lock_pool_counts,
    pool_counts,
    recount_pool,
)

__all__ = [
    "annotator_counts",
    "count_judgment_change",
    "lock_pool_counts",
    "pool_counts",
    "recount_pool",
]
