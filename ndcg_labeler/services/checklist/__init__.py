"""A test set's checklist: its state (queries, corpus, runs, pool, labels, judges) and the one
next action, for the test-set page, the dashboard and `flask testset status`."""

from .state import DEPTH, Action, Checklist, Step, checklist

__all__ = ["DEPTH", "Action", "Checklist", "Step", "checklist"]
