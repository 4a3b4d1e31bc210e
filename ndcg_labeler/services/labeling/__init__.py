"""Labeling: the queue with its leases, saving judgments, progress and my own answers."""

from .answers import answered_queries, my_answers, my_versions
from .judging import (
    MAX_NOTE,
    Conflict,
    SaveResult,
    judge_by_names,
    my_judgment,
    previous_pair,
    save_for_pair,
    save_judgment,
    skip_pair,
)
from .progress import Progress, progress
from .queue import claim, next_pair, release, upcoming

__all__ = [
    "MAX_NOTE",
    "Conflict",
    "Progress",
    "SaveResult",
    "answered_queries",
    "claim",
    "judge_by_names",
    "my_answers",
    "my_judgment",
    "my_versions",
    "next_pair",
    "previous_pair",
    "progress",
    "release",
    "save_for_pair",
    "save_judgment",
    "skip_pair",
    "upcoming",
]
