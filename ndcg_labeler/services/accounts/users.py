"""User accounts: creation, passwords, the first admin and import-source pseudo-users."""

from __future__ import annotations

import re
import secrets

import sqlalchemy as sa
from flask_sqlalchemy.pagination import Pagination

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.models.users import IMPORT_ROLE, ROLES
from ndcg_labeler.services import ServiceError, audit
from ndcg_labeler.services._db import paginate

from .passwords import check_new_password

# User.username's column.
MAX_USERNAME = 80
# Qrels imported from source NAME belong to the pseudo-user `import:NAME`.
IMPORT_PREFIX = "import:"
USERNAME_CHARACTERS = "the letters A–Z (no accents), digits and _ . @ -"
_USERNAME = re.compile(r"[A-Za-z0-9_.@-]+")


def check_username(username: str) -> str:
    """The name a new account is stored under, or ServiceError saying which rule it breaks.

    The one username rule, for `flask user create` and the Users page alike: surrounding
    spaces dropped; 1 to MAX_USERNAME of USERNAME_CHARACTERS (names that are safe in URLs,
    logs, CSV and a shell); not starting with IMPORT_PREFIX in any letters' case. Names are
    unique regardless of case (create_user): `Alice` and `alice` would be two people nobody
    can tell apart in a list.
    """
    name = username.strip()
    if not name:
        raise ServiceError("username must not be empty")
    if len(name) > MAX_USERNAME:
        raise ServiceError(f"username must have at most {MAX_USERNAME} characters")
    if name.lower().startswith(IMPORT_PREFIX):
        # Else the next qrels import from that source would be stored as this person's grades.
        raise ServiceError(
            f"usernames starting with {IMPORT_PREFIX!r} are reserved for imported qrels"
        )
    if _USERNAME.fullmatch(name) is None:
        raise ServiceError(f"Use {USERNAME_CHARACTERS} only.")
    return name


def get_by_username(username: str) -> User | None:
    """The user (or import source) with that name."""
    return db.session.scalar(sa.select(User).where(User.username == username))


def create_user(
    username: str, password: str, role: str = "annotator", *, actor: User | None = None
) -> User:
    """Create a login account; refuses names against check_username or taken in any case,
    unknown roles and weak passwords.

    Audited as done by `actor` (None: the command line)."""
    username = check_username(username)
    if role not in ROLES:
        raise ServiceError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    check_new_password(password, username)
    taken = db.session.scalar(
        sa.select(User.username).where(sa.func.lower(User.username) == username.lower())
    )
    if taken is not None:
        raise ServiceError(f"user {taken!r} already exists")
    user = User(username=username, role=role, active=True)
    user.set_password(password)
    db.session.add(user)
    db.session.flush()
    audit.record(actor, "user.create", "user", user.id, username=username, role=role)
    db.session.commit()
    return user


def list_people() -> list[User]:
    """Every login account (not import sources), by name."""
    return list(
        db.session.scalars(sa.select(User).where(User.role.in_(ROLES)).order_by(User.username))
    )


PEOPLE_PER_PAGE = 50


def people_page(
    page: int, contains: str = "", per_page: int = PEOPLE_PER_PAGE
) -> tuple[Pagination, int]:
    """One page of login accounts by name, those whose name contains `contains` (any letter
    case) when given; with how many accounts there are in all."""
    people = sa.select(User).where(User.role.in_(ROLES))
    wanted = contains.strip().lower()
    if not wanted:  # the page's own count is everyone's
        found = paginate(people.order_by(User.username), page, per_page)
        return found, found.total or 0
    everyone = db.session.scalar(sa.select(sa.func.count()).select_from(people.subquery())) or 0
    people = people.where(sa.func.lower(User.username).contains(wanted, autoescape=True))
    return paginate(people.order_by(User.username), page, per_page), everyone


def import_source(name: str) -> User:
    """The pseudo-user that owns judgments imported under `name` (created on first use)."""
    username = f"{IMPORT_PREFIX}{name}"
    user = get_by_username(username)
    if user is not None and not user.is_import_source:
        # A person made under this name before it was reserved: never hand them imported grades.
        raise ServiceError(
            f"{username!r} is a person, not an import source: import these qrels under another "
            "source name"
        )
    if user is None:
        user = User(username=username, role=IMPORT_ROLE, active=False, password_hash=None)
        db.session.add(user)
        db.session.flush()
    return user


def ensure_first_admin(password: str | None) -> tuple[User, str | None]:
    """On a database without people, create `admin`; returns the generated password if any.

    A given password (NDCG_ADMIN_PASSWORD) must pass the same rules as any other.
    """
    existing = db.session.scalar(sa.select(User).where(User.role == "admin").limit(1))
    if existing is not None:
        return existing, None
    generated = None
    if not password:
        generated = password = secrets.token_urlsafe(16)
    try:
        user = create_user("admin", password, role="admin")
    except ServiceError as exc:
        raise ServiceError(f"NDCG_ADMIN_PASSWORD is refused: {exc}") from None
    return user, generated
