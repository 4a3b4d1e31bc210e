"""People and their credentials: users, passwords, roles, API tokens."""

from .tokens import (
    PREFIX,
    create_token,
    revoke_token,
    user_for_token,
)
from .users import (
    get_by_username,
    create_user,
    list_people,
    import_source,
    ensure_first_admin,
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
