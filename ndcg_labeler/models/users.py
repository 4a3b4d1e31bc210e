"""People (admins, annotators) and import sources that own judgments."""

from __future__ import annotations

import secrets
from datetime import datetime

import sqlalchemy as sa
from flask_login import UserMixin
from sqlalchemy.orm import Mapped, mapped_column
from werkzeug.security import check_password_hash, generate_password_hash

from ndcg_labeler.extensions import db
from ndcg_labeler.models._common import utcnow

ROLES = ("admin", "annotator")
# An import source (a qrels file's name) owns imported judgments; it can never log in.
IMPORT_ROLE = "import"


def new_session_token() -> str:
    """A fresh random session token (see User.session_token)."""
    return secrets.token_urlsafe(24)


class User(UserMixin, db.Model):
    """A person who logs in, or the named source of imported judgments."""

    __tablename__ = "user"

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(sa.String(80), unique=True)
    password_hash: Mapped[str | None] = mapped_column(sa.String(256))
    role: Mapped[str] = mapped_column(sa.String(16), default="annotator")
    active: Mapped[bool] = mapped_column(default=True)
    shortcuts_enabled: Mapped[bool] = mapped_column(default=True)
    # sha256 of the personal API token (Authorization: Bearer ...); the token itself is not kept.
    api_token_hash: Mapped[str | None] = mapped_column(sa.String(64), unique=True)
    # When the token was made and last used (to the minute: accounts.tokens); null without one,
    # or for a token made before these were kept.
    api_token_created_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    api_token_used_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)
    # Part of every session and remember-me cookie (get_id): a new token ends them all.
    session_token: Mapped[str] = mapped_column(sa.String(64), default=new_session_token)
    # Who the person is at the identity provider (single sign-on): the ID token's iss and sub.
    oidc_issuer: Mapped[str | None] = mapped_column(sa.String(255))
    oidc_subject: Mapped[str | None] = mapped_column(sa.String(255))

    __table_args__ = (sa.UniqueConstraint("oidc_issuer", "oidc_subject"),)

    def get_id(self) -> str:
        """Flask-Login's id for cookies: the user id and the current session token."""
        return f"{self.id}:{self.session_token}"

    def end_sessions(self) -> None:
        """Make every session and remember-me cookie issued so far stop loading this user."""
        self.session_token = new_session_token()

    def set_password(self, password: str) -> None:
        """Store a salted hash of the password (werkzeug's scrypt)."""
        self.password_hash = generate_password_hash(password)

    def check_password(self, password: str) -> bool:
        """True when the password matches the stored hash."""
        return bool(self.password_hash) and check_password_hash(self.password_hash, password)

    @property
    def is_active(self) -> bool:  # type: ignore[override]
        """Only active people (never import sources) may log in."""
        return self.active and self.role in ROLES

    @property
    def is_admin(self) -> bool:
        """Admins manage users, test sets and access."""
        return self.role == "admin"

    @property
    def is_import_source(self) -> bool:
        """True for the pseudo-user that owns judgments imported from a file."""
        return self.role == IMPORT_ROLE

    @property
    def sign_in(self) -> str:
        """How the person signs in: "password", "sso", "password+sso" or "none"."""
        ways = [
            way
            for way, has in (("password", self.password_hash), ("sso", self.oidc_subject))
            if has
        ]
        return "+".join(ways) or "none"
