"""Sign-ins and sign-outs in the audit trail, each in a short transaction of its own.

A login writes nothing else, so its event is the only write of the request. On SQLite a long
import holds the one write lock for minutes: the event then waits at most SIGN_IN_WAIT_MS and
is skipped with a warning in the log (which keeps what it would have said) rather than making
the person wait 10 s and get an error (compare accounts/tokens' note of a token's use).
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.exc import OperationalError

from ndcg_labeler import sqlite
from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services._db import transaction
from ndcg_labeler.services.audit.record import record

log = logging.getLogger(__name__)

SIGN_IN_WAIT_MS = 500
"""How long a sign-in's event waits for SQLite's write lock before it is skipped."""

ANONYMOUS_ACTOR = "(anonymous)"
"""The actor of a failed login: nobody signed in (parentheses are in no username)."""


def _write(actor: User | None, action: str, target_id: int | None, **details: Any) -> None:
    """Record and commit the event at once; skipped (logged) when SQLite's lock is held."""
    try:
        with sqlite.busy_timeout(db.session.connection(), SIGN_IN_WAIT_MS), transaction():
            event = record(actor, action, "user", target_id, **details)
            if actor is None:
                event.actor_name = ANONYMOUS_ACTOR
    except OperationalError as exc:
        if db.session.get_bind().dialect.name != "sqlite":
            raise
        log.warning(
            "audit: %s %s not recorded, the database is locked (%s)", action, details, exc.orig
        )


def signed_in(user: User, how: str, address: str) -> None:
    """Record a sign-in: `how` is "password" or "sso"."""
    _write(user, f"login.{how}", user.id, username=user.username, address=address)


def sign_in_failed(username: str, address: str) -> None:
    """Record a refused password login: the name tried (trimmed), never the password."""
    _write(None, "login.failed", None, username=username.strip(), address=address)


def password_wrong(user: User, address: str) -> None:
    """Record a password change refused for a wrong current password (a taken-over session
    guessing it is counted by the login limits, and shows here)."""
    _write(user, "user.password_wrong", user.id, username=user.username, address=address)


def signed_out(user: User) -> None:
    """Record a logout."""
    _write(user, "logout", user.id, username=user.username)
