"""The audit trail of admin actions and sign-ins: recorded with each action, listed, exported."""

from .listing import actor_names, events_csv, events_json, events_page
from .record import ACTIONS, record
from .signing import password_wrong, sign_in_failed, signed_in, signed_out

__all__ = [
    "ACTIONS",
    "actor_names",
    "events_csv",
    "events_json",
    "events_page",
    "password_wrong",
    "record",
    "sign_in_failed",
    "signed_in",
    "signed_out",
]
