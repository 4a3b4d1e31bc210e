"""The demo: a small invented test set and two runs, loaded so a first visit is not empty."""

from .runs import load_demo_runs
from .testset import demo_test_set, load_demo

__all__ = ["demo_test_set", "load_demo", "load_demo_runs"]
