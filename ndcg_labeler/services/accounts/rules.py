"""Account rules: editing a user, changing one's own password, authenticating at login."""

from __future__ import annotations

import sqlalchemy as sa
from flask import current_app

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Assignment, User
from ndcg_labeler.models.users import ROLES
from ndcg_labeler.services import ServiceError, audit

from .passwords import check_new_password, verify_password
from .tokens import forget_token


def update_user(
    actor: User | None, user: User, *, role: str, active: bool, password: str | None = None
) -> User:
    """An admin (None: the command line) changes a user's role, active flag and (optionally)
    password.

    An admin cannot demote or deactivate themself, nor anyone the last active admin: nobody
    could manage people any more.
    A new password, role or deactivation ends the user's sessions; deactivation also revokes
    their API token, so reactivating them revives neither, and frees the pairs they were
    handed to label.
    """
    if user.is_import_source:
        raise ServiceError(f"'{user.username}' is an import source, not a person")
    if role not in ROLES:
        raise ServiceError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    losing_admin = user.role == "admin" and user.active and (role != "admin" or not active)
    if actor is not None and user.id == actor.id and losing_admin:
        raise ServiceError("You cannot remove your own admin rights or deactivate yourself.")
    if losing_admin and not _other_active_admin(user):
        raise ServiceError(
            f"'{user.username}' is the last active admin: make another admin first, or nobody "
            "could manage people"
        )
    if password:
        check_new_password(password, user.username)
        user.set_password(password)
        audit.record(actor, "user.password_reset", "user", user.id, username=user.username)
    if password or role != user.role or (user.active and not active):
        user.end_sessions()
    if user.active and not active:
        # A deactivated person answers nothing: their leases would keep pairs from the others
        # until they lapse.
        db.session.execute(
            sa.delete(Assignment).where(Assignment.user_id == user.id),
            execution_options={"synchronize_session": False},
        )
    if user.active and not active and user.api_token_hash is not None:
        forget_token(user)
        audit.record(actor, "token.revoke", "user", user.id, username=user.username)
    if role != user.role:
        audit.record(
            actor, "user.role", "user", user.id, username=user.username, old=user.role, new=role
        )
    if active != user.active:
        audit.record(
            actor,
            "user.active",
            "user",
            user.id,
            username=user.username,
            old=user.active,
            new=active,
        )
    user.role = role
    user.active = active
    db.session.commit()
    return user


def _other_active_admin(user: User) -> bool:
    """True when an active admin other than `user` exists."""
    other = sa.select(User.id).where(User.role == "admin", User.active, User.id != user.id)
    return db.session.scalar(other.limit(1)) is not None


def change_own_password(user: User, current: str, new: str) -> None:
    """Change one's own password after checking the current one; ends every session of the user.

    Audited as user.password_change by the user themself. The caller logs its own browser in
    again with the new session token.
    """
    if not user.check_password(current):
        raise ServiceError("This is not your current password.")
    check_new_password(new, user.username)
    user.set_password(new)
    user.end_sessions()
    # A session taken over can lock its owner out this way: the trail says when.
    audit.record(user, "user.password_change", "user", user.id, username=user.username)
    db.session.commit()


def set_preferences(user: User, *, shortcuts_enabled: bool) -> None:
    """Save one's own preferences (single-key shortcuts on or off)."""
    user.shortcuts_enabled = shortcuts_enabled
    db.session.commit()


def authenticate(username: str, password: str) -> User | None:
    """The active person with this name and password, or None.

    The name is taken without surrounding spaces and in any letters' case (a phone capitalises
    it), unless two accounts made before names were unique regardless of case differ only by
    it: then only the exact name signs in. Every failure gives the same answer after the same
    work (one hash check), so neither the answer nor its time tells whether the name exists or
    is active.
    """
    name = username.strip()
    user = db.session.scalar(sa.select(User).where(User.username == name))
    if user is None and name:
        alike = db.session.scalars(
            sa.select(User).where(sa.func.lower(User.username) == name.lower()).limit(2)
        ).all()
        user = alike[0] if len(alike) == 1 else None
    if not verify_password(user, password) or user is None or not user.is_active:
        return None
    # NDCG_LOCAL_LOGIN=0: people sign in through the identity provider only.
    return user if current_app.config.get("NDCG_LOCAL_LOGIN", True) else None
