"""Personal API tokens: shown once, stored only as their sha256, sent as `Bearer` tokens."""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm.attributes import set_committed_value

from ndcg_labeler import sqlite
from ndcg_labeler.extensions import db
from ndcg_labeler.models import User, aware, utcnow
from ndcg_labeler.services import audit

log = logging.getLogger(__name__)

PREFIX = "ndcg_"
# A token's use time is written when it is older than this: a script calling every second
# does not write the user's row every second, and a minute is close enough to find idle tokens.
USE_RESOLUTION = timedelta(minutes=1)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(user: User, actor: User | None = None) -> str:
    """Give the user a new token (replacing any old one); returns it, the only time it is seen.

    Audited as done by `actor`, by default the user themself."""
    token = PREFIX + secrets.token_urlsafe(32)
    replaced = user.api_token_hash is not None
    user.api_token_hash = _digest(token)
    user.api_token_created_at = utcnow()
    user.api_token_used_at = None
    audit.record(
        actor or user, "token.create", "user", user.id, username=user.username, replaced=replaced
    )
    db.session.commit()
    return token


def revoke_token(user: User, actor: User | None = None, *, by_cli: bool = False) -> bool:
    """Remove the user's token: API calls with it fail from now on. True when there was one
    (then audited as done by `actor`, by default the user themself; `by_cli`: the CLI)."""
    had = user.api_token_hash is not None
    if had:
        who = None if by_cli else actor or user
        audit.record(who, "token.revoke", "user", user.id, username=user.username)
    forget_token(user)
    db.session.commit()
    return had


def forget_token(user: User) -> None:
    """Drop the user's token and its times (not committed; the caller audits and commits)."""
    user.api_token_hash = None
    user.api_token_created_at = None
    user.api_token_used_at = None


def user_for_token(token: str | None) -> User | None:
    """The active person whose token this is, or None; notes the token's use (USE_RESOLUTION)."""
    if not token or not token.startswith(PREFIX) or len(token) > 200:
        return None
    user = db.session.scalar(sa.select(User).where(User.api_token_hash == _digest(token)))
    if user is None or not user.is_active:
        return None
    now = utcnow()
    last = aware(user.api_token_used_at)
    if last is None or now - last >= USE_RESOLUTION:
        _note_use(user, now)
    return user


def _note_use(user: User, now: datetime) -> None:
    """Write the token's use time on a connection of its own, skipped when SQLite's write lock
    is taken (a long import holds it): a request must not wait 10 s, or fail, for a time that
    the next use a minute later writes anyway."""
    table = User.__table__
    try:
        with db.engine.connect() as connection, sqlite.busy_timeout(connection, 200):
            connection.execute(
                table.update().where(table.c.id == user.id).values(api_token_used_at=now)
            )
            connection.commit()
    except OperationalError as exc:
        log.info("tokens: skipped noting the use of %s's token (%s)", user.username, exc.orig)
        return
    # The session's copy agrees with the row without marking the user changed.
    set_committed_value(user, "api_token_used_at", now)
