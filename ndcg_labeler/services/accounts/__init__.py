"""People and their credentials: users, passwords, roles, API tokens."""

from .tokens import (
    PREFIX,
    create_token,
    revoke_token,
    user_for_token,
)
from .users import (
    create_user,
    ensure_first_admin,
    get_by_username,
    import_source,
    list_people,
)

__all__ = [
    "PREFIX",
    "create_token",
    "create_user",
    "ensure_first_admin",
    "get_by_username",
    "import_source",
    "list_people",
    "revoke_token",
    "user_for_token",
]
