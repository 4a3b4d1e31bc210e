"""Comparing runs: means with intervals, paired tests, per-query deltas, the queries a paired
test needs, and their exports."""

from .compare import UNDEFINED_POLICY, Comparison, SampleSize, compare_runs, sample_size
from .exports import compare_csv, compare_json
from .measures import measures_block
from .robustness import Robustness

__all__ = [
    "UNDEFINED_POLICY",
    "Comparison",
    "Robustness",
    "SampleSize",
    "compare_csv",
    "compare_json",
    "compare_runs",
    "measures_block",
    "sample_size",
]
