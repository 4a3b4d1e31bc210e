"""Personal API tokens: shown once, stored only as their sha256, sent as `Bearer` tokens."""

from __future__ import annotations

import hashlib
import secrets

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import audit

PREFIX = "ndcg_"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(user: User, actor: User | None = None) -> str:
    """Give the user a new token (replacing any old one); returns it, the only time it is seen.

    Audited as done by `actor`, by default the user themself."""
    token = PREFIX + secrets.token_urlsafe(32)
    replaced = user.api_token_hash is not None
    user.api_token_hash = _digest(token)
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
    user.api_token_hash = None
    db.session.commit()
    return had


def user_for_token(token: str | None) -> User | None:
    """The active person whose token this is, or None."""
    if not token or not token.startswith(PREFIX) or len(token) > 200:
        return None
    user = db.session.scalar(sa.select(User).where(User.api_token_hash == _digest(token)))
    return user if user is not None and user.is_active else None
