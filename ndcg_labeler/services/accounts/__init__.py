"""People and their credentials: users, passwords, roles, API tokens."""

from .examples import api_example
from .passwords import MIN_PASSWORD, PasswordRefused
from .permissions import can_view, grades_visible, visible_test_sets
from .rules import authenticate, change_own_password, set_preferences, update_user
from .tokens import create_token, revoke_token, user_for_token
from .users import (
    MAX_USERNAME,
    USERNAME_CHARACTERS,
    check_username,
    create_user,
    ensure_first_admin,
    get_by_username,
    import_source,
    list_people,
    people_page,
)

__all__ = [
    "MAX_USERNAME",
    "MIN_PASSWORD",
    "USERNAME_CHARACTERS",
    "PasswordRefused",
    "api_example",
    "authenticate",
    "can_view",
    "change_own_password",
    "check_username",
    "create_token",
    "create_user",
    "ensure_first_admin",
    "get_by_username",
    "grades_visible",
    "import_source",
    "list_people",
    "people_page",
    "revoke_token",
    "set_preferences",
    "update_user",
    "user_for_token",
    "visible_test_sets",
]
