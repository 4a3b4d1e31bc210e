"""The audit trail of admin actions: recorded with each action, listed and exported."""

from .listing import actor_names, events_csv, events_json, events_page
from .record import ACTIONS, record

__all__ = [
    "ACTIONS",
    "actor_names",
    "events_csv",
    "events_json",
    "events_page",
    "record",
]
