"""Pooling: the unjudged chunks of runs' top `depth` put into the labeling queue, TREC style,
or, for a decision between two runs, by how much their grades could move the difference."""

from .for_compare import (
    Added,
    CompareOrder,
    add_for_compare,
    kept_plan_for_compare,
    plan_for_compare,
    plan_page_for_compare,
)
from .plan import MAX_DEPTH, add_pool, check_depth, compare_cut, plan_pool
from .uncertain import queue_uncertain_first

__all__ = [
    "MAX_DEPTH",
    "Added",
    "CompareOrder",
    "add_for_compare",
    "add_pool",
    "check_depth",
    "compare_cut",
    "kept_plan_for_compare",
    "plan_for_compare",
    "plan_page_for_compare",
    "plan_pool",
    "queue_uncertain_first",
]
