"""The audit trail of admin actions: recorded with each action, listed and exported."""

from .listing import (
    FIELDS,
    PER_PAGE,
    actor_names,
    event_dict,
    event_rows,
    events_csv,
    events_json,
    events_page,
)
from .record import ACTIONS, CLI_ACTOR, record

__all__ = [
    "ACTIONS",
    "CLI_ACTOR",
    "FIELDS",
    "PER_PAGE",
    "actor_names",
    "event_dict",
    "event_rows",
    "events_csv",
    "events_json",
    "events_page",
    "record",
]
