"""Labeling: the queue with its leases, saving judgments, progress and my own answers."""

from .answers import (
    AnsweredQuery,
    MyAnswer,
    answered_queries,
    my_answers,
)
from .judging import (
    MAX_NOTE,
    MAX_ACTIVE_MS,
    SaveResult,
    save_judgment,
    save_for_pair,
    skip_pair,
    my_judgment,
    previous_pair,
    judge_by_names,
)
from .progress import (
    Progress,
    progress,
)
from .queue import (
    LEASE_MINUTES,
    COUNTED,
    MAX_TRIES,
    import_source_ids,
    counted_for,
    next_pair,
)

__all__ = [
    "AnsweredQuery",
    "COUNTED",
    "LEASE_MINUTES",
    "MAX_ACTIVE_MS",
    "MAX_NOTE",
    "MAX_TRIES",
    "MyAnswer",
    "Progress",
    "SaveResult",
    "answered_queries",
    "counted_for",
    "import_source_ids",
    "judge_by_names",
    "my_answers",
    "my_judgment",
    "next_pair",
    "previous_pair",
    "progress",
    "save_for_pair",
    "save_judgment",
    "skip_pair",
]
