"""Corrections feed back: people's grades that contradict a machine judge's by two or more
steps, kept in a "machine vs people" queue for admins to resolve."""

from .conflicts import (
    RESOLUTIONS,
    STEPS,
    ConflictRow,
    list_conflicts,
    open_count,
    record_conflicts,
    resolve_conflict,
)

__all__ = [
    "RESOLUTIONS",
    "STEPS",
    "ConflictRow",
    "list_conflicts",
    "open_count",
    "record_conflicts",
    "resolve_conflict",
]
