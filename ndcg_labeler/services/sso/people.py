"""Who an accepted ID token stands for: the person linked to its issuer and subject, or new."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import sqlalchemy as sa
from flask import current_app

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import ServiceError, accounts, audit

# Runs of what accounts.check_username refuses (USERNAME_CHARACTERS: A-Z, digits, _ . @ -).
_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9_.@-]+")


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
    """A name by the one username rule (accounts.check_username) from preferred_username, else
    the e-mail, else the subject: accents dropped, other characters the rule refuses made '-',
    cut to its length; unique in any letter case with -2, -3, ..."""
    for raw in (claims.get("preferred_username"), claims.get("email"), f"sso-{claims['sub']}"):
        base = _usable(str(raw or ""))
        if base:
            break
    else:
        base = "sso-user"
    name, number = base, 1
    while db.session.scalar(
        sa.select(User.id).where(sa.func.lower(User.username) == name.lower()).limit(1)
    ):
        number += 1
        suffix = f"-{number}"
        name = base[: accounts.MAX_USERNAME - len(suffix)] + suffix
    return accounts.check_username(name)


def _usable(raw: str) -> str:
    """`raw` as a name the username rule accepts, or '' when nothing of it is left."""
    ascii_only = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode()
    name = _NAME_CHARACTERS.sub("-", ascii_only).strip("-.")[: accounts.MAX_USERNAME]
    name = name.strip("-.")
    try:
        return accounts.check_username(name)
    except ServiceError:
        return ""
