"""Comparing runs: means with intervals, paired tests, per-query deltas, and their exports."""

from .compare import UNDEFINED_POLICY, Comparison, compare_runs
from .exports import compare_csv, compare_json
from .robustness import Robustness

__all__ = [
    "UNDEFINED_POLICY",
    "Comparison",
    "Robustness",
    "compare_csv",
    "compare_json",
    "compare_runs",
]
