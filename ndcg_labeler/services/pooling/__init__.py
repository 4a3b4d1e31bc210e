"""Pooling: the unjudged chunks of runs' top `depth` put into the labeling queue, TREC style."""

from .plan import MAX_DEPTH, add_pool, check_depth, plan_pool

__all__ = ["MAX_DEPTH", "add_pool", "check_depth", "plan_pool"]
