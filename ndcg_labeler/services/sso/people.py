"""Who an accepted ID token stands for: the person linked to its issuer and subject, or new."""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa
from flask import current_app

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import ServiceError, audit

_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9._@-]+")
MAX_USERNAME = 80


def person_for(claims: dict[str, Any]) -> User:
    """The active person linked to (iss, sub); created on the first sign-in.

    A new person is an annotator, or an admin when the configured claim names the configured
    value (NDCG_OIDC_ADMIN_CLAIM / NDCG_OIDC_ADMIN_VALUE); an existing annotator whose token
    now carries it becomes an admin. People are never matched by name or e-mail: either can
    be changed, or claimed by someone else at the provider.
    """
    issuer, subject = str(claims["iss"]).rstrip("/"), str(claims["sub"])
    user = db.session.scalar(
        sa.select(User).where(User.oidc_issuer == issuer, User.oidc_subject == subject)
    )
    admin = _names_admin(claims)
    if user is None:
        user = User(
            username=_free_username(claims),
            role="admin" if admin else "annotator",
            active=True,
            password_hash=None,  # no local password: this person signs in through the provider
            oidc_issuer=issuer,
            oidc_subject=subject,
        )
        db.session.add(user)
        db.session.flush()
        # The person creates their own account by signing in: they are the actor.
        audit.record(
            user, "user.create", "user", user.id, username=user.username, role=user.role, via="sso"
        )
    elif not user.active:
        raise ServiceError("this account is deactivated; ask an admin to reactivate it")
    elif admin and user.role == "annotator":
        audit.record(
            user, "user.role", "user", user.id, username=user.username, old=user.role,
            new="admin", via="sso",
        )  # fmt: skip
        user.role = "admin"
        user.end_sessions()  # as any role change does; this sign-in gets the new token
    db.session.commit()
    return user


def _names_admin(claims: dict[str, Any]) -> bool:
    """True when the admin claim (a string or a list of strings) holds the admin value."""
    wanted = current_app.config.get("NDCG_OIDC_ADMIN_VALUE")
    if not wanted:
        return False
    value = claims.get(current_app.config.get("NDCG_OIDC_ADMIN_CLAIM") or "groups")
    values = value if isinstance(value, list) else [value]
    return wanted in [str(v) for v in values if v is not None]


def _free_username(claims: dict[str, Any]) -> str:
    """preferred_username, else e-mail, else the subject; made unique with -2, -3, ..."""
    raw = claims.get("preferred_username") or claims.get("email") or f"sso-{claims['sub']}"
    base = _NAME_CHARACTERS.sub("-", str(raw)).strip("-.")[: MAX_USERNAME - 4] or "sso-user"
    taken = set(
        db.session.scalars(
            sa.select(User.username).where(
                sa.or_(User.username == base, User.username.like(f"{base}-%"))
            )
        )
    )
    if base not in taken:
        return base
    number = 2
    while f"{base}-{number}" in taken:
        number += 1
    return f"{base}-{number}"
