"""Personal API tokens: shown once, stored only as their sha256, sent as `Bearer` tokens."""

from __future__ import annotations

import hashlib
import secrets

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User

PREFIX = "ndcg_"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(user: User) -> str:
    """Give the user a new token (replacing any old one); returns it, the only time it is seen."""
    token = PREFIX + secrets.token_urlsafe(32)
    user.api_token_hash = _digest(token)
    db.session.commit()
    return token


def revoke_token(user: User) -> None:
    """Remove the user's token: API calls with it fail from now on."""
    user.api_token_hash = None
    db.session.commit()


def user_for_token(token: str | None) -> User | None:
    """The active person whose token this is, or None."""
    if not token or not token.startswith(PREFIX) or len(token) > 200:
        return None
    user = db.session.scalar(sa.select(User).where(User.api_token_hash == _digest(token)))
    return user if user is not None and user.is_active else None
