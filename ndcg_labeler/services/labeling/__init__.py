"""Labeling: the queue with its leases, saving judgments, progress and my own answers."""

from .answers import (
    AnsweredQuery,
    MyAnswer,
    answered_queries,
    my_answers,
    my_versions,
)
from .judging import (
    MAX_ACTIVE_MS,
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
from .progress import (
    Progress,
    progress,
)
from .queue import (
    COUNTED,
    LEASE_MINUTES,
    MAX_TRIES,
    claim,
    counted_for,
    import_source_ids,
    next_pair,
    release,
    upcoming,
)

__all__ = [
    "COUNTED",
    "LEASE_MINUTES",
    "MAX_ACTIVE_MS",
    "MAX_NOTE",
    "MAX_TRIES",
    "AnsweredQuery",
    "Conflict",
    "MyAnswer",
    "Progress",
    "SaveResult",
    "answered_queries",
    "claim",
    "counted_for",
    "import_source_ids",
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
