"""HTTP side of access: load a test set or 404, admin-only views, blind grades as 403."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from flask import abort
from flask_login import current_user

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from ndcg_labeler.services.accounts import can_view, grades_visible

F = TypeVar("F", bound=Callable[..., Any])


def get_test_set_or_404(test_set_id: int) -> TestSet:
    """The test set, or 404 when it does not exist or the current user may not see it."""
    test_set = db.session.get(TestSet, test_set_id)
    # 404 rather than 403 so that ids of hidden test sets are not confirmed.
    if test_set is None or not can_view(current_user, test_set):
        abort(404)
    return test_set


def admin_required(view: F) -> F:
    """Decorator: 403 unless the logged-in user is an admin (login is checked globally)."""

    @wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not current_user.is_authenticated:
            abort(401)
        if not current_user.is_admin:
            abort(403)
        return view(*args, **kwargs)

    return wrapped  # type: ignore[return-value]


def require_grades_visible(test_set: TestSet) -> None:
    """403 with the reason when the current user may not see per-pair grades."""
    if not grades_visible(current_user, test_set):
        abort(
            403,
            description=(
                "This test set is judged blind by several annotators per pair, so per-pair "
                "grades are shown to admins only."
            ),
        )
